#pragma once
// An incremental parser for Server-Sent Events (text/event-stream, WHATWG
// HTML §9.2): bytes go in as the network delivers them, split anywhere (in a
// field name, between '\r' and '\n', inside a multi-byte character), and
// complete events come out.
//   - lines end in "\r\n", "\n" or "\r"; a blank line ends an event;
//   - "data:" lines are joined with '\n'; one space after the colon is dropped;
//   - "event:" sets the event's type; "id:", "retry:" and unknown fields are
//     ignored; lines starting with ':' are comments (keep-alives);
//   - a leading UTF-8 byte-order mark is skipped.
// An event is dispatched only if it had at least one data line. Finish()
// hands out a last event the server did not close with a blank line (the
// standard drops it; a benchmark would rather see it).
#include <string>
#include <string_view>
#include <vector>

namespace ridge::bench {

struct SseEvent {
  std::string type;  // the "event:" field, "" when absent (the standard's "message")
  std::string data;
  bool operator==(const SseEvent&) const = default;
};

class SseParser {
 public:
  // The events completed by these bytes, in order.
  std::vector<SseEvent> Feed(std::string_view bytes);
  // End of stream: a pending line and an unterminated event, if any.
  std::vector<SseEvent> Finish();

 private:
  void ProcessLine(std::string_view line, std::vector<SseEvent>* out);
  void Dispatch(std::vector<SseEvent>* out);

  std::string line_;            // the current line so far
  bool pending_cr_ = false;     // the last byte was '\r': a following '\n' belongs to it
  bool bom_checked_ = false;
  std::string bom_prefix_;      // leading bytes held while checking for a BOM
  std::string type_;
  std::string data_;
  bool has_data_ = false;
};

}  // namespace ridge::bench
