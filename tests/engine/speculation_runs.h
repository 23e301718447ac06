#pragma once
// Running a set of requests through an engine to the end, for the
// speculative-decoding tests (prompt lookup and draft model): each request's
// tokens, the engine's final stats, and the check that both KV caches (the
// target's and a draft model's) gave every block back.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <vector>

#include "ridge/engine/engine.h"

namespace ridge {

// The tokens a stream has delivered so far, without waiting.
inline std::vector<TokenId> DrainNow(RequestStream& stream) {
  std::vector<TokenId> out;
  StreamUpdate update;
  while (stream.Wait(update, std::chrono::milliseconds(0)))
    for (auto& t : update.tokens) out.push_back(t.token);
  return out;
}

struct RunOutcome {
  std::vector<std::vector<TokenId>> outputs;
  EngineStats stats;
};

// Every request submitted at once and run to the end.
inline RunOutcome RunAll(Model& model, const Tokenizer& tokenizer, const EngineOptions& options,
                         const std::vector<RequestParams>& requests) {
  Engine engine(model, tokenizer, options);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const RequestParams& p : requests) streams.push_back(engine.Submit(p));
  engine.RunUntilIdle();
  RunOutcome outcome;
  for (auto& s : streams) {
    EXPECT_TRUE(s->finished());
    outcome.outputs.push_back(DrainNow(*s));
  }
  outcome.stats = engine.Stats();
  EXPECT_EQ(outcome.stats.kv.blocks_used, 0);
  EXPECT_EQ(outcome.stats.kv.sequences, 0);
  EXPECT_EQ(outcome.stats.draft_kv.blocks_used, 0);
  EXPECT_EQ(outcome.stats.draft_kv.sequences, 0);
  return outcome;
}

}  // namespace ridge
