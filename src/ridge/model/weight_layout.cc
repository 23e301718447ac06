// RepackWeights: the model's matrices rewritten once at load into the layout
// the active ISA's kernels read (kernels::RepackInPlace), in the file's own
// memory, so that the repacked weights replace the file's rather than adding
// to them.
#include <chrono>

#include <fmt/format.h>

#include "ridge/base/cpu_features.h"
#include "ridge/model/model.h"

namespace ridge {

WeightLayout RepackWeights(GgufFile& file, ModelWeights& weights) {
  WeightLayout layout;
  layout.isa = IsaName(ActiveIsa());
  std::vector<kernels::WeightMatrix*> matrices;
  for (LayerWeights& l : weights.layers) {
    for (auto* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.router, &l.shared_gate,
                    &l.shared_up, &l.shared_down})
      matrices.push_back(m);
    for (auto* stack : {&l.exp_gate, &l.exp_up, &l.exp_down})
      for (kernels::WeightMatrix& m : *stack) matrices.push_back(&m);
  }
  // A tied output is the embedding table: repacked as the LM head's panels,
  // looked up a row at a time through UnpackPanels (Model::EmbedTokens). On a
  // Zen 5 a Q8_0 row read for one token ran at 84-87 % of a paired read in the
  // file's layout, 101-102 % as panels; the LM head is a fifth to a third of a
  // small tied model's bytes (gemma-3-1b, qwen3-0.6b, llama-3.2-1b). AVX2's
  // Q6_K panels too: BM_FewTokens/Q6_K_head_* (a 2048-wide head) 84 % of a
  // paired read against the rows kernel's 60 %, and llama-3.2-1b Q4_K_M tg64
  // 1.06-1.23 × (docs/benchmarks.md, twenty-second section; the 0.95 × the
  // twenty-first section reported did not repeat).
  matrices.push_back(weights.tied_output ? &weights.token_embd : &weights.output);
  const auto start = std::chrono::steady_clock::now();
  const uint8_t* file_start = file.memory().data();
  const bool rewritten = file.memory().Rewrite([&](uint8_t* bytes) {
    for (kernels::WeightMatrix* m : matrices) {
      if (!kernels::CanRepack(*m)) continue;
      kernels::RepackInPlace(*m, bytes + (m->data - file_start));
      ++layout.repacked_matrices;
      layout.repacked_bytes += m->n_rows * m->row_bytes;
    }
  });
  if (weights.tied_output) weights.output = weights.token_embd;
  layout.mapped = !rewritten;
  layout.repack_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return layout;
}

std::string DescribeWeightLayout(const WeightLayout& layout) {
  if (layout.mapped) return "file layout (mapped: read in place, not repacked; prefill packs panels per call)";
  if (layout.repacked_matrices == 0)
    return fmt::format("file layout (no weight panels for these types on {})", layout.isa);
  return fmt::format("repacked at load for {}: {} matrices, {:.0f} MiB in place in {:.0f} ms", layout.isa,
                     layout.repacked_matrices, static_cast<double>(layout.repacked_bytes) / (1 << 20), layout.repack_ms);
}

}  // namespace ridge
