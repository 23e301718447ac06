// MatMul driver: picks the ISA's inner kernels for the weight type, prepares
// the activations once per call, and spreads the work over the thread pool.
//
// Decode and small batches take the "rows" path: output rows are cut into
// chunks of whole cache lines of y (no false sharing), each weight row is
// streamed once per group of up to max_row_tokens tokens. From the type's
// panel_min_tokens on (where the ISA has a panel path for it) batches take the
// "panels" path: each task packs panel_rows weight rows into a per-thread
// scratch panel and multiplies it by every token, so the weights are reused
// from cache (prefill).
#include <algorithm>

#include "ridge/base/cpu_features.h"
#include "ridge/base/error.h"
#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/ops.h"
#include "ridge/kernels/scratch.h"

namespace ridge::kernels {
namespace {

using internal::ActView;
using internal::MatView;
using internal::TypeKernels;

// Rows per task are a multiple of this (16 floats = one 64-byte line of y).
constexpr int64_t kRowAlign = 16;
// Work below which a call runs on the calling thread alone: waking the pool
// and waiting for it costs microseconds, as much as streaming ~64 KiB of
// weights or ~4 MFLOP (tiny models, K/V projections of small ones).
constexpr int64_t kInlineRowsBytes = 64 << 10;
constexpr double kInlinePanelFlops = 4e6;
constexpr int64_t kInlinePrepareElems = 32 << 10;
// Weights a rows-path task keeps in L2 while several token groups pass.
constexpr int64_t kRowsChunkBytes = 192 << 10;

const TypeKernels* FindKernels(Isa isa, GgmlType type) {
  switch (isa) {
    case Isa::kAvx512:
      if (const TypeKernels* k = internal::Avx512QuantKernels(type)) return k;
      if (const TypeKernels* k = internal::Avx512Q32Kernels(type)) return k;
      if (const TypeKernels* k = internal::Avx512KQuantKernels(type)) return k;
      return internal::Avx512FloatKernels(type);
    case Isa::kAvx2:
      if (const TypeKernels* k = internal::Avx2QuantKernels(type)) return k;
      if (const TypeKernels* k = internal::Avx2Q32Kernels(type)) return k;
      if (const TypeKernels* k = internal::Avx2KQuantKernels(type)) return k;
      return internal::Avx2FloatKernels(type);
    case Isa::kScalar:
      return nullptr;
  }
  return nullptr;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Prepared activations for this call, owned by the calling thread.
ActView PrepareActivations(const internal::ActPrep& prep, const float* x, int64_t n_cols, int64_t n_tokens,
                           ThreadPool& pool) {
  if (prep.row_bytes == nullptr) return ActView{reinterpret_cast<const uint8_t*>(x), n_cols * 4};
  const int64_t row_bytes = prep.row_bytes(n_cols);
  thread_local ScratchBuffer acts_scratch;
  uint8_t* acts = acts_scratch.Get(row_bytes * n_tokens);
  if (n_tokens * n_cols <= kInlinePrepareElems) {
    for (int64_t t = 0; t < n_tokens; ++t) prep.prepare(x + t * n_cols, n_cols, acts + t * row_bytes);
  } else {
    pool.ParallelFor(n_tokens, [&](int64_t t, int) { prep.prepare(x + t * n_cols, n_cols, acts + t * row_bytes); });
  }
  return ActView{acts, row_bytes};
}

void RowsPath(const TypeKernels& k, const MatView& w, const ActView& acts, int64_t n_tokens, float* y,
              ThreadPool& pool) {
  // About four tasks per thread so a slow thread does not hold the others up.
  // With several token groups, a task's rows are also capped to ~kRowsChunkBytes
  // of weights, so that they stay in L2 while every group of tokens passes
  // over them (prefill on the rows path would otherwise stream the whole
  // matrix from memory once per group).
  const int64_t passes = CeilDiv(n_tokens, k.max_row_tokens);
  const bool small = w.n_rows * w.row_bytes * passes <= kInlineRowsBytes;
  const int64_t wanted_tasks = small ? 1 : 4 * static_cast<int64_t>(pool.n_threads());
  int64_t chunk_rows =
      small ? w.n_rows : std::max(kRowAlign, CeilDiv(CeilDiv(w.n_rows, wanted_tasks), kRowAlign) * kRowAlign);
  if (!small && passes > 1)
    chunk_rows = std::min(chunk_rows, std::max(kRowAlign, kRowsChunkBytes / w.row_bytes / kRowAlign * kRowAlign));
  const int64_t n_tasks = CeilDiv(w.n_rows, chunk_rows);
  pool.ParallelFor(n_tasks, [&](int64_t task, int) {
    const int64_t r_begin = task * chunk_rows;
    const int64_t r_end = std::min(w.n_rows, r_begin + chunk_rows);
    for (int64_t t = 0; t < n_tokens; t += k.max_row_tokens) {
      const int64_t nt = std::min<int64_t>(k.max_row_tokens, n_tokens - t);
      const ActView group{acts.data + t * acts.row_stride, acts.row_stride};
      k.rows(w, group, nt, r_begin, r_end, y + t * w.n_rows, w.n_rows);
    }
  });
}

void PanelsPath(const TypeKernels& k, const MatView& w, const ActView& acts, int64_t n_tokens, float* y,
                ThreadPool& pool) {
  const int64_t n_panels = CeilDiv(w.n_rows, k.panel_rows);
  const int64_t panel_bytes = k.panel_bytes(w.n_cols);
  // A task takes consecutive panels, so that while it multiplies one panel
  // the kernel can prefetch the rows of the next (in small batches packing
  // is where the weights come from memory; without the overlap a thread
  // waits for memory and computes in turn).
  auto run_panels = [&](int64_t p_begin, int64_t p_end) {
    thread_local ScratchBuffer panel_scratch;
    uint8_t* panel = panel_scratch.Get(panel_bytes);
    for (int64_t p = p_begin; p < p_end; ++p) {
      const int64_t r_begin = p * k.panel_rows;
      const int64_t next_begin = r_begin + k.panel_rows;
      const internal::PanelPrefetch next{
          w.data + next_begin * w.row_bytes,
          p + 1 < p_end ? std::min(k.panel_rows, w.n_rows - next_begin) : 0, w.row_bytes};
      k.pack_panel(w, r_begin, panel);
      k.panel_matmul(panel, w.n_cols, std::min(k.panel_rows, w.n_rows - r_begin), acts, n_tokens, y + r_begin,
                     w.n_rows, next);
    }
  };
  const double flops =
      2.0 * static_cast<double>(w.n_rows) * static_cast<double>(w.n_cols) * static_cast<double>(n_tokens);
  if (flops <= kInlinePanelFlops) {
    run_panels(0, n_panels);
  } else {
    // Small batches: about four tasks per thread, each a run of panels that
    // prefetch one another. From 128 tokens on the products outweigh the
    // reads (prefill): one panel per task, so that a slow thread does not hold up the others.
    const int64_t per_task =
        n_tokens >= 128 ? 1 : std::max<int64_t>(1, n_panels / (4 * static_cast<int64_t>(pool.n_threads())));
    pool.ParallelFor(CeilDiv(n_panels, per_task), [&](int64_t task, int) {
      run_panels(task * per_task, std::min(n_panels, (task + 1) * per_task));
    });
  }
}

}  // namespace

void MatMul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  const GgmlTypeTraits& traits = TraitsOf(w.type);
  RIDGE_CHECK(traits.can_dequantize);
  RIDGE_CHECK(w.n_rows >= 0 && w.n_cols >= 0 && n_tokens >= 0);
  RIDGE_CHECK(w.n_cols % traits.block_elems == 0);
  RIDGE_CHECK(w.row_bytes >= RowBytes(w.type, w.n_cols));
  if (w.n_rows == 0 || n_tokens == 0) return;
  const TypeKernels* k = FindKernels(ActiveIsa(), w.type);
  if (k == nullptr || w.n_cols == 0) return scalar::MatMul(w, x, n_tokens, y, pool);

  const MatView view{w.data, w.n_rows, w.n_cols, w.row_bytes};
  if (k->panel_matmul != nullptr && n_tokens >= k->panel_min_tokens) {
    PanelsPath(*k, view, PrepareActivations(k->panel_acts, x, w.n_cols, n_tokens, pool), n_tokens, y, pool);
  } else {
    RowsPath(*k, view, PrepareActivations(k->row_acts, x, w.n_cols, n_tokens, pool), n_tokens, y, pool);
  }
}

}  // namespace ridge::kernels
