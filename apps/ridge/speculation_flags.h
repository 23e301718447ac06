#pragma once
// The speculative-decoding flags that run, bench and serve share. Include
// after <CLI/CLI.hpp>, in a command file that already pays for it.
#include <string>

#include "ridge/engine/prompt_lookup.h"

namespace ridge::app {

struct SpeculationFlags {
  std::string method = "off";
  SpeculationOptions options;

  // The options the flags ask for; throws ridge::Error naming a bad one.
  SpeculationOptions Resolve() const {
    SpeculationOptions o = options;
    o.method = ParseSpeculationMethod(method);
    if (o.enabled()) Validate(o);
    return o;
  }
};

inline void AddSpeculationFlags(CLI::App& sub, SpeculationFlags& f) {
  sub.add_option("--spec", f.method,
                 "speculative decoding: ngram (prompt lookup: drafts what followed the last n tokens earlier in "
                 "the prompt and output) or off; greedy output is unchanged")
      ->capture_default_str();
  sub.add_option("--spec-tokens", f.options.num_tokens, "draft tokens verified per sequence and step (K)")
      ->capture_default_str();
  sub.add_option("--spec-ngram-min", f.options.ngram_min, "shortest n-gram prompt lookup matches")
      ->capture_default_str();
  sub.add_option("--spec-ngram-max", f.options.ngram_max, "longest n-gram prompt lookup matches (tried first)")
      ->capture_default_str();
}

}  // namespace ridge::app
