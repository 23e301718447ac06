// Vocabulary loading from GGUF metadata: defaults, and bad metadata failing
// with a message that names the key.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "ridge/base/error.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/gguf_writer.h"
#include "ridge/tokenizer/tokenizer.h"
#include "test_paths.h"

namespace ridge {
namespace {

using Metadata = std::vector<std::pair<std::string, GgufValue>>;

GgufValue Strings(const std::vector<std::string>& values) {
  std::vector<GgufValue> elems;
  for (const auto& v : values) elems.push_back(GgufValue::String(v));
  return GgufValue::Array(GgufValueType::kString, std::move(elems));
}
GgufValue Floats(const std::vector<float>& values) {
  std::vector<GgufValue> elems;
  for (float v : values) elems.push_back(GgufValue::Float(GgufValueType::kFloat32, v));
  return GgufValue::Array(GgufValueType::kFloat32, std::move(elems));
}
GgufValue Int32s(const std::vector<int32_t>& values) {
  std::vector<GgufValue> elems;
  for (int32_t v : values) elems.push_back(GgufValue::Int(GgufValueType::kInt32, v));
  return GgufValue::Array(GgufValueType::kInt32, std::move(elems));
}
GgufValue U32(uint32_t v) { return GgufValue::Uint(GgufValueType::kUint32, v); }

// A minimal SentencePiece vocabulary: <unk> <s> </s> ▁ a ▁a
Metadata SpmMetadata() {
  return {
      {"tokenizer.ggml.model", GgufValue::String("llama")},
      {"tokenizer.ggml.tokens", Strings({"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "\xE2\x96\x81" "a"})},
      {"tokenizer.ggml.scores", Floats({0, 0, 0, -1, -2, -3})},
      {"tokenizer.ggml.token_type", Int32s({2, 3, 3, 1, 1, 1})},
  };
}

// A minimal byte-level BPE vocabulary: a b ab <|endoftext|>
Metadata BpeMetadata() {
  return {
      {"tokenizer.ggml.model", GgufValue::String("gpt2")},
      {"tokenizer.ggml.pre", GgufValue::String("gpt-2")},
      {"tokenizer.ggml.tokens", Strings({"a", "b", "ab", "<|endoftext|>"})},
      {"tokenizer.ggml.token_type", Int32s({1, 1, 1, 3})},
      {"tokenizer.ggml.merges", Strings({"a b"})},
      {"tokenizer.ggml.eos_token_id", U32(3)},
  };
}

void Set(Metadata* m, const std::string& key, GgufValue value) {
  for (auto& [k, v] : *m) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  m->emplace_back(key, std::move(value));
}

void Remove(Metadata* m, const std::string& key) {
  std::erase_if(*m, [&](const auto& kv) { return kv.first == key; });
}

std::string WriteFile(const Metadata& m) {
  GgufWriter writer;
  writer.SetString("general.architecture", "llama");
  for (const auto& [k, v] : m) writer.Set(k, v);
  const std::string path = testing::ScratchDir("vocab") + "/vocab.gguf";
  writer.Write(path);
  return path;
}

Tokenizer Load(const Metadata& m) {
  const GgufFile file = GgufFile::Open(WriteFile(m));
  return Tokenizer::FromGguf(file);
}

// Loading fails with a message containing every one of `needles` (and the file name).
void ExpectLoadError(const Metadata& m, const std::vector<std::string>& needles) {
  const std::string path = WriteFile(m);
  const GgufFile file = GgufFile::Open(path);
  try {
    Tokenizer::FromGguf(file);
    ADD_FAILURE() << "expected an error mentioning " << needles.front();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(path), std::string::npos) << what;
    for (const auto& n : needles) EXPECT_NE(what.find(n), std::string::npos) << "'" << n << "' not in: " << what;
  }
}

TEST(Vocab, SentencePieceDefaults) {
  const Tokenizer tok = Load(SpmMetadata());
  EXPECT_EQ(tok.model(), TokenizerModel::kSentencePiece);
  EXPECT_EQ(tok.n_vocab(), 6);
  EXPECT_EQ(tok.bos_id(), 1);  // llama.cpp's defaults when the ids are absent
  EXPECT_EQ(tok.eos_id(), 2);
  EXPECT_EQ(tok.unk_id(), 0);
  EXPECT_EQ(tok.pad_id(), -1);
  EXPECT_TRUE(tok.add_bos());
  EXPECT_FALSE(tok.add_eos());
  EXPECT_TRUE(tok.add_space_prefix());
  EXPECT_EQ(tok.Encode("a a", tok.add_bos()), (std::vector<int32_t>{1, 5, 5}));
}

TEST(Vocab, SentencePieceMetadataOverridesDefaults) {
  Metadata m = SpmMetadata();
  Set(&m, "tokenizer.ggml.add_bos_token", GgufValue::Bool(false));
  Set(&m, "tokenizer.ggml.add_eos_token", GgufValue::Bool(true));
  Set(&m, "tokenizer.ggml.add_space_prefix", GgufValue::Bool(false));
  Set(&m, "tokenizer.ggml.padding_token_id", U32(0));
  const Tokenizer tok = Load(m);
  EXPECT_FALSE(tok.add_bos());
  EXPECT_TRUE(tok.add_eos());
  EXPECT_FALSE(tok.add_space_prefix());
  EXPECT_EQ(tok.pad_id(), 0);
  EXPECT_EQ(tok.Encode("a", tok.add_bos(), false, tok.add_eos()), (std::vector<int32_t>{4, 2}));
}

// llama.cpp's converters write an unset special token as -1 (0xFFFFFFFF in a
// uint32): "none", even where SentencePiece would have a default.
TEST(Vocab, UnsetSpecialTokenIdsMeanNone) {
  for (const GgufValue& unset : {U32(0xFFFFFFFFu), GgufValue::Int(GgufValueType::kInt32, -1)}) {
    Metadata m = SpmMetadata();
    Set(&m, "tokenizer.ggml.padding_token_id", unset);
    Set(&m, "tokenizer.ggml.unknown_token_id", unset);
    const Tokenizer tok = Load(m);
    EXPECT_EQ(tok.pad_id(), -1);
    EXPECT_EQ(tok.unk_id(), -1);
    EXPECT_EQ(tok.bos_id(), 1);  // absent: the default still applies
  }
}

TEST(Vocab, ByteLevelBpeDefaults) {
  const Tokenizer tok = Load(BpeMetadata());
  EXPECT_EQ(tok.model(), TokenizerModel::kByteLevelBpe);
  EXPECT_EQ(tok.bos_id(), -1);
  EXPECT_FALSE(tok.add_bos());
  EXPECT_FALSE(tok.add_space_prefix());
  EXPECT_EQ(tok.Encode("ab", false), (std::vector<int32_t>{2}));
  EXPECT_THROW(tok.Encode("ab", /*add_bos=*/true), Error);  // no BOS to add
  EXPECT_TRUE(tok.IsEndOfGeneration(3));

  Metadata m = BpeMetadata();
  Set(&m, "tokenizer.ggml.pre", GgufValue::String("llama-bpe"));
  Set(&m, "tokenizer.ggml.bos_token_id", U32(3));
  EXPECT_TRUE(Load(m).add_bos());  // Llama 3 adds BOS unless the metadata says otherwise
  Remove(&m, "tokenizer.ggml.pre");
  EXPECT_FALSE(Load(m).add_bos());
}

TEST(Vocab, MissingOrMistypedKeys) {
  Metadata m = SpmMetadata();
  Remove(&m, "tokenizer.ggml.model");
  ExpectLoadError(m, {"tokenizer.ggml.model", "missing"});

  m = SpmMetadata();
  Set(&m, "tokenizer.ggml.model", GgufValue::String("t5"));
  ExpectLoadError(m, {"tokenizer.ggml.model", "'t5'", "not supported"});

  m = SpmMetadata();
  Remove(&m, "tokenizer.ggml.tokens");
  ExpectLoadError(m, {"tokenizer.ggml.tokens", "missing"});

  m = SpmMetadata();
  Set(&m, "tokenizer.ggml.tokens", GgufValue::String("abc"));
  ExpectLoadError(m, {"tokenizer.ggml.tokens", "array"});

  m = SpmMetadata();
  Set(&m, "tokenizer.ggml.tokens", Int32s({1, 2, 3, 4, 5, 6}));
  ExpectLoadError(m, {"tokenizer.ggml.tokens[0]", "string"});

  m = SpmMetadata();
  Set(&m, "tokenizer.ggml.tokens", Strings({}));
  ExpectLoadError(m, {"tokenizer.ggml.tokens", "empty"});

  m = SpmMetadata();
  Set(&m, "tokenizer.ggml.scores", Strings({"a", "b", "c", "d", "e", "f"}));
  ExpectLoadError(m, {"tokenizer.ggml.scores[0]", "number"});

  m = BpeMetadata();
  Remove(&m, "tokenizer.ggml.merges");
  ExpectLoadError(m, {"tokenizer.ggml.merges", "missing"});
}

TEST(Vocab, InconsistentArraysAndIds) {
  Metadata m = SpmMetadata();
  Set(&m, "tokenizer.ggml.scores", Floats({0, 0, 0}));
  ExpectLoadError(m, {"tokenizer.ggml.scores", "3 entries", "6"});

  m = SpmMetadata();
  Set(&m, "tokenizer.ggml.token_type", Int32s({1, 1, 1, 1, 1, 1, 1}));
  ExpectLoadError(m, {"tokenizer.ggml.token_type", "7 entries"});

  m = SpmMetadata();
  Set(&m, "tokenizer.ggml.token_type", Int32s({2, 3, 3, 1, 9, 1}));
  ExpectLoadError(m, {"tokenizer.ggml.token_type[4]"});

  m = SpmMetadata();
  Set(&m, "tokenizer.ggml.scores", Floats({0, 0, 0, NAN, 0, 0}));
  ExpectLoadError(m, {"tokenizer.ggml.scores[3]", "NaN"});

  for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.unknown_token_id", "tokenizer.ggml.padding_token_id",
                          "tokenizer.ggml.eot_token_id"}) {
    m = SpmMetadata();
    Set(&m, key, U32(6));
    ExpectLoadError(m, {key, "= 6", "6 tokens"});
  }
  m = SpmMetadata();
  Set(&m, "tokenizer.ggml.bos_token_id", GgufValue::Int(GgufValueType::kInt32, -5));
  ExpectLoadError(m, {"tokenizer.ggml.bos_token_id", "-5"});

  m = SpmMetadata();
  Set(&m, "tokenizer.ggml.bos_token_id", GgufValue::String("1"));
  ExpectLoadError(m, {"tokenizer.ggml.bos_token_id"});

  m = BpeMetadata();
  Set(&m, "tokenizer.ggml.add_bos_token", GgufValue::Bool(true));
  ExpectLoadError(m, {"add_bos_token", "bos_token_id"});

  m = SpmMetadata();
  Set(&m, "tokenizer.ggml.token_type", Int32s({2, 3, 3, 6, 1, 1}));  // "▁" claimed as a byte token
  ExpectLoadError(m, {"byte token 3", "<0xNN>"});
}

TEST(Vocab, BadMergesAndPreTokenizer) {
  Metadata m = BpeMetadata();
  Set(&m, "tokenizer.ggml.merges", Strings({"a b", "ab"}));
  ExpectLoadError(m, {"tokenizer.ggml.merges[1]", "'ab'"});

  m = BpeMetadata();
  Set(&m, "tokenizer.ggml.pre", GgufValue::String("no-such-family"));
  ExpectLoadError(m, {"tokenizer.ggml.pre", "no-such-family", "known: ", "deepseek-llm"});

  m = BpeMetadata();
  Set(&m, "tokenizer.ggml.merges", Strings({"a b", "x y", "b a"}));  // "x y" names no tokens; "ba" is none
  const Tokenizer tok = Load(m);
  EXPECT_EQ(tok.n_merges_skipped(), 2);
  EXPECT_EQ(tok.Encode("ab", false), (std::vector<int32_t>{2}));
}

TEST(Vocab, HandBuiltVocabularyIsValidated) {
  Vocab v;
  EXPECT_THROW(Tokenizer::FromVocab(v), Error);  // no tokens
  v.tokens = {"a", "b"};
  v.scores = {0};
  EXPECT_THROW(Tokenizer::FromVocab(v), Error);  // 1 score for 2 tokens
  v.scores = {0, 0};
  v.eos_id = 2;
  EXPECT_THROW(Tokenizer::FromVocab(v), Error);
  v.eos_id = 1;
  v.types = {TokenType::kNormal, static_cast<TokenType>(7)};
  EXPECT_THROW(Tokenizer::FromVocab(v), Error);
  v.types = {};
  const Tokenizer tok = Tokenizer::FromVocab(v);
  EXPECT_EQ(tok.token_type(1), TokenType::kNormal);
}

TEST(Vocab, IdsOutOfRangeAreErrorsNotCrashes) {
  const Tokenizer tok = Load(SpmMetadata());
  EXPECT_THROW(tok.Decode(std::vector<int32_t>{4, 6}), Error);
  EXPECT_THROW(tok.Decode(std::vector<int32_t>{-1}), Error);
  EXPECT_THROW(tok.TokenPiece(6), Error);
  EXPECT_THROW(tok.TokenBytes(-1), Error);
  EXPECT_THROW(tok.token_type(100), Error);
  EXPECT_FALSE(tok.IsEndOfGeneration(-1));
  EXPECT_FALSE(tok.IsEndOfGeneration(1000));
  EXPECT_FALSE(tok.IsControl(1000));
}

TEST(Vocab, BertAndGemma4Files) {
  // WordPiece: [CLS] and [SEP] from their keys, around the text by default; lowercase unless told.
  Metadata m = {
      {"tokenizer.ggml.model", GgufValue::String("bert")},
      {"tokenizer.ggml.tokens", Strings({"[UNK]", "[CLS]", "[SEP]", "\xE2\x96\x81" "hi"})},
      {"tokenizer.ggml.token_type", Int32s({3, 3, 3, 1})},
      {"tokenizer.ggml.unknown_token_id", U32(0)},
      {"tokenizer.ggml.cls_token_id", U32(1)},
      {"tokenizer.ggml.seperator_token_id", U32(2)},
  };
  Tokenizer tok = Load(m);
  EXPECT_EQ(tok.model(), TokenizerModel::kWordPiece);
  EXPECT_EQ(tok.Encode("HI", tok.add_bos(), false, tok.add_eos()), (std::vector<int32_t>{1, 3, 2}));
  Set(&m, "tokenizer.ggml.normalizer.lowercase", GgufValue::Bool(false));
  tok = Load(m);
  EXPECT_EQ(tok.Encode("HI", false), (std::vector<int32_t>{0}));
  Set(&m, "tokenizer.ggml.cls_token_id", U32(9));
  ExpectLoadError(m, {"tokenizer.ggml.cls_token_id", "9"});

  // Gemma 4: BPE over characters needs its merges, and always adds BOS.
  Metadata g = {
      {"tokenizer.ggml.model", GgufValue::String("gemma4")},
      {"tokenizer.ggml.tokens", Strings({"<pad>", "<eos>", "<bos>", "a", "b", "ab"})},
      {"tokenizer.ggml.token_type", Int32s({3, 3, 3, 1, 1, 1})},
      {"tokenizer.ggml.merges", Strings({"a b"})},
      {"tokenizer.ggml.bos_token_id", U32(2)},
      {"tokenizer.ggml.add_bos_token", GgufValue::Bool(false)},
  };
  tok = Load(g);
  EXPECT_EQ(tok.model(), TokenizerModel::kSentencePieceBpe);
  EXPECT_TRUE(tok.add_bos());
  EXPECT_EQ(tok.Encode("ab", tok.add_bos()), (std::vector<int32_t>{2, 5}));
  Remove(&g, "tokenizer.ggml.merges");
  ExpectLoadError(g, {"tokenizer.ggml.merges", "missing"});
}

}  // namespace
}  // namespace ridge
