#!/usr/bin/env python3
"""The reference forward pass: greedy decoding from token ids, with the logits of every step.

  python3 tests/reference/reference.py --model M.gguf --tokens 1,2,3 --steps 32 \\
      [--teacher TOKENS_FILE] [--logits-out F] [--act-quant-block 32] [--bf16-acts] [--ctx N]

Prints one JSON line {"n_vocab": V, "tokens": [...], "teacher_forced": bool}: the
token the reference chooses (argmax, lowest id on ties) at each step. --logits-out
writes the logits as little-endian float32 [steps, n_vocab], row i = the logits
that chose token i; `ridge forward` writes the same.

--teacher: the tokens another implementation chose (a file holding `ridge
forward`'s JSON line, or ids separated by commas or spaces). Step i then sees
the prompt followed by that implementation's tokens 0 .. i-1, so one near-tie
does not derail the rest of the comparison; "tokens" are still the reference's
own choices at each step.
"""
import argparse
import json
import sys

import numpy as np

from model import Model


def parse_ids(text):
    text = text.strip()
    if text.startswith("{"):
        return [int(t) for t in json.loads(text)["tokens"]]
    return [int(t) for t in text.replace(",", " ").split()]


def greedy(model, prompt, steps):
    """Free-running greedy decoding: each step sees the reference's own earlier choices."""
    sequence, rows = list(prompt), []
    for _ in range(steps):
        logits = model.logits(np.array(sequence), [len(sequence) - 1])[0]
        rows.append(logits)
        sequence.append(int(np.argmax(logits)))
    return np.array(rows)


def teacher_forced(model, prompt, teacher):
    """One pass over prompt + teacher[:-1]; row i = the logits after prompt + teacher[:i]."""
    sequence = np.array(list(prompt) + list(teacher[:-1]))
    rows = np.arange(len(prompt) - 1, len(sequence))
    return model.logits(sequence, rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="GGUF model file")
    parser.add_argument("--tokens", required=True, help="prompt token ids, comma-separated")
    parser.add_argument("--steps", type=int, default=32, help="tokens to decode (default 32)")
    parser.add_argument("--teacher", help="file with the tokens another implementation chose (see above)")
    parser.add_argument("--logits-out", help="file for the logits, float32 [steps, n_vocab]")
    parser.add_argument("--act-quant-block", type=int, default=0,
                        help="round the input of each product with a quantized weight to int8 blocks of this "
                             "many elements, as int8 SIMD kernels do (0: exact, the default)")
    parser.add_argument("--bf16-acts", action="store_true",
                        help="round the input of each product with a BF16 weight to BF16, as AVX-512's BF16 dot does")
    parser.add_argument("--ctx", type=int, help="context in use (Phi-3 LongRoPE); default the model's context_length")
    args = parser.parse_args(argv)

    prompt = parse_ids(args.tokens)
    if not prompt:
        parser.error("--tokens is empty")
    model = Model(args.model, act_block=args.act_quant_block, n_ctx=args.ctx, bf16_acts=args.bf16_acts)
    bad = [t for t in prompt if not 0 <= t < model.n_vocab]
    if bad:
        parser.error(f"token ids {bad} are outside the vocabulary [0, {model.n_vocab})")
    if args.teacher:
        with open(args.teacher) as f:
            teacher = parse_ids(f.read())
        if len(teacher) != args.steps:
            parser.error(f"--teacher holds {len(teacher)} tokens but --steps is {args.steps}")
        logits = teacher_forced(model, prompt, teacher)
    else:
        logits = greedy(model, prompt, args.steps)
    if args.logits_out:
        logits.astype("<f4").tofile(args.logits_out)
    tokens = [int(t) for t in np.argmax(logits, axis=1)]
    print(json.dumps({"n_vocab": model.n_vocab, "tokens": tokens, "teacher_forced": bool(args.teacher)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
