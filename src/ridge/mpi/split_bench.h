#pragma once
// `ridge bench --tp N / --pp N` under mpirun: prefill and decode tokens/s of
// the split model, with the time rank 0 spends in communication per forward
// pass beside what the link, measured in the same run, predicts for the
// step's messages.
#include <cstdint>
#include <string>
#include <vector>

#include "ridge/base/thread_pool.h"
#include "ridge/model/model.h"
#include "ridge/mpi/mpi_link.h"

namespace ridge::mpi {

struct LinkMeasurement {
  double latency_s = 0;    // half the median round trip of a 4-byte message, rank 0 ↔ 1
  double bytes_per_s = 0;  // one direction, from the median round trip of 4 MiB
};

// Every rank must call it (ranks 0 and 1 exchange messages, the others wait at a broadcast).
LinkMeasurement MeasureLink(Communicator& comm);

struct SplitBenchFigure {
  std::string test;                       // "pp128", "tg64"
  double tokens_per_s = 0;                // mean over repetitions
  double step_ms = 0;                     // per forward pass
  double comm_ms_per_step = 0;            // rank 0 inside MPI calls, per forward pass (waiting for the others included)
  double predicted_comm_ms_per_step = 0;  // the step's messages at the measured latency and bandwidth
  double sent_bytes_per_step = 0;         // rank 0's bytes sent, per forward pass
  double ring_bytes_per_step = 0;         // tp: the roofline's all-reduce bytes (ring) per rank per step
};

// pp: one prefill of n_prompt tokens; tg: n_gen decode steps after it; each
// repeated `repetitions` times after a warm-up. Rank 0 only (the followers follow).
std::vector<SplitBenchFigure> BenchSplit(Model& model, ThreadPool& pool, MpiLink& link, const LinkMeasurement& measured,
                                         int64_t n_prompt, int64_t n_gen, GgmlType kv_type, int repetitions);

std::string FormatSplitBench(const Model& model, const LinkMeasurement& measured,
                             const std::vector<SplitBenchFigure>& figures, int n_threads);

}  // namespace ridge::mpi
