#include "ridge/mpi/split_job.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>

#include "ridge/base/error.h"
#include "ridge/kv/kv_formula.h"
#include "ridge/model/model_partition.h"

namespace ridge::mpi {
namespace {

// Test seam: RIDGE_TEST_MPI_FAULT=exit:STEP or hang:STEP makes the job's
// last rank exit (as a crash would) or stop answering when it receives step
// STEP (counted from 1).
struct InjectedFault {
  bool hang = false;
  int64_t step = -1;
};

InjectedFault ReadInjectedFault() {
  const char* env = std::getenv("RIDGE_TEST_MPI_FAULT");
  if (!env) return {};
  const std::string_view text(env);
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) Fail("RIDGE_TEST_MPI_FAULT: expected exit:STEP or hang:STEP, got '{}'", text);
  return {text.substr(0, colon) == "hang", std::atoll(env + colon + 1)};
}

void Inject(const InjectedFault& fault, int64_t step) {
  if (step != fault.step) return;
  std::fprintf(stderr, "ridge: test fault: this rank %s at step %lld\n", fault.hang ? "hangs" : "exits",
               static_cast<long long>(step));
  if (!fault.hang) std::_Exit(3);
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

// The follower's loop: one forward pass per step rank 0 shares, into a KV pool
// of rank 0's block count for this rank's heads or layers.
void Follow(Model& model, ThreadPool& pool, MpiLink& link, std::optional<PagedKvCache>& cache) {
  const InjectedFault fault = link.comm().rank() == link.comm().size() - 1 ? ReadInjectedFault() : InjectedFault{};
  while (std::optional<StepMessage> step = link.ReceiveStep()) {
    Inject(fault, link.steps());
    const KvCacheShape shape = model.KvShape(step->kv_type, step->kv_block_tokens);
    if (!cache || cache->n_blocks() != step->kv_blocks || cache->shape().type != shape.type ||
        cache->shape().block_tokens != shape.block_tokens)
      cache.emplace(shape, step->kv_blocks);
    for (const auto& [seq, blocks] : step->tables) cache->BorrowTable(seq, blocks);
    model.Forward(step->batch, *cache, nullptr, pool);
    cache->ClearBorrowedTables();
  }
}

void PrintReport(const Model& model, const MpiLink& link, GgmlType kv_type, const std::optional<PagedKvCache>& cache) {
  const ModelConfig& c = model.config();
  const ModelConfig& l = model.local_config();
  const ModelPartition& p = model.partition();
  const KvCacheShape shape = model.KvShape(cache ? cache->shape().type : kv_type, 16);
  const double per_token =
      KvBytesPerToken(shape.n_layers, shape.n_kv_heads, shape.head_dim, KvBytesPerElement(shape.type));
  const double whole = KvBytesPerToken(c.n_layers, c.n_kv_heads, c.head_dim, KvBytesPerElement(shape.type));
  const IndexRange layers = LayersOf(c, p);
  const std::string part = p.kind == ModelPartition::Kind::kTensor
                               ? fmt::format("heads {} of {}, KV heads {} of {}, vocabulary rows {} of {}", l.n_heads,
                                             c.n_heads, l.n_kv_heads, c.n_kv_heads, l.n_vocab, c.n_vocab)
                               : fmt::format("layers [{}, {}) of {}{}", layers.first, layers.end(), c.n_layers,
                                             p.rank == p.n_ranks - 1 ? " and the LM head" : "");
  const std::string held =
      cache ? fmt::format("pool {} blocks, {} sequences and {} blocks held at the end", cache->n_blocks(),
                          cache->Accounting().sequences, cache->Accounting().blocks_used)
            : "its KV caches are the scheduler's";
  std::fprintf(stderr,
               "ridge: rank %d of %d (%s): %s; weights held %lld bytes; KV %.0f bytes/token of the whole model's "
               "%.0f; %s; %lld steps and %lld keep-alives, %.1f ms communicating, %lld bytes sent\n",
               p.rank, p.n_ranks, SplitFlag(p.kind) + 2, part.c_str(),
               static_cast<long long>(model.weights().weight_bytes), per_token, whole, held.c_str(),
               static_cast<long long>(link.steps()), static_cast<long long>(link.keep_alives()),
               1e3 * link.comm().comm_seconds(),
               static_cast<long long>(link.comm().bytes_sent()));
}

}  // namespace

const char* SplitFlag(ModelPartition::Kind kind) { return kind == ModelPartition::Kind::kPipeline ? "--pp" : "--tp"; }

int RunSplit(const SplitOptions& o, const std::function<int(SplitRank& rank)>& lead) {
  Session session(nullptr, nullptr);
  std::optional<Communicator> comm;
  try {
    comm.emplace(o.timeout_seconds);
  } catch (const Error& e) {
    std::fprintf(stderr, "ridge: error: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  int status = 0;
  try {
    if (comm->size() != o.n_ranks)
      Fail("{} {} needs a job of exactly {} ranks (mpirun -np {} ridge ...); this one has {}", SplitFlag(o.kind),
           o.n_ranks, o.n_ranks, o.n_ranks, comm->size());
    const ModelPartition partition{o.kind, comm->rank(), o.n_ranks, o.micro_batches};
    std::unique_ptr<Model> model = Model::Load(o.model_path, FileBacking::kMapped, partition);
    MpiLink link(*comm);
    model->set_parallel_link(&link);
    const int threads = o.threads > 0 ? o.threads : std::max(1, HardwareThreads() / o.n_ranks);
    ThreadPool pool(threads);
    std::optional<PagedKvCache> cache;  // a follower's
    const LinkMeasurement measured = o.measure_link ? MeasureLink(*comm) : LinkMeasurement{};
    if (comm->rank() == 0) {
      SplitRank rank{*model, pool, link, measured};
      link.KeepAliveInBackground();  // while lead prepares its first step
      status = lead(rank);
      link.Finish();
    } else {
      std::fprintf(stderr, "ridge: rank %d of %d (pid %d) follows rank 0\n", comm->rank(), comm->size(),
                   static_cast<int>(getpid()));
      Follow(*model, pool, link, cache);
    }
    PrintReport(*model, link, o.kv_type, cache);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ridge: error: rank %d of %d: %s\n", comm->rank(), comm->size(), e.what());
    std::fflush(stderr);
    comm->Abort(1);
  }
  comm.reset();
  return status;
}

}  // namespace ridge::mpi
