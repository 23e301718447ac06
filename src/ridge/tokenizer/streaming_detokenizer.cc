#include "ridge/tokenizer/streaming_detokenizer.h"

#include "ridge/tokenizer/utf8.h"

namespace ridge {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, bool at_sequence_start)
    : tokenizer_(tokenizer), strip_next_space_(at_sequence_start && tokenizer.add_space_prefix()) {}

std::string StreamingDetokenizer::Push(int32_t id) {
  tokenizer_.AppendDecoded(id, &strip_next_space_, &pending_);
  std::string out;
  utf8::DrainValid(&pending_, /*final=*/false, &out);
  return out;
}

std::string StreamingDetokenizer::Flush() {
  std::string out;
  utf8::DrainValid(&pending_, /*final=*/true, &out);
  strip_next_space_ = false;
  return out;
}

}  // namespace ridge
