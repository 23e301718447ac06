#include "ridge/tokenizer/pretokenizer_families.h"

#include <array>

namespace ridge::tokenizer_detail {
namespace {

using Names = std::string_view[];

// The regexes are those of each family's Hugging Face tokenizer.json (the
// reference its conformance cases come from), in PCRE2 syntax. Where a
// tokenizer.json splits in several steps (a Sequence of Split pre-tokenizers),
// so does the list. PCRE2 has what the originals use (\p{Lu}, scoped (?i:...)
// with Unicode folding, look-ahead), so nothing is rewritten around a weaker engine.

// GPT-2's encoder.py.
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// tiktoken cl100k (Llama 3).
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen2: cl100k with single digits.
constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen3.5: combining marks stay with their letters.
constexpr std::string_view kQwen35 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// tiktoken o200k (GPT-4o, Llama 4): case-aware words with their contraction.
constexpr std::string_view kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?)"
    R"(|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Mistral's tekken: o200k's words without contractions, single digits.
constexpr std::string_view kTekken =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+)"
    R"(|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*)"
    R"(|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Seed-Coder: single digits, and punctuation runs stop at line breaks.
constexpr std::string_view kSeedCoder =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}\r\n]+|\s*[\r\n]+|\s+(?!\S)|\s+)";

// BLOOM, Poro, GPT-3 Finnish: anything up to whitespace or sentence punctuation.
constexpr std::string_view kBloom = R"( ?[^(\s|.,!?…。，、।۔،)]+)";

constexpr std::string_view kEachDigit = R"(\p{N})";

// DeepSeek LLM: line breaks, cased-letter words, ASCII/CJK punctuation runs,
// trailing whitespace, CJK/Hangul runs, digit runs.
constexpr std::string_view kDeepseekLlmLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293}\x{295}-\x{2AF})"
    R"(\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A}\x{38C}\x{38E}-\x{3A1})"
    R"(\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556}\x{10A0}-\x{10C5}\x{13A0}-\x{13F5})"
    R"(\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF}\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A})"
    R"(\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D}\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B})"
    R"(\x{1F5D}\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4}\x{1FC6}-\x{1FCC})"
    R"(\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4}\x{1FF6}-\x{1FFC}\x{2102}\x{2107})"
    R"(\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124}\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134})"
    R"(\x{2139}\x{213C}-\x{213F}\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
    R"(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F}\x{A771}-\x{A787})"
    R"(\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17}\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A})"
    R"(\x{10400}-\x{1044F}\x{104B0}-\x{104D3}\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2})"
    R"(\x{118A0}-\x{118DF}\x{1E900}-\x{1E943}]+)";
constexpr std::string_view kCjkHangulRuns = R"([\x{4E00}-\x{9FA5}\x{0800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";
constexpr std::string_view kLineBreak = R"([\r\n])";
constexpr std::array kDeepseekLlm = {
    kLineBreak,
    kDeepseekLlmLetters,
    std::string_view(R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)"),
    std::string_view(R"(\s+$)"),
    kCjkHangulRuns,
    std::string_view(R"(\p{N}+)"),
};

constexpr std::array kDeepseekCoder = {
    kLineBreak,
    std::string_view(R"(\s?\p{L}+)"),
    std::string_view(R"(\s?\p{P}+)"),
    kCjkHangulRuns,
    kEachDigit,
};

constexpr std::array kDeepseekV3 = {
    std::string_view(R"(\p{N}{1,3})"),
    std::string_view(R"([\x{4E00}-\x{9FA5}\x{3040}-\x{309F}\x{30A0}-\x{30FF}]+)"),
    std::string_view(R"([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+)"
                     R"(| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)"),
};

// Falcon: punctuation runs (Unicode P and ASCII punctuation), GPT-2's split,
// then numbers cut into threes.
constexpr std::array kFalcon = {
    std::string_view(R"([\p{P}\$\+<=>\^~\|`]+)"),
    kGpt2,
    std::string_view(R"([0-9][0-9][0-9])"),
};

// llama.cpp's choice for a byte-level vocabulary that names no pre-tokenizer.
constexpr std::array kDefault = {
    std::string_view(R"([\p{P}\$\+<=>\^~\|]+)"),
    kGpt2,
    std::string_view(R"(\p{N}+)"),
    std::string_view(R"([0-9][0-9][0-9])"),
};

constexpr std::array kStarcoder = {kEachDigit, kGpt2};
constexpr std::array kViking = {kBloom, kEachDigit};

