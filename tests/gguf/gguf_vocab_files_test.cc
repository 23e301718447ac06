// The real tokenizer-only GGUF files from llama.cpp's test models (../shared/vocab).
#include <gtest/gtest.h>

#include "ridge/gguf/gguf_file.h"
#include "test_paths.h"

namespace ridge {
namespace {

std::string Vocab(const std::string& name) { return testing::SharedDir() + "/vocab/" + name; }

size_t ArrayLen(const GgufFile& f, const std::string& key) {
  const GgufValue* v = f.Find(key);
  EXPECT_NE(v, nullptr) << key;
  return v && v->AsArray() ? v->AsArray()->size() : 0;
}

TEST(GgufVocabFiles, LlamaSpm) {
  const GgufFile f = GgufFile::Open(Vocab("ggml-vocab-llama-spm.gguf"));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.RequireString("general.architecture"), "llama");
  EXPECT_EQ(f.RequireString("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(ArrayLen(f, "tokenizer.ggml.tokens"), 32000u);
  EXPECT_EQ(ArrayLen(f, "tokenizer.ggml.scores"), 32000u);
  EXPECT_EQ(ArrayLen(f, "tokenizer.ggml.token_type"), 32000u);
  const auto& tokens = *f.Find("tokenizer.ggml.tokens")->AsArray();
  EXPECT_EQ(*tokens[0].AsString(), "<unk>");
  EXPECT_EQ(*tokens[1].AsString(), "<s>");
  EXPECT_EQ(*tokens[2].AsString(), "</s>");
  EXPECT_EQ(*tokens[3].AsString(), "<0x00>");
  EXPECT_EQ(*tokens[258].AsString(), "<0xFF>");
  const auto& types = *f.Find("tokenizer.ggml.token_type")->AsArray();
  EXPECT_EQ(types[3].AsInt(), 6);  // byte
  EXPECT_EQ(types[1].AsInt(), 3);  // control
  EXPECT_EQ(f.GetInt("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(f.GetInt("tokenizer.ggml.eos_token_id"), 2);
  EXPECT_TRUE(f.GetBool("tokenizer.ggml.add_bos_token").has_value());
  EXPECT_EQ(f.data_offset(), f.file_bytes()) << "unpadded tokenizer-only file: empty data section at the end";
}

TEST(GgufVocabFiles, LlamaBpe) {
  const GgufFile f = GgufFile::Open(Vocab("ggml-vocab-llama-bpe.gguf"));
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.RequireString("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f.RequireString("tokenizer.ggml.pre"), "llama-bpe");
  EXPECT_EQ(ArrayLen(f, "tokenizer.ggml.tokens"), 128256u);
  EXPECT_EQ(ArrayLen(f, "tokenizer.ggml.merges"), 280147u);
  EXPECT_EQ(f.GetInt("llama.vocab_size"), 128256);
}

TEST(GgufVocabFiles, Gpt2) {
  const GgufFile f = GgufFile::Open(Vocab("ggml-vocab-gpt-2.gguf"));
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_EQ(f.RequireString("general.architecture"), "gpt2");
  EXPECT_EQ(f.RequireString("tokenizer.ggml.pre"), "gpt-2");
  EXPECT_EQ(ArrayLen(f, "tokenizer.ggml.tokens"), 50257u);
  EXPECT_EQ(ArrayLen(f, "tokenizer.ggml.merges"), 50000u);
  const auto& merges = *f.Find("tokenizer.ggml.merges")->AsArray();
  EXPECT_NE(merges[0].AsString()->find(' '), std::string::npos) << "merges are 'left right'";
}

}  // namespace
}  // namespace ridge
