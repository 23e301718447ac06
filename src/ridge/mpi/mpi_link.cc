#include "ridge/mpi/mpi_link.h"

#include <algorithm>
#include <utility>

#include "ridge/base/error.h"

namespace ridge::mpi {
namespace {

constexpr int kActivationTag = 2;
constexpr int kLogitsTag = 3;
constexpr size_t kHeaderWords = 5;
constexpr int64_t kKeepAliveLength = -1;  // a length broadcast alone: rank 0 is alive, no step

}  // namespace

std::vector<int64_t> EncodeStep(const Batch& batch, const PagedKvCache& cache) {
  std::vector<SeqId> seqs(batch.seq_ids.begin(), batch.seq_ids.end());
  std::sort(seqs.begin(), seqs.end());
  seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
  const KvCacheShape& shape = cache.shape();
  std::vector<int64_t> w = {static_cast<int64_t>(shape.type), shape.block_tokens, cache.n_blocks(), batch.size(),
                            static_cast<int64_t>(seqs.size())};
  w.insert(w.end(), batch.tokens.begin(), batch.tokens.end());
  w.insert(w.end(), batch.positions.begin(), batch.positions.end());
  w.insert(w.end(), batch.seq_ids.begin(), batch.seq_ids.end());
  w.insert(w.end(), batch.want_logits.begin(), batch.want_logits.end());
  for (SeqId seq : seqs) {
    std::span<const BlockId> table = cache.BlockTable(seq);
    w.push_back(seq);
    w.push_back(static_cast<int64_t>(table.size()));
    w.insert(w.end(), table.begin(), table.end());
  }
  return w;
}

StepMessage DecodeStep(std::span<const int64_t> w) {
  auto fail = [] { Fail("a step message from rank 0 is cut short or malformed"); };
  if (w.size() < kHeaderWords) fail();
  StepMessage m;
  m.kv_type = static_cast<GgmlType>(w[0]);
  m.kv_block_tokens = w[1];
  m.kv_blocks = w[2];
  const int64_t n = w[3], n_tables = w[4];
  if (n < 0 || n_tables < 0 || w.size() < kHeaderWords + 4 * static_cast<size_t>(n)) fail();
  size_t at = kHeaderWords;
  for (int64_t t = 0; t < n; ++t) {
    const auto i = static_cast<size_t>(t), un = static_cast<size_t>(n);
    m.batch.Add(static_cast<TokenId>(w[at + i]), w[at + un + i], w[at + 2 * un + i], w[at + 3 * un + i] != 0);
  }
  at += 4 * static_cast<size_t>(n);
  for (int64_t s = 0; s < n_tables; ++s) {
    if (at + 2 > w.size()) fail();
    const SeqId seq = w[at];
    const auto len = static_cast<size_t>(w[at + 1]);
    at += 2;
    if (w[at - 1] < 0 || at + len > w.size()) fail();
    m.tables.emplace_back(seq, std::vector<BlockId>(w.begin() + static_cast<ptrdiff_t>(at),
                                                    w.begin() + static_cast<ptrdiff_t>(at + len)));
    at += len;
  }
  if (at != w.size()) fail();
  return m;
}

MpiLink::MpiLink(Communicator& comm)
    : comm_(comm),
      keep_alive_interval_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(comm.timeout_seconds() / 4))),
      last_sent_(std::chrono::steady_clock::now()) {}

void MpiLink::BroadcastWords(std::vector<int64_t>& words) {
  for (;;) {
    int64_t length = static_cast<int64_t>(words.size());
    comm_.Broadcast(&length, sizeof length, 0);
    if (comm_.rank() == 0) last_sent_ = std::chrono::steady_clock::now();
    if (length == kKeepAliveLength) {  // a follower's wait starts again
      ++keep_alives_;
      continue;
    }
    if (length < 0) throw LinkError(fmt::format("a step message from rank 0 has a length of {} words", length));
    words.resize(static_cast<size_t>(length));
    if (length > 0) comm_.Broadcast(words.data(), length * static_cast<int64_t>(sizeof(int64_t)), 0);
    return;
  }
}

MpiLink::~MpiLink() {
  background_stop_ = true;
  if (background_.joinable()) background_.join();
}

void MpiLink::KeepAliveInBackground() {
  RIDGE_CHECK(!background_.joinable());
  background_stop_ = false;
  background_ = std::thread([this] {
    try {
      while (!background_stop_.load()) {
        SendKeepAliveIfDue();
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    } catch (...) {
      background_error_ = std::current_exception();
    }
  });
}

void MpiLink::EndBackgroundKeepAlive() {
  if (!background_.joinable()) return;
  background_stop_ = true;
  background_.join();
  if (background_error_) std::rethrow_exception(std::exchange(background_error_, nullptr));
}

void MpiLink::KeepAlive() {
  EndBackgroundKeepAlive();
  SendKeepAliveIfDue();
}

void MpiLink::SendKeepAliveIfDue() {
  if (std::chrono::steady_clock::now() - last_sent_ < keep_alive_interval_) return;
  int64_t length = kKeepAliveLength;
  comm_.Broadcast(&length, sizeof length, 0);
  last_sent_ = std::chrono::steady_clock::now();
  ++keep_alives_;
}

void MpiLink::ShareStep(const Batch& batch, const PagedKvCache& cache) {
  EndBackgroundKeepAlive();
  words_ = EncodeStep(batch, cache);
  BroadcastWords(words_);
  ++steps_;
}

void MpiLink::Finish() {
  EndBackgroundKeepAlive();
  words_.clear();
  BroadcastWords(words_);
}

std::optional<StepMessage> MpiLink::ReceiveStep() {
  BroadcastWords(words_);
  if (words_.empty()) return std::nullopt;
  ++steps_;
  return DecodeStep(words_);
}

void MpiLink::GatherColumns(const float* local, int64_t rows, std::span<const int64_t> cols, float* out) {
  const int rank = comm_.rank();
  if (rank != 0) {
    comm_.Send(local, rows * cols[static_cast<size_t>(rank)] * 4, 0, kLogitsTag);
    return;
  }
  int64_t total = 0;
  for (int64_t c : cols) total += c;
  int64_t first = 0;
  for (int r = 0; r < comm_.size(); ++r) {
    const int64_t n_cols = cols[static_cast<size_t>(r)];
    const float* part = local;
    if (r > 0) {
      gathered_.resize(static_cast<size_t>(rows * n_cols));
      comm_.Recv(gathered_.data(), rows * n_cols * 4, r, kLogitsTag);
      part = gathered_.data();
    }
    for (int64_t i = 0; i < rows; ++i) std::copy_n(part + i * n_cols, n_cols, out + i * total + first);
    first += n_cols;
  }
}

void MpiLink::Send(const float* data, int64_t n, int to_rank) {
  comm_.Send(data, n * 4, to_rank, to_rank == 0 ? kLogitsTag : kActivationTag);
}

void MpiLink::Recv(float* data, int64_t n, int from_rank) {
  comm_.Recv(data, n * 4, from_rank, comm_.rank() == 0 ? kLogitsTag : kActivationTag);
}

void MpiLink::StartRecv(float* data, int64_t n, int from_rank) {
  comm_.StartRecv(data, n * 4, from_rank, comm_.rank() == 0 ? kLogitsTag : kActivationTag);
}

}  // namespace ridge::mpi
