"""Unquantized element types: F32, F16 (IEEE half) and BF16 (the top 16 bits of an F32)."""
import numpy as np


def dequantize_f32(raw):
    return raw.view("<f4").astype(np.float64)


def dequantize_f16(raw):
    return raw.view("<f2").astype(np.float64)


def dequantize_bf16(raw):
    return (raw.view("<u2").astype(np.uint32) << 16).view("<f4").astype(np.float64)
