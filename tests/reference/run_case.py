#!/usr/bin/env python3
"""One case of the reference suite: `ridge forward` under one ISA against the reference.

  run_case.py --ridge BIN --model M.gguf --type T --isa ISA --work DIR

Runs `RIDGE_ISA=ISA ridge forward` (greedy, 32 steps), the reference teacher-forced
on ridge's tokens, and compare.py. Exit 0: agreed; 1: disagreed; 77: the CPU does
not support ISA (CTest reports the case as not run, never as passed).

Tolerance (max |logit diff| / max |logit|), and why:
  * EXACT_TOLERANCE where ridge computes with the dequantized weights and float
    activations: F32 and F16 under every ISA, BF16 under scalar and avx2, and every type
    under RIDGE_ISA=scalar. Only float32 rounding separates ridge from the
    float64 reference (measured: < 1e-6).
  * INT8_TOLERANCE where ridge's SIMD kernels round each activation row to int8
    blocks of 32 (scale max|x|/127, round half to even) before the dot product,
    as llama.cpp's do: the types in INT8_ACTIVATION_TYPES, under avx2 and
    avx512. The reference then models that rounding (--act-quant-block 32),
    which makes many runs agree to ~3e-7, but not all: the rounding is
    discontinuous at ties (x/scale = k + 0.5), and layer 0's activations are
    RMS-normalised quantized embeddings, whose ratios to the block maximum can
    hit ties exactly (Q4_0: codes +-4 against the block's extreme -8 give
    +-4*127/8 = +-63.5, an eighth of all elements; the other types less
    often). Which way a tie rounds then rests on the last bit of float32
    RMSNorm, which differs between ridge's ISAs and from the float64
    reference: ridge avx2 and avx512 differ from each other by 2 % on Q4_0.
    So the tolerance is that of many changed roundings, 5e-2 (measured up to
    2.7e-2 for Q4_0, 1e-2 for Q8_0 and Q6_K, 5e-3 for Q4_K).
  * BF16_TOLERANCE for BF16 weights under avx512 and amx, whose kernels round
    each activation to BF16 (nearest even) for the BF16 dot (vdpbf16ps). The
    reference models that rounding (--bf16-acts), and most steps then agree to
    ~1e-7; in the others a rounding flipped where ridge's float32 value and
    the reference's float64 one lie on either side of a BF16 rounding boundary
    (up to 2^-8 of one element, carried through the later layers: measured up
    to 3.1e-3, where not modelling the rounding at all gives ~5e-3 on every
    step). So the bound is 1e-2, and at least half the steps must agree to
    EXACT_TOLERANCE: the rounding is modelled, not only tolerated.
"""
import argparse
import json
import os
import subprocess
import sys

import numpy as np

from compare import compare
from model import Model
from reference import teacher_forced

# In the order ridge ranks them; `ridge cpu` names the best on an AMX machine "amx" (AVX-512 with Q8_0's
# panels on AMX tiles, from 32 tokens: the cases' 12-token prompts run as avx512 there).
ISAS = ("scalar", "avx2", "avx512", "amx")
# 12 tokens: prefill takes the panel path where a type has one (from 8 tokens).
PROMPT = [1, 450, 4996, 3681, 29871, 13, 1576, 338, 263, 1243, 310, 278]
STEPS = 32
EXACT_TOLERANCE = 1e-5
ACT_QUANT_BLOCK = 32
INT8_TOLERANCE = 5e-2
# The weight types whose avx2 and avx512 MatMul kernels quantize activations to
# int8 blocks of 32 (src/ridge/kernels/matmul_*_avx*.cc). Add a type when its SIMD kernel lands.
INT8_ACTIVATION_TYPES = {"Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "IQ4_NL", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K",
                         "IQ4_XS", "Q4_K_M", "Q5_K_M", "MXFP4"}  # the mixes: every weight type in them has such a kernel
# The ISAs whose BF16 MatMul rounds activations to BF16 (src/ridge/kernels/matmul_float_avx512.cc).
BF16_ACTIVATION_ISAS = {"avx512", "amx"}
BF16_TOLERANCE = 1e-2
SKIP = 77


def hardware_best_isa(ridge):
    out = subprocess.run([ridge, "cpu"], check=True, capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if k != "RIDGE_ISA"}).stdout
    return out.split("hardware best:")[1].split(")")[0].strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ridge", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--type", required=True, help="the weight type gen-model wrote (F32, Q4_0, ...)")
    parser.add_argument("--isa", required=True, choices=ISAS)
    parser.add_argument("--work", required=True, help="folder for ridge's outputs")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    best = hardware_best_isa(args.ridge)
    if ISAS.index(args.isa) > ISAS.index(best):
        print(f"SKIP: this CPU supports at most {best}, not {args.isa}")
        return SKIP

    os.makedirs(args.work, exist_ok=True)
    logits_path = os.path.join(args.work, "ridge.logits")
    command = [args.ridge, "forward", "-m", args.model, "--tokens", ",".join(map(str, PROMPT)), "-n", str(STEPS),
               "--logits-out", logits_path, "-t", str(args.threads)]
    print("RIDGE_ISA=" + args.isa, " ".join(command))
    out = subprocess.run(command, check=True, capture_output=True, text=True,
                         env=dict(os.environ, RIDGE_ISA=args.isa)).stdout
    ridge = json.loads(out)
    logits = np.fromfile(logits_path, dtype="<f4").reshape(STEPS, ridge["n_vocab"])

    int8 = args.isa != "scalar" and args.type in INT8_ACTIVATION_TYPES
    bf16 = args.isa in BF16_ACTIVATION_ISAS and args.type == "BF16"
    model = Model(args.model, act_block=ACT_QUANT_BLOCK if int8 else 0, bf16_acts=bf16)
    ref_logits = teacher_forced(model, PROMPT, ridge["tokens"])
    acts = "int8 activations in blocks of 32" if int8 else "BF16 activations" if bf16 else "exact activations"
    print(f"reference: {model.hparams.arch}, {acts}")
    tolerance = INT8_TOLERANCE if int8 else BF16_TOLERANCE if bf16 else EXACT_TOLERANCE
    result = compare(ridge["tokens"], logits, ref_logits, tolerance,
                     min_steps_within=(EXACT_TOLERANCE, STEPS // 2) if bf16 else None)
    print("\n".join(result.lines))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
