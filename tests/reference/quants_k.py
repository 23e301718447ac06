"""Super-block types of 256 elements (ggml's Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS).

Each function takes the raw bytes of whole super-blocks, a uint8 array
[n_blocks, block_bytes], and returns the float64 values, [n_blocks, 256].
Field order and sizes follow the block structs of ggml-common.h.
"""
import numpy as np

from quants_32 import IQ4_NL_LEVELS, f16_field


def per_group(values, n_groups):
    """[n, n_groups] per-group values, shaped to multiply codes [n, 256] grouped as [n, n_groups, -1]."""
    return values.reshape(-1, n_groups, 1)


def grouped(codes, n_groups):
    return codes.reshape(-1, n_groups, 256 // n_groups)


def scalar(column):
    """An [n, 1] per-block value, shaped to broadcast over [n, groups, elements]."""
    return column.reshape(-1, 1, 1)


def two_bit_planes(qs):
    """Q2_K/Q3_K low bits: qs [n, 64] holds two halves of 32 bytes; byte k of a half
    carries elements 32*j + k of that half in bits 2j..2j+1 (j = 0..3). -> [n, 256]."""
    halves = qs.reshape(-1, 2, 1, 32).astype(np.int32)
    shifts = 2 * np.arange(4).reshape(1, 1, 4, 1)
    return ((halves >> shifts) & 3).reshape(-1, 256)


def q2_k(blocks):
    # scales[16], qs[64], d, dmin. Groups of 16; scale byte: low nibble scale, high nibble min.
    # x = d * (sc & 15) * q - dmin * (sc >> 4)
    scales = blocks[:, 0:16].astype(np.int32)
    q = two_bit_planes(blocks[:, 16:80])
    d, dmin = f16_field(blocks, 80), f16_field(blocks, 82)
    q = grouped(q, 16)
    x = scalar(d) * per_group(scales & 0x0F, 16) * q - scalar(dmin) * per_group(scales >> 4, 16)
    return x.reshape(-1, 256)


def q3_k_scales(packed):
    """12 bytes -> 16 signed 6-bit scales: scale s has its low 4 bits in byte s % 8
    (low nibble for s < 8, high nibble after) and its top 2 bits in byte 8 + s % 4,
    at bit 2 * (s // 4); stored with an offset of 32."""
    b = packed.astype(np.int32)
    s = np.arange(16)
    low = (b[:, s % 8] >> (4 * (s // 8))) & 0x0F
    high = (b[:, 8 + s % 4] >> (2 * (s // 4))) & 3
    return (low | (high << 4)) - 32


def q3_k(blocks):
    # hmask[32], qs[64], scales[12], d. Groups of 16. x = d * scale * (q - 4 * (1 - high bit)),
    # q the 2 low bits; the high bit of element 32*j + k of half h is bit 4*h + j of hmask[k].
    hmask = blocks[:, 0:32].astype(np.int32)
    high = ((hmask[:, None, :] >> np.arange(8).reshape(1, 8, 1)) & 1).reshape(-1, 256)
    q = two_bit_planes(blocks[:, 32:96]) - 4 * (1 - high)
    scales = per_group(q3_k_scales(blocks[:, 96:108]), 16)
    return (scalar(f16_field(blocks, 108)) * scales * grouped(q, 16)).reshape(-1, 256)


def k4_scales_mins(packed):
    """Q4_K/Q5_K: 12 bytes -> 8 six-bit scales and 8 six-bit mins, one per sub-block of 32.
    Sub-blocks 0..3: scale = b[j] & 63, min = b[j + 4] & 63. Sub-blocks 4..7: the low
    4 bits in the nibbles of b[j + 4], the top 2 bits in the top bits of b[j - 4] (scale)
    and b[j] (min)."""
    b = packed.astype(np.int32)
    scales = np.concatenate([b[:, 0:4] & 63, (b[:, 8:12] & 0x0F) | ((b[:, 0:4] >> 6) << 4)], axis=1)
    mins = np.concatenate([b[:, 4:8] & 63, (b[:, 8:12] >> 4) | ((b[:, 4:8] >> 6) << 4)], axis=1)
    return scales, mins


def low_nibble_pairs(qs):
    """qs [n, 128]: each 32 bytes hold sub-block 2c (low nibbles) and 2c + 1 (high nibbles). -> [n, 256]."""
    chunks = qs.reshape(-1, 4, 1, 32).astype(np.int32)
    return ((chunks >> np.array([0, 4]).reshape(1, 1, 2, 1)) & 0x0F).reshape(-1, 256)


def q4_k(blocks):
    # d, dmin, scales[12], qs[128]. x = d * scale * q - dmin * min, per sub-block of 32.
    d, dmin = f16_field(blocks, 0), f16_field(blocks, 2)
    scales, mins = k4_scales_mins(blocks[:, 4:16])
    q = grouped(low_nibble_pairs(blocks[:, 16:144]), 8)
    return (scalar(d) * per_group(scales, 8) * q - scalar(dmin) * per_group(mins, 8)).reshape(-1, 256)


def q5_k(blocks):
    # d, dmin, scales[12], qh[32], qs[128]. As Q4_K, plus a fifth bit: element k of
    # sub-block s has it in bit s of qh[k].
    d, dmin = f16_field(blocks, 0), f16_field(blocks, 2)
    scales, mins = k4_scales_mins(blocks[:, 4:16])
    qh = blocks[:, 16:48].astype(np.int32)
    high = ((qh[:, None, :] >> np.arange(8).reshape(1, 8, 1)) & 1).reshape(-1, 256)
    q = grouped(low_nibble_pairs(blocks[:, 48:176]) | (high << 4), 8)
    return (scalar(d) * per_group(scales, 8) * q - scalar(dmin) * per_group(mins, 8)).reshape(-1, 256)


def q6_k(blocks):
    # ql[128], qh[64], scales[16] int8, d. Two halves of 128 elements; in a half, element
    # 32*j + k (j = 0..3, k = 0..31) has its low 4 bits in ql[k + 32 * (j % 2)] (low nibble
    # for j < 2, high after) and its top 2 bits at bit 2j of qh[k]. x = d * scale * (q - 32),
    # groups of 16.
    ql = blocks[:, 0:128].reshape(-1, 2, 2, 32).astype(np.int32)    # [n, half, j % 2, k]
    qh = blocks[:, 128:192].reshape(-1, 2, 1, 32).astype(np.int32)  # [n, half, 1, k]
    low = np.concatenate([ql & 0x0F, ql >> 4], axis=2)              # [n, half, j, k]
    high = (qh >> (2 * np.arange(4).reshape(1, 1, 4, 1))) & 3
    q = (low | (high << 4)).reshape(-1, 256) - 32
    scales = blocks[:, 192:208].view(np.int8).astype(np.int32)
    return (scalar(f16_field(blocks, 208)) * per_group(scales, 16) * grouped(q, 16)).reshape(-1, 256)


def iq4_xs(blocks):
    # d, scales_h u16, scales_l[4], qs[128]. Sub-block s of 32 has a 6-bit scale: low 4 bits
    # in nibble s % 2 of scales_l[s // 2], top 2 bits at bit 2s of scales_h; offset 32.
    # Codes as IQ4_NL: byte k of a sub-block holds element k (low nibble) and k + 16 (high).
    d = f16_field(blocks, 0)
    scales_h = np.ascontiguousarray(blocks[:, 2:4]).view("<u2").astype(np.int32)  # [n, 1]
    scales_l = blocks[:, 4:8].astype(np.int32)
    s = np.arange(8)
    scales = (((scales_l[:, s // 2] >> (4 * (s % 2))) & 0x0F) | (((scales_h >> (2 * s)) & 3) << 4)) - 32
    qs = blocks[:, 8:136].reshape(-1, 8, 1, 16).astype(np.int32)
    codes = ((qs >> np.array([0, 4]).reshape(1, 1, 2, 1)) & 0x0F).reshape(-1, 256)
    return (scalar(d) * per_group(scales, 8) * grouped(IQ4_NL_LEVELS[codes], 8)).reshape(-1, 256)
