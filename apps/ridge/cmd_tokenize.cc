// ridge tokenize / ridge detokenize: the model's tokenizer from the command line.
//   ridge tokenize -m MODEL.gguf [--no-bos] [--pieces] [--no-parse-special] TEXT
//   ridge detokenize -m MODEL.gguf ID...
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/command.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/tokenizer/tokenizer.h"

namespace ridge::app {
namespace {

// A token's stored text with control bytes escaped, so one token is one line.
std::string Escaped(const std::string& piece) {
  std::string out;
  for (const char c : piece) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '\\') out += "\\\\";
    else if (byte < 0x20 || byte == 0x7F) out += fmt::format("\\x{:02X}", byte);
    else out += c;
  }
  return out;
}

CommandRegistration kTokenize{{"tokenize", "Print the token ids of TEXT under a model's tokenizer",
  [](CLI::App& sub) -> std::function<int()> {
    struct Options {
      std::string model_path;
      std::string text;
      bool no_bos = false;
      bool pieces = false;
      bool no_parse_special = false;
    };
    auto options = std::make_shared<Options>();
    sub.add_option("-m,--model", options->model_path, "GGUF file with tokenizer.ggml.* metadata")->required();
    sub.add_flag("--no-bos", options->no_bos, "do not add BOS even if the model's metadata asks for it");
    sub.add_flag("--pieces", options->pieces, "print one token per line: id, then its vocabulary text");
    sub.add_flag("--no-parse-special", options->no_parse_special,
                 "take special-token texts such as <|eot_id|> or </s> literally (by default they become those "
                 "tokens, as in a completion prompt)");
    sub.add_option("text", options->text, "the text to tokenize (may be empty)")->required();
    return [options] {
      const GgufFile file = GgufFile::Open(options->model_path);
      const Tokenizer tokenizer = Tokenizer::FromGguf(file);
      const bool add_bos = tokenizer.add_bos() && !options->no_bos;
      const bool parse_special = !options->no_parse_special;
      const std::vector<int32_t> ids = tokenizer.Encode(options->text, add_bos, parse_special, tokenizer.add_eos());
      if (options->pieces) {
        for (const int32_t id : ids) std::printf("%d\t%s\n", id, Escaped(tokenizer.TokenPiece(id)).c_str());
      } else {
        std::string line;
        for (size_t i = 0; i < ids.size(); ++i) line += (i ? " " : "") + std::to_string(ids[i]);
        std::printf("%s\n", line.c_str());
      }
      return 0;
    };
  }}};

CommandRegistration kDetokenize{{"detokenize", "Print the text of token ids under a model's tokenizer",
  [](CLI::App& sub) -> std::function<int()> {
    struct Options {
      std::string model_path;
      std::vector<int64_t> ids;
    };
    auto options = std::make_shared<Options>();
    sub.add_option("-m,--model", options->model_path, "GGUF file with tokenizer.ggml.* metadata")->required();
    sub.add_option("ids", options->ids, "token ids")->required();
    return [options] {
      const GgufFile file = GgufFile::Open(options->model_path);
      const Tokenizer tokenizer = Tokenizer::FromGguf(file);
      std::vector<int32_t> ids;
      for (const int64_t id : options->ids) {
        if (id < 0 || id >= tokenizer.n_vocab()) {
          Fail("token id {} is out of range (the vocabulary has {} tokens)", id, tokenizer.n_vocab());
        }
        ids.push_back(static_cast<int32_t>(id));
      }
      const std::string text = tokenizer.Decode(ids);
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fputc('\n', stdout);
      return 0;
    };
  }}};

}  // namespace
}  // namespace ridge::app
