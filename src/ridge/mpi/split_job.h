#pragma once
// A model split across the ranks of an MPI job (`mpirun -np N ridge run
// --tp N ...`): every rank loads its part of the GGUF; rank 0 runs the
// tokenizer and the scheduler through `lead`, whose forward passes share each
// step with the other ranks, which follow until rank 0 finishes.
//
// Faults: an error on any rank (a timeout waiting for a rank that died or
// hangs included) is printed as "ridge: error: rank R: ..." and ends the
// whole job with exit status 1 (MPI_Abort); when a rank's process dies,
// mpirun ends the others.
#include <functional>
#include <string>

#include "ridge/base/thread_pool.h"
#include "ridge/gguf/ggml_type.h"
#include "ridge/model/model.h"
#include "ridge/mpi/mpi_link.h"
#include "ridge/mpi/split_bench.h"

namespace ridge::mpi {

struct SplitOptions {
  std::string model_path;
  ModelPartition::Kind kind = ModelPartition::Kind::kTensor;
  int n_ranks = 1;
  double timeout_seconds = 60;        // any one communication
  int micro_batches = 0;              // pipeline: ModelPartition::micro_batches
  int threads = 0;                    // per rank; 0: the hardware threads ÷ ranks
  GgmlType kv_type = GgmlType::kF16;  // for rank 0's line of the report
  bool measure_link = false;          // time rank 0 <-> 1 messages before `lead` (ridge bench)
};

// What `lead` runs with on rank 0.
struct SplitRank {
  Model& model;
  ThreadPool& pool;
  MpiLink& link;
  LinkMeasurement link_measured;  // zero unless SplitOptions::measure_link
};

// Returns lead's status on rank 0 and 0 on the others; does not return on an error.
int RunSplit(const SplitOptions& options, const std::function<int(SplitRank& rank)>& lead);

// "--tp" or "--pp".
const char* SplitFlag(ModelPartition::Kind kind);

}  // namespace ridge::mpi
