"""The model's tensors, dequantized to float64, with a record of which ones the graph read.

A tensor the graph never reads is an error (check_all_used): a file that
carries one would compute something the graph does not describe.
"""
import numpy as np

from dequantize import dequantize
from ggml_types import BY_NAME, is_block_quantized, row_bytes


def quantize_activations(x, block):
    """x rounded as an int8 kernel sees it: per block of `block` elements along the last
    axis, scale d = max|x| / 127 and x ~ d * round_half_even(x / d)."""
    blocks = x.reshape(*x.shape[:-1], -1, block)
    d = np.abs(blocks).max(axis=-1, keepdims=True) / 127.0
    safe_d = np.where(d > 0, d, 1.0)
    return (np.rint(blocks / safe_d) * d).reshape(x.shape)


def round_to_bf16(x):
    """x rounded as a BF16 dot sees it: to float32, then to BF16 (nearest even), as float64."""
    bits = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return rounded.astype(np.uint32).view(np.float32).astype(np.float64)


class Linear:
    """y = x W^T (+ b) for W [n_out, n_in]. With act_block > 0 and a quantized W, x is
    first rounded to int8 blocks of act_block (quantize_activations); with bf16_acts and
    a BF16 W, to BF16 (round_to_bf16)."""

    def __init__(self, values, ggml_type, act_block, bf16_acts=False, bias=None):
        self.w = values
        self.bias = bias
        self.quantize_input = is_block_quantized(ggml_type) and act_block > 0
        self.act_block = act_block
        self.round_input_to_bf16 = bf16_acts and ggml_type == BY_NAME["BF16"]

    def __call__(self, x):
        if self.quantize_input:
            x = quantize_activations(x, self.act_block)
        if self.round_input_to_bf16:
            x = round_to_bf16(x)
        y = x @ self.w.T
        return y if self.bias is None else y + self.bias


class Embeddings:
    """Rows of token_embd.weight, dequantized as they are looked up (a vocabulary's worth is large)."""

    def __init__(self, info, raw):
        self.info = info
        self.rows = raw.reshape(info.dims[1], row_bytes(info.ggml_type, info.dims[0]))

    def __getitem__(self, tokens):
        picked = self.rows[np.asarray(tokens)].reshape(-1)
        return dequantize(self.info.ggml_type, picked, (self.info.dims[0], len(tokens)))


class Weights:
    def __init__(self, gguf, act_block=0, bf16_acts=False):
        self.gguf = gguf
        self.act_block = act_block
        self.bf16_acts = bf16_acts
        self.used = set()

    def has(self, name):
        return name in self.gguf.tensors

    def _info(self, name, dims):
        if name not in self.gguf.tensors:
            raise KeyError(f"tensor {name} is missing")
        info = self.gguf.tensors[name]
        if tuple(info.dims) != tuple(dims):
            raise ValueError(f"tensor {name} has dims {info.dims}, expected {tuple(dims)} (fastest first)")
        self.used.add(name)
        return info

    def _read(self, name, dims):
        info = self._info(name, dims)
        return info, dequantize(info.ggml_type, self.gguf.tensor_bytes(name), info.dims)

    def vector(self, name, n):
        return self._read(name, (n,))[1]

    def embeddings(self, n_vocab, n_embd):
        """token_embd.weight as a lookup: embeddings[tokens] -> [len(tokens), n_embd]."""
        info = self._info("token_embd.weight", (n_embd, n_vocab))
        return Embeddings(info, self.gguf.tensor_bytes(info.name))

    def linear(self, name, n_out, n_in, bias=None):
        """The matrix `name` [n_out, n_in] as a Linear; `bias` names its [n_out] bias tensor."""
        info, values = self._read(name, (n_in, n_out))
        b = None if bias is None else self.vector(bias, n_out)
        return Linear(values, info.ggml_type, self.act_block, self.bf16_acts, b)

    def experts(self, name, n_expert, n_out, n_in):
        """A stack of n_expert matrices [n_out, n_in] (GGUF dims [n_in, n_out, n_expert]), one Linear each."""
        info, values = self._read(name, (n_in, n_out, n_expert))
        return [Linear(values[e], info.ggml_type, self.act_block, self.bf16_acts) for e in range(n_expert)]

    def vectors(self, name, n_stack, n):
        """A stack of n_stack vectors [n] (GGUF dims [n, n_stack]) as [n_stack, n]: per-expert biases."""
        return self._read(name, (n, n_stack))[1]

    def output(self, n_vocab, n_embd):
        """output.weight, or token_embd.weight when the output is tied to the embeddings."""
        name = "output.weight" if self.has("output.weight") else "token_embd.weight"
        return self.linear(name, n_vocab, n_embd)

    def check_all_used(self):
        unused = sorted(set(self.gguf.tensors) - self.used)
        if unused:
            raise ValueError(f"tensors the {self.gguf.metadata['general.architecture']} graph does not read: "
                             f"{', '.join(unused)}")
