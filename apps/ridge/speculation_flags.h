#pragma once
// The speculative-decoding flags that run, bench and serve share. Include
// after <CLI/CLI.hpp>, in a command file that already pays for it.
#include <memory>
#include <string>

#include "ridge/engine/draft_model.h"
#include "ridge/engine/prompt_lookup.h"
#include "ridge/model/model.h"

namespace ridge::app {

struct SpeculationFlags {
  std::string method = "off";
  std::string draft_path;  // --draft: draft-model speculation
  SpeculationOptions options;

  // The options the flags ask for (with --draft, the method is kDraftModel
  // and LoadDraft supplies the model); throws ridge::Error naming a bad one.
  SpeculationOptions Resolve() const {
    SpeculationOptions o = options;
    o.method = ParseSpeculationMethod(method);
    if (!draft_path.empty() && o.enabled())
      Fail("--draft and --spec {} are two ways of drafting: give one", method);
    if (o.enabled() || !draft_path.empty()) Validate(o);
    if (!draft_path.empty()) o.method = SpeculationOptions::Method::kDraftModel;
    return o;
  }

  // With --draft: loads the draft model, checks that it shares the target's
  // vocabulary and points `spec` at it; null without --draft.
  std::unique_ptr<Model> LoadDraft(SpeculationOptions& spec, const Tokenizer& target, FileBacking backing) const {
    if (draft_path.empty()) return nullptr;
    std::unique_ptr<Model> draft = [&] {
      try {
        return Model::Load(draft_path, backing);
      } catch (const Error& e) {
        Fail("--draft {}: {}", draft_path, e.what());
      }
    }();
    try {
      CheckDraftVocabulary(*draft, target);
    } catch (const Error& e) {
      Fail("--draft {}: {}", draft_path, e.what());
    }
    spec.draft = draft.get();
    return draft;
  }
};

inline void AddSpeculationFlags(CLI::App& sub, SpeculationFlags& f) {
  sub.add_option("--spec", f.method,
                 "speculative decoding: ngram (prompt lookup: drafts what followed the last n tokens earlier in "
                 "the prompt and output) or off; greedy output is unchanged")
      ->capture_default_str();
  sub.add_option("--draft", f.draft_path,
                 "draft-model speculation: a smaller GGUF with the same vocabulary drafts the tokens (its own KV "
                 "cache, same type and block size); greedy output is unchanged");
  sub.add_option("--spec-tokens", f.options.num_tokens, "draft tokens verified per sequence and step (K)")
      ->capture_default_str();
  sub.add_option("--spec-ngram-min", f.options.ngram_min, "shortest n-gram prompt lookup matches")
      ->capture_default_str();
  sub.add_option("--spec-ngram-max", f.options.ngram_max, "longest n-gram prompt lookup matches (tried first)")
      ->capture_default_str();
}

}  // namespace ridge::app
