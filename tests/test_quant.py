"""teflon_py.quant against values derived by hand from TFLite's algorithms, and properties.

The known values follow quantization_util.cc (QuantizeMultiplier: frexp, TfLiteRound of the
mantissa * 2^31, carry, flush below 2^-31), gemmlowp's fixedpoint.h (SaturatingRoundingDoublingHigh-
Mul, RoundingDivideByPOT: double rounding) and kernel_util.cc (CalculateActivationRangeQuantized:
float32 division, TfLiteRound). Ties are chosen on purpose: they are where ``np.round`` (half to
even) or a single rounding would give other answers. The conv / FC multiplier rules are pinned
against LiteRT itself by the probes in tests/ops/test_conv.py and test_fully_connected.py.
"""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from teflon_py import ir, quant

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
int32s = st.integers(INT32_MIN, INT32_MAX)


def c_round(x: float) -> int:
    """C's round(): halves away from zero, via exact decimal arithmetic (independent of quant.py)."""
    return int(Decimal(float(x)).quantize(Decimal(1), rounding=ROUND_HALF_UP))


# -- QuantizeMultiplier ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "real, expected",
    [
        (0.0, (0, 0)),
        (0.5, (1 << 30, 0)),
        (1.0, (1 << 30, 1)),
        (0.75, (1610612736, 0)),
        (0.3, (1288490189, -1)),  # frexp(0.3) = (0.6, -1); 0.6 * 2^31 = 1288490188.8
        (0.5 + 2.0**-32, ((1 << 30) + 1, 0)),  # mantissa * 2^31 = 2^30 + 1/2: the tie rounds away
        (1 - 2.0**-33, (1 << 30, 1)),  # rounds up to 2^31: carry into the exponent
        (2.0**-31, (1 << 30, -30)),
        (2.0**-32, (1 << 30, -31)),  # the smallest shift kept
        (2.0**-33, (0, 0)),  # shift -32 < -31: flushed to zero
        (3.0, (1610612736, 2)),
    ],
)
def test_quantize_multiplier_known_values(real: float, expected: tuple[int, int]) -> None:
    q, shift = quant.quantize_multiplier(real)
    assert (int(q), int(shift)) == expected


@given(st.floats(2.0**-31, 2.0**30, allow_subnormal=False))
def test_quantize_multiplier_bounds(real: float) -> None:
    q, shift = (int(v) for v in quant.quantize_multiplier(real))
    assert (1 << 30) <= q < (1 << 31)
    assert abs(q * 2.0 ** (shift - 31) - real) <= real * 2.0**-31


def test_quantize_multiplier_vectorised() -> None:
    reals = np.random.default_rng(0).uniform(1e-6, 4.0, 64)
    q, shift = quant.quantize_multiplier(reals)
    assert q.dtype == np.int32 and shift.dtype == np.int32
    for r, qi, si in zip(reals, q, shift):
        assert tuple(int(v) for v in quant.quantize_multiplier(float(r))) == (qi, si)


# -- MultiplyByQuantizedMultiplier ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "x, multiplier, shift, expected",
    [
        (3, 1 << 30, 0, 2),  # 1.5: SRDHM's nudge rounds up
        (-3, 1 << 30, 0, -1),  # -1.5: the negative nudge 1 - 2^30 and truncation round up too
        (1, 1 << 30, 0, 1),
        (-1, 1 << 30, 0, 0),
        (5, 1 << 30, -1, 2),  # 1.25 exactly, but double rounding: SRDHM 2.5 -> 3, then 3/2 -> 2
        (-5, 1 << 30, -1, -1),  # SRDHM -2.5 -> -2, then -2/2 = -1
        (-7, 1 << 30, -1, -2),  # SRDHM -3.5 -> -3, then -1.5 rounds away from zero: -2
        (100, 1610612736, 1, 150),  # 100 * 0.75 * 2
        (INT32_MIN, INT32_MIN, 0, INT32_MAX),  # the one saturating product
        (1000, 0, 0, 0),
    ],
)
def test_multiply_by_quantized_multiplier_known_values(
    x: int, multiplier: int, shift: int, expected: int
) -> None:
    assert int(quant.multiply_by_quantized_multiplier(x, multiplier, shift)) == expected


