"""RANDOM_MULTINOMIAL, as Android's reference kernel computes it but for the random stream.

Per row: the largest finite logit, the running float64 sum of ``exp(logit - max)`` over finite
logits (a non-finite logit adds nothing) as a CDF, then per sample a uniform double in [0, 1)
times the total, located with ``upper_bound`` in the CDF. Android draws its uniforms from
TensorFlow's Philox4x32-10 stream; here they come from NumPy's Philox generator keyed by the two
seeds, so a seed pair gives one fixed stream (not Android's numbers), and seeds (0, 0) a fresh
random one on every run, as the spec says.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py.fallback.registry import Node, register


def generator(seeds: np.ndarray) -> np.random.Generator:
    """The uniform stream of one run: keyed by the seeds, or random where both are 0."""
    a, b = (int(v) & 0xFFFFFFFF for v in np.asarray(seeds).reshape(-1)[:2])
    if a == 0 and b == 0:
        return np.random.Generator(np.random.Philox())
    return np.random.Generator(np.random.Philox(key=np.array([a, b], np.uint64)))


def draw(logits: np.ndarray, samples: int, uniforms: np.ndarray) -> np.ndarray:
    """Class indices for ``uniforms`` ([batches, samples] in [0, 1)) under each row's softmax."""
    finite = np.isfinite(logits)
    peak = np.where(finite, logits, np.finfo(np.float32).min).max(axis=1, keepdims=True)
    terms = np.where(finite, np.exp(logits.astype(np.float64) - peak.astype(np.float64)), 0.0)
    cdf = np.cumsum(terms, axis=1)  # sequential, as the class loop adds
    targets = uniforms * cdf[:, -1:]
    # upper_bound per row; a row without a finite logit finds nothing (index = classes), as Android's
    return np.stack([np.searchsorted(row, t, side="right") for row, t in zip(cdf, targets)]).astype(np.int32)


@register("RANDOM_MULTINOMIAL")
def random_multinomial(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """``samples`` class indices per row of logits."""
    logits, seeds = inputs[0], inputs[1]
    samples = int(node.attrs.samples)
    uniforms = generator(seeds).random((logits.shape[0], samples))
    if logits.shape[0] == 0:
        return np.zeros((0, samples), np.int32)
    return draw(logits, samples, uniforms).reshape(logits.shape[0], samples)
