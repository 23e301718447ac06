// Repacking weights into weight panels at load (RepackInPlace), and back
// (UnpackPanels) for an ISA without weight-panel kernels. See weight_panels.h
// for the layout and matmul.cc for how MatMul reads it.
#include <cstring>

#include "ridge/base/cpu_features.h"
#include "ridge/base/error.h"
#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/ops.h"
#include "ridge/kernels/scratch.h"
#include "ridge/kernels/weight_panels.h"

namespace ridge::kernels {

const internal::TypeKernels* internal::ActiveWeightPanelKernels(GgmlType type) {
  switch (ActiveIsa()) {
    case Isa::kAmx:
      if (const TypeKernels* k = AmxQuantKernels(type)) return k;
      [[fallthrough]];
    case Isa::kAvx512:
      if (const TypeKernels* k = Avx512WeightPanelKernels(type)) return k;
      if (const TypeKernels* k = Avx512KQuantWeightPanelKernels(type)) return k;
      return Avx512Q32WeightPanelKernels(type);
    case Isa::kAvx2:
      if (const TypeKernels* k = Avx2WeightPanelKernels(type)) return k;
      return Avx2KQuantWeightPanelKernels(type);
    case Isa::kScalar: return nullptr;
  }
  return nullptr;
}

bool CanRepack(const WeightMatrix& w) {
  return !w.panels && internal::ActiveWeightPanelKernels(w.type) != nullptr && w.n_rows > 0 &&
         w.n_rows % panels::kRows == 0 && w.n_cols > 0 && w.n_cols % panels::kBlockElems == 0 &&
         w.row_bytes == RowBytes(w.type, w.n_cols);
}

void RepackInPlace(WeightMatrix& w, uint8_t* bytes) {
  RIDGE_CHECK(CanRepack(w) && bytes == w.data);
  const internal::TypeKernels& k = *internal::ActiveWeightPanelKernels(w.type);
  const int64_t panel_bytes = panels::kRows * w.row_bytes;
  RIDGE_CHECK(k.panel_rows == panels::kRows && k.panel_bytes(w.n_cols) == panel_bytes);
  ScratchBuffer panel;
  uint8_t* packed = panel.Get(panel_bytes);
  const internal::MatView rows{w.data, w.n_rows, w.n_cols, w.row_bytes};
  // Panel p reads only its own rows, so it can overwrite them once packed.
  for (int64_t r = 0; r < w.n_rows; r += panels::kRows) {
    k.pack_panel(rows, r, packed);
    std::memcpy(bytes + r * w.row_bytes, packed, static_cast<size_t>(panel_bytes));
  }
  w.panels = true;
}

namespace {

// The weight-panel format of a type that has one.
const panels::Format* FormatOf(GgmlType type) {
  switch (type) {
    case GgmlType::kQ8_0: return &panels::kQ8_0;
    case GgmlType::kQ4_0: return &panels::kQ4_0;
    case GgmlType::kIQ4_NL: return &panels::kIQ4_NL;
    case GgmlType::kMXFP4: return &panels::kMXFP4;
    case GgmlType::kQ4_1: return &panels::kQ4_1;
    case GgmlType::kQ5_0: return &panels::kQ5_0;
    case GgmlType::kQ5_1: return &panels::kQ5_1;
    default: return nullptr;
  }
}

// fn(super, block, j) for each row r of [r_begin, r_end) (row j of its
// panel) and super-block: `super` the panel's super-block (super_bytes),
// `block` the row's block of the file (file_block_bytes) in rows, whose row 0
// is r_begin.
template <typename Fn>
void ForEachPanelBlock(const WeightMatrix& w, int64_t r_begin, int64_t r_end, uint8_t* rows, int64_t super_bytes,
                       int64_t file_block_bytes, Fn fn) {
  const int64_t n_super = w.n_cols / kQK_K;
  for (int64_t r = r_begin; r < r_end; ++r) {
    const uint8_t* panel = w.data + (r - r % panels::kRows) * w.row_bytes;
    for (int64_t sb = 0; sb < n_super; ++sb)
      fn(panel + sb * super_bytes, rows + (r - r_begin) * w.row_bytes + sb * file_block_bytes, r % panels::kRows);
  }
}

// The file's rows of a Q4_K or Q5_K matrix in the panel layout of
// weight_panels.h (q4k, q5k: Q4_K's with the qh bytes before the quants).
void UnpackQ4KPanels(const WeightMatrix& w, int64_t r_begin, int64_t r_end, uint8_t* rows) {
  using namespace panels::q4k;  // d, dmin and the scales: at the same offsets for Q5_K
  const panels::Q4KFamily f = panels::Q4KFamilyOf(w.type == GgmlType::kQ5_K);
  ForEachPanelBlock(w, r_begin, r_end, rows, f.super_bytes, f.file_block_bytes, [&](const uint8_t* super, uint8_t* block, int64_t j) {
    std::memcpy(block, super + kDOffset + 2 * j, 2);
    std::memcpy(block + 2, super + kDminOffset + 2 * j, 2);
    for (int64_t b = 0; b < kScaleBytes; ++b) block[4 + b] = super[kScaleOffset + b * panels::kRows + j];
    if (f.high_offset != 0)
      for (int64_t g = 0; g < 8; ++g)
        std::memcpy(block + f.file_high_offset + 4 * g, super + f.high_offset + (g * panels::kRows + j) * 4, 4);
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t g = 0; g < 8; ++g)
        std::memcpy(block + f.file_quant_offset + 32 * k + 4 * g,
                    super + f.quant_offset + ((k * 8 + g) * panels::kRows + j) * 4, 4);
  });
}

// The file's rows of a Q6_K matrix in the panel layout of weight_panels.h (q6k).
void UnpackQ6KPanels(const WeightMatrix& w, int64_t r_begin, int64_t r_end, uint8_t* rows) {
  using namespace panels::q6k;
  ForEachPanelBlock(w, r_begin, r_end, rows, kSuperBytes, kFileBlockBytes, [](const uint8_t* super, uint8_t* block, int64_t j) {
    for (int64_t c = 0; c < kFileChunks; ++c)
      for (int64_t k = 0; k < 8; ++k) std::memcpy(block + 32 * c + 4 * k, super + QuantAt(c, k) + j * 4, 4);
    for (int64_t g = 0; g < kGroups; ++g) block[192 + g] = super[kScaleOffset + g * panels::kRows + j];
    std::memcpy(block + 208, super + kDOffset + 2 * j, 2);
  });
}

// The file's rows of a Q3_K matrix in the panel layout of weight_panels.h (q3k).
void UnpackQ3KPanels(const WeightMatrix& w, int64_t r_begin, int64_t r_end, uint8_t* rows) {
  using namespace panels::q3k;
  ForEachPanelBlock(w, r_begin, r_end, rows, kSuperBytes, kFileBlockBytes, [](const uint8_t* super, uint8_t* block, int64_t j) {
    constexpr int64_t kFileChunkOffset[3] = {kFileQsOffset, kFileQsOffset + 32, 0};  // qs halves, hmask
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t k = 0; k < 8; ++k)
        std::memcpy(block + kFileChunkOffset[c] + 4 * k, super + QuantAt(c, k) + j * 4, 4);
    for (int64_t b = 0; b < kScaleBytes; ++b) block[kFileScaleOffset + b] = super[kScaleOffset + b * panels::kRows + j];
    std::memcpy(block + kFileDOffset, super + kDOffset + 2 * j, 2);
  });
}

