// MatMul driver: picks the ISA's inner kernels for the weight type, prepares
// the activations once per call, and spreads the work over the thread pool.
//
// Decode and small batches take the "rows" path: output rows are cut into
// chunks of whole cache lines of y (no false sharing), each weight row is
// streamed once per group of up to max_row_tokens tokens. From the type's
// panel_min_tokens on (where the ISA has a panel path for it) batches take the
// "panels" path: each task packs panel_rows weight rows into a per-thread
// scratch panel and multiplies it by every token, so the weights are reused
// from cache (prefill). Weights repacked at load (WeightMatrix::panels) are
// already panels: every batch, decode included, takes the panel kernel on
// them in place, without packing.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

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
// How far ahead a panel kernel prefetches weights repacked at load where it
// reads one stream a task: about what one core has in flight at ~25 GB/s and ~150 ns of
// latency, doubled for a busy host.
constexpr int64_t kStreamAheadBytes = 32 << 10;
// Tasks a thread that a small batch's matrix is cut into, on either path: each
// a run of weights read in order, whose start has nothing in flight, so fewer,
// longer runs stream faster; more than one, so that a thread the host holds up
// leaves work for the others to take (Zen 5, 2 threads, one process ABBA
// against four: decode Q4_0 1.04, Q4_K 1.03-1.04, Q6_K 1.01-1.03, Q8_0 1.02,
// 8 tokens of Q8_0 1.05; with the weights mapped from the file Q4_0 1.04, Q4_K
// 1.03, Q6_K 1.02; one a thread gained 1.02-1.07).
constexpr int64_t kTasksPerThread = 2;

