"""Block types of 32 elements (ggml's Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4).

Each function takes the raw bytes of whole blocks as a uint8 array of shape
[n_blocks, block_bytes] and returns the float64 values, [n_blocks, 32].
Every block starts with an f16 scale d (and, for the _1 types, an f16 min m),
except MXFP4's, which starts with one E8M0 exponent byte.
4-bit codes are packed two per byte: the low nibble of byte j is element j,
the high nibble element j + 16.
"""
import numpy as np

# IQ4_NL's 16 non-linear levels, indexed by the 4-bit code (ggml's kvalues_iq4nl).
IQ4_NL_LEVELS = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113],
                         dtype=np.float64)

# MXFP4 (OCP Microscaling Formats v1.0): each element is an E2M1 number, sign
# bit 3, exponent bits 2-1 (bias 1), mantissa bit 0: magnitudes 0, 0.5
# (subnormal), 1, 1.5, 2, 3, 4, 6. The block's E8M0 byte e scales all 32 by
# 2^(e - 127) (e = 255 is NaN in the spec and not written by ggml).
E2M1_MAGNITUDES = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])
E2M1_VALUES = np.concatenate([E2M1_MAGNITUDES, -E2M1_MAGNITUDES])


def f16_field(blocks, start):
    """The f16 at byte `start` of each block, as a float64 column [n_blocks, 1]."""
    return np.ascontiguousarray(blocks[:, start:start + 2]).view("<f2").astype(np.float64)


def nibbles(packed):
    """[n, 16] bytes -> [n, 32] codes: low nibbles are elements 0..15, high nibbles 16..31."""
    return np.concatenate([packed & 0x0F, packed >> 4], axis=1).astype(np.int64)


def fifth_bits(blocks, start):
    """The 4 bytes at `start` as a little-endian u32 whose bit i is the fifth bit of element i: [n, 32]."""
    qh = np.ascontiguousarray(blocks[:, start:start + 4]).view("<u4").astype(np.int64)  # [n, 1]
    return (qh >> np.arange(32)) & 1


def q4_0(blocks):  # d, qs[16]: x = d * (q - 8)
    return f16_field(blocks, 0) * (nibbles(blocks[:, 2:18]) - 8)


def q4_1(blocks):  # d, m, qs[16]: x = d * q + m
    return f16_field(blocks, 0) * nibbles(blocks[:, 4:20]) + f16_field(blocks, 2)


def q5_0(blocks):  # d, qh[4], qs[16]: x = d * (q - 16), q = nibble | fifth bit << 4
    q = nibbles(blocks[:, 6:22]) | (fifth_bits(blocks, 2) << 4)
    return f16_field(blocks, 0) * (q - 16)


def q5_1(blocks):  # d, m, qh[4], qs[16]: x = d * q + m
    q = nibbles(blocks[:, 8:24]) | (fifth_bits(blocks, 4) << 4)
    return f16_field(blocks, 0) * q + f16_field(blocks, 2)


def q8_0(blocks):  # d, qs[32] int8: x = d * q
    return f16_field(blocks, 0) * blocks[:, 2:34].view(np.int8).astype(np.float64)


def iq4_nl(blocks):  # d, qs[16]: x = d * LEVELS[q]
    return f16_field(blocks, 0) * IQ4_NL_LEVELS[nibbles(blocks[:, 2:18])]


def mxfp4(blocks):  # e, qs[16]: x = 2^(e - 127) * E2M1[q]
    return np.ldexp(1.0, blocks[:, 0:1].astype(np.int64) - 127) * E2M1_VALUES[nibbles(blocks[:, 1:17])]
