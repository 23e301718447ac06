// Requests that end early, and the engine going on after them: several
// requests cancelled in the same step, a fault in the forward pass (ends its
// batch) or in sampling (ends its request) ending them with kError while the
// others finish and every KV block comes back, and the faults that stop the
// engine (repeated forward failures, running out of memory, a split model's
// LinkError) ending every request with an error instead of hanging or
// terminating.
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <thread>

#include "ridge/engine/engine.h"
#include "drained_stream.h"
#include "stories_engine_fixture.h"

namespace ridge {
namespace {

using Outcome = testing::DrainedStream;

class EngineFaultsTest : public StoriesEngineTest {
 protected:
  // A greedy request that runs max_new tokens unless something ends it.
  static RequestParams Request(const std::string& text, int64_t max_new) {
    RequestParams p;
    p.prompt = tokenizer_->Encode(text, true);
    p.max_new_tokens = max_new;
    p.sampling.temperature = 0;
    p.ignore_eos = true;
    return p;
  }


  // Tokens of each prompt run together without faults: what the survivors must get.
  static std::vector<std::vector<TokenId>> Reference(const std::vector<std::string>& texts, int64_t max_new) {
    Engine engine(*model_, *tokenizer_, F32Options());
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (const auto& t : texts) streams.push_back(engine.Submit(Request(t, max_new)));
    engine.RunUntilIdle();
    std::vector<std::vector<TokenId>> out;
    for (auto& s : streams) out.push_back(testing::DrainStream(*s).tokens);
    return out;
  }

  static const std::vector<std::string>& Texts() {
    static const std::vector<std::string> texts = {"Once upon a time", "The cat", "Tom and Lily went to the park",
                                                   "One day",          "The sun", "A little bird"};
    return texts;
  }

  // A fault the engine cannot go on after, injected by `injector`: the first
  // one stops it, every request ends with an error containing `error`, the
  // pool is whole, and no request is taken after.
  static void ExpectAFaultStopsTheEngineAtOnce(const std::function<void(const FaultPoint&)>& injector,
                                               const std::string& error) {
    EngineOptions options = F32Options();
    options.fault_injector = injector;
    Engine engine(*model_, *tokenizer_, options);
    int fatal_calls = 0;
    engine.set_fatal_handler([&](const std::string&) { ++fatal_calls; });
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (const auto& t : Texts()) streams.push_back(engine.Submit(Request(t, 50)));
    engine.RunUntilIdle();  // returns once the engine has stopped itself
    EXPECT_EQ(fatal_calls, 1);
    EXPECT_FALSE(engine.Step());
    for (auto& s : streams) {
      Outcome o = testing::DrainStream(*s);
      EXPECT_EQ(o.kind, FinishKind::kError);
      EXPECT_NE(o.error.find(error), std::string::npos) << o.error;
    }
    EXPECT_THROW(engine.Submit(Request(Texts()[0], 20)), EngineStoppedError);
    ExpectPoolEmpty(engine);
  }
};

// The crash of issue 11: finishing a cancelled request published stats,
// which walked the running set while std::erase_if was compacting it.
TEST_F(EngineFaultsTest, SeveralRunningRequestsCancelledInOneStep) {
  const int64_t max_new = 60;
  const auto reference = Reference(Texts(), max_new);
  Engine engine(*model_, *tokenizer_, F32Options());
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& t : Texts()) streams.push_back(engine.Submit(Request(t, max_new)));
  // All six prefilled and decoding.
  for (int i = 0; i < 5; ++i) engine.Step();
  ASSERT_EQ(engine.Stats().running, 6);
  for (size_t i = 0; i < streams.size(); i += 2) streams[i]->Cancel();
  engine.Step();
  EXPECT_EQ(engine.Stats().running, 3);
  engine.RunUntilIdle();
  for (size_t i = 0; i < streams.size(); ++i) {
    Outcome o = testing::DrainStream(*streams[i]);
    if (i % 2 == 0) {
      EXPECT_EQ(o.kind, FinishKind::kAbort) << "request " << i;
      EXPECT_LT(o.tokens.size(), static_cast<size_t>(max_new)) << "request " << i;
    } else {
      EXPECT_EQ(o.kind, FinishKind::kLength) << "request " << i;
      EXPECT_EQ(o.tokens, reference[i]) << "request " << i << " changed after its neighbours were cancelled";
    }
  }
  ExpectPoolEmpty(engine);
  EXPECT_EQ(engine.Stats().finished, 6);
}

TEST_F(EngineFaultsTest, SamplingFaultEndsOnlyThatRequest) {
  const int64_t max_new = 40;
  const auto reference = Reference(Texts(), max_new);
  EngineOptions options = F32Options();
  const RequestId faulty = 3;  // ids count from 1 in submission order
  std::map<RequestId, int> samples;  // the engine thread alone touches it
  options.fault_injector = [&](const FaultPoint& p) {
    if (p.site != FaultPoint::Site::kSample) return;
    if (p.requests[0] == faulty && ++samples[faulty] == 10) throw Error("injected sampling fault");
  };
  Engine engine(*model_, *tokenizer_, options);
  engine.Start();
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& t : Texts()) streams.push_back(engine.Submit(Request(t, max_new)));
  ASSERT_EQ(streams[2]->id(), faulty);
  for (size_t i = 0; i < streams.size(); ++i) {
    Outcome o = testing::DrainStream(*streams[i]);
    if (streams[i]->id() == faulty) {
      EXPECT_EQ(o.kind, FinishKind::kError);
      EXPECT_NE(o.error.find("injected sampling fault"), std::string::npos) << o.error;
      EXPECT_EQ(o.tokens.size(), 9u);  // the nine sampled before the fault
      EXPECT_FALSE(o.request_fault);  // the server's fault, not the request's
    } else {
      EXPECT_EQ(o.kind, FinishKind::kLength) << "request " << i;
      EXPECT_EQ(o.tokens, reference[i]) << "request " << i;
    }
  }
  // The engine keeps serving.
  Outcome after = testing::DrainStream(*engine.Submit(Request(Texts()[0], max_new)));
  EXPECT_EQ(after.kind, FinishKind::kLength);
  EXPECT_EQ(after.tokens, reference[0]);
  engine.Stop();
  ExpectPoolEmpty(engine);
  EXPECT_EQ(engine.fatal_error(), "");
}