const TypeKernels* FindKernels(Isa isa, GgmlType type) {
  switch (isa) {
    case Isa::kAmx:
      if (const TypeKernels* k = internal::AmxQuantKernels(type)) return k;
      [[fallthrough]];
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

// Activations prepared for one call into buffer (prep.row_bytes == nullptr:
// the float rows themselves).
ActView PrepareActivations(const internal::ActPrep& prep, const float* x, int64_t n_cols, int64_t n_tokens,
                           ThreadPool& pool, ScratchBuffer& buffer) {
  if (prep.row_bytes == nullptr) return ActView{reinterpret_cast<const uint8_t*>(x), n_cols * 4};
  const int64_t row_bytes = prep.row_bytes(n_cols);
  uint8_t* acts = buffer.Get(row_bytes * n_tokens);
  if (n_tokens * n_cols <= kInlinePrepareElems) {
    for (int64_t t = 0; t < n_tokens; ++t) prep.prepare(x + t * n_cols, n_cols, acts + t * row_bytes);
  } else {
    pool.ParallelFor(n_tokens, [&](int64_t t, int) { prep.prepare(x + t * n_cols, n_cols, acts + t * row_bytes); });
  }
  return ActView{acts, row_bytes};
}

// Prepared activations for this call, owned by the calling thread.
ActView PrepareActivations(const internal::ActPrep& prep, const float* x, int64_t n_cols, int64_t n_tokens,
                           ThreadPool& pool) {
  thread_local ScratchBuffer acts_scratch;
  return PrepareActivations(prep, x, n_cols, n_tokens, pool, acts_scratch);
}

// How a rows-path call is cut into tasks: chunk_rows rows each (a multiple
// of kRowAlign unless the whole matrix is one task).
int64_t RowsChunk(const TypeKernels& k, const MatView& w, int64_t n_tokens, int n_threads) {
  // kTasksPerThread runs of rows. With several token groups, a task's rows
  // are also capped to ~kL2BlockBytes of weights, so that they stay in L2
  // while every group of tokens passes over them (prefill on the rows path
  // would otherwise stream the whole matrix from memory once per group).
  const int64_t passes = CeilDiv(n_tokens, k.max_row_tokens);
  if (w.n_rows * w.row_bytes * passes <= kInlineRowsBytes) return w.n_rows;
  const int64_t wanted_tasks = kTasksPerThread * n_threads;
  int64_t chunk_rows = std::max(kRowAlign, CeilDiv(CeilDiv(w.n_rows, wanted_tasks), kRowAlign) * kRowAlign);
  if (passes > 1)
    chunk_rows =
        std::min(chunk_rows, std::max(kRowAlign, internal::kL2BlockBytes / w.row_bytes / kRowAlign * kRowAlign));
  return chunk_rows;
}

// Rows [r_begin, r_end) of y for every token, each weight row read once per
// group of max_row_tokens tokens.
void RowsTask(const TypeKernels& k, const MatView& w, const ActView& acts, int64_t n_tokens, int64_t r_begin,
              int64_t r_end, float* y) {
  for (int64_t t = 0; t < n_tokens; t += k.max_row_tokens) {
    const int64_t nt = std::min<int64_t>(k.max_row_tokens, n_tokens - t);
    const ActView group{acts.data + t * acts.row_stride, acts.row_stride};
    k.rows(w, group, nt, r_begin, r_end, y + t * w.n_rows, w.n_rows);
  }
}

void RowsPath(const TypeKernels& k, const MatView& w, const ActView& acts, int64_t n_tokens, float* y,
              ThreadPool& pool) {
  const int64_t chunk_rows = RowsChunk(k, w, n_tokens, pool.n_threads());
  pool.ParallelFor(CeilDiv(w.n_rows, chunk_rows), [&](int64_t task, int) {
    const int64_t r_begin = task * chunk_rows;
    RowsTask(k, w, acts, n_tokens, r_begin, std::min(w.n_rows, r_begin + chunk_rows), y);
  });
}

// Panels [p_begin, p_end) of y for every token. A task takes consecutive
// panels, so that while it multiplies one panel the kernel can prefetch the
// rows of the next (in small batches packing is where the weights come from
// memory; without the overlap a thread waits for memory and computes in turn).
// Repacked weights (`packed`, whole panels: CanRepack) are read in place,
// by the kernel's panel_run where it has one (it picks the order of the
// task's panels), else panel by panel: one contiguous stream a task.
void PanelsTask(const TypeKernels& k, const MatView& w, bool packed, const ActView& acts, int64_t n_tokens,
                int64_t p_begin, int64_t p_end, float* y) {
  if (packed && k.panel_run != nullptr) {
    const int64_t r_begin = p_begin * k.panel_rows;
    return k.panel_run(w.data + r_begin * w.row_bytes, p_end - p_begin, w.n_cols, acts, n_tokens, y + r_begin,
                       w.n_rows, kStreamAheadBytes);
  }
  if (packed) {
    const int64_t panel_bytes = k.panel_rows * w.row_bytes;
    for (int64_t p = p_begin; p < p_end; ++p) {
      const int64_t r_begin = p * k.panel_rows;
      // The task's next panel, whole (its bytes as panel_rows rows), if any.
      const internal::PanelPrefetch next{w.data + (p + 1) * panel_bytes, p + 1 < p_end ? k.panel_rows : 0,
                                         w.row_bytes, kStreamAheadBytes};
      k.panel_matmul(w.data + p * panel_bytes, w.n_cols, std::min(k.panel_rows, w.n_rows - r_begin), acts, n_tokens,
                     y + r_begin, w.n_rows, next);
    }
    return;
  }
  thread_local ScratchBuffer panel_scratch;  // the running thread's
  uint8_t* panel = panel_scratch.Get(k.panel_bytes(w.n_cols));
  for (int64_t p = p_begin; p < p_end; ++p) {
    const int64_t r_begin = p * k.panel_rows;
    const int64_t next_begin = r_begin + k.panel_rows;
    const internal::PanelPrefetch next{w.data + next_begin * w.row_bytes,
                                       p + 1 < p_end ? std::min(k.panel_rows, w.n_rows - next_begin) : 0,
                                       w.row_bytes};
    k.pack_panel(w, r_begin, panel);
    k.panel_matmul(panel, w.n_cols, std::min(k.panel_rows, w.n_rows - r_begin), acts, n_tokens, y + r_begin,
                   w.n_rows, next);
  }
}

double PanelsFlops(const MatView& w, int64_t n_tokens) {
  return 2.0 * static_cast<double>(w.n_rows) * static_cast<double>(w.n_cols) * static_cast<double>(n_tokens);
}

// Whether a panels-path call is too small to wake the pool for: few products,
// and for repacked weights (decode reads them too) few bytes.
bool PanelsInline(const MatView& w, bool packed, int64_t n_tokens) {
  return PanelsFlops(w, n_tokens) <= kInlinePanelFlops && (!packed || w.n_rows * w.row_bytes <= kInlineRowsBytes);
}

// Panels per task: small batches take kTasksPerThread tasks per thread, each
// a run of panels that prefetch one another. From 128 tokens on the products
// outweigh the reads (prefill): one panel per task, so that a slow thread
// does not hold up the others.
int64_t PanelsPerTask(int64_t n_panels, int64_t n_tokens, int n_threads) {
  return n_tokens >= 128 ? 1 : std::max<int64_t>(1, n_panels / (kTasksPerThread * n_threads));
}

void PanelsPath(const TypeKernels& k, const MatView& w, bool packed, const ActView& acts, int64_t n_tokens, float* y,
                ThreadPool& pool) {
  const int64_t n_panels = CeilDiv(w.n_rows, k.panel_rows);
  if (PanelsInline(w, packed, n_tokens)) return PanelsTask(k, w, packed, acts, n_tokens, 0, n_panels, y);
  const int64_t per_task = PanelsPerTask(n_panels, n_tokens, pool.n_threads());
  pool.ParallelFor(CeilDiv(n_panels, per_task), [&](int64_t task, int) {
    PanelsTask(k, w, packed, acts, n_tokens, task * per_task, std::min(n_panels, (task + 1) * per_task), y);
  });
}

// MatMul of repacked weights under an ISA without weight-panel kernels (a
// test that switched ISA after loading): the file's rows back, then MatMul.
void MatMulUnpacked(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  thread_local ScratchBuffer rows_scratch;
  WeightMatrix rows = w;
  rows.panels = false;
  uint8_t* bytes = rows_scratch.Get(w.n_rows * w.row_bytes);
  UnpackPanels(w, 0, w.n_rows, bytes);
  rows.data = bytes;
  MatMul(rows, x, n_tokens, y, pool);
}

// One job of a MatMulGroup call, its activations prepared: tasks
// [first_task, first_task + n_tasks) of the group's ParallelFor, each
// `per_task` rows (rows path) or panels (panels path).
struct GroupJob {
  const TypeKernels* k;
  MatView w;
  bool packed;  // repacked weights (panels path)
  ActView acts;
  int64_t n_tokens;
  float* y;
  bool panels;
  int64_t per_task;
  int64_t first_task;

  void RunTask(int64_t task) const {
    const int64_t begin = (task - first_task) * per_task;
    if (panels) {
      PanelsTask(*k, w, packed, acts, n_tokens, begin, std::min(CeilDiv(w.n_rows, k->panel_rows), begin + per_task),
                 y);
    } else {
      RowsTask(*k, w, acts, n_tokens, begin, std::min(w.n_rows, begin + per_task), y);
    }
  }
};

// Prepared activations for the jobs of one MatMulGroup call: jobs that
// read the same x with the same preparation (gate and up, Q/K/V) share one
// quantization, and jobs that gather rows of one x (a mixture's experts)
// take copies of one quantization of all of x's rows: qwen3-moe routes each
// token to 8 experts and had quantized its row 8 times. Get only reserves an
// entry's buffer; PrepareAll then prepares every entry in one pass over all
// their tokens, so that a group of many small calls (a mixture's experts,
// ~16 tokens each) does not prepare them one call at a time on the calling
// thread while the pool waits (qwen3-30b-a3b-4l pp256 on a Zen 5: the idle
// pool's samples 286 -> 207, 1.00-1.04 x overall). Per calling thread,
// reused across calls.
class GroupActs {
 public:
  // The activations of a job: its own rows of x (rows == nullptr), or rows
  // rows[t] of x [x_tokens, n_cols].
  ActView Get(const internal::ActPrep& prep, const float* x, int64_t n_cols, int64_t n_tokens, const int64_t* rows,
              int64_t x_tokens) {
    if (prep.row_bytes == nullptr) {  // the float rows themselves
      if (rows == nullptr) return ActView{reinterpret_cast<const uint8_t*>(x), n_cols * 4};
      return entries_[Reserve(x, nullptr, n_cols, n_tokens, n_cols * 4, rows, kNone)].view;
    }
    const int64_t row_bytes = prep.row_bytes(n_cols);
    const size_t all =
        Reserve(x, prep.prepare, n_cols, rows == nullptr ? n_tokens : x_tokens, row_bytes, nullptr, kNone);
    if (rows == nullptr) return entries_[all].view;
    return entries_[Reserve(x, prep.prepare, n_cols, n_tokens, row_bytes, rows, all)].view;
  }

  // Fills what Get reserved: on the calling thread when it is small, else one
  // ParallelFor. A task prepares one row of an entry that is not a gather and
  // copies it to every gather of that row while it is in the core's cache, or
  // copies one float row of a gather of x itself. qwen3-30b-a3b-4l Q4_K pp256
  // on a Zen 5 (perf, same runs): PrepareActRow 1611 -> 432 samples, memcpy
  // 256 -> 820: the copies run far below memcpy's speed from cache, probably
  // because both cores' tiles read each destination last (not measured).
  void PrepareAll(ThreadPool& pool) {
    picked_.clear();
    first_task_.assign(1, 0);
    int64_t elems = 0;
    for (size_t i = 0; i < used_; ++i) {
      Entry& e = entries_[i];
      elems += e.n_tokens * e.n_cols;
      e.first_task = -1;
      if (e.source_entry != kNone) continue;  // a gather of prepared rows: copied in its source's tasks
      e.first_task = first_task_.back();
      picked_.push_back(i);
      first_task_.push_back(first_task_.back() + e.n_tokens);
    }
    const int64_t n_tasks = first_task_.back();
    IndexCopies(n_tasks);
    auto run = [this](int64_t task) {
      const size_t k =
          static_cast<size_t>(std::upper_bound(first_task_.begin(), first_task_.end(), task) - first_task_.begin() - 1);
      const Entry& e = entries_[picked_[k]];
      const int64_t t = task - first_task_[k], stride = e.view.row_stride;
      uint8_t* row = e.dst + t * stride;
      if (e.rows == nullptr) {
        e.prepare(e.x + t * e.n_cols, e.n_cols, row);
      } else {
        std::memcpy(row, reinterpret_cast<const uint8_t*>(e.x + e.rows[t] * e.n_cols), static_cast<size_t>(stride));
      }
      for (int64_t c = copies_first_[static_cast<size_t>(task)]; c < copies_first_[static_cast<size_t>(task) + 1];
           ++c) {
        const Copy& copy = copies_[static_cast<size_t>(c)];
        std::memcpy(entries_[copy.entry].dst + copy.token * stride, row, static_cast<size_t>(stride));
      }
    };
    if (elems <= kInlinePrepareElems) {
      for (int64_t task = 0; task < n_tasks; ++task) run(task);
    } else {
      pool.ParallelFor(n_tasks, [&](int64_t task, int) { run(task); });
    }
  }

  void Reset() { used_ = 0; }

 private:
  static constexpr size_t kNone = static_cast<size_t>(-1);

  struct Entry {
    std::unique_ptr<ScratchBuffer> buffer = std::make_unique<ScratchBuffer>();
    const float* x = nullptr;
    void (*prepare)(const float*, int64_t, uint8_t*) = nullptr;  // nullptr: a gather of float rows
    int64_t n_cols = 0, n_tokens = 0;
    const int64_t* rows = nullptr;  // a gather: token t is row rows[t] of x
    size_t source_entry = kNone;    // a gather of prepared rows: the entry that prepares all of x
    uint8_t* dst = nullptr;         // the prepared rows, view.data
    ActView view{nullptr, 0};
    int64_t first_task = -1;  // PrepareAll's task of token 0, if the entry has tasks
  };
  struct Copy {
    size_t entry;
    int64_t token;
  };

  // copies_[copies_first_[task], copies_first_[task + 1]): the (entry, token)
  // rows of gathers that copy task's row.
  void IndexCopies(int64_t n_tasks) {
    copies_first_.assign(static_cast<size_t>(n_tasks + 1), 0);
    for (int pass = 0; pass < 2; ++pass) {  // count, then place
      for (size_t i = 0; i < used_; ++i) {
        const Entry& e = entries_[i];
        if (e.source_entry == kNone) continue;
        for (int64_t t = 0; t < e.n_tokens; ++t) {
          const size_t task = static_cast<size_t>(entries_[e.source_entry].first_task + e.rows[t]);
          if (pass == 0) {
            ++copies_first_[task + 1];
          } else {
            copies_[static_cast<size_t>(fill_[task]++)] = {i, t};
          }
        }
      }
      if (pass == 0) {
        for (size_t t = 0; t < static_cast<size_t>(n_tasks); ++t) copies_first_[t + 1] += copies_first_[t];
        copies_.resize(static_cast<size_t>(copies_first_.back()));
        fill_.assign(copies_first_.begin(), copies_first_.end() - 1);
      }
    }
  }

  // The entry for these activations, a new one if no job asked for them yet.
  size_t Reserve(const float* x, void (*prepare)(const float*, int64_t, uint8_t*), int64_t n_cols, int64_t n_tokens,
                 int64_t row_bytes, const int64_t* rows, size_t source_entry) {
    for (size_t i = 0; i < used_; ++i) {
      const Entry& e = entries_[i];
      if (e.x == x && e.prepare == prepare && e.n_cols == n_cols && e.n_tokens == n_tokens && e.rows == rows) return i;
    }
    if (used_ == entries_.size()) entries_.emplace_back();
    Entry& e = entries_[used_];
    e.x = x;
    e.prepare = prepare;
    e.n_cols = n_cols;
    e.n_tokens = n_tokens;
    e.rows = rows;
    e.source_entry = source_entry;
    e.dst = e.buffer->Get(row_bytes * n_tokens);
    e.view = ActView{e.dst, row_bytes};
    return used_++;
  }

  std::vector<Entry> entries_;
  size_t used_ = 0;
  std::vector<size_t> picked_;       // the entries with tasks, in order
  std::vector<int64_t> first_task_;  // picked_[k]'s tokens are tasks [first_task_[k], first_task_[k + 1])
  std::vector<int64_t> copies_first_, fill_;
  std::vector<Copy> copies_;
};

// A gathered job's float rows for the scalar reference: its own copy, reused.
const float* GatheredFloats(const MatMulJob& job, int64_t n_cols) {
  if (job.rows == nullptr) return job.x;
  thread_local std::vector<float> gathered;
  gathered.resize(static_cast<size_t>(job.n_tokens * n_cols));
  for (int64_t t = 0; t < job.n_tokens; ++t)
    std::copy_n(job.x + job.rows[t] * n_cols, n_cols, gathered.data() + t * n_cols);
  return gathered.data();
}

}  // namespace

void MatMul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  const GgmlTypeTraits& traits = TraitsOf(w.type);
  RIDGE_CHECK(traits.can_dequantize);
  RIDGE_CHECK(w.n_rows >= 0 && w.n_cols >= 0 && n_tokens >= 0);
  RIDGE_CHECK(w.n_cols % traits.block_elems == 0);
  RIDGE_CHECK(w.row_bytes >= RowBytes(w.type, w.n_cols));
  if (w.n_rows == 0 || n_tokens == 0) return;
  if (w.panels) {
    const TypeKernels* k = internal::ActiveWeightPanelKernels(w.type);
    if (k == nullptr) return MatMulUnpacked(w, x, n_tokens, y, pool);
    const MatView view{w.data, w.n_rows, w.n_cols, w.row_bytes};
    return PanelsPath(*k, view, true, PrepareActivations(k->panel_acts, x, w.n_cols, n_tokens, pool), n_tokens, y,
                      pool);
  }
  const TypeKernels* k = FindKernels(ActiveIsa(), w.type);
  if (k == nullptr || w.n_cols == 0) return scalar::MatMul(w, x, n_tokens, y, pool);

  const MatView view{w.data, w.n_rows, w.n_cols, w.row_bytes};
  if (k->panel_matmul != nullptr && n_tokens >= k->panel_min_tokens) {
    PanelsPath(*k, view, false, PrepareActivations(k->panel_acts, x, w.n_cols, n_tokens, pool), n_tokens, y, pool);
  } else {
    RowsPath(*k, view, PrepareActivations(k->row_acts, x, w.n_cols, n_tokens, pool), n_tokens, y, pool);
  }
}

