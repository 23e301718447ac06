"""The oracle is not vacuous: a file changed in one weight, or with a norm off by one,
must fail the comparison with ridge's outputs for the original; a tensor the graph
does not read is an error; RoPE (YaRN too), attention (window, soft-capping) and the
int8 rounding of activations on hand-worked values.

The perturbation tests run `ridge gen-model` and `ridge forward`: the suite gives
RIDGE_BINARY, RIDGE_REFERENCE_VOCAB and RIDGE_REFERENCE_WORK in the environment."""
import json
import os
import shutil
import subprocess
import unittest

import numpy as np

from arch_gptoss import swiglu_oai
from attention import attention
from compare import compare
from ggml_types import BY_NAME
from gguf_reader import TensorInfo
from model import Model
from reference import teacher_forced
from rope import Rope
from weights import Weights, quantize_activations

PROMPT = [1, 450, 4996]
STEPS = 8
TOLERANCE = 1e-5


@unittest.skipUnless(os.environ.get("RIDGE_BINARY"), "needs RIDGE_BINARY, RIDGE_REFERENCE_VOCAB, RIDGE_REFERENCE_WORK")
class Perturbations(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        ridge, work = os.environ["RIDGE_BINARY"], os.environ["RIDGE_REFERENCE_WORK"]
        os.makedirs(work, exist_ok=True)
        cls.work = work
        cls.model = os.path.join(work, "model.gguf")
        subprocess.run([ridge, "gen-model", "--dim", "64", "--ffn", "128", "--layers", "2", "--heads", "4",
                        "--kv-heads", "2", "--vocab-from", os.environ["RIDGE_REFERENCE_VOCAB"], "--type", "F32",
                        "--threads", "1", "-o", cls.model], check=True, capture_output=True)
        logits_path = os.path.join(work, "ridge.logits")
        out = subprocess.run([ridge, "forward", "-m", cls.model, "--tokens", ",".join(map(str, PROMPT)),
                              "-n", str(STEPS), "--logits-out", logits_path, "-t", "1"],
                             check=True, capture_output=True, text=True).stdout
        cls.tokens = json.loads(out)["tokens"]
        cls.logits = np.fromfile(logits_path, dtype="<f4").reshape(STEPS, -1)

    def compare_with(self, path):
        return compare(self.tokens, self.logits, teacher_forced(Model(path), PROMPT, self.tokens), TOLERANCE)

    def perturbed(self, name, tensor, change):
        """A copy of the model with change(values) applied to the F32 tensor `tensor`."""
        path = os.path.join(self.work, name + ".gguf")
        shutil.copyfile(self.model, path)
        info = Model(path).gguf.tensors[tensor]
        data = np.memmap(path, dtype=np.uint8, mode="r+", offset=info.offset, shape=(info.n_bytes,))
        values = data.view("<f4")
        change(values)
        data.flush()
        return path

    def test_the_original_agrees(self):
        result = self.compare_with(self.model)
        self.assertTrue(result.ok, "\n".join(result.lines))

    def test_one_weight_changed_fails(self):
        def change(v):
            v[0] += 0.25
        result = self.compare_with(self.perturbed("one_weight", "blk.1.attn_v.weight", change))
        self.assertFalse(result.ok, "\n".join(result.lines))

    def test_norm_off_by_one_fails(self):  # the Gemma (1 + w) mistake, made on a llama norm
        def change(v):
            v += 1.0
        result = self.compare_with(self.perturbed("norm_plus_one", "blk.0.ffn_norm.weight", change))
        self.assertFalse(result.ok, "\n".join(result.lines))


class StubGguf:
    """Two F32 vectors of 2 elements, 'used' and 'extra'."""

    def __init__(self):
        self.metadata = {"general.architecture": "llama"}
        self.tensors = {name: TensorInfo(name, (2,), BY_NAME["F32"], 0, 8) for name in ("used", "extra")}

    def tensor_bytes(self, name):
        return np.array([1.0, 2.0], dtype="<f4").view(np.uint8)


class UnusedTensors(unittest.TestCase):
    def test_a_tensor_the_graph_does_not_read_is_an_error(self):
        weights = Weights(StubGguf())
        weights.vector("used", 2)
        with self.assertRaisesRegex(ValueError, "does not read: extra"):
            weights.check_all_used()


class RopeByHand(unittest.TestCase):
    def test_normal_and_neox_pairs(self):
        # dim 4, base 100: pair 0 turns by p, pair 1 by p / 10 (100^(-2/4)); position 1.
        x = np.array([[[1.0, 0.0, 1.0, 0.0]]])
        c0, s0, c1, s1 = np.cos(1.0), np.sin(1.0), np.cos(0.1), np.sin(0.1)
        normal = Rope(4, 100.0, neox=False).apply(x, np.array([1]))
        np.testing.assert_allclose(normal[0, 0], [c0, s0, c1, s1])  # pairs (0, 1) and (2, 3)
        neox = Rope(4, 100.0, neox=True).apply(np.array([[[1.0, 1.0, 0.0, 0.0]]]), np.array([1]))
        np.testing.assert_allclose(neox[0, 0], [c0, c1, s0, s1])    # pairs (0, 2) and (1, 3)

    def test_linear_scaling_and_freq_factors_divide_the_angle(self):
        x = np.array([[[1.0, 0.0, 1.0, 0.0]]])
        scaled = Rope(4, 100.0, neox=False, factor=4.0, freq_factors=np.array([1.0, 2.0])).apply(x, np.array([8]))
        np.testing.assert_allclose(scaled[0, 0], [np.cos(2.0), np.sin(2.0), np.cos(0.1), np.sin(0.1)])

    def test_attn_factor_multiplies_cos_and_sin(self):
        x = np.array([[[1.0, 0.0]]])
        out = Rope(2, 100.0, neox=True, attn_factor=2.0).apply(x, np.array([1]))
        np.testing.assert_allclose(out[0, 0], [2 * np.cos(1.0), 2 * np.sin(1.0)])


    def test_yarn_blends_scaled_and_unscaled_pairs(self):
        # dim 4, base 10000, original context 64, factor 4: c(32) = 4 ln(64 / 64pi) / 2 ln 10000 = -0.25 -> low 0;
        # c(1) = 4 ln(64 / 2pi) / 2 ln 10000 = 0.504 -> high 1. Pair 0 keeps its angle (ramp 1), pair 1 is
        # divided by the factor (ramp 0); cos and sin gain 1 + 0.1 ln 4.
        x = np.array([[[1.0, 0.0, 1.0, 0.0]]])
        out = Rope(4, 10000.0, neox=False, factor=4.0, yarn_ctx_orig=64).apply(x, np.array([2]))
        m = 1 + 0.1 * np.log(4.0)
        np.testing.assert_allclose(out[0, 0], m * np.array([np.cos(2.0), np.sin(2.0), np.cos(0.005), np.sin(0.005)]))


class AttentionByHand(unittest.TestCase):
    def test_a_window_of_one_sees_only_itself(self):
        rng = np.random.default_rng(1)
        q, k, v = rng.normal(size=(3, 2, 4)), rng.normal(size=(3, 1, 4)), rng.normal(size=(3, 1, 4))
        out = attention(q, k, v, np.arange(3), scale=0.5, window=1)
        np.testing.assert_allclose(out.reshape(3, 2, 4), np.repeat(v, 2, axis=1))

    def test_causal_mask_and_soft_cap(self):
        # Position 1 sees keys 0 and 1: scores 0.5 * (q.k) = [0, 10], capped by 1 * tanh(s / 1) to [0, ~1].
        q = np.array([[[0.0, 0.0]], [[20.0, 0.0]]])
        k = np.array([[[0.0, 0.0]], [[1.0, 0.0]]])
        v = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])
        w1 = np.exp(np.tanh(10.0)) / (1 + np.exp(np.tanh(10.0)))
        out = attention(q, k, v, np.arange(2), scale=0.5, logit_cap=1.0)
        np.testing.assert_allclose(out, [[1.0, 0.0], [1 - w1, w1]])

    def test_a_sink_takes_its_share_of_the_softmax(self):
        # Same scores [0, 5] at position 1 (no cap) and a sink of 5 for the one head: weights
        # e^0, e^5, e^5 over their sum, the sink's dropped; position 0 keeps 1 / (1 + e^5) of v_0.
        q = np.array([[[0.0, 0.0]], [[10.0, 0.0]]])
        k = np.array([[[0.0, 0.0]], [[1.0, 0.0]]])
        v = np.array([[[1.0, 0.0]], [[0.0, 1.0]]])
        total = 1 + 2 * np.exp(5.0)
        out = attention(q, k, v, np.arange(2), scale=0.5, sinks=np.array([5.0]))
        np.testing.assert_allclose(out, [[1 / (1 + np.exp(5.0)), 0.0], [1 / total, np.exp(5.0) / total]])


class GptOssActivation(unittest.TestCase):
    def test_clamped_swiglu(self):
        # gate capped at 7 from above only, up clamped to [-7, 7]: g * sigmoid(1.702 g) * (u + 1).
        out = swiglu_oai(np.array([9.0, -9.0, 1.0]), np.array([1.0, 0.0, -10.0]))
        glu = lambda g: g / (1 + np.exp(-1.702 * g))  # noqa: E731
        np.testing.assert_allclose(out, [glu(7.0) * 2, glu(-9.0), glu(1.0) * -6])


class ActivationRounding(unittest.TestCase):
    def test_int8_blocks_round_half_to_even(self):
        # Block of 4 with max 12.7: scale 0.1; 0.25 / 0.1 = 2.5 -> 2, 0.35 / 0.1 = 3.5 -> 4, -12.7 -> -127.
        x = np.array([[0.25, 0.35, -12.7, 1.04]])
        np.testing.assert_allclose(quantize_activations(x, 4), [[0.2, 0.4, -12.7, 1.0]])

    def test_a_zero_block_stays_zero(self):
        np.testing.assert_array_equal(quantize_activations(np.zeros((1, 4)), 4), np.zeros((1, 4)))


if __name__ == "__main__":
    unittest.main()