TEST_F(EngineFaultsTest, ForwardFaultEndsItsBatchAndTheEngineGoesOn) {
  const int64_t max_new = 30;
  EngineOptions options = F32Options();
  const RequestId faulty = 2;
  options.fault_injector = [&](const FaultPoint& p) {
    if (p.site != FaultPoint::Site::kForward) return;
    for (RequestId id : p.requests)
      if (id == faulty && p.step >= 3) throw Error("injected forward fault");
  };
  Engine engine(*model_, *tokenizer_, options);
  // Request 1 runs alone for a few steps, then 2 joins its batch: the failed
  // pass ends both (they shared it), and only them.
  auto first = engine.Submit(Request(Texts()[0], max_new));
  for (int i = 0; i < 3; ++i) engine.Step();
  auto second = engine.Submit(Request(Texts()[1], max_new));
  ASSERT_EQ(second->id(), faulty);
  engine.Step();
  Outcome a = testing::DrainStream(*first), b = testing::DrainStream(*second);
  EXPECT_EQ(a.kind, FinishKind::kError);
  EXPECT_EQ(b.kind, FinishKind::kError);
  EXPECT_NE(b.error.find("injected forward fault"), std::string::npos) << b.error;
  ExpectPoolEmpty(engine);
  // Later requests run normally and give back every block.
  const auto reference = Reference({Texts()[2], Texts()[3]}, max_new);
  auto third = engine.Submit(Request(Texts()[2], max_new));
  auto fourth = engine.Submit(Request(Texts()[3], max_new));
  engine.RunUntilIdle();
  Outcome c = testing::DrainStream(*third), d = testing::DrainStream(*fourth);
  EXPECT_EQ(c.kind, FinishKind::kLength);
  EXPECT_EQ(c.tokens, reference[0]);
  EXPECT_EQ(d.kind, FinishKind::kLength);
  EXPECT_EQ(d.tokens, reference[1]);
  ExpectPoolEmpty(engine);
  EXPECT_EQ(engine.fatal_error(), "");
}

TEST_F(EngineFaultsTest, RepeatedForwardFaultsStopTheEngineAndEndEveryRequest) {
  EngineOptions options = F32Options();
  options.max_running = 2;  // the rest wait: they must be ended too
  options.fault_injector = [](const FaultPoint& p) {
    if (p.site == FaultPoint::Site::kForward) throw Error("injected forward fault");
  };
  Engine engine(*model_, *tokenizer_, options);
  std::atomic<int> fatal_calls{0};
  std::string fatal_reason;
  engine.set_fatal_handler([&](const std::string& reason) {
    fatal_reason = reason;
    ++fatal_calls;
  });
  engine.Start();
  // One request per failed pass (each fails alone), then more queued behind.
  for (int i = 0; i < Engine::kMaxConsecutiveBatchFaults - 1; ++i)
    EXPECT_EQ(testing::DrainStream(*engine.Submit(Request(Texts()[0], 20))).kind, FinishKind::kError);
  EXPECT_EQ(engine.fatal_error(), "");
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 6; ++i) {
    try {
      streams.push_back(engine.Submit(Request(Texts()[static_cast<size_t>(i)], 20)));
    } catch (const EngineStoppedError&) {
      break;  // the engine stopped meanwhile: that is what this test waits for
    }
  }
  for (auto& s : streams) EXPECT_EQ(testing::DrainStream(*s).kind, FinishKind::kError);
  engine.Stop();  // returns: the engine thread has ended
  EXPECT_EQ(fatal_calls.load(), 1);
  EXPECT_NE(fatal_reason.find("forward passes failed in a row"), std::string::npos) << fatal_reason;
  EXPECT_EQ(engine.fatal_error(), fatal_reason);
  EXPECT_THROW(engine.Submit(Request(Texts()[0], 20)), EngineStoppedError);
  ExpectPoolEmpty(engine);
}

TEST_F(EngineFaultsTest, OutOfMemoryStopsTheEngineAtOnce) {
  ExpectAFaultStopsTheEngineAtOnce(
      [](const FaultPoint& p) {
        if (p.site == FaultPoint::Site::kSample && p.step >= 4) throw std::bad_alloc();
      },
      "cannot recover");
}

// A split model's communication failing (a rank died or hangs) leaves the
// ranks out of step: no later forward pass can be trusted, so the first
// LinkError stops the engine, where another forward fault ends one batch.
TEST_F(EngineFaultsTest, ALinkErrorStopsTheEngineAtOnce) {
  ExpectAFaultStopsTheEngineAtOnce(
      [](const FaultPoint& p) {
        if (p.site == FaultPoint::Site::kForward && p.step >= 3) throw LinkError("injected: another rank hangs");
      },
      "cannot recover from: injected: another rank hangs");
}

}  // namespace
}  // namespace ridge