@given(st.integers(-(1 << 30), 1 << 30), st.floats(2.0**-30, 0.99, allow_subnormal=False))
def test_multiply_by_quantized_multiplier_is_within_one(x: int, real: float) -> None:
    """Scaling down: the two roundings stay within 1 of round(x * real)."""
    got = int(quant.multiply_by_quantized_multiplier(x, *quant.quantize_multiplier(real)))
    assert abs(got - c_round(x * real)) <= 1


@given(st.integers(-(1 << 20), 1 << 20), st.floats(1.0, 1000.0))
def test_multiply_by_quantized_multiplier_left_shift_is_within_one(x: int, real: float) -> None:
    """Scaling up (left shift first) without overflow: within 1 of round(x * real)."""
    got = int(quant.multiply_by_quantized_multiplier(x, *quant.quantize_multiplier(real)))
    assert abs(got - c_round(x * real)) <= 1


# -- requantize (the fast conv epilogue) equals the literal formula ---------------------------------


@given(
    st.lists(int32s, min_size=1, max_size=64),
    st.integers(1 << 30, INT32_MAX),
    st.integers(-31, 30),
    st.integers(-128, 127),
)
def test_requantize_matches_multiply_by_quantized_multiplier(
    xs: list[int], multiplier: int, shift: int, zero_point: int
) -> None:
    acc = np.array(xs, np.int64)
    expected = np.clip(quant.multiply_by_quantized_multiplier(acc, multiplier, shift) + zero_point, -128, 127)
    got = quant.requantize(acc, multiplier, shift, zero_point, -128, 127, np.dtype(np.int8))
    assert got.dtype == np.int8
    np.testing.assert_array_equal(got, expected)


def test_requantize_per_channel_broadcast() -> None:
    rng = np.random.default_rng(1)
    acc = rng.integers(INT32_MIN, INT32_MAX, (50, 16), endpoint=True)
    multiplier, shift = quant.quantize_multiplier(rng.uniform(1e-7, 3.0, 16))
    before = acc.copy()
    expected = np.clip(quant.multiply_by_quantized_multiplier(acc, multiplier, shift) + 3, 0, 255)
    got = quant.requantize(acc, multiplier, shift, 3, 0, 255, np.dtype(np.uint8))
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(acc, before)  # the accumulators are not modified


# -- rounding, FULLY_CONNECTED's double-precision requantization --------------------------------------


@pytest.mark.parametrize(
    "x, expected",
    [
        (0.5, 1),
        (-0.5, -1),
        (1.5, 2),
        (2.5, 3),
        (-2.5, -3),
        (0.49999997, 0),
        (8388609.0, 8388609),
        (-0.0, 0),
    ],
)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_round_half_away_known_values(x: float, expected: int, dtype: type) -> None:
    assert int(quant.round_half_away(dtype(x))) == expected


@given(st.floats(-(2.0**40), 2.0**40))
def test_round_half_away_is_c_round(x: float) -> None:
    assert int(quant.round_half_away(np.float64(x))) == c_round(x)


@given(st.lists(int32s, min_size=1, max_size=32), st.floats(1e-9, 1e-2), st.integers(-128, 127))
def test_requantize_scaled_is_c_round(xs: list[int], scale: float, zero_point: int) -> None:
    got = quant.requantize_scaled(np.array(xs), scale, zero_point, -128, 127, np.dtype(np.int8))
    expected = [min(127, max(-128, c_round(float(x) * scale) + zero_point)) for x in xs]
    assert got.tolist() == expected


def test_requantize_scaled_tie_rounds_away() -> None:
    got = quant.requantize_scaled(np.array([1, -1, 3, -3]), 0.5, 0, -128, 127, np.dtype(np.int8))
    assert got.tolist() == [1, -1, 2, -2]


# -- activation ranges -------------------------------------------------------------------------------

A = ir.Activation