void MatMulGroup(std::span<const MatMulJob> jobs, ThreadPool& pool) {
  // Every job's tasks share one ParallelFor; only those the scalar reference
  // takes run one by one. The state below is the calling thread's, named
  // through references: the workers running run_task must see it, not their
  // own thread_local copies.
  thread_local GroupActs caller_acts;
  thread_local std::vector<GroupJob> caller_jobs;
  GroupActs& group_acts = caller_acts;
  std::vector<GroupJob>& group_jobs = caller_jobs;
  group_acts.Reset();
  group_jobs.clear();
  int64_t n_tasks = 0, rows_bytes = 0;
  double panels_flops = 0;
  for (const MatMulJob& job : jobs) {
    const WeightMatrix& w = *job.w;
    if (job.rows != nullptr)
      for (int64_t t = 0; t < job.n_tokens; ++t) RIDGE_CHECK(job.rows[t] >= 0 && job.rows[t] < job.x_tokens);
    const TypeKernels* k = w.n_cols == 0 || w.n_rows == 0 || job.n_tokens == 0 ? nullptr
                           : w.panels ? internal::ActiveWeightPanelKernels(w.type)
                                      : FindKernels(ActiveIsa(), w.type);
    if (k == nullptr) {
      MatMul(w, GatheredFloats(job, w.n_cols), job.n_tokens, job.y, pool);
      continue;
    }
    RIDGE_CHECK(TraitsOf(w.type).can_dequantize && w.n_cols % TraitsOf(w.type).block_elems == 0);
    RIDGE_CHECK(w.row_bytes >= RowBytes(w.type, w.n_cols));
    const MatView view{w.data, w.n_rows, w.n_cols, w.row_bytes};
    if (w.panels || (k->panel_matmul != nullptr && job.n_tokens >= k->panel_min_tokens)) {
      const ActView acts = group_acts.Get(k->panel_acts, job.x, w.n_cols, job.n_tokens, job.rows, job.x_tokens);
      const int64_t n_panels = CeilDiv(w.n_rows, k->panel_rows);
      const int64_t per_task = PanelsPerTask(n_panels, job.n_tokens, pool.n_threads());
      group_jobs.push_back({k, view, w.panels, acts, job.n_tokens, job.y, true, per_task, n_tasks});
      n_tasks += CeilDiv(n_panels, per_task);
      panels_flops += PanelsFlops(view, job.n_tokens);
      if (w.panels) rows_bytes += w.n_rows * w.row_bytes;
    } else {
      const ActView acts = group_acts.Get(k->row_acts, job.x, w.n_cols, job.n_tokens, job.rows, job.x_tokens);
      const int64_t chunk_rows = RowsChunk(*k, view, job.n_tokens, pool.n_threads());
      group_jobs.push_back({k, view, false, acts, job.n_tokens, job.y, false, chunk_rows, n_tasks});
      n_tasks += CeilDiv(w.n_rows, chunk_rows);
      rows_bytes += w.n_rows * w.row_bytes * CeilDiv(job.n_tokens, k->max_row_tokens);
    }
  }
  if (group_jobs.empty()) return;
  group_acts.PrepareAll(pool);
  auto run_task = [&](int64_t task, int) {
    // The job holding this task: the last whose first task is <= task.
    const auto it = std::upper_bound(group_jobs.begin(), group_jobs.end(), task,
                                     [](int64_t t, const GroupJob& j) { return t < j.first_task; });
    (it - 1)->RunTask(task);
  };
  if (rows_bytes <= kInlineRowsBytes && panels_flops <= kInlinePanelFlops) {
    for (int64_t task = 0; task < n_tasks; ++task) run_task(task, 0);
  } else {
    pool.ParallelFor(n_tasks, run_task);
  }
}

