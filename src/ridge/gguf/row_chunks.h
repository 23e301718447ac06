#pragma once
// Splits the rows of a tensor into chunks of roughly kTargetChunkElems
// elements and runs them on a thread pool (or inline without one). Used by
// the file-level converters (gen-model, quantize), whose per-row work is
// independent.
#include <algorithm>
#include <cstdint>
#include <functional>

#include "ridge/base/thread_pool.h"

namespace ridge {

inline constexpr int64_t kTargetChunkElems = int64_t{1} << 18;

// fn(row_begin, row_end, thread) for consecutive chunks covering [0, n_rows);
// thread is in [0, RowChunkThreads(pool)).
inline void ForEachRowChunk(ThreadPool* pool, int64_t n_rows, int64_t row_elems,
                            const std::function<void(int64_t, int64_t, int)>& fn) {
  const int64_t rows_per_chunk = std::max<int64_t>(1, kTargetChunkElems / std::max<int64_t>(1, row_elems));
  const int64_t n_chunks = (n_rows + rows_per_chunk - 1) / rows_per_chunk;
  auto run = [&](int64_t chunk, int thread) {
    const int64_t begin = chunk * rows_per_chunk;
    fn(begin, std::min(n_rows, begin + rows_per_chunk), thread);
  };
  if (pool == nullptr || n_chunks <= 1) {
    for (int64_t c = 0; c < n_chunks; ++c) run(c, 0);
  } else {
    pool->ParallelFor(n_chunks, run);
  }
}

inline int RowChunkThreads(const ThreadPool* pool) { return pool ? pool->n_threads() : 1; }

}  // namespace ridge
