"""RANDOM_MULTINOMIAL from the spec's text. Android draws from TensorFlow's Philox stream, which
is not reproduced, so the tests state what the spec fixes: samples are class indices in range,
one seed pair gives one stream (the same samples on every run), both seeds 0 give fresh random
samples each run, a class of probability 0 (a -inf logit) never comes, and the samples follow
softmax(logits) (a chi-square test at a significance the suite never hits by chance)."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py.nnapi import OperandType as T
from teflon_py.nnapi import OperationType
from tests.nnapi.harness import Spec, expect_bad_data, run

#: chi-square critical value for 3 degrees of freedom at p = 1e-6
CHI2_3DOF_1E6 = 30.66


def model(t: T, batches: int, classes: int, samples: int):
    s = Spec()
    logits = s.input(t, [batches, classes])
    seeds = s.input(T.TENSOR_INT32, [2])
    y = s.output(T.TENSOR_INT32, [batches, samples])
    s.op(OperationType.RANDOM_MULTINOMIAL, [logits, s.i32(samples), seeds], [y])
    return s.model()


def draw(m, logits: np.ndarray, seeds, backend: str) -> np.ndarray:
    return run(m, [logits, np.array(seeds, np.int32)], backend)[0][0]


@pytest.mark.parametrize("t", [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16], ids=lambda t: t.name)
def test_multinomial_follows_the_softmax(backend: str, t: T) -> None:
    probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.7, 0.1, 0.1, 0.1]])
    logits = (np.log(probs) + np.array([[3.0], [-2.0]])).astype(np.float16 if t == T.TENSOR_FLOAT16 else np.float32)
    expected = np.exp(logits.astype(np.float64))
    expected /= expected.sum(axis=1, keepdims=True)
    samples = 20000
    out = draw(model(t, 2, 4, samples), logits, [12, 34], backend)
    assert out.shape == (2, samples) and out.dtype == np.int32
    assert out.min() >= 0 and out.max() < 4
    for row, p in zip(out, expected):
        counts = np.bincount(row, minlength=4)
        chi2 = float((((counts - samples * p) ** 2) / (samples * p)).sum())
        assert chi2 < CHI2_3DOF_1E6, f"counts {counts.tolist()} against probabilities {p.round(4).tolist()}"


def test_multinomial_is_deterministic_per_seed(backend: str) -> None:
    m = model(T.TENSOR_FLOAT32, 3, 5, 50)
    logits = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
    first = draw(m, logits, [7, 9], backend)
    np.testing.assert_array_equal(draw(m, logits, [7, 9], backend), first)
    np.testing.assert_array_equal(draw(model(T.TENSOR_FLOAT32, 3, 5, 50), logits, [7, 9], backend), first)
    assert not np.array_equal(draw(m, logits, [7, 10], backend), first)


def test_multinomial_zero_seeds_draw_fresh_samples(backend: str) -> None:
    m = model(T.TENSOR_FLOAT32, 1, 8, 200)
    logits = np.zeros((1, 8), np.float32)
    assert not np.array_equal(draw(m, logits, [0, 0], backend), draw(m, logits, [0, 0], backend))


def test_multinomial_never_draws_a_zero_probability_class(backend: str) -> None:
    logits = np.array([[0.0, -np.inf, 1.0, -np.inf]], np.float32)
    out = draw(model(T.TENSOR_FLOAT32, 1, 4, 500), logits, [1, 2], backend)
    assert set(np.unique(out).tolist()) == {0, 2}


def test_multinomial_sample_count_must_be_positive() -> None:
    expect_bad_data(lambda: model(T.TENSOR_FLOAT32, 1, 4, 0),
                    "operation 0 (RANDOM_MULTINOMIAL): input 1: the sample count must be positive, got 0")


def test_multinomial_takes_2d_logits() -> None:
    s = Spec()
    logits = s.input(T.TENSOR_FLOAT32, [4])
    y = s.output(T.TENSOR_INT32, [1, 3])
    s.op(OperationType.RANDOM_MULTINOMIAL, [logits, s.i32(3), s.const(T.TENSOR_INT32, [1, 2])], [y])
    expect_bad_data(s, "input 0: the logits must be 2-D [batches, classes], got shape [4]")