// The file's rows of a Q2_K matrix in the panel layout of weight_panels.h (q2k).
void UnpackQ2KPanels(const WeightMatrix& w, int64_t r_begin, int64_t r_end, uint8_t* rows) {
  using namespace panels::q2k;
  ForEachPanelBlock(w, r_begin, r_end, rows, kSuperBytes, kFileBlockBytes, [](const uint8_t* super, uint8_t* block, int64_t j) {
    for (int64_t g = 0; g < kGroups; ++g) block[g] = super[kScaleOffset + g * panels::kRows + j];
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t k = 0; k < 8; ++k)
        std::memcpy(block + kFileQsOffset + 32 * h + 4 * k, super + QuantAt(h, k) + j * 4, 4);
    std::memcpy(block + kFileDOffset, super + kDOffset + 2 * j, 2);
    std::memcpy(block + kFileDminOffset, super + kDminOffset + 2 * j, 2);
  });
}

// The file's rows of an IQ4_XS matrix in the panel layout of weight_panels.h (iq4xs).
void UnpackIQ4XSPanels(const WeightMatrix& w, int64_t r_begin, int64_t r_end, uint8_t* rows) {
  using namespace panels::iq4xs;
  ForEachPanelBlock(w, r_begin, r_end, rows, kSuperBytes, kFileBlockBytes, [](const uint8_t* super, uint8_t* block, int64_t j) {
    std::memcpy(block, super + kDOffset + 2 * j, 2);
    for (int64_t b = 0; b < 2; ++b) block[kFileScaleHOffset + b] = super[kScaleHOffset + b * panels::kRows + j];
    for (int64_t b = 0; b < 4; ++b) block[kFileScaleLOffset + b] = super[kScaleLOffset + b * panels::kRows + j];
    for (int64_t s = 0; s < 8; ++s)
      for (int64_t k = 0; k < 4; ++k)
        std::memcpy(block + kFileQsOffset + 16 * s + 4 * k, super + QuantAt(s, k) + j * 4, 4);
  });
}

}  // namespace