constexpr std::array kChameleon = {
    std::string_view(R"(<sentinel:[0-9]+>)"),
    std::string_view(R"((IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z)"),
    std::string_view(R"(([\t\n]|    |  ))"),
    kEachDigit,
    std::string_view(R"([\p{P}!-/:-@\[-`{-~])"),
    kGpt2,
};

// SuperBPE: numbers apart (then cut into threes from the right: digits_in_threes_from_right).
constexpr std::array kSuperBpe = {std::string_view(R"(\p{N}+)")};

constexpr std::array kGpt2List = {kGpt2};
constexpr std::array kLlama3List = {kLlama3};
constexpr std::array kQwen2List = {kQwen2};
constexpr std::array kQwen35List = {kQwen35};
constexpr std::array kGpt4oList = {kGpt4o};
constexpr std::array kTekkenList = {kTekken};
constexpr std::array kSeedCoderList = {kSeedCoder};
constexpr std::array kBloomList = {kBloom};

constexpr std::string_view kLlama3Names[] = {"llama-bpe", "llama3", "llama-v3", "falcon3", "falcon-h1", "pixtral"};
constexpr std::string_view kLlama3KeepMergesNames[] = {"dbrx", "smaug-bpe", "chatglm-bpe", "glm4"};
constexpr std::string_view kGpt2Names[] = {"gpt-2", "mpt", "olmo", "jais", "phi-2", "jina-es", "jina-de",
                                           "jina-v1-en", "jina-v2-es", "jina-v2-de", "jina-v2-code",
                                           "roberta-bpe", "gigachat", "exaone4", "trillion"};
constexpr std::string_view kDefaultNames[] = {"default"};
constexpr std::string_view kStarcoderNames[] = {"starcoder", "refact", "command-r", "smollm",
                                                "codeshell", "exaone",  "minerva-7b"};
constexpr std::string_view kQwen2Names[] = {"qwen2", "stablelm2", "deepseek-r1-qwen", "megrez", "hunyuan"};
constexpr std::string_view kQwen35Names[] = {"qwen35"};
constexpr std::string_view kDeepseekLlmNames[] = {"deepseek-llm"};
constexpr std::string_view kDeepseekCoderNames[] = {"deepseek-coder"};
constexpr std::string_view kDeepseekV3Names[] = {"deepseek-v3"};
constexpr std::string_view kFalconNames[] = {"falcon"};
constexpr std::string_view kBloomNames[] = {"bloom", "poro-chat", "gpt3-finnish"};
constexpr std::string_view kVikingNames[] = {"viking"};
constexpr std::string_view kTekkenNames[] = {"tekken"};
constexpr std::string_view kChameleonNames[] = {"chameleon"};
constexpr std::string_view kGpt4oNames[] = {"gpt-4o", "llama4"};
constexpr std::string_view kSuperBpeNames[] = {"superbpe"};
constexpr std::string_view kSeedCoderNames[] = {"seed-coder"};

const PretokenizerFamily kFamilies[] = {
    {kGpt2Names, kGpt2List},
    {kDefaultNames, kDefault},
    {kLlama3Names, kLlama3List, /*ignore_merges=*/true, /*add_bos=*/true},
    {kLlama3KeepMergesNames, kLlama3List},
    {kQwen2Names, kQwen2List},
    {kQwen35Names, kQwen35List},
    {kDeepseekLlmNames, kDeepseekLlm},
    {kDeepseekCoderNames, kDeepseekCoder},
    {kDeepseekV3Names, kDeepseekV3},
    {kFalconNames, kFalcon},
    {kStarcoderNames, kStarcoder},
    {kBloomNames, kBloomList},
    {kVikingNames, kViking},
    {kTekkenNames, kTekkenList, /*ignore_merges=*/true, /*add_bos=*/true},
    {kChameleonNames, kChameleon, /*ignore_merges=*/false, /*add_bos=*/true},
    {kGpt4oNames, kGpt4oList},
    {kSuperBpeNames, kSuperBpe, /*ignore_merges=*/false, /*add_bos=*/false, /*digits_in_threes_from_right=*/true},
    {kSeedCoderNames, kSeedCoderList},
};

}  // namespace

const PretokenizerFamily* FindPretokenizerFamily(std::string_view pre) {
  if (pre.empty()) pre = "default";
  for (const PretokenizerFamily& family : kFamilies) {
    for (const std::string_view name : family.names) {
      if (name == pre) return &family;
    }
  }
  return nullptr;
}

std::string KnownPretokenizerNames() {
  std::string out;
  for (const PretokenizerFamily& family : kFamilies) {
    for (const std::string_view name : family.names) {
      if (!out.empty()) out += ", ";
      out += name;
    }
  }
  return out;
}

}  // namespace ridge::tokenizer_detail
