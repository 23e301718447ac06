"""Causal multi-head attention with grouped K/V heads, optional sliding window and soft-capping."""
import numpy as np

from activations import soft_cap


def attention(q, k, v, positions, scale, window=0, logit_cap=0.0):
    """q: [n, n_heads, d_k]; k: [n, n_kv_heads, d_k]; v: [n, n_kv_heads, d_v]; positions: [n].
    Query head h reads K/V head h // (n_heads / n_kv_heads). A query at position p sees
    keys at positions q <= p, and with a window only those with p - q < window.
    Returns [n, n_heads * d_v]."""
    n, n_heads, _ = q.shape
    group = n_heads // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    scores = np.einsum("qhd,khd->hqk", q, k) * scale
    if logit_cap:
        scores = soft_cap(scores, logit_cap)
    distance = positions[:, None] - positions[None, :]  # [query, key]
    visible = distance >= 0
    if window:
        visible &= distance < window
    scores = np.where(visible[None], scores, -np.inf)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = scores / scores.sum(axis=-1, keepdims=True)
    return np.einsum("hqk,khd->qhd", weights, v).reshape(n, -1)
