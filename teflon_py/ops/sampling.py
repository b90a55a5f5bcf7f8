"""RANDOM_MULTINOMIAL (an NNAPI operation): attributes, rules and shape inference.

Each row of unnormalised log-probabilities ``[batches, classes]`` gives ``samples`` class indices
drawn independently; a two-element int32 seed tensor fixes the random stream (both 0: a fresh
random stream on every run).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teflon_py.ops.registry import Inputs, Meta, define


@dataclass(frozen=True)
class MultinomialAttrs:
    """RANDOM_MULTINOMIAL: the number of samples drawn per row."""

    samples: int = 1


@define("RANDOM_MULTINOMIAL", attrs=MultinomialAttrs)
def infer_multinomial(attrs: MultinomialAttrs, ins: Inputs) -> list[Meta]:
    logits, seeds = ins[0], ins[1]
    if logits is None or seeds is None:
        raise ins.error("takes the logits and the seeds")
    if logits.dtype != np.float32 or len(logits.shape) != 2:
        raise ins.error(f"the logits must be a 2-D float32 tensor, got {logits.dtype} {list(logits.shape)}")
    if seeds.dtype != np.int32 or tuple(seeds.shape) != (2,):
        raise ins.error(f"the seeds must be an int32 tensor of shape [2], got {seeds.dtype} {list(seeds.shape)}")
    if attrs.samples < 0:
        raise ins.error(f"the sample count {attrs.samples} is negative")
    return [Meta((logits.shape[0], attrs.samples), np.dtype(np.int32))]
