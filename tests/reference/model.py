"""A model file and its forward pass: dispatches on general.architecture."""
import arch_gemma
import arch_gptoss
import arch_llama
import arch_phi3
import arch_qwen
from gguf_reader import GgufFile
from hparams import read_hparams
from weights import Weights

# architecture -> load(hparams, weights, n_ctx) returning forward(tokens, rows) -> logits [len(rows), n_vocab]
ARCHITECTURES = {
    "llama": arch_llama.load,
    "qwen2": arch_qwen.load_qwen2,
    "qwen3": arch_qwen.load_qwen3,
    "phi3": arch_phi3.load,
    "gemma2": arch_gemma.load_gemma2,
    "gemma3": arch_gemma.load_gemma3,
    "qwen2moe": arch_qwen.load_qwen2moe,
    "qwen3moe": arch_qwen.load_qwen3moe,
    "gpt-oss": arch_gptoss.load,
}


class Model:
    """path: a GGUF file. act_block > 0 rounds the input of every matrix product with a
    quantized weight to int8 blocks of that many elements (as int8 SIMD kernels do);
    bf16_acts rounds the input of every product with a BF16 weight to BF16 (as the
    AVX-512 BF16 dot does).
    n_ctx: the context in use (Phi-3 LongRoPE picks its factors by it); default the
    model's context_length."""

    def __init__(self, path, act_block=0, n_ctx=None, bf16_acts=False):
        self.gguf = GgufFile(path)
        arch = self.gguf.metadata["general.architecture"]
        if arch not in ARCHITECTURES:
            raise ValueError(f"{path}: architecture {arch!r}; the reference knows {sorted(ARCHITECTURES)}")
        weights = Weights(self.gguf, act_block, bf16_acts)
        embd = self.gguf.tensors["token_embd.weight"]
        tokens = self.gguf.metadata.get("tokenizer.ggml.tokens")
        self.n_vocab = len(tokens) if tokens is not None else embd.dims[1]
        self.hparams = read_hparams(self.gguf.metadata, self.n_vocab)
        self._forward = ARCHITECTURES[arch](self.hparams, weights,
                                            self.hparams.n_ctx_train if n_ctx is None else n_ctx)
        weights.check_all_used()

    def logits(self, tokens, rows):
        """float64 logits [len(rows), n_vocab] at positions `rows` of the sequence `tokens`."""
        return self._forward(tokens, rows)