namespace internal {

TokenTiles EvenTokenTiles(int64_t n_tokens, int64_t max_tile) {
  RIDGE_CHECK(n_tokens >= 0 && max_tile >= 1);
  const int64_t n_tiles = CeilDiv(n_tokens, max_tile);
  if (n_tiles == 0) return {0, 0, 0};
  return {n_tiles, n_tokens / n_tiles, n_tokens % n_tiles};
}

int64_t TokenTiles::TileSize(int64_t k) const { return base + (k < n_big ? 1 : 0); }

TilePrefetch PrefetchSlice(const PanelPrefetch& next, int64_t n_blocks, int64_t k, int64_t n_tiles) {
  TilePrefetch pf;
  pf.ahead = k == 0 ? next.stream_ahead_bytes : 0;
  if (next.n_rows == 0) return pf;
  const int64_t parts = CeilDiv(n_tiles, next.n_rows);  // pieces a row
  const int64_t piece_bytes = next.row_bytes / parts;
  pf.step = CeilDiv(piece_bytes, n_blocks);
  pf.lines = static_cast<int>(CeilDiv(pf.step, 64));
  for (int64_t i = k; i < next.n_rows * parts && pf.n < TilePrefetch::kMaxPieces; i += n_tiles)
    pf.pieces[pf.n++] = next.first + (i / parts) * next.row_bytes + (i % parts) * piece_bytes;
  return pf;
}

}  // namespace internal

}  // namespace ridge::kernels
