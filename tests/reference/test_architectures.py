"""The graphs of the other architectures, held to llama's by equivalences that follow from
their definitions, on tiny random F32 files written here:

  * qwen2 with zero biases, Q and K rows permuted from llama's "normal" RoPE order to NEOX
    order, computes what llama computes (the permutation llama.cpp's converter undoes);
  * phi3 with those Q, K and V rows fused into attn_qkv and gate/up fused into ffn_up
    (gate first) computes it too;
  * qwen3, gemma2 and gemma3 run, read every tensor, and Gemma 2's final soft-capping
    bounds the logits;
and a file carrying a tensor its graph does not read is refused."""
import os
import tempfile
import unittest

import numpy as np

from gguf_writer import encode_metadata, f32_tensor, write_gguf
from model import Model

N_EMBD, N_HEADS, N_KV_HEADS, N_FF, N_VOCAB, N_LAYERS = 32, 4, 2, 64, 50, 2
HEAD_DIM = N_EMBD // N_HEADS
TOKENS = np.array([1, 7, 3, 42, 9, 0, 17])


def hparams(arch, **extra):
    keys = {"general.architecture": arch, f"{arch}.context_length": 128, f"{arch}.embedding_length": N_EMBD,
            f"{arch}.block_count": N_LAYERS, f"{arch}.feed_forward_length": N_FF,
            f"{arch}.attention.head_count": N_HEADS, f"{arch}.attention.head_count_kv": N_KV_HEADS,
            f"{arch}.attention.layer_norm_rms_epsilon": 1e-5, f"{arch}.rope.freq_base": 10000.0}
    keys.update({f"{arch}.{k}": v for k, v in extra.items()})
    return keys


def random_llama(rng):
    """llama tensors {name: values [n_out, n_in] or [n]}; norms random around 1 so that they matter."""
    def matrix(n_out, n_in):
        return rng.uniform(-1, 1, (n_out, n_in)) / np.sqrt(n_in)

    t = {"token_embd.weight": matrix(N_VOCAB, N_EMBD), "output_norm.weight": rng.uniform(0.5, 1.5, N_EMBD),
         "output.weight": matrix(N_VOCAB, N_EMBD)}
    for il in range(N_LAYERS):
        p = f"blk.{il}."
        t.update({p + "attn_norm.weight": rng.uniform(0.5, 1.5, N_EMBD),
                  p + "attn_q.weight": matrix(N_HEADS * HEAD_DIM, N_EMBD),
                  p + "attn_k.weight": matrix(N_KV_HEADS * HEAD_DIM, N_EMBD),
                  p + "attn_v.weight": matrix(N_KV_HEADS * HEAD_DIM, N_EMBD),
                  p + "attn_output.weight": matrix(N_EMBD, N_HEADS * HEAD_DIM),
                  p + "ffn_norm.weight": rng.uniform(0.5, 1.5, N_EMBD),
                  p + "ffn_gate.weight": matrix(N_FF, N_EMBD), p + "ffn_up.weight": matrix(N_FF, N_EMBD),
                  p + "ffn_down.weight": matrix(N_EMBD, N_FF)})
    return t


def normal_to_neox(w, n_heads):
    """Rows of each head reordered (0, 2, 4, ..., 1, 3, 5, ...): pair (2i, 2i+1) becomes (i, i + d/2)."""
    order = np.concatenate([np.arange(0, HEAD_DIM, 2), np.arange(1, HEAD_DIM, 2)])
    return w.reshape(n_heads, HEAD_DIM, -1)[:, order, :].reshape(w.shape)


