#pragma once
// The stories260K model and its tokenizer, loaded once per test suite, for
// engine tests; with the engine options they share and the check that every
// KV block came back.
#include <gtest/gtest.h>

#include "ridge/engine/engine.h"
#include "stories_model.h"

namespace ridge {

class StoriesEngineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = Model::Load(testing::Stories260kGguf()).release();
    tokenizer_ = new Tokenizer(Tokenizer::FromGguf(model_->file()));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete model_;
  }

  // Two threads, an F32 KV cache of 4096 tokens in blocks of 8.
  static EngineOptions F32Options() {
    EngineOptions o;
    o.n_threads = 2;
    o.kv_type = GgmlType::kF32;
    o.kv_block_tokens = 8;
    o.kv_tokens = 4096;
    return o;
  }

  static void ExpectPoolEmpty(const Engine& engine) {
    EngineStats s = engine.Stats();
    EXPECT_EQ(s.running, 0);
    EXPECT_EQ(s.waiting, 0);
    EXPECT_EQ(s.kv.blocks_used, 0);
    EXPECT_EQ(s.kv.blocks_free, s.kv.blocks_total);
    EXPECT_EQ(s.kv.sequences, 0);
  }

  inline static Model* model_ = nullptr;
  inline static Tokenizer* tokenizer_ = nullptr;
};

}  // namespace ridge
