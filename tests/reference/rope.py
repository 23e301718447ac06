"""Rotary position embedding as ggml's rope computes it (ggml_rope_ext), in float64.

Pair i (i = 0 .. dim/2 - 1) of the first `dim` dims of a head turns by
  theta_i(p) = p * base^(-2i/dim) / freq_factor_i
at position p. "normal" pairs are adjacent dims (2i, 2i + 1): llama's GGUF
converter permutes Q and K rows so that this matches the checkpoint.
"neox" pairs are (i, i + dim/2), as Hugging Face's rotate_half.

Scaling:
  linear     theta scaled by 1/factor (positions divided by the factor);
  yarn       (YaRN) per pair a blend of the scaled and the unscaled theta:
             ramp_i = 1 - clamp((i - low) / max(0.001, high - low), 0, 1), with
             low = max(0, floor(c(32))), high = min(dim - 1, ceil(c(1))),
             c(beta) = dim * ln(ctx_orig / (2 pi beta)) / (2 ln base);
             theta = theta/factor * (1 - ramp) + theta * ramp; and cos, sin
             multiplied by 1 + 0.1 ln(factor).
  freq factors (llama3 rope_freqs.weight, Phi-3 LongRoPE): divide theta per pair.
  attn_factor multiplies cos and sin.
"""
import math

import numpy as np

YARN_BETA_FAST = 32.0
YARN_BETA_SLOW = 1.0


class Rope:
    def __init__(self, dim, base, neox, freq_factors=None, factor=1.0, yarn_ctx_orig=None, attn_factor=1.0):
        """yarn_ctx_orig: the original context length when the scaling is YaRN, else None."""
        self.dim = dim
        self.neox = neox
        pairs = np.arange(dim // 2, dtype=np.float64)
        inv_freq = base ** (-2.0 * pairs / dim)
        if freq_factors is not None:
            inv_freq = inv_freq / freq_factors
        # theta = p * inv_freq * (scaled share + unscaled share)
        ramp = np.zeros(dim // 2)
        self.mscale = attn_factor
        if yarn_ctx_orig is not None:
            def corr_dim(beta):
                return dim * math.log(yarn_ctx_orig / (2 * math.pi * beta)) / (2 * math.log(base))
            low = max(0.0, math.floor(corr_dim(YARN_BETA_FAST)))
            high = min(dim - 1.0, math.ceil(corr_dim(YARN_BETA_SLOW)))
            ramp = 1.0 - np.clip((pairs - low) / max(0.001, high - low), 0.0, 1.0)
            self.mscale *= 1.0 + 0.1 * math.log(factor)
        self.inv_freq = inv_freq * ((1.0 - ramp) / factor + ramp)

    def apply(self, x, positions):
        """x: [n_tokens, n_heads, head_dim]; positions: [n_tokens]. Returns the rotated copy."""
        theta = positions.astype(np.float64)[:, None] * self.inv_freq[None, :]  # [n, dim/2]
        cos = (self.mscale * np.cos(theta))[:, None, :]
        sin = (self.mscale * np.sin(theta))[:, None, :]
        half = self.dim // 2
        first = np.arange(half) if self.neox else 2 * np.arange(half)
        second = first + half if self.neox else first + 1
        a, b = x[..., first], x[..., second]
        out = x.copy()
        out[..., first] = a * cos - b * sin
        out[..., second] = a * sin + b * cos
        return out


def rope_from_hparams(hp, neox, freq_factors=None, base=None, factor=None):
    """The model's RoPE (base and factor may be overridden, as Gemma 3's local layers do)."""
    base = hp.rope_base if base is None else base
    factor = hp.rope_factor if factor is None else factor
    yarn_ctx_orig = hp.rope_ctx_orig if hp.rope_scaling == "yarn" else None
    return Rope(hp.rope_dim, base, neox, freq_factors, factor, yarn_ctx_orig, hp.rope_attn_factor)
