#include "ridge/mpi/split_bench.h"

#include <algorithm>

#include "ridge/base/clock.h"
#include "ridge/base/error.h"
#include "ridge/model/model_partition.h"

namespace ridge::mpi {
namespace {

constexpr int kProbeTag = 7;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Rank 0 ↔ 1 round trips of `bytes`, median seconds.
double RoundTrip(Communicator& comm, int64_t bytes, int repetitions) {
  std::vector<uint8_t> buffer(static_cast<size_t>(bytes));
  std::vector<double> seconds;
  for (int r = 0; r <= repetitions; ++r) {
    const Clock::time_point start = Clock::now();
    if (comm.rank() == 0) {
      comm.Send(buffer.data(), bytes, 1, kProbeTag);
      comm.Recv(buffer.data(), bytes, 1, kProbeTag);
    } else if (comm.rank() == 1) {
      comm.Recv(buffer.data(), bytes, 0, kProbeTag);
      comm.Send(buffer.data(), bytes, 0, kProbeTag);
    }
    if (r > 0) seconds.push_back(SecondsSince(start));
  }
  return Median(seconds);
}

// What rank 0's messages of one forward pass over `tokens` tokens (`logits`
// rows) should take on the measured link: each message a latency, each byte
// at the bandwidth (messages to different ranks taken as serial on rank 0's link).
double PredictCommSeconds(const Model& model, const LinkMeasurement& link, int64_t tokens, int64_t logits) {
  const ModelConfig& c = model.config();
  const ModelPartition& p = model.partition();
  const double n = p.n_ranks, activation = static_cast<double>(tokens * c.n_embd) * 4;
  const double broadcast = 2 * link.latency_s;    // the step's length, then its words
  if (p.kind == ModelPartition::Kind::kPipeline)  // the residual stream to rank 1, the logits back
    return broadcast + 2 * link.latency_s +
           (activation + static_cast<double>(logits * c.n_vocab) * 4) / link.bytes_per_s;
  const double all_reduces =
      2.0 * static_cast<double>(c.n_layers) * (link.latency_s + (n - 1) * activation / link.bytes_per_s);
  const double gather = link.latency_s + (n - 1) / n * static_cast<double>(logits * c.n_vocab) * 4 / link.bytes_per_s;
  return broadcast + all_reduces + gather;
}

}  // namespace

LinkMeasurement MeasureLink(Communicator& comm) {
  LinkMeasurement m;
  if (comm.size() < 2) return m;
  const double small = RoundTrip(comm, 4, 200);
  constexpr int64_t kLargeBytes = int64_t{4} << 20;
  const double large = RoundTrip(comm, kLargeBytes, 10);
  double result[2] = {small / 2, static_cast<double>(kLargeBytes) / std::max(large / 2 - small / 2, 1e-9)};
  comm.Broadcast(result, sizeof result, 0);
  m.latency_s = result[0];
  m.bytes_per_s = result[1];
  return m;
}

std::vector<SplitBenchFigure> BenchSplit(Model& model, ThreadPool& pool, MpiLink& link, const LinkMeasurement& measured,
                                         int64_t n_prompt, int64_t n_gen, GgmlType kv_type, int repetitions) {
  const ModelConfig& c = model.config();
  if (n_prompt < 1 || n_gen < 1 || n_prompt + n_gen > c.n_ctx_train)
    Fail("pp{} + tg{} does not fit the model's context of {} tokens", n_prompt, n_gen, c.n_ctx_train);
  const KvCacheShape shape = model.KvShape(kv_type, 16);
  std::vector<float> logits(static_cast<size_t>(c.n_vocab));
  struct Totals {
    double seconds = 0, comm_s = 0, predicted_s = 0, sent = 0;
    int64_t steps = 0, tokens = 0;
  } pp, tg;
  for (int r = 0; r <= repetitions; ++r) {  // r == 0: warm-up
    PagedKvCache cache(shape, (n_prompt + n_gen + 15) / 16);
    RIDGE_CHECK(cache.Reserve(0, n_prompt + n_gen));
    auto pass = [&](const Batch& batch, Totals& t) {
      const double comm_before = link.comm().comm_seconds();
      const int64_t sent_before = link.comm().bytes_sent();
      const Clock::time_point start = Clock::now();
      model.Forward(batch, cache, logits.data(), pool);
      if (r == 0) return;
      t.seconds += SecondsSince(start);
      t.comm_s += link.comm().comm_seconds() - comm_before;
      t.sent += static_cast<double>(link.comm().bytes_sent() - sent_before);
      t.predicted_s += PredictCommSeconds(model, measured, batch.size(), 1);
      t.steps += 1;
      t.tokens += batch.size();
    };
    Batch batch;
    for (int64_t i = 0; i < n_prompt; ++i)
      batch.Add(static_cast<TokenId>(1 + i * 7 % (c.n_vocab - 1)), i, 0, i == n_prompt - 1);
    pass(batch, pp);
    cache.SetStoredTokens(0, n_prompt);
    for (int64_t i = 0; i < n_gen; ++i) {
      batch.Clear();
      batch.Add(static_cast<TokenId>(1 + i * 13 % (c.n_vocab - 1)), n_prompt + i, 0, true);
      pass(batch, tg);
      cache.SetStoredTokens(0, n_prompt + i + 1);
    }
    cache.Free(0);
  }
  const ModelPartition& p = model.partition();
  auto figure = [&](const std::string& test, const Totals& t) {
    SplitBenchFigure f;
    f.test = test;
    f.tokens_per_s = static_cast<double>(t.tokens) / t.seconds;
    f.step_ms = 1e3 * t.seconds / static_cast<double>(t.steps);
    f.comm_ms_per_step = 1e3 * t.comm_s / static_cast<double>(t.steps);
    f.predicted_comm_ms_per_step = 1e3 * t.predicted_s / static_cast<double>(t.steps);
    f.sent_bytes_per_step = t.sent / static_cast<double>(t.steps);
    if (p.kind == ModelPartition::Kind::kTensor) {
      const double n = p.n_ranks, tokens = static_cast<double>(t.tokens) / static_cast<double>(t.steps);
      f.ring_bytes_per_step =
          tokens * static_cast<double>(c.n_layers) * 2 * (2 * (n - 1) / n * static_cast<double>(c.n_embd) * 4);
    }
    return f;
  };
  return {figure(fmt::format("pp{}", n_prompt), pp), figure(fmt::format("tg{}", n_gen), tg)};
}

std::string FormatSplitBench(const Model& model, const LinkMeasurement& measured,
                             const std::vector<SplitBenchFigure>& figures, int n_threads) {
  const ModelPartition& p = model.partition();
  std::string out = fmt::format(
      "{} {} ranks, {} threads each; link rank 0 <-> 1 measured in this run: {:.1f} us latency, {:.2f} GB/s\n\n",
      p.kind == ModelPartition::Kind::kTensor ? "tensor parallel over" : "pipeline parallel over", p.n_ranks, n_threads,
      1e6 * measured.latency_s, measured.bytes_per_s / 1e9);
  out +=
      "| test | tokens/s | step ms | comm ms/step (rank 0, measured) | comm ms/step (predicted) | comm share | "
      "bytes sent/step (rank 0) | ring all-reduce bytes/step (roofline) |\n";
  out += "|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const SplitBenchFigure& f : figures)
    out += fmt::format("| {} | {:.1f} | {:.3f} | {:.3f} | {:.3f} | {:.0f}% | {:.0f} | {:.0f} |\n", f.test,
                       f.tokens_per_s, f.step_ms, f.comm_ms_per_step, f.predicted_comm_ms_per_step,
                       100 * f.comm_ms_per_step / f.step_ms, f.sent_bytes_per_step, f.ring_bytes_per_step);
  if (p.kind == ModelPartition::Kind::kPipeline)
    out +=
        "\nrank 0's communication time includes waiting for the later stages' layers (micro-batches overlap "
        "the stages only in steps of 2 x 32 tokens or more, or as --pp-micro-batches says).\n";
  else
    out += "\nrank 0's communication time includes waiting for the slowest rank at each all-reduce.\n";
  return out;
}

}  // namespace ridge::mpi
