"""The conformance harness's own checks can fail: the per-element float bound catches one bad
element that relative L2 lets through and names it; NaN and infinity positions are compared; the
extreme integer inputs hit every edge of their type."""
from __future__ import annotations

import numpy as np
import pytest

from tests.harness import assert_close, extreme_values, random_input


def test_one_bad_element_fails_the_per_element_bound_not_l2() -> None:
    expected = np.ones(10_000, np.float32)
    actual = expected.copy()
    actual[1234] = 1.0005  # relative L2 5e-6 (within 1e-5), the element itself 5e-4 off
    with pytest.raises(AssertionError, match=r"element 1234 \(flat\) ours 1\.0004999.*, LiteRT 1\.0:"):
        assert_close(actual, expected, 1e-5)
    assert_close(actual, expected, 1e-5, elem_tol=1e-3)  # a stated looser bound admits it


def test_small_elements_are_judged_against_the_outputs_scale() -> None:
    """A near-zero element of a cancelling sum may be off by the tolerance times the output's RMS."""
    expected = np.array([1e-9, 3.0, -4.0, 2.0], np.float32)
    rms = float(np.sqrt(np.mean(expected.astype(np.float64) ** 2)))
    actual = expected.copy()
    actual[0] += np.float32(0.5e-5 * rms)
    assert_close(actual, expected, 1e-5)
    actual[0] = np.float32(1e-9 + 1.5e-4 * rms)  # relative L2 0.75e-4: within 1e-4, the element is not
    with pytest.raises(AssertionError, match=r"element 0 \(flat\)"):
        assert_close(actual, expected, 1e-4)
    assert_close(actual, expected, 1e-4, elem_tol=2e-4)


def test_nan_and_infinity_positions_are_compared() -> None:
    expected = np.array([np.nan, np.inf, -np.inf, 1.0], np.float32)
    assert_close(expected.copy(), expected, 0.0)
    with pytest.raises(AssertionError, match=r"NaN positions differ; first at flat index 0: ours 0\.0"):
        assert_close(np.array([0.0, np.inf, -np.inf, 1.0], np.float32), expected, 1e-5)
    with pytest.raises(AssertionError, match=r"infinities differ; first at flat index 2: ours inf"):
        assert_close(np.array([np.nan, np.inf, np.inf, 1.0], np.float32), expected, 1e-5)
    with pytest.raises(AssertionError, match=r"infinities differ; first at flat index 3: ours inf, LiteRT 1\.0"):
        assert_close(np.array([np.nan, np.inf, -np.inf, np.inf], np.float32), expected, 1e-5)


def test_integer_mismatch_names_the_first_element() -> None:
    expected = np.array([1, 2, 3], np.int8)
    with pytest.raises(AssertionError, match=r"1 of 3 elements differ .* flat index 2: ours -3, LiteRT 3"):
        assert_close(np.array([1, 2, -3], np.int8), expected, 0.0)


@pytest.mark.parametrize("dtype,zero_point", [(np.int8, -5), (np.uint8, 128), (np.int16, 0), (np.int32, 0)])
def test_extreme_inputs_reach_every_edge(dtype: type, zero_point: int) -> None:
    info = np.iinfo(dtype)
    detail = {"shape": np.array([64, 64]), "dtype": dtype,
              "quantization_parameters": {"zero_points": np.array([zero_point])}}
    x = random_input(detail, np.random.default_rng(0), extremes=True)
    assert x.dtype == dtype
    edges = extreme_values(np.dtype(dtype), zero_point)
    assert {info.min, info.max, 0, zero_point - 1, zero_point, zero_point + 1} <= set(edges.tolist())
    assert set(edges.tolist()) <= set(x.reshape(-1).tolist())  # every edge is drawn
    assert np.count_nonzero(~np.isin(x, edges)) > 0  # and some bulk values between them
