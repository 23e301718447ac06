#pragma once
// Reading a request's stream to its end from a test while the engine runs
// elsewhere: every token it carried and how it finished.
#include <chrono>
#include <string>
#include <vector>

#include "ridge/engine/request_stream.h"
#include "ridge/model/batch.h"

namespace ridge::testing {

struct DrainedStream {
  std::vector<TokenId> tokens;  // every token the stream carried
  FinishKind kind = FinishKind::kNone;
  std::string error;
  bool request_fault = false;  // StreamUpdate::request_fault
};

inline DrainedStream DrainStream(RequestStream& stream) {
  DrainedStream out;
  StreamUpdate update;
  for (;;) {
    if (!stream.Wait(update, std::chrono::milliseconds(10))) continue;
    for (auto& t : update.tokens) out.tokens.push_back(t.token);
    if (update.finished) {
      out.kind = update.finish_kind;
      out.error = update.error;
      out.request_fault = update.request_fault;
      return out;
    }
  }
}

}  // namespace ridge::testing
