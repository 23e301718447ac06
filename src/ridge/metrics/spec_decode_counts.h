#pragma once
// What speculative decoding did, for one request or a whole engine, with
// vLLM's spec_decode counter meanings: draft tokens verified, those accepted,
// and tokens emitted by the steps that verified a draft (the accepted ones
// plus the target model's own token of each such step, even where the
// request then ended before streaming them all).
#include <cstdint>

namespace ridge {

struct SpecDecodeCounts {
  int64_t draft_tokens = 0;
  int64_t accepted_tokens = 0;
  int64_t emitted_tokens = 0;
  int64_t verify_steps = 0;  // forward passes that verified a draft

  // One verifying step: `drafted` tokens proposed, `emitted` (>= 1) given
  // by the verification, all but the last of them accepted draft tokens.
  void AddStep(int64_t drafted, int64_t emitted) {
    draft_tokens += drafted;
    accepted_tokens += emitted - 1;
    emitted_tokens += emitted;
    ++verify_steps;
  }
  // accepted ÷ drafted (0 when nothing was drafted).
  double AcceptanceRate() const {
    return draft_tokens > 0 ? static_cast<double>(accepted_tokens) / static_cast<double>(draft_tokens) : 0.0;
  }
  // Draft tokens accepted per verifying step; vLLM's "mean acceptance
  // length" counts the step's own token too, that is this + 1.
  double MeanAcceptedLength() const {
    return verify_steps > 0 ? static_cast<double>(accepted_tokens) / static_cast<double>(verify_steps) : 0.0;
  }
};

}  // namespace ridge
