"""Writes GGUF v3 files (the layout gguf_reader.py describes): for the oracle's own tests."""
import struct

import numpy as np

from gguf_reader import ARRAY, FLOAT32, MAGIC, SCALAR_FORMATS, STRING, UINT32


def _string(text):
    encoded = text.encode("utf-8")
    return struct.pack("<Q", len(encoded)) + encoded


def encode_metadata(items):
    """items: {key: value}; str -> STRING, int -> UINT32, float -> FLOAT32, list of str -> ARRAY of STRING."""
    out = b""
    for key, value in items.items():
        out += _string(key)
        if isinstance(value, str):
            out += struct.pack("<I", STRING) + _string(value)
        elif isinstance(value, list):
            out += struct.pack("<IIQ", ARRAY, STRING, len(value)) + b"".join(_string(v) for v in value)
        elif isinstance(value, int):
            out += struct.pack("<I", UINT32) + struct.pack(SCALAR_FORMATS[UINT32], value)
        else:
            out += struct.pack("<I", FLOAT32) + struct.pack(SCALAR_FORMATS[FLOAT32], value)
    return out


def write_gguf(path, n_metadata, metadata_bytes, tensors, alignment=32):
    """tensors: [(name, dims fastest first, ggml_type, bytes)], written in order, each aligned."""
    header = MAGIC + struct.pack("<IQQ", 3, len(tensors), n_metadata) + metadata_bytes
    offset = 0
    for name, dims, ggml_type, data in tensors:
        header += _string(name) + struct.pack("<I", len(dims)) + struct.pack(f"<{len(dims)}Q", *dims)
        header += struct.pack("<IQ", ggml_type, offset)
        offset += (len(data) + alignment - 1) // alignment * alignment
    with open(path, "wb") as f:
        f.write(header + bytes(-len(header) % alignment))
        for _, _, _, data in tensors:
            f.write(data + bytes(-len(data) % alignment))


def f32_tensor(name, values):
    """An F32 tensor entry from float values shaped slowest dim first ([n_out, n_in] for a matrix)."""
    values = np.asarray(values, dtype="<f4")
    return name, tuple(reversed(values.shape)), 0, values.tobytes()
