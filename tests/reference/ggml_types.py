"""ggml tensor element types: their numbers in GGUF and block sizes.

A row of n elements of a block type is n / block_elems blocks of block_bytes
bytes each (n must be a multiple of block_elems). Sizes follow the block
structs of ggml (ggml-common.h): f16 scales are 2 bytes, QK_K = 256;
MXFP4's scale is one E8M0 byte.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class GgmlType:
    name: str
    block_elems: int
    block_bytes: int


TYPES = {
    0: GgmlType("F32", 1, 4),
    1: GgmlType("F16", 1, 2),
    2: GgmlType("Q4_0", 32, 2 + 16),
    3: GgmlType("Q4_1", 32, 2 + 2 + 16),
    6: GgmlType("Q5_0", 32, 2 + 4 + 16),
    7: GgmlType("Q5_1", 32, 2 + 2 + 4 + 16),
    8: GgmlType("Q8_0", 32, 2 + 32),
    10: GgmlType("Q2_K", 256, 16 + 64 + 2 + 2),
    11: GgmlType("Q3_K", 256, 32 + 64 + 12 + 2),
    12: GgmlType("Q4_K", 256, 2 + 2 + 12 + 128),
    13: GgmlType("Q5_K", 256, 2 + 2 + 12 + 32 + 128),
    14: GgmlType("Q6_K", 256, 128 + 64 + 16 + 2),
    20: GgmlType("IQ4_NL", 32, 2 + 16),
    23: GgmlType("IQ4_XS", 256, 2 + 2 + 4 + 128),
    30: GgmlType("BF16", 1, 2),
    39: GgmlType("MXFP4", 32, 1 + 16),
}

BY_NAME = {t.name: number for number, t in TYPES.items()}


def type_info(ggml_type):
    if ggml_type not in TYPES:
        raise ValueError(f"ggml type {ggml_type} is not one the reference knows")
    return TYPES[ggml_type]


def row_bytes(ggml_type, n):
    t = type_info(ggml_type)
    if n % t.block_elems != 0:
        raise ValueError(f"a row of {n} elements is not a whole number of {t.name} blocks of {t.block_elems}")
    return n // t.block_elems * t.block_bytes


def is_block_quantized(ggml_type):
    """True for the quantized types (blocks of several elements with scales)."""
    return type_info(ggml_type).block_elems > 1
