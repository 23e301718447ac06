#!/usr/bin/env python3
"""Writes a copy of a GGUF file with every 2-D tensor re-encoded as Q4_K or Q6_K.

  requantize.py IN.gguf OUT.gguf Q4_K|Q6_K

For the reference suite while `ridge gen-model` cannot write K-quants: it turns
gen-model's F32 file into one ridge's Q4_K/Q6_K kernels read. The encoding is
plain (scales from each group's range, values rounded to the nearest code), not
ggml's error-minimising search: any valid block serves, since ridge and the
reference read the same bytes. Metadata is copied byte for byte (so
general.file_type still names the input's type); 1-D tensors stay as they are.
"""
import sys

import numpy as np

from dequantize import dequantize
from ggml_types import BY_NAME, row_bytes
from gguf_reader import GgufFile
from gguf_writer import write_gguf


def f16_bytes(values):
    """[n] float64 -> [n, 2] uint8 (f16, little-endian)."""
    return values.astype("<f2").view(np.uint8).reshape(-1, 2)


def encode_q4_k(x):
    """x [n_blocks, 256] -> [n_blocks, 144]: x ~ d * sc * q - dmin * m per sub-block of 32."""
    sub = x.reshape(-1, 8, 32)
    low = np.minimum(sub.min(axis=2), 0.0)
    step = (sub.max(axis=2) - low) / 15.0
    d = (step.max(axis=1) / 63.0).astype(np.float16).astype(np.float64)
    dmin = ((-low).max(axis=1) / 63.0).astype(np.float16).astype(np.float64)
    sc = np.clip(np.rint(step / np.where(d > 0, d, 1.0)[:, None]), 1, 63).astype(np.int64)
    m = np.clip(np.rint(-low / np.where(dmin > 0, dmin, 1.0)[:, None]), 0, 63).astype(np.int64)
    q = np.rint((sub + (dmin[:, None] * m)[:, :, None]) / (d[:, None] * sc)[:, :, None])
    q = np.clip(np.nan_to_num(q), 0, 15).astype(np.uint8)          # [n, 8, 32]
    scales = np.zeros((len(x), 12), dtype=np.int64)
    scales[:, 0:4] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)
    scales[:, 4:8] = m[:, 0:4] | ((m[:, 4:8] >> 4) << 6)
    scales[:, 8:12] = (sc[:, 4:8] & 0x0F) | ((m[:, 4:8] & 0x0F) << 4)
    qs = (q[:, 0::2, :] | (q[:, 1::2, :] << 4)).reshape(-1, 128)   # sub-block 2c low, 2c + 1 high
    return np.concatenate([f16_bytes(d), f16_bytes(dmin), scales.astype(np.uint8), qs], axis=1)


def encode_q6_k(x):
    """x [n_blocks, 256] -> [n_blocks, 210]: x ~ d * sc * (q - 32) per group of 16."""
    groups = x.reshape(-1, 16, 16)
    step = np.abs(groups).max(axis=2) / 31.0
    d = (step.max(axis=1) / 127.0).astype(np.float16).astype(np.float64)
    sc = np.clip(np.rint(step / np.where(d > 0, d, 1.0)[:, None]), 1, 127).astype(np.int64)
    q = np.rint(groups / (d[:, None] * sc)[:, :, None])
    q = (np.clip(np.nan_to_num(q), -32, 31) + 32).astype(np.int64).reshape(-1, 2, 4, 32)  # [n, half, j, k]
    low, high = q & 0x0F, q >> 4
    ql = np.concatenate([low[:, :, 0] | (low[:, :, 2] << 4), low[:, :, 1] | (low[:, :, 3] << 4)], axis=2)
    qh = high[:, :, 0] | (high[:, :, 1] << 2) | (high[:, :, 2] << 4) | (high[:, :, 3] << 6)
    return np.concatenate([ql.reshape(-1, 128).astype(np.uint8), qh.reshape(-1, 64).astype(np.uint8),
                           sc.astype(np.int8).view(np.uint8), f16_bytes(d)], axis=1)


ENCODERS = {"Q4_K": encode_q4_k, "Q6_K": encode_q6_k}


def main(source, target, type_name):
    gguf = GgufFile(source)
    alignment = gguf.metadata.get("general.alignment", 32)
    tensors = []  # (name, dims, type, bytes)
    for name, info in gguf.tensors.items():
        raw = gguf.tensor_bytes(name)
        if len(info.dims) == 2:
            values = dequantize(info.ggml_type, raw, info.dims).reshape(-1, 256)
            tensors.append((name, info.dims, BY_NAME[type_name], ENCODERS[type_name](values).tobytes()))
        else:
            tensors.append((name, info.dims, info.ggml_type, bytes(raw)))
    for name, dims, ggml_type, data in tensors:
        assert len(data) == row_bytes(ggml_type, dims[0]) * int(np.prod(dims[1:])), name
    write_gguf(target, len(gguf.metadata), gguf.metadata_bytes, tensors, alignment)


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[3] not in ENCODERS:
        sys.exit(__doc__)
    main(*sys.argv[1:])
