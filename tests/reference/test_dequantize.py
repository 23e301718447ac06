"""The dequantizers on hand-made blocks: each block sets a few fields, and the expected
values were worked out by hand from ggml's block layouts (ggml-common.h)."""
import struct
import unittest

import numpy as np

from dequantize import dequantize
from ggml_types import BY_NAME, type_info

F16 = {1.0: 0x3C00, 0.5: 0x3800, 0.25: 0x3400, 2.0: 0x4000}


def f16(value):
    return struct.pack("<H", F16[value])


def block(type_name, fields):
    """A block of `type_name`, zero but for fields {byte offset: bytes}."""
    raw = bytearray(type_info(BY_NAME[type_name]).block_bytes)
    for offset, value in fields.items():
        raw[offset:offset + len(value)] = value
    return np.frombuffer(bytes(raw), dtype=np.uint8)


def values(type_name, raw):
    n = len(raw) // type_info(BY_NAME[type_name]).block_bytes * type_info(BY_NAME[type_name]).block_elems
    return dequantize(BY_NAME[type_name], raw, (n,))


def expect(n, default, **overrides):
    """n values of `default`, with overrides given as e<index>=value or r<first>_<last>=value."""
    out = np.full(n, default, dtype=np.float64)
    for key, value in overrides.items():
        if key.startswith("r"):
            first, last = map(int, key[1:].split("_"))
            out[first:last + 1] = value
        else:
            out[int(key[1:])] = value
    return out


class FloatTypes(unittest.TestCase):
    def test_f32_f16_bf16(self):
        np.testing.assert_array_equal(values("F32", np.frombuffer(struct.pack("<2f", 1.5, -3.0), np.uint8)),
                                      [1.5, -3.0])
        np.testing.assert_array_equal(values("F16", np.frombuffer(struct.pack("<2H", 0x3C00, 0xC000), np.uint8)),
                                      [1.0, -2.0])
        np.testing.assert_array_equal(values("BF16", np.frombuffer(struct.pack("<2H", 0x3F80, 0xC040), np.uint8)),
                                      [1.0, -3.0])


class Blocks32(unittest.TestCase):
    def test_q4_0(self):  # d = 0.5; byte 0 = 0x3A: element 0 code 10, element 16 code 3; others code 8
        raw = block("Q4_0", {0: f16(0.5), 2: bytes([0x3A] + [0x88] * 15)})
        np.testing.assert_array_equal(values("Q4_0", raw), expect(32, 0.0, e0=1.0, e16=-2.5))

    def test_q4_1(self):  # d = 0.5, m = 0.25; byte 1 = 0x2F: element 1 code 15, element 17 code 2
        raw = block("Q4_1", {0: f16(0.5), 2: f16(0.25), 5: bytes([0x2F])})
        np.testing.assert_array_equal(values("Q4_1", raw), expect(32, 0.25, e1=7.75, e17=1.25))

    def test_q5_0(self):  # d = 1; fifth bits of elements 3 and 20; element 3 nibble 1, element 20 nibble 7
        raw = block("Q5_0", {0: f16(1.0), 2: struct.pack("<I", (1 << 3) | (1 << 20)), 6 + 3: bytes([0x01]),
                             6 + 4: bytes([0x70])})
        np.testing.assert_array_equal(values("Q5_0", raw), expect(32, -16.0, e3=1.0, e20=7.0))

    def test_q5_1(self):  # d = 0.5, m = 1; fifth bit of element 31, its nibble 15 (high nibble of byte 15)
        raw = block("Q5_1", {0: f16(0.5), 2: f16(1.0), 4: struct.pack("<I", 1 << 31), 8 + 15: bytes([0xF0])})
        np.testing.assert_array_equal(values("Q5_1", raw), expect(32, 1.0, e31=16.5))

    def test_q8_0(self):
        raw = block("Q8_0", {0: f16(0.25), 2 + 5: struct.pack("<b", -8), 2 + 31: struct.pack("<b", 127)})
        np.testing.assert_array_equal(values("Q8_0", raw), expect(32, 0.0, e5=-2.0, e31=31.75))

    def test_iq4_nl(self):  # codes 8 (level 1) but element 0 code 0 (-127) and element 16 code 15 (113)
        raw = block("IQ4_NL", {0: f16(0.5), 2: bytes([0xF0] + [0x88] * 15)})
        np.testing.assert_array_equal(values("IQ4_NL", raw), expect(32, 0.5, e0=-63.5, e16=56.5))

    def test_mxfp4(self):
        # e = 128: scale 2; codes 2 (E2M1 1.0) but element 0 code 0x7 (6.0), element 16 code 0xF (-6.0),
        # element 3 code 0x9 (-0.5), element 19 code 0x1 (0.5); e = 120: scale 2^-7.
        raw = block("MXFP4", {0: bytes([128]), 1: bytes([0xF7, 0x22, 0x22, 0x19] + [0x22] * 12)})
        np.testing.assert_array_equal(values("MXFP4", raw), expect(32, 2.0, e0=12.0, e16=-12.0, e3=-1.0, e19=1.0))
        raw = block("MXFP4", {0: bytes([120]), 1: bytes([0x0B] + [0] * 15)})  # code 0xB: -1.5
        np.testing.assert_array_equal(values("MXFP4", raw), expect(32, 0.0, e0=-1.5 / 128))

    def test_several_blocks_in_order(self):
        raw = np.concatenate([block("Q8_0", {0: f16(1.0), 2: bytes([3])}), block("Q8_0", {0: f16(2.0), 2: bytes([3])})])
        np.testing.assert_array_equal(values("Q8_0", raw), expect(64, 0.0, e0=3.0, e32=6.0))