@pytest.mark.parametrize(
    "act, dtype, scale, zero_point, expected",
    [
        (A.NONE, np.int8, 0.1, -10, (-128, 127)),
        (A.RELU, np.int8, 0.1, -10, (-10, 127)),
        (A.RELU6, np.int8, 0.1, -10, (-10, 50)),
        (A.RELU_N1_TO_1, np.int8, 0.1, -10, (-20, 0)),
        (A.RELU6, np.uint8, 1 / 32, 128, (128, 255)),  # 6 / scale overflows the range: clamped
        (A.RELU_N1_TO_1, np.uint8, 1 / 32, 128, (96, 160)),
        (A.RELU6, np.int8, 4.0, 0, (0, 2)),  # 6 / 4 = 1.5 rounds away from zero (np.round: 2 as well)
        (A.RELU_N1_TO_1, np.int8, 2.0, 0, (-1, 1)),  # +-1/2 round away from zero (np.round: 0)
        (A.RELU6, np.int8, 0.4, 0, (0, 15)),  # float32: 6 / 0.4f = 14.999999776 -> 15
        (A.RELU6, np.int16, 0.001, 0, (0, 6000)),
    ],
)
def test_activation_range_quantized(
    act: ir.Activation, dtype: type, scale: float, zero_point: int, expected: tuple[int, int]
) -> None:
    assert tuple(quant.activation_range(act, np.dtype(dtype), scale, zero_point)) == expected


def test_activation_range_float() -> None:
    assert quant.activation_range(A.NONE, np.float32) == (-np.inf, np.inf)
    assert quant.activation_range(A.RELU, np.float32) == (0.0, np.inf)
    assert quant.activation_range(A.RELU6, np.float32) == (0.0, 6.0)
    assert quant.activation_range(A.RELU_N1_TO_1, np.float32) == (-1.0, 1.0)


# -- conv / FC output scales -------------------------------------------------------------------------


def _tensor(dtype: type, scale: float | list[float], zero_point: int = 0, dim: int = 0) -> ir.Tensor:
    s = np.atleast_1d(np.asarray(scale, np.float32))
    return ir.Tensor(
        0,
        "t",
        (len(s), 1, 1, 1),
        np.dtype(dtype),
        ir.Quantization(s, np.full(s.size, zero_point, np.int64), dim),
    )


#: scales whose float32 product in * w differs from the double one in the multiplier's last bits
SI, SW, SO = 0.0123, [0.000457, 0.000311], 0.049


def test_conv_multipliers_int8_use_the_double_product() -> None:
    m, s = quant.conv_output_multipliers(
        "CONV_2D", _tensor(np.int8, SI), _tensor(np.int8, SW), _tensor(np.int8, SO)
    )
    real = np.float64(np.float32(SI)) * np.float32(SW).astype(np.float64) / np.float64(np.float32(SO))
    expected = quant.quantize_multiplier(real)
    np.testing.assert_array_equal(m, expected[0])
    np.testing.assert_array_equal(s, expected[1])
    single = quant.quantize_multiplier((np.float32(SI) * np.float32(SW)).astype(np.float64) / np.float32(SO))
    assert not np.array_equal(m, single[0])  # the two products really differ here


def test_conv_multipliers_uint8_use_the_float32_product() -> None:
    m, s = quant.conv_output_multipliers(
        "DEPTHWISE_CONV_2D",
        _tensor(np.uint8, SI, 128),
        _tensor(np.uint8, SW[0], 120),
        _tensor(np.uint8, SO, 128),
    )
    real = np.float64(np.float32(SI) * np.float32(SW[0])) / np.float64(np.float32(SO))
    assert (int(m[0]), int(s[0])) == tuple(int(v) for v in quant.quantize_multiplier(real))


def test_fully_connected_has_no_fixed_point_multiplier() -> None:
    with pytest.raises(ValueError):
        quant.conv_output_multipliers(
            "FULLY_CONNECTED", _tensor(np.int8, SI), _tensor(np.int8, SW), _tensor(np.int8, SO)
        )
    scales = quant.fully_connected_output_scales(
        _tensor(np.int8, SI), _tensor(np.int8, SW), _tensor(np.int8, SO)
    )
    expected = np.float64(np.float32(SI)) * np.float32(SW).astype(np.float64) / np.float64(np.float32(SO))
    np.testing.assert_array_equal(scales, expected)
