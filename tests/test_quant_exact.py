"""``quant.requantize_scaled_exact`` (integers only) against LiteRT's reference FULLY_CONNECTED
rule ``round(double(acc) * scale)`` (``quant.requantize_scaled``, the fallback's, and C's round of
a Python float product as an independent oracle).

The cases that matter are where the double product's own rounding decides the integer: products
whose exact value lies just off a half-integer but round onto it in double (``double_rounding``
builds them from scale = fl((h + 1/2) / acc)), exact halves, the extreme accumulators, and every
scale exponent. ``hard_cases`` is shared with tests/test_quant_cl.py, which runs the OpenCL twin.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from teflon_py import quant

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
#: an output range wide enough that nothing below 2^19 in magnitude is clamped
WIDE = (0, -(1 << 19) + 1, (1 << 19) - 1)
EDGES = np.array([INT32_MIN, INT32_MIN + 1, INT32_MAX, INT32_MAX - 1, -1, 0, 1, 1 << 30, -(1 << 30)], np.int64)


def c_round_product(acc: int, scale: float) -> int:
    """C's round(double(acc) * scale): a Python float product (IEEE double), halves away."""
    return int(Decimal(float(acc) * scale).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def exact_round(acc: int, scale: float) -> int:
    """round(acc * scale) of the exact rational product (no double rounding), halves away."""
    x = Fraction(acc) * Fraction(scale)
    y = int(abs(x) + Fraction(1, 2))
    return y if x >= 0 else -y


def exact(acc: np.ndarray, scale: np.ndarray, zero_point: int, lo: int, hi: int) -> np.ndarray:
    mh, ml, sk = quant.exact_scale_parts(scale)
    return quant.requantize_scaled_exact(acc, mh, ml, sk, zero_point, lo, hi, np.int64)


def double(acc: np.ndarray, scale: np.ndarray, zero_point: int, lo: int, hi: int) -> np.ndarray:
    return quant.requantize_scaled(acc, scale, zero_point, lo, hi, np.int64)


def double_rounding(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(acc, scale) with acc * scale within a few double ulps of a half-integer h + 1/2."""
    acc = np.maximum(rng.integers(1, 1 << 31, n) >> rng.integers(0, 31, n), 1)
    h = rng.integers(0, 1 << 18, n) >> rng.integers(0, 18, n)
    scale = (h + 0.5) / acc.astype(np.float64) * np.exp2(rng.integers(-2, 3, n).astype(np.float64))
    acc = np.clip(acc + rng.integers(-1, 2, n), 0, INT32_MAX)
    return acc * rng.choice([-1, 1], n), scale


def exact_halves(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(acc, scale) whose product is exactly an odd multiple of 1/2: scale = odd * 2^-j,
    acc = odd * 2^(j-1)."""
    j = rng.integers(1, 31, n)
    scale = np.ldexp((rng.integers(0, 1 << 20, n) * 2 + 1).astype(np.float64), -j)
    odd = rng.integers(0, 1 << 30, n) * 2 + 1
    acc = (odd >> (j - 1)) | 1
    acc = acc << (j - 1)
    keep = scale * acc < 2.0**18
    return (acc * rng.choice([-1, 1], n))[keep], scale[keep]


def hard_cases(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(acc, scale) pairs: near-ties, exact halves, extreme accumulators at every scale exponent,
    random accumulators at scales 2^-40 .. 2^19."""
    parts = [double_rounding(rng, n), exact_halves(rng, n)]
    exps = rng.uniform(-40, 19, n)
    parts.append((rng.choice(EDGES, n), np.exp2(exps)))
    parts.append((rng.integers(INT32_MIN, INT32_MAX, n, endpoint=True) >> rng.integers(0, 31, n), np.exp2(exps[::-1])))
    acc = np.concatenate([p[0] for p in parts]).astype(np.int64)
    scale = np.concatenate([p[1] for p in parts])
    return acc, np.minimum(scale, np.nextafter(quant.EXACT_SCALE_SATURATES, 0))


def test_parts_are_the_scale() -> None:
    """mantissa * 2^-k is the float64 scale exactly, mantissa < 2^53, k - 30 in [3, 56]."""
    rng = np.random.default_rng(0)
    scale = np.exp2(rng.uniform(-34, 19, 4096))
    mh, ml, sk = quant.exact_scale_parts(scale)
    mantissa = (mh << 32) | ml
    assert np.all((mantissa >= 1 << 52) & (mantissa < 1 << 53))
    assert np.all((sk >= 3) & (sk <= 56))
    np.testing.assert_array_equal(np.ldexp(mantissa.astype(np.float64), -(sk + 30).astype(np.int32)), scale)


def test_double_rounding_cases() -> None:
    """Near-ties: the exact product rounds one way, the double product the other -- the integer
    formula follows the double one. The construction must actually reach such cases."""
    rng = np.random.default_rng(1)
    acc, scale = double_rounding(rng, 20000)
    got = exact(acc, scale, *WIDE)
    np.testing.assert_array_equal(got, double(acc, scale, *WIDE))
    oracle = np.clip([c_round_product(int(a), float(s)) for a, s in zip(acc, scale)], WIDE[1], WIDE[2])
    np.testing.assert_array_equal(got, oracle)
    single = np.clip([exact_round(int(a), float(s)) for a, s in zip(acc, scale)], WIDE[1], WIDE[2])
    differ = np.count_nonzero(single != oracle)
    assert differ >= 50, f"only {differ} products where double rounding decides"
    fractions = np.abs(acc * scale) % 1.0
    assert np.count_nonzero(fractions == 0.5) >= 1000  # ties of the double product


def test_exact_halves_round_away() -> None:
    rng = np.random.default_rng(2)
    acc, scale = exact_halves(rng, 20000)
    assert np.all(np.abs(acc * scale) % 1.0 == 0.5)
    got = exact(acc, scale, *WIDE)
    np.testing.assert_array_equal(got, double(acc, scale, *WIDE))
    np.testing.assert_array_equal(np.abs(got), np.floor(np.abs(acc * scale)) + 1)


@pytest.mark.parametrize("exponent", range(-40, 26))
def test_every_scale_exponent(exponent: int) -> None:
    """Extreme and random accumulators at scales 2^e .. 2^(e+1); from 2^19 up (saturating scales)
    outputs agree within int16 and wider 8-bit ranges shifted by a zero point."""
    rng = np.random.default_rng(100 + exponent)
    scale = np.exp2(exponent + rng.uniform(0, 1, 64))
    scale[0] = 2.0**exponent
    acc = rng.integers(INT32_MIN, INT32_MAX, (64, 512), endpoint=True) >> rng.integers(0, 32, (64, 512))
    acc[:, :EDGES.size] = EDGES
    ranges = [(0, -32768, 32767), (-128, -128, 127), (255, 0, 255)]
    if exponent < 19:
        ranges.append(WIDE)
    for zero_point, lo, hi in ranges:
        np.testing.assert_array_equal(exact(acc, scale[:, None], zero_point, lo, hi),
                                      double(acc, scale[:, None], zero_point, lo, hi))


@pytest.mark.parametrize("scale", [0.5, 0.0078125, 1 / 3, 2.0**-33, 2.0**-35, 0.0, 5e-324, 2.0**19, 1e300])
def test_windows(scale: float) -> None:
    """Every accumulator in [-2^17, 2^17] and at both ends of the int32 range."""
    acc = np.concatenate([np.arange(-(1 << 17), (1 << 17) + 1), np.arange(INT32_MIN, INT32_MIN + 4096),
                          np.arange(INT32_MAX - 4095, INT32_MAX + 1)])
    for zero_point, lo, hi in [(0, -32768, 32767), (3, -128, 127)]:
        with np.errstate(over="ignore"):  # 1e300 * acc is infinite in double, then clamped
            expected = double(acc, np.float64(scale), zero_point, lo, hi)
        np.testing.assert_array_equal(exact(acc, np.float64(scale), zero_point, lo, hi), expected)


def test_per_channel_broadcast() -> None:
    """Per-channel parts broadcast along the last axis, as the fallback's scales do."""
    rng = np.random.default_rng(3)
    acc, scale = hard_cases(rng, 256)
    acc = acc[: acc.size // 8 * 8].reshape(-1, 8)
    scale = scale[:8]
    np.testing.assert_array_equal(exact(acc, scale, 5, -128, 127), double(acc, scale, 5, -128, 127))


def test_float32_scale_products() -> None:
    """Scales as FULLY_CONNECTED derives them (double(in) * double(w) / double(out) of float32s)."""
    rng = np.random.default_rng(4)
    s_in, s_w, s_out = (rng.uniform(1e-4, 1.0, 20000).astype(np.float32) for _ in range(3))
    scale = s_in.astype(np.float64) * s_w.astype(np.float64) / s_out.astype(np.float64)
    acc = rng.integers(INT32_MIN, INT32_MAX, 20000, endpoint=True) >> rng.integers(0, 31, 20000)
    np.testing.assert_array_equal(exact(acc, scale, *WIDE), double(acc, scale, *WIDE))


@given(st.lists(st.integers(INT32_MIN, INT32_MAX), min_size=1, max_size=32),
       st.floats(2.0**-40, 2.0**25, allow_nan=False, allow_infinity=False),
       st.integers(-128, 255), st.sampled_from([(-128, 127), (0, 255), (-32768, 32767)]))
def test_matches_double_rule(xs: list[int], scale: float, zero_point: int, bounds: tuple[int, int]) -> None:
    acc = np.array(xs, np.int64)
    lo, hi = bounds
    np.testing.assert_array_equal(exact(acc, np.float64(scale), zero_point, lo, hi),
                                  double(acc, np.float64(scale), zero_point, lo, hi))
    if scale < quant.EXACT_SCALE_SATURATES:
        got = exact(acc, np.float64(scale), *WIDE)
        assert got.tolist() == [min(WIDE[2], max(WIDE[1], c_round_product(x, scale))) for x in xs]


def test_hard_cases_agree() -> None:
    rng = np.random.default_rng(5)
    acc, scale = hard_cases(rng, 4096)
    np.testing.assert_array_equal(exact(acc, scale, *WIDE), double(acc, scale, *WIDE))


def test_rejects_what_it_cannot_represent() -> None:
    with pytest.raises(ValueError):
        quant.exact_scale_parts(np.array([0.5, -0.25]))
    with pytest.raises(ValueError):
        quant.exact_scale_parts(np.nan)
    mh, ml, sk = quant.exact_scale_parts(0.5)
    with pytest.raises(ValueError):
        quant.requantize_scaled_exact(np.array([1 << 31]), mh, ml, sk, 0, -128, 127, np.int8)
