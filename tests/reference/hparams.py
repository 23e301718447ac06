"""Hyperparameters of a model, from its GGUF metadata (llama.cpp's keys, prefixed by the architecture)."""
from dataclasses import dataclass

REQUIRED = object()

# {arch}.rope.scaling.type values. Every one divides positions by
# rope.scaling.factor (when given); yarn also blends in unscaled frequencies.
# llama.cpp's default when the key is absent is linear.
ROPE_SCALING_TYPES = ("none", "linear", "yarn", "longrope")


def lookup(metadata, arch, suffix, default=REQUIRED):
    key = f"{arch}.{suffix}"
    if key in metadata:
        return metadata[key]
    if default is REQUIRED:
        raise KeyError(f"metadata key {key} is missing")
    return default


@dataclass
class HParams:
    arch: str
    n_vocab: int
    n_ctx_train: int          # {arch}.context_length
    n_embd: int               # {arch}.embedding_length
    n_layers: int             # {arch}.block_count
    n_ff: int                 # {arch}.feed_forward_length
    n_heads: int              # {arch}.attention.head_count
    n_kv_heads: int           # {arch}.attention.head_count_kv, default n_heads
    head_dim_k: int           # {arch}.attention.key_length, default n_embd / n_heads
    head_dim_v: int           # {arch}.attention.value_length, default head_dim_k
    rms_eps: float            # {arch}.attention.layer_norm_rms_epsilon
    rope_dim: int             # {arch}.rope.dimension_count, default head_dim_k
    rope_base: float          # {arch}.rope.freq_base, default 10000
    rope_scaling: str         # {arch}.rope.scaling.type, default linear
    rope_factor: float        # {arch}.rope.scaling.factor, default 1
    rope_ctx_orig: int        # {arch}.rope.scaling.original_context_length, default n_ctx_train
    rope_attn_factor: float   # {arch}.rope.scaling.attn_factor, default 1
    sliding_window: int       # {arch}.attention.sliding_window, 0 = none
    metadata: dict

    def key(self, suffix, default=REQUIRED):
        """The value of {arch}.{suffix}; `default` when absent (KeyError if there is none)."""
        return lookup(self.metadata, self.arch, suffix, default)


def read_hparams(metadata, n_vocab):
    arch = metadata["general.architecture"]

    def key(suffix, default=REQUIRED):
        return lookup(metadata, arch, suffix, default)

    n_embd = key("embedding_length")
    n_heads = key("attention.head_count")
    head_dim_k = key("attention.key_length", n_embd // n_heads)
    scaling = key("rope.scaling.type", "linear")
    if scaling not in ROPE_SCALING_TYPES:
        raise ValueError(f"{arch}.rope.scaling.type {scaling!r}: the reference knows {ROPE_SCALING_TYPES}")
    n_ctx_train = key("context_length")
    return HParams(
        arch=arch,
        n_vocab=n_vocab,
        n_ctx_train=n_ctx_train,
        n_embd=n_embd,
        n_layers=key("block_count"),
        n_ff=key("feed_forward_length"),
        n_heads=n_heads,
        n_kv_heads=key("attention.head_count_kv", n_heads),
        head_dim_k=head_dim_k,
        head_dim_v=key("attention.value_length", head_dim_k),
        rms_eps=key("attention.layer_norm_rms_epsilon"),
        rope_dim=key("rope.dimension_count", head_dim_k),
        rope_base=key("rope.freq_base", 10000.0),
        rope_scaling=scaling,
        rope_factor=key("rope.scaling.factor", 1.0),
        rope_ctx_orig=key("rope.scaling.original_context_length", n_ctx_train),
        rope_attn_factor=key("rope.scaling.attn_factor", 1.0),
        sliding_window=key("attention.sliding_window", 0),
        metadata=metadata,
    )