class Architectures(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.llama = random_llama(np.random.default_rng(7))

    def tearDown(self):
        self.dir.cleanup()

    def logits(self, name, metadata, tensors):
        path = os.path.join(self.dir.name, name + ".gguf")
        write_gguf(path, len(metadata), encode_metadata(metadata), [f32_tensor(n, v) for n, v in tensors.items()])
        return Model(path).logits(TOKENS, np.arange(len(TOKENS)))

    def neox_tensors(self):
        t = dict(self.llama)
        for il in range(N_LAYERS):
            t[f"blk.{il}.attn_q.weight"] = normal_to_neox(t[f"blk.{il}.attn_q.weight"], N_HEADS)
            t[f"blk.{il}.attn_k.weight"] = normal_to_neox(t[f"blk.{il}.attn_k.weight"], N_KV_HEADS)
        return t

    def test_qwen2_with_zero_biases_and_neox_rows_is_llama(self):
        t = self.neox_tensors()
        for il in range(N_LAYERS):
            for name, n in (("attn_q", N_HEADS), ("attn_k", N_KV_HEADS), ("attn_v", N_KV_HEADS)):
                t[f"blk.{il}.{name}.bias"] = np.zeros(n * HEAD_DIM)
        want = self.logits("llama", hparams("llama"), self.llama)
        np.testing.assert_allclose(self.logits("qwen2", hparams("qwen2"), t), want, rtol=0, atol=1e-12)

    def test_qwen2_biases_matter(self):
        t = self.neox_tensors()
        for il in range(N_LAYERS):
            for name, n in (("attn_q", N_HEADS), ("attn_k", N_KV_HEADS), ("attn_v", N_KV_HEADS)):
                t[f"blk.{il}.{name}.bias"] = np.full(n * HEAD_DIM, 0.5)
        self.assertGreater(np.abs(self.logits("qwen2", hparams("qwen2"), t)
                                  - self.logits("llama", hparams("llama"), self.llama)).max(), 1e-3)

    def test_phi3_fused_tensors_are_llama(self):
        t = self.neox_tensors()
        for il in range(N_LAYERS):
            p = f"blk.{il}."
            t[p + "attn_qkv.weight"] = np.concatenate([t.pop(p + "attn_q.weight"), t.pop(p + "attn_k.weight"),
                                                       t.pop(p + "attn_v.weight")])
            t[p + "ffn_up.weight"] = np.concatenate([t.pop(p + "ffn_gate.weight"), t[p + "ffn_up.weight"]])
        want = self.logits("llama", hparams("llama"), self.llama)
        np.testing.assert_allclose(self.logits("phi3", hparams("phi3"), t), want, rtol=0, atol=1e-12)

    def test_qwen3_runs(self):
        t = self.neox_tensors()
        for il in range(N_LAYERS):
            t[f"blk.{il}.attn_q_norm.weight"] = np.ones(HEAD_DIM)
            t[f"blk.{il}.attn_k_norm.weight"] = np.ones(HEAD_DIM)
        self.assertTrue(np.isfinite(self.logits("qwen3", hparams("qwen3"), t)).all())

    def gemma_tensors(self, qk_norm):
        t = self.neox_tensors()
        del t["output.weight"]  # tied
        for il in range(N_LAYERS):
            p = f"blk.{il}."
            t[p + "post_attention_norm.weight"] = np.ones(N_EMBD)
            t[p + "post_ffw_norm.weight"] = np.ones(N_EMBD)
            if qk_norm:
                t[p + "attn_q_norm.weight"] = np.ones(HEAD_DIM)
                t[p + "attn_k_norm.weight"] = np.ones(HEAD_DIM)
        return t

    def test_gemma2_final_soft_capping_bounds_the_logits(self):
        logits = self.logits("gemma2", hparams("gemma2", final_logit_softcapping=0.5), self.gemma_tensors(False))
        self.assertLess(np.abs(logits).max(), 0.5)
        self.assertGreater(np.abs(logits).max(), 0.1)

    def test_gemma3_runs(self):
        logits = self.logits("gemma3", hparams("gemma3", **{"attention.sliding_window": 4}), self.gemma_tensors(True))
        self.assertTrue(np.isfinite(logits).all())

    def test_a_tensor_the_graph_does_not_read_is_refused(self):
        t = dict(self.llama, **{"blk.0.attn_q.bias": np.zeros(N_EMBD)})
        with self.assertRaisesRegex(ValueError, "does not read: blk.0.attn_q.bias"):
            self.logits("llama_extra", hparams("llama"), t)


if __name__ == "__main__":
    unittest.main()
