#pragma once
// Weight panels: the layout Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL and MXFP4
// matrices (and Q4_K, Q5_K, Q6_K, Q3_K, Q2_K and IQ4_XS, see the end) take in
// memory once they are repacked at load (kernels::RepackInPlace), and the
// layout the AVX-512 panel kernels read (and AVX2's, a 32-byte quarter of 8
// rows per load, matmul_quant_avx2.cc). Rows are taken 32 at a time (a panel); panel p holds
// rows [32p, 32p + 32) in exactly the bytes those rows take in the file, so a
// repacked matrix occupies the same memory and a slice of whole panels (Q/K/V
// of a fused tensor, one expert of a stack) is still a matrix. Per block b of
// 32 columns, one after the other:
//   Q8_0 (1088 bytes): u8  [8 groups g][32 rows j][4]  w[j][32b + 4g + i] + 128
//                      f16 [32 rows]                    the rows' block scales
//   Q4_0 ( 576 bytes): u8  [4 groups g][32 rows j][4]  file byte 4g + i of row j's block:
//                                                       low nibble element 4g + i, high 16 + 4g + i
//                      f16 [32 rows]
//   IQ4_NL (576 bytes): as Q4_0 (nibbles are codes into its levels)
//   MXFP4  (544 bytes): u8  [4 groups g][32 rows j][4]  as Q4_0 (codes into its levels)
//                      u8  [32 rows]                    the rows' E8M0 scale bytes
//   Q4_1   (640 bytes): as Q4_0, then f16 [32 rows] the rows' block minimums
//   Q5_0   (704 bytes): u8  [4 groups g][32 rows j][4]  as Q4_0 (the low 4 bits of each code)
//                      u8  [32 rows j][4]              HighPlaneWord of row j's qh: byte i
//                                                       bit g = the fifth bit of element 4g + i
//                      f16 [32 rows]
//   Q5_1   (768 bytes): as Q5_0, then f16 [32 rows] the minimums
// so one 64-byte load gives a vpdpbusd operand for 16 rows (Q4_0: two, the low
// and the high nibbles), and one vcvtph2ps 16 rows' scales; Q5's high-plane
// load serves the block's 8 operands, each taking its bit g by one GF(2)
// affine map (avx512::FiveBitCodes; AVX2: a shift and an and). The bytes are
// a permutation of the file's (Q8_0: each quant + 128; Q5: the qh bits too),
// so unpacking gives the file's bytes back exactly.
//
// Plain constants only: included by the ISA files.
#include <cstdint>

