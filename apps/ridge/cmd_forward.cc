// ridge forward: what exactly the model computes. Prefills the given token ids
// in one batch, then decodes greedily one token per step, and writes the
// logits of every step, so that another implementation (tests/reference) can
// be held to the same numbers.
//   stdout: {"n_vocab":V,"tokens":[...]}   the token chosen at each step
//   --logits-out F: float32 [steps, n_vocab], row i = the logits that chose token i
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/command.h"
#include "ridge/model/model.h"

namespace ridge::app {
namespace {

struct ForwardArgs {
  std::string model_path;
  std::vector<TokenId> tokens;
  int64_t steps = 32;
  std::string logits_out;
  int threads = 0;
  std::string kv_type = "f32";
};

// The first index of the largest logit (ties: the lowest id, as numpy's argmax).
TokenId Greedy(const std::vector<float>& logits) {
  return static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

int RunForward(const ForwardArgs& a) {
  // The weights as run, bench and serve hold them (a private copy, repacked at
  // load where the ISA's kernels want it), so that the reference suite
  // compares the layout those commands compute with.
  auto model = Model::Load(a.model_path, FileBacking::kHugePageMemory);
  const ModelConfig& config = model->config();
  const auto kv_type = ParseGgmlType(a.kv_type);
  if (!kv_type) Fail("--kv-type: unknown type '{}'", a.kv_type);
  const int64_t n_prompt = static_cast<int64_t>(a.tokens.size());
  // The token chosen at the last step is not fed back: n_prompt + steps - 1 positions.
  const int64_t n_positions = n_prompt + a.steps - 1;
  if (n_positions > config.n_ctx_train)
    Fail("{} tokens and {} steps need {} positions but the model's context holds {}", n_prompt, a.steps,
         n_positions, config.n_ctx_train);

  std::FILE* out = std::fopen(a.logits_out.c_str(), "wb");
  if (!out) Fail("cannot write {}", a.logits_out);
  const KvCacheShape shape = model->KvShape(*kv_type, 16);
  PagedKvCache cache(shape, (n_positions + shape.block_tokens - 1) / shape.block_tokens);
  const SeqId seq = 0;
  RIDGE_CHECK(cache.Reserve(seq, n_positions));
  ThreadPool pool(a.threads > 0 ? a.threads : HardwareThreads());
  std::vector<float> logits(static_cast<size_t>(config.n_vocab));
  std::vector<TokenId> chosen;

  Batch batch;
  for (int64_t i = 0; i < n_prompt; ++i) batch.Add(a.tokens[static_cast<size_t>(i)], i, seq, i == n_prompt - 1);
  for (int64_t step = 0; step < a.steps; ++step) {
    model->Forward(batch, cache, logits.data(), pool);
    const int64_t position = n_prompt + step;
    cache.SetStoredTokens(seq, position);
    if (std::fwrite(logits.data(), sizeof(float), logits.size(), out) != logits.size())
      Fail("cannot write {}", a.logits_out);
    chosen.push_back(Greedy(logits));
    batch.Clear();
    batch.Add(chosen.back(), position, seq, true);
  }
  if (std::fclose(out) != 0) Fail("cannot write {}", a.logits_out);

  std::string ids;
  for (size_t i = 0; i < chosen.size(); ++i) ids += (i ? "," : "") + std::to_string(chosen[i]);
  std::printf("{\"n_vocab\":%lld,\"tokens\":[%s]}\n", static_cast<long long>(config.n_vocab), ids.c_str());
  return 0;
}

CommandRegistration kForward{{"forward", "Greedy-decode from token ids and write the logits of every step",
  [](CLI::App& sub) -> std::function<int()> {
    auto a = std::make_shared<ForwardArgs>();
    sub.add_option("-m,--model", a->model_path, "GGUF model file")->required();
    sub.add_option("--tokens", a->tokens, "prompt token ids, comma-separated (e.g. 1,2,3)")
        ->required()
        ->delimiter(',');
    sub.add_option("-n,--steps", a->steps, "tokens to decode greedily (rows of logits)")->check(CLI::PositiveNumber);
    sub.add_option("--logits-out", a->logits_out, "file for the logits: float32 [steps, n_vocab], little-endian")
        ->required();
    sub.add_option("-t,--threads", a->threads, "threads (default: all hardware threads)");
    sub.add_option("--kv-type", a->kv_type, "KV cache element type: f32 (default: exact), f16, bf16, q8_0");
    return [a] { return RunForward(*a); };
  }}};

}  // namespace
}  // namespace ridge::app