void UnpackPanels(const WeightMatrix& w, int64_t r_begin, int64_t r_end, uint8_t* rows) {
  RIDGE_CHECK(w.panels && 0 <= r_begin && r_begin <= r_end && r_end <= w.n_rows);
  if (w.type == GgmlType::kQ4_K || w.type == GgmlType::kQ5_K || w.type == GgmlType::kQ6_K ||
      w.type == GgmlType::kQ3_K || w.type == GgmlType::kQ2_K || w.type == GgmlType::kIQ4_XS) {
    RIDGE_CHECK(w.row_bytes == RowBytes(w.type, w.n_cols));
    if (w.type == GgmlType::kQ6_K) return UnpackQ6KPanels(w, r_begin, r_end, rows);
    if (w.type == GgmlType::kIQ4_XS) return UnpackIQ4XSPanels(w, r_begin, r_end, rows);
    if (w.type == GgmlType::kQ3_K) return UnpackQ3KPanels(w, r_begin, r_end, rows);
    if (w.type == GgmlType::kQ2_K) return UnpackQ2KPanels(w, r_begin, r_end, rows);
    return UnpackQ4KPanels(w, r_begin, r_end, rows);
  }
  const panels::Format* f = FormatOf(w.type);
  RIDGE_CHECK(f != nullptr && f->file_block_bytes == static_cast<int64_t>(TraitsOf(w.type).block_bytes));
  const int64_t n_blocks = w.n_cols / panels::kBlockElems;
  const int64_t n_groups = f->quant_bytes / (panels::kRows * 4);
  for (int64_t r = r_begin; r < r_end; ++r) {
    const uint8_t* panel = w.data + (r - r % panels::kRows) * w.row_bytes;
    const int64_t j = r % panels::kRows;
    uint8_t* row = rows + (r - r_begin) * w.row_bytes;
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t* src = panel + b * f->block_bytes();
      uint8_t* block = row + b * f->file_block_bytes;
      std::memcpy(block, src + f->scale_offset() + j * f->scale_bytes, static_cast<size_t>(f->scale_bytes));
      std::memcpy(block + f->file_min_offset(), src + f->min_offset() + j * f->min_bytes,
                  static_cast<size_t>(f->min_bytes));
      if (f->high_bytes != 0) {
        uint32_t word;
        std::memcpy(&word, src + f->high_offset() + j * 4, 4);
        const uint32_t qh = panels::FileHighBits(word);
        std::memcpy(block + f->file_high_offset(), &qh, 4);
      }
      for (int64_t g = 0; g < n_groups; ++g)
        for (int64_t i = 0; i < 4; ++i)
          block[f->file_quant_offset() + g * 4 + i] = static_cast<uint8_t>(src[(g * panels::kRows + j) * 4 + i] ^ f->flip);
    }
  }
}

}  // namespace ridge::kernels