namespace ridge::kernels::panels {

constexpr int64_t kRows = 32;          // rows of a panel
constexpr int64_t kBlockElems = 32;    // Q8_0 / Q4_0 elements per block

// One type's panel block: quant_bytes of groups, then kRows high-plane words
// (Q5), kRows scales of scale_bytes and kRows f16 minimums (Q4_1, Q5_1). A
// file block is the scale, the minimum, qh, then the quants (xor flip).
struct Format {
  int64_t file_block_bytes;  // sizeof the file's block
  int64_t scale_bytes;       // of one row's scale (f16: 2, E8M0: 1)
  int64_t quant_bytes;       // of a panel block's groups: n_groups × kRows × 4
  uint8_t flip;              // panel byte = file byte ^ flip
  int64_t high_bytes = 0;    // of one row's fifth bits (Q5_0, Q5_1: 4)
  int64_t min_bytes = 0;     // of one row's minimum (Q4_1, Q5_1: f16, 2)
  constexpr int64_t high_offset() const { return quant_bytes; }
  constexpr int64_t scale_offset() const { return quant_bytes + kRows * high_bytes; }
  constexpr int64_t min_offset() const { return scale_offset() + kRows * scale_bytes; }
  constexpr int64_t block_bytes() const { return min_offset() + kRows * min_bytes; }
  constexpr int64_t file_min_offset() const { return scale_bytes; }
  constexpr int64_t file_high_offset() const { return scale_bytes + min_bytes; }
  constexpr int64_t file_quant_offset() const { return scale_bytes + min_bytes + high_bytes; }
};
constexpr Format kQ8_0{34, 2, 8 * kRows * 4, 0x80};
constexpr Format kQ4_0{18, 2, 4 * kRows * 4, 0x00};
constexpr Format kIQ4_NL{18, 2, 4 * kRows * 4, 0x00};
constexpr Format kMXFP4{17, 1, 4 * kRows * 4, 0x00};
constexpr Format kQ4_1{20, 2, 4 * kRows * 4, 0x00, 0, 2};
constexpr Format kQ5_0{22, 2, 4 * kRows * 4, 0x00, 4, 0};
constexpr Format kQ5_1{24, 2, 4 * kRows * 4, 0x00, 4, 2};
static_assert(kQ8_0.block_bytes() == kRows * kQ8_0.file_block_bytes);
static_assert(kQ4_0.block_bytes() == kRows * kQ4_0.file_block_bytes);
static_assert(kMXFP4.block_bytes() == kRows * kMXFP4.file_block_bytes);
static_assert(kQ4_1.block_bytes() == kRows * kQ4_1.file_block_bytes);
static_assert(kQ5_0.block_bytes() == kRows * kQ5_0.file_block_bytes);
static_assert(kQ5_1.block_bytes() == kRows * kQ5_1.file_block_bytes);

// The high-plane word of a Q5 block's qh (bit e: element e's fifth bit):
// byte i, bit g = bit 4g + i, for g = 0..7 (g < 4: the element of group g's
// low nibble, g ≥ 4: of group g − 4's high one). Nibble g of qh spread to
// bit 0 of four bytes ((n · 0x00204081) & 0x01010101), then shifted to bit g.
constexpr uint32_t HighPlaneWord(uint32_t qh) {
  uint32_t word = 0;
  for (int g = 0; g < 8; ++g) word |= ((((qh >> (4 * g)) & 0xfu) * 0x00204081u) & 0x01010101u) << g;
  return word;
}
// Its inverse: the file's qh of a high-plane word.
constexpr uint32_t FileHighBits(uint32_t word) {
  uint32_t qh = 0;
  for (int e = 0; e < 32; ++e) qh |= ((word >> (8 * (e % 4) + e / 4)) & 1u) << e;
  return qh;
}
static_assert(HighPlaneWord(0x00000010u) == 0x00000002u && HighPlaneWord(0x80000000u) == 0x80000000u);
static_assert(FileHighBits(HighPlaneWord(0x9abcdef1u)) == 0x9abcdef1u);

// Q4_K (matmul_q4k_panels_avx2.cc, whose packer writes it, and
// matmul_q4k_panels_avx512.cc, where one 64-byte load is 16 rows' 4 nibble
// pairs): per super-block of 256
// columns, 4608 bytes = 32 rows × the file's 144, one after the other:
//   f16 [32 rows] d, then f16 [32 rows] dmin
//   u8  [12 bytes b][32 rows j]                 the rows' packed 6-bit scales and mins, byte b
//   u8  [4 chunks k][8 groups g][32 rows j][4]  file qs byte 32k + 4g + i of row j:
//                      low nibble element 64k + 4g + i (sub-block 2k),
//                      high nibble element 64k + 32 + 4g + i (sub-block 2k + 1)
// so one 32-byte load gives 8 rows' 4 nibble pairs (a row per int32 lane:
// no reduction across rows), and one 8-byte load 8 rows' scale byte b. The
// scales come first: decode reads a panel strictly forward (scales, then
// the quants they scale), the order the hardware prefetcher follows; with
// the scales after the quants one token ran at ~41 % of a paired read.
namespace q4k {
constexpr int64_t kFileBlockBytes = 144;  // d, dmin, scales[12], qs[128]
constexpr int64_t kFileQuantOffset = 16;   // qs in the file's block
constexpr int64_t kScaleBytes = 12;        // per row
constexpr int64_t kDOffset = 0;
constexpr int64_t kDminOffset = 2 * kRows;
constexpr int64_t kScaleOffset = kDminOffset + 2 * kRows;
constexpr int64_t kQuantOffset = kScaleOffset + kScaleBytes * kRows;  // 512
constexpr int64_t kSuperBytes = kQuantOffset + 4 * 8 * kRows * 4;
static_assert(kSuperBytes == kRows * kFileBlockBytes);
}  // namespace q4k

// Q5_K (the Q4_K panel kernels of both ISAs, a fifth bit added): Q4_K's
// layout with the file's qh between the scales and the quants, per
// super-block 5632 bytes = 32 rows × the file's 176:
//   f16 [32 rows] d, f16 [32 rows] dmin, u8 [12][32 rows] scales   as Q4_K
//   u8  [8 groups g][32 rows j][4]              file qh byte 4g + i of row j:
//                      bit s is bit 4 of element 32s + 4g + i
//   u8  [4 chunks k][8 groups g][32 rows j][4]  qs as Q4_K
// so the load that gives 8 (16) rows' 4 nibble pairs of group g has a twin
// giving their 4 high-bit bytes, and decode still reads strictly forward.
namespace q5k {
constexpr int64_t kFileBlockBytes = 176;  // d, dmin, scales[12], qh[32], qs[128]
constexpr int64_t kFileHighOffset = 16;   // qh in the file's block
constexpr int64_t kFileQuantOffset = 48;  // qs in the file's block
constexpr int64_t kHighOffset = q4k::kQuantOffset;                  // 512
constexpr int64_t kQuantOffset = kHighOffset + 8 * kRows * 4;       // 1536
constexpr int64_t kSuperBytes = kQuantOffset + 4 * 8 * kRows * 4;  // d, dmin and scales at q4k's offsets
static_assert(kSuperBytes == kRows * kFileBlockBytes);
}  // namespace q5k

// What the Q4_K and Q5_K panel code (packers, kernels, unpacking) reads of
// the two layouts above; high_offset == 0: no qh (Q4_K).
struct Q4KFamily {
  int64_t file_block_bytes, file_quant_offset, file_high_offset;
  int64_t quant_offset, high_offset, super_bytes;
};
constexpr Q4KFamily Q4KFamilyOf(bool q5) {
  return q5 ? Q4KFamily{q5k::kFileBlockBytes, q5k::kFileQuantOffset, q5k::kFileHighOffset,
                        q5k::kQuantOffset,     q5k::kHighOffset,      q5k::kSuperBytes}
            : Q4KFamily{q4k::kFileBlockBytes, q4k::kFileQuantOffset, 0, q4k::kQuantOffset, 0, q4k::kSuperBytes};
}

// Q6_K (matmul_q6k_avx2.cc, whose packer writes it, and
// matmul_q6k_avx512.cc): per super-block of 256 columns, 6720
// bytes = 32 rows × the file's 210, one after the other:
//   f16 [32 rows] d
//   i8  [16 groups g][32 rows j]   the rows' scale of 16-element group g
//   u8  [2 halves h][8 groups k][3 chunks][32 rows j][4]
// where chunk 0, 1, 2 of half h are the file's bytes 32c + 4k + i of its
// chunks c = 2h, 2h + 1 (ql) and 4 + h (qh): for element 128h + 32m + 4k + i
// (m = 0..3) the low 4 bits are the low (m < 2) or high (m ≥ 2) nibble of
// chunk m % 2, the top 2 bits bits 2m, 2m + 1 of chunk 2. So one 64-byte load
// gives 16 rows' 4 bytes of a chunk (a 32-byte load 8 rows'), a row per
// int32 lane, a 6-bit code is a shift, a bit select and an `and` away, and
// decode reads the three chunks a code needs side by side, strictly forward
// (scales first, as for Q4_K).
namespace q6k {
constexpr int64_t kFileBlockBytes = 210;  // ql[128], qh[64], scales[16], d
constexpr int64_t kGroups = 16;
constexpr int64_t kFileChunks = 6;        // of 32 bytes: ql 0-3, qh 4-5
constexpr int64_t kDOffset = 0;
constexpr int64_t kScaleOffset = 2 * kRows;
constexpr int64_t kQuantOffset = kScaleOffset + kGroups * kRows;  // 576
constexpr int64_t kGroupBytes = kRows * 4;                        // one chunk's group k of 32 rows
constexpr int64_t kSuperBytes = kQuantOffset + kFileChunks * 8 * kGroupBytes;
static_assert(kSuperBytes == kRows * kFileBlockBytes);
// Offset of row 0's 4 bytes of file chunk c, group k.
constexpr int64_t QuantAt(int64_t c, int64_t k) {
  const int64_t half = c < 4 ? c / 2 : c - 4, chunk = c < 4 ? c % 2 : 2;
  return kQuantOffset + ((half * 8 + k) * 3 + chunk) * kGroupBytes;
}
// Prefill (5 tokens on) decodes a stretch of kStretchSuper super-blocks of a
// panel's codes once, a byte a code, and multiplies every token against
// them: per 32-block of x, kCodeBlockBytes = [k 8][32 rows][4 codes], so a
// 64-byte load is 16 rows' and a 32-byte load 8 rows' 4 codes of group k.
constexpr int64_t kCodeBlockBytes = 8 * kRows * 4;
constexpr int64_t kStretchSuper = 2;  // 16 KiB of codes: in L1
}  // namespace q6k

// Q3_K (matmul_q6k_avx2.cc, whose packer writes it, and matmul_q6k_avx512.cc,
// which read it with Q6_K's steps: w = d·sc_g·(c − 4), c = q | hbit << 2):
// per super-block of 256 columns, 3520 bytes = 32 rows × the file's 110,
// one after the other:
//   f16 [32 rows] d
//   u8  [12 bytes b][32 rows j]             the rows' packed 6-bit scales, byte b
//   u8  [8 groups k][3 chunks][32 rows j][4] file bytes of row j: chunk 0, 1 the
//                      qs bytes 32h + 4k + i (h = chunk), chunk 2 the hmask bytes 4k + i
// so element 128h + 32m + 4k + i (m = 0..3) is bits 2m, 2m + 1 of chunk h
// with bit 4h + m of chunk 2 above them: one 64-byte load of each chunk gives
// 16 rows' (a 32-byte load 8 rows') codes of group k for all 8 element sets,
// a row per int32 lane, and decode reads a super-block strictly forward. The
// scales stay packed (16 unpacked bytes would not fit the file's 110 a row).
namespace q3k {
constexpr int64_t kFileBlockBytes = 110;  // hmask[32], qs[64], scales[12], d
constexpr int64_t kFileQsOffset = 32;
constexpr int64_t kFileScaleOffset = 96;
constexpr int64_t kFileDOffset = 108;
constexpr int64_t kScaleBytes = 12;  // per row
constexpr int64_t kDOffset = 0;
constexpr int64_t kScaleOffset = 2 * kRows;
constexpr int64_t kQuantOffset = kScaleOffset + kScaleBytes * kRows;  // 448
constexpr int64_t kGroupBytes = kRows * 4;                            // one chunk's group k of 32 rows
constexpr int64_t kSuperBytes = kQuantOffset + 8 * 3 * kGroupBytes;
static_assert(kSuperBytes == kRows * kFileBlockBytes);
// Offset of row 0's 4 bytes of chunk c (0, 1: qs half c; 2: hmask), group k.
constexpr int64_t QuantAt(int64_t c, int64_t k) { return kQuantOffset + (k * 3 + c) * kGroupBytes; }
}  // namespace q3k

// Q2_K (as Q3_K: matmul_q6k_avx2.cc packs it, both ISAs' files read it, with
// Q6_K's steps and the mins: w = d·sc_g·q − dmin·m_g, q 2-bit, sc and m
// 4-bit): per super-block of 256 columns, 2688 bytes = 32 rows × the file's
// 84, one after the other:
//   f16 [32 rows] d, then f16 [32 rows] dmin
//   u8  [16 groups g][32 rows j]             the rows' scale byte of group g (sc | m << 4)
//   u8  [8 groups k][2 chunks h][32 rows j][4] file qs bytes 32h + 4k + i of row j
// so element 128h + 32m + 4k + i (m = 0..3) is bits 2m, 2m + 1 of chunk h:
// one 64-byte load gives 16 rows' (a 32-byte load 8 rows') codes of group k
// for 4 element sets, a row per int32 lane, read strictly forward.
namespace q2k {
constexpr int64_t kFileBlockBytes = 84;  // scales[16], qs[64], d, dmin
constexpr int64_t kFileQsOffset = 16;
constexpr int64_t kFileDOffset = 80;
constexpr int64_t kFileDminOffset = 82;
constexpr int64_t kGroups = 16;
constexpr int64_t kDOffset = 0;
constexpr int64_t kDminOffset = 2 * kRows;
constexpr int64_t kScaleOffset = kDminOffset + 2 * kRows;          // 128
constexpr int64_t kQuantOffset = kScaleOffset + kGroups * kRows;  // 640
constexpr int64_t kGroupBytes = kRows * 4;                         // one chunk's group k of 32 rows
constexpr int64_t kSuperBytes = kQuantOffset + 8 * 2 * kGroupBytes;
static_assert(kSuperBytes == kRows * kFileBlockBytes);
// Offset of row 0's 4 bytes of qs chunk h, group k.
constexpr int64_t QuantAt(int64_t h, int64_t k) { return kQuantOffset + (k * 2 + h) * kGroupBytes; }
}  // namespace q2k

// IQ4_XS (matmul_q6k_avx2.cc, matmul_q6k_avx512.cc, with Q6_K's steps: w =
// d·(ls_s − 32)·level[q], 8 sub-blocks s of 32, q a 4-bit index into the
// IQ4_NL levels): per super-block of 256 columns, 4352 bytes = 32 rows × the
// file's 136, one after the other:
//   f16 [32 rows] d
//   u8  [2 bytes][32 rows]                    the rows' scales_h, byte b
//   u8  [4 bytes][32 rows]                    the rows' scales_l, byte b
//   u8  [8 sub-blocks s][4 groups k][32 rows j][4] file qs bytes 16s + 4k + i of row j:
//                      low nibble element 32s + 4k + i, high nibble 32s + 16 + 4k + i
// so one 64-byte load gives 16 rows' 4 bytes, the codes of 4 elements of
// each of sub-block s's two 16-element halves, a row per int32 lane.
namespace iq4xs {
constexpr int64_t kFileBlockBytes = 136;  // d, scales_h, scales_l[4], qs[128]
constexpr int64_t kFileScaleHOffset = 2;
constexpr int64_t kFileScaleLOffset = 4;
constexpr int64_t kFileQsOffset = 8;
constexpr int64_t kDOffset = 0;
constexpr int64_t kScaleHOffset = 2 * kRows;
constexpr int64_t kScaleLOffset = kScaleHOffset + 2 * kRows;
constexpr int64_t kQuantOffset = kScaleLOffset + 4 * kRows;  // 256
constexpr int64_t kGroupBytes = kRows * 4;                   // one group k of 32 rows
constexpr int64_t kSuperBytes = kQuantOffset + 8 * 4 * kGroupBytes;
static_assert(kSuperBytes == kRows * kFileBlockBytes);
// Offset of row 0's 4 bytes of sub-block s, group k.
constexpr int64_t QuantAt(int64_t s, int64_t k) { return kQuantOffset + (s * 4 + k) * kGroupBytes; }
}  // namespace iq4xs

}  // namespace ridge::kernels::panels
