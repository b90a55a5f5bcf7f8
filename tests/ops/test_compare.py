"""Comparisons and LOGICAL_AND / LOGICAL_OR against LiteRT's reference kernels: float and
integer inputs under broadcasting, and quantized inputs with different scales and zero points
(every pair of 8-bit values), which LiteRT rescales onto a common grid before comparing."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py.errors import UnsupportedError
from tests.harness import check_model, quantization, run_teflon, single_op

OPS = ["EQUAL", "NOT_EQUAL", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL"]
SHAPE_PAIRS = [((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 3, 1), (2, 1, 4)), ((), (2, 3))]


def compare_model(op: str, a: tuple, b: tuple, dtype: type, qa: object = None, qb: object = None) -> bytes:
    return single_op(op, [{"shape": a, "dtype": dtype, "quant": qa}, {"shape": b, "dtype": dtype, "quant": qb}],
                     [{"shape": np.broadcast_shapes(a, b), "dtype": np.bool_}])


def _inputs(dtype: type, a: tuple, b: tuple, rng: np.random.Generator) -> list[np.ndarray]:
    """Values drawn from a small set, so that equal pairs are common."""
    if dtype == np.bool_:
        return [rng.integers(0, 2, a).astype(bool), rng.integers(0, 2, b).astype(bool)]
    scale = 0.5 if dtype == np.float32 else 1
    return [(rng.integers(-4, 5, a) * scale).astype(dtype), (rng.integers(-4, 5, b) * scale).astype(dtype)]


PLAIN = [(np.float32, a, b) for a, b in SHAPE_PAIRS] + [(np.int32, *SHAPE_PAIRS[1]), (np.int64, *SHAPE_PAIRS[2])]


@pytest.mark.parametrize(("dtype", "a", "b"), PLAIN, ids=str)
@pytest.mark.parametrize("op", OPS)
def test_plain(backend: str, op: str, dtype: type, a: tuple, b: tuple) -> None:
    inputs = _inputs(dtype, a, b, np.random.default_rng(0))
    check_model(compare_model(op, a, b, dtype), backend, inputs=inputs)


@pytest.mark.parametrize("op", ["EQUAL", "NOT_EQUAL"])
def test_bool(backend: str, op: str) -> None:
    inputs = _inputs(np.bool_, (3, 4), (4,), np.random.default_rng(1))
    check_model(compare_model(op, (3, 4), (4,), np.bool_), backend, inputs=inputs)


#: (scale a, zp a, scale b, zp b) for int8; uint8 adds 128 to the zero points.
QPARAMS = {"same": (0.05, 5, 0.05, 5), "zp_only": (0.05, -20, 0.05, 30), "scales": (0.02, 10, 0.07, -3),
           "far": (0.13, -100, 0.009, 120)}


@pytest.mark.parametrize(("dtype", "qp"), [(np.int8, "same"), (np.int8, "scales"), (np.uint8, "zp_only"),
                                           (np.uint8, "far")], ids=str)
@pytest.mark.parametrize("op", OPS)
def test_quantized_all_pairs(backend: str, op: str, dtype: type, qp: str) -> None:
    """Every (a, b) pair of 8-bit values: a (256, 1) column against a (256,) row."""
    s1, z1, s2, z2 = QPARAMS[qp]
    shift = 128 if dtype == np.uint8 else 0
    values = (np.arange(-128, 128) + shift).astype(dtype)
    model = compare_model(op, (256, 1), (256,), dtype, quantization(s1, z1 + shift), quantization(s2, z2 + shift))
    check_model(model, backend, inputs=[values.reshape(256, 1), values])


@pytest.mark.parametrize("op", OPS)
def test_int16(backend: str, op: str) -> None:
    """Quantized int16: EQUAL / NOT_EQUAL rescale, the ordering comparisons read the raw values."""
    rng = np.random.default_rng(2)
    a = rng.integers(-300, 300, (40, 1)).astype(np.int16)
    b = rng.integers(-300, 300, (50,)).astype(np.int16)
    model = compare_model(op, a.shape, b.shape, np.int16, quantization(0.002), quantization(0.003))
    check_model(model, backend, inputs=[a, b])


def test_int16_plain_equal(backend: str) -> None:
    a, b = _inputs(np.int16, (5, 6), (6,), np.random.default_rng(3))
    check_model(compare_model("EQUAL", (5, 6), (6,), np.int16), backend, inputs=[a, b])


def test_int16_plain_not_equal_is_unsupported() -> None:
    """LiteRT's NOT_EQUAL leaves its output unwritten for int16 without quantization."""
    with pytest.raises(UnsupportedError, match=r"node 0 \(NOT_EQUAL\): NOT_EQUAL on int16"):
        run_teflon(compare_model("NOT_EQUAL", (3,), (3,), np.int16), [np.ones(3, np.int16)] * 2)


@pytest.mark.parametrize(("a", "b"), SHAPE_PAIRS, ids=str)
@pytest.mark.parametrize("op", ["LOGICAL_AND", "LOGICAL_OR"])
def test_logical(backend: str, op: str, a: tuple, b: tuple) -> None:
    model = single_op(op, [{"shape": a, "dtype": np.bool_}, {"shape": b, "dtype": np.bool_}],
                      [{"shape": np.broadcast_shapes(a, b), "dtype": np.bool_}])
    check_model(model, backend)
