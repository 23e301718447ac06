"""Tensor bytes -> float64 values, for every type the reference reads."""
import numpy as np

import quants_32
import quants_float
import quants_k
from ggml_types import BY_NAME, type_info

# Plain types: the whole buffer at once.
FLOAT_TYPES = {
    BY_NAME["F32"]: quants_float.dequantize_f32,
    BY_NAME["F16"]: quants_float.dequantize_f16,
    BY_NAME["BF16"]: quants_float.dequantize_bf16,
}

# Block types: [n_blocks, block_bytes] -> [n_blocks, block_elems].
BLOCK_TYPES = {
    BY_NAME["Q4_0"]: quants_32.q4_0,
    BY_NAME["Q4_1"]: quants_32.q4_1,
    BY_NAME["Q5_0"]: quants_32.q5_0,
    BY_NAME["Q5_1"]: quants_32.q5_1,
    BY_NAME["Q8_0"]: quants_32.q8_0,
    BY_NAME["IQ4_NL"]: quants_32.iq4_nl,
    BY_NAME["MXFP4"]: quants_32.mxfp4,
    BY_NAME["Q2_K"]: quants_k.q2_k,
    BY_NAME["Q3_K"]: quants_k.q3_k,
    BY_NAME["Q4_K"]: quants_k.q4_k,
    BY_NAME["Q5_K"]: quants_k.q5_k,
    BY_NAME["Q6_K"]: quants_k.q6_k,
    BY_NAME["IQ4_XS"]: quants_k.iq4_xs,
}


def dequantize(ggml_type, raw, dims):
    """raw: the tensor's bytes (uint8); dims: GGUF dims, fastest first.
    Returns float64 values shaped with the slowest dim first (a matrix is [n_out, n_in])."""
    shape = tuple(reversed(dims))
    if ggml_type in FLOAT_TYPES:
        return FLOAT_TYPES[ggml_type](raw).reshape(shape)
    t = type_info(ggml_type)
    blocks = np.asarray(raw).reshape(-1, t.block_bytes)
    return BLOCK_TYPES[ggml_type](blocks).reshape(shape)
