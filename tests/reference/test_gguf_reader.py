"""The GGUF reader on a file packed by hand: every metadata value type, nested arrays,
general.alignment, and tensor offsets relative to the aligned data start."""
import os
import struct
import tempfile
import unittest

import numpy as np

from gguf_reader import GgufError, GgufFile


def string(text):
    encoded = text.encode("utf-8")
    return struct.pack("<Q", len(encoded)) + encoded


def kv(key, value_type, payload):
    return string(key) + struct.pack("<I", value_type) + payload


class Reader(unittest.TestCase):
    def write(self, data):
        handle, path = tempfile.mkstemp(suffix=".gguf")
        with os.fdopen(handle, "wb") as f:
            f.write(data)
        self.addCleanup(os.remove, path)
        return path

    def test_every_value_type_and_alignment(self):
        metadata = [
            kv("u8", 0, struct.pack("<B", 200)), kv("i8", 1, struct.pack("<b", -100)),
            kv("u16", 2, struct.pack("<H", 60000)), kv("i16", 3, struct.pack("<h", -30000)),
            kv("u32", 4, struct.pack("<I", 4000000000)), kv("i32", 5, struct.pack("<i", -2000000000)),
            kv("f32", 6, struct.pack("<f", 0.5)), kv("bool", 7, struct.pack("<?", True)),
            kv("str", 8, string("héllo")),
            kv("ints", 9, struct.pack("<IQ", 5, 3) + struct.pack("<3i", 1, -2, 3)),
            kv("nested", 9, struct.pack("<IQ", 9, 2) + struct.pack("<IQ", 8, 1) + string("a")
               + struct.pack("<IQ", 8, 0)),
            kv("u64", 10, struct.pack("<Q", 2 ** 40)), kv("i64", 11, struct.pack("<q", -2 ** 40)),
            kv("f64", 12, struct.pack("<d", 0.125)),
            kv("general.alignment", 4, struct.pack("<I", 64)),
        ]
        # One F32 tensor of dims [2, 3] (3 rows of 2) at data offset 0, another of [4] at offset 64.
        infos = (string("m") + struct.pack("<I2QIQ", 2, 2, 3, 0, 0)
                 + string("v") + struct.pack("<I1QIQ", 1, 4, 0, 64))
        header = b"GGUF" + struct.pack("<IQQ", 3, 2, len(metadata)) + b"".join(metadata) + infos
        header += bytes(-len(header) % 64)
        m = np.arange(6, dtype="<f4").tobytes()
        v = np.array([9, 8, 7, 6], dtype="<f4").tobytes()
        f = GgufFile(self.write(header + m + bytes(64 - len(m)) + v))
        self.assertEqual(f.metadata, {
            "u8": 200, "i8": -100, "u16": 60000, "i16": -30000, "u32": 4000000000, "i32": -2000000000,
            "f32": 0.5, "bool": True, "str": "héllo", "ints": [1, -2, 3], "nested": [["a"], []],
            "u64": 2 ** 40, "i64": -2 ** 40, "f64": 0.125, "general.alignment": 64})
        self.assertEqual(f.tensors["m"].dims, (2, 3))
        np.testing.assert_array_equal(f.tensor_bytes("m").view("<f4"), np.arange(6))
        np.testing.assert_array_equal(f.tensor_bytes("v").view("<f4"), [9, 8, 7, 6])

    def test_bad_magic_and_truncation_are_errors(self):
        with self.assertRaisesRegex(GgufError, "bad magic"):
            GgufFile(self.write(b"GGUG" + bytes(20)))
        with self.assertRaisesRegex(GgufError, "truncated"):
            GgufFile(self.write(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + string("key")))


if __name__ == "__main__":
    unittest.main()
