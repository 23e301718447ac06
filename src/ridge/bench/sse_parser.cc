#include "ridge/bench/sse_parser.h"

#include <algorithm>

namespace ridge::bench {
namespace {
constexpr std::string_view kBom = "\xEF\xBB\xBF";
}  // namespace

std::vector<SseEvent> SseParser::Feed(std::string_view bytes) {
  std::vector<SseEvent> events;
  if (!bom_checked_) {
    bom_prefix_.append(bytes);
    const size_t n = std::min(bom_prefix_.size(), kBom.size());
    if (bom_prefix_.compare(0, n, kBom.substr(0, n)) == 0 && bom_prefix_.size() < kBom.size()) return events;
    bom_checked_ = true;
    std::string held = std::move(bom_prefix_);
    bom_prefix_.clear();
    std::string_view rest = held;
    if (rest.substr(0, kBom.size()) == kBom) rest.remove_prefix(kBom.size());
    std::vector<SseEvent> more = Feed(rest);
    return more;
  }
  for (const char c : bytes) {
    if (pending_cr_) {
      pending_cr_ = false;
      if (c == '\n') continue;  // the '\n' of a "\r\n" already counted
    }
    if (c == '\r' || c == '\n') {
      pending_cr_ = (c == '\r');
      ProcessLine(line_, &events);
      line_.clear();
    } else {
      line_ += c;
    }
  }
  return events;
}

std::vector<SseEvent> SseParser::Finish() {
  std::vector<SseEvent> events;
  if (!bom_checked_) {
    bom_checked_ = true;
    std::string held = std::move(bom_prefix_);
    bom_prefix_.clear();
    events = Feed(held);
  }
  if (!line_.empty()) {
    ProcessLine(line_, &events);
    line_.clear();
  }
  Dispatch(&events);
  pending_cr_ = false;
  return events;
}

void SseParser::ProcessLine(std::string_view line, std::vector<SseEvent>* out) {
  if (line.empty()) {
    Dispatch(out);
    return;
  }
  if (line.front() == ':') return;  // comment
  std::string_view field = line, value;
  if (const size_t colon = line.find(':'); colon != std::string_view::npos) {
    field = line.substr(0, colon);
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
  } else if (field == "event") {
    type_.assign(value);
  }
}

void SseParser::Dispatch(std::vector<SseEvent>* out) {
  if (has_data_) out->push_back(SseEvent{type_, data_});
  type_.clear();
  data_.clear();
  has_data_ = false;
}

}  // namespace ridge::bench