class SuperBlocks(unittest.TestCase):
    def test_q2_k(self):
        # d = 1, dmin = 0.5. Group 5 (elements 80..95): scale 3, min 2; element 80 = byte 16 bits 4-5 = 3.
        # Group 15 (240..255): scale 1, min 0; element 240 = byte 32 + 16 bits 6-7 = 2.
        raw = block("Q2_K", {5: bytes([0x23]), 15: bytes([0x01]), 16 + 16: bytes([0x30]), 16 + 48: bytes([0x80]),
                             80: f16(1.0), 82: f16(0.5)})
        np.testing.assert_array_equal(values("Q2_K", raw), expect(256, 0.0, e80=8.0, r81_95=-1.0, e240=2.0))

    def test_q3_k(self):
        # d = 0.5; every scale 0 - 32 = -32 and every element 0 - 4 (high bit clear): 0.5 * -32 * -4 = 64.
        # Scale 9: low nibble 5 (high nibble of scale byte 1), top bits 2 (byte 9 bits 4-5): 37 - 32 = 5.
        # Element 144 (group 9: half 1, j 0, k 16): low bits 2 in byte 32 + 16, high bit = hmask[16] bit 4.
        raw = block("Q3_K", {16: bytes([0x10]), 32 + 48: bytes([0x02]), 96 + 1: bytes([0x50]), 96 + 9: bytes([0x20]),
                             108: f16(0.5)})
        np.testing.assert_array_equal(values("Q3_K", raw), expect(256, 64.0, e144=5.0, r145_159=-10.0))

    def q4_k_scales(self):
        # Sub-block 1: scale 3, min 4 (bytes 1 and 5). Sub-block 6: scale 2 | 1 << 4 = 18 (byte 10 low nibble,
        # byte 2 top bits), min 1 (byte 10 high nibble).
        return {4 + 1: bytes([3]), 4 + 5: bytes([4]), 4 + 10: bytes([0x12]), 4 + 2: bytes([0x40])}

    def test_q4_k(self):
        # d = 1, dmin = 0.5. Element 32 = high nibble of qs[0] = 5; element 192 = low nibble of qs[96] = 3.
        raw = block("Q4_K", {0: f16(1.0), 2: f16(0.5), **self.q4_k_scales(), 16: bytes([0x50]), 16 + 96: bytes([3])})
        np.testing.assert_array_equal(values("Q4_K", raw),
                                      expect(256, 0.0, e32=13.0, r33_63=-2.0, e192=53.5, r193_223=-0.5))

    def test_q5_k(self):
        # As Q4_K, plus fifth bits: element 32 (sub-block 1, k 0) = qh[0] bit 1; element 197 (sub-block 6, k 5)
        # = qh[5] bit 6.
        raw = block("Q5_K", {0: f16(1.0), 2: f16(0.5), **self.q4_k_scales(), 16: bytes([0x02]), 16 + 5: bytes([0x40]),
                             48: bytes([0x50]), 48 + 96: bytes([3])})
        np.testing.assert_array_equal(values("Q5_K", raw), expect(256, 0.0, e32=61.0, r33_63=-2.0, e192=53.5,
                                                                  r193_223=-0.5, e197=287.5))

    def test_q6_k(self):
        # d = 0.5. Group 3 (48..63: half 0, j 1, k 16), scale -2: element 48 low bits ql[48] low nibble 5,
        # top bits qh[16] bits 2-3 = 2: q = 37 - 32 = 5. Group 12 (192..207: half 1, j 2, k 0), scale 4:
        # element 192 low bits ql[64] high nibble 7, top bits qh[32] bits 4-5 = 1: q = 23 - 32 = -9.
        raw = block("Q6_K", {48: bytes([0x05]), 64: bytes([0x70]), 128 + 16: bytes([0x08]), 128 + 32: bytes([0x10]),
                             192 + 3: struct.pack("<b", -2), 192 + 12: bytes([4]), 208: f16(0.5)})
        np.testing.assert_array_equal(values("Q6_K", raw),
                                      expect(256, 0.0, e48=-5.0, r49_63=32.0, e192=-18.0, r193_207=-64.0))

    def test_iq4_xs(self):
        # d = 1; every scale 0 - 32 and code 0 (level -127): 4064. Sub-block 3: low bits 9 (scales_l[1] high
        # nibble), top bits 2 (scales_h bits 6-7): 41 - 32 = 9; qs[48] = 0x8F: element 96 level 113,
        # element 112 level 1.
        raw = block("IQ4_XS", {0: f16(1.0), 2: struct.pack("<H", 0x0080), 4 + 1: bytes([0x90]), 8 + 48: bytes([0x8F])})
        np.testing.assert_array_equal(values("IQ4_XS", raw), expect(256, 4064.0, e96=1017.0, r97_111=-1143.0,
                                                                    e112=9.0, r113_127=-1143.0))


if __name__ == "__main__":
    unittest.main()
