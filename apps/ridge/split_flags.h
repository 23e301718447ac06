#pragma once
// The --tp / --pp / --mpi-timeout flags that run, bench and serve share, and the
// call that runs a command's work on a model split across an MPI job's ranks
// (ridge/mpi/split_job.h). Include after <CLI/CLI.hpp>, in a command file
// that already pays for it.
#include <algorithm>
#include <functional>
#include <string>

#include "ridge/base/error.h"
#include "ridge/gguf/ggml_type.h"
#ifdef RIDGE_HAVE_MPI
#include "ridge/mpi/split_job.h"
#endif

namespace ridge::app {

struct SplitFlags {
  int tp = 1;                 // tensor-parallel ranks
  int pp = 1;                 // pipeline-parallel ranks
  double mpi_timeout_s = 60;  // the longest any one communication may take
  int pp_micro_batches = 0;   // with --pp: micro-batches a step is cut into; 0: ModelPartition's default
  bool requested() const { return tp > 1 || pp > 1; }
};

inline void AddSplitFlags(CLI::App& sub, SplitFlags& f) {
  sub.add_option("--tp", f.tp, "tensor parallel: split heads, FFN and vocabulary across N ranks (mpirun -np N)")
      ->check(CLI::PositiveNumber);
  sub.add_option("--pp", f.pp, "pipeline parallel: split the layers across N ranks (mpirun -np N)")
      ->check(CLI::PositiveNumber);
  // 0 (its printed default) is valid, so that every setting's default can be
  // given back through its RIDGE_ variable or a config file; CheckSplitFlags
  // refuses a count without --pp once every source is in.
  sub.add_option("--pp-micro-batches", f.pp_micro_batches,
                 "with --pp: cut each step's tokens into M micro-batches so that the stages work at the same time "
                 "(0, the default: 2 x ranks of at least 32 tokens each; 1: the whole step at once)")
      ->check(CLI::NonNegativeNumber);
  sub.add_option("--mpi-timeout", f.mpi_timeout_s,
                 "with --tp/--pp: seconds any one communication may take before the job ends with an error")
      ->check(CLI::PositiveNumber);
}

// The flags' combinations no single option's check can see.
inline void CheckSplitFlags(const SplitFlags& f) {
  if (f.pp_micro_batches > 0 && f.pp <= 1) Fail("--pp-micro-batches requires --pp");
}

#ifdef RIDGE_HAVE_MPI
// Loads the model's part on every rank and runs `lead` on rank 0 (see mpi::RunSplit).
inline int RunSplitFromFlags(const SplitFlags& f, const std::string& model_path, int threads, GgmlType kv_type,
                             bool measure_link, const std::function<int(mpi::SplitRank& rank)>& lead) {
  if (f.tp > 1 && f.pp > 1) Fail("--tp and --pp cannot be combined yet: choose one");
  mpi::SplitOptions o;
  o.model_path = model_path;
  o.kind = f.tp > 1 ? ModelPartition::Kind::kTensor : ModelPartition::Kind::kPipeline;
  o.n_ranks = std::max(f.tp, f.pp);
  o.timeout_seconds = f.mpi_timeout_s;
  o.micro_batches = f.pp_micro_batches;
  o.threads = threads;
  o.kv_type = kv_type;
  o.measure_link = measure_link;
  return mpi::RunSplit(o, lead);
}
#else
[[noreturn]] inline void FailWithoutMpi() {
  Fail("--tp/--pp: this ridge was built without MPI (install libopenmpi-dev and build with -DRIDGE_MPI=ON)");
}
#endif

}  // namespace ridge::app
