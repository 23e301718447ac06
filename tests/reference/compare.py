"""Holds one implementation's greedy tokens and logits to the reference's (teacher-forced).

Both logits arrays are [steps, n_vocab]; row i of the reference's was computed
after the prompt and the other implementation's tokens 0 .. i-1.

Logits: max |ours - reference| / max |reference| <= tolerance.
Steps (optional, min_steps_within = (tighter tolerance, n)): at least n steps
must each hold that tighter bound, for an error that is modelled and should
be rare rather than tolerated everywhere.
Tokens: at each step the chosen token must be the reference's argmax, unless
the reference itself rates the two within the logit tolerance (a near-tie
that the tolerated error may flip); every difference is printed with the
reference's top-2 margin either way.
"""
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Comparison:
    ok: bool = True
    lines: list = field(default_factory=list)

    def fail(self, line):
        self.ok = False
        self.lines.append("FAIL " + line)


def compare(tokens, logits, ref_logits, tolerance, min_steps_within=None):
    result = Comparison()
    if logits.shape != ref_logits.shape or len(tokens) != len(logits):
        result.fail(f"shapes differ: {len(tokens)} tokens, logits {logits.shape}, reference {ref_logits.shape}")
        return result
    scale = np.abs(ref_logits).max()
    diff = np.abs(logits.astype(np.float64) - ref_logits)
    worst_step, worst_id = np.unravel_index(np.argmax(diff), diff.shape)
    relative = diff.max() / scale
    allowed = tolerance * scale  # in logits
    summary = (f"max |logit diff| {diff.max():.3g} at step {worst_step} token {worst_id}; max |logit| {scale:.3g}; "
               f"relative {relative:.3g} (tolerance {tolerance:g})")
    if not relative <= tolerance:
        result.fail(summary)
    else:
        result.lines.append("ok   " + summary)
    if min_steps_within is not None:
        step_tolerance, n_steps = min_steps_within
        within = int((diff.max(axis=1) / scale <= step_tolerance).sum())
        line = f"{within} of {len(diff)} steps agree to {step_tolerance:g} (at least {n_steps} must)"
        if within < n_steps:
            result.fail(line)
        else:
            result.lines.append("ok   " + line)

    for step, (token, row) in enumerate(zip(tokens, ref_logits)):
        top2 = np.argsort(row)[::-1][:2]
        best = int(top2[0])
        if token == best:
            continue
        gap = row[best] - row[token]
        margin = row[top2[0]] - row[top2[1]]
        line = (f"step {step}: token {token}, reference {best}; reference top-2 margin {margin:.4g}, "
                f"reference's preference over token {token}: {gap:.4g} logits")
        if gap > allowed:
            result.fail(line)
        else:
            result.lines.append(f"near-tie {line} (within the tolerance of {allowed:.3g} logits)")
    return result
