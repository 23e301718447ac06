"""Elementwise functions and normalisation of the decoder graphs (float64)."""
import numpy as np


def rms_norm(x, weight, eps):
    """x / sqrt(mean(x^2) + eps) * weight over the last axis (the weight as stored in GGUF)."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


def silu(x):
    return x / (1.0 + np.exp(-x))


def gelu_tanh(x):
    """GELU, tanh approximation (ggml_gelu; Hugging Face's gelu_pytorch_tanh)."""
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def soft_cap(x, cap):
    """cap * tanh(x / cap): Gemma 2's soft-capping of attention scores and final logits."""
    return cap * np.tanh(x / cap)
