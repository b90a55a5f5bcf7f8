"""LOGISTIC and HARD_SWISH against LiteRT's reference kernels: float32, int8, uint8.

The 8-bit cases feed every one of the 256 input codes, so each table entry / fixed-point path is
compared, plus random tensors of a few shapes.
"""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir
from tests.harness import check_model, quantization, single_op

SHAPES = [(5,), (3, 17), (2, 4, 4, 3), (1, 8, 8, 16)]
DTYPES = {"i8": np.int8, "u8": np.uint8}
#: LOGISTIC's output grid (TFLite requires scale 1/256; zero point at the type's minimum)
LOGISTIC_OUT = {np.int8: quantization(1 / 256, -128), np.uint8: quantization(1 / 256, 0)}
#: (input scale, input zero point offset from the type's middle) for LOGISTIC
LOGISTIC_IN = [(0.0625, 0), (0.03, 10), (0.1, -30), (0.005, 3), (0.7, 0)]
#: HARD_SWISH (input scale, input zp offset, output scale, output zp offset): offsets from the middle
HARD_SWISH_Q = [
    (16 / 255, 0, 8.375 / 255, -117),  # input [-8, 8], output [-0.375, 8]
    (0.02, 20, 0.015, -100),
    (0.1, -40, 0.05, -120),
    (1.5, 0, 1.0, -20),  # reluish multiplier > 1: the saturating left-shift path
    (0.004, 5, 0.002, -60),  # reluish multiplier < 1/2: the right-shift path
    (0.05, 0, 0.2, 0),  # coarse output
]


def unary_model(op: str, shape: tuple, dtype: type, qin: ir.Quantization | None = None,
                qout: ir.Quantization | None = None) -> bytes:
    return single_op(op, [{"shape": shape, "dtype": dtype, "quant": qin}],
                     [{"shape": shape, "dtype": dtype, "quant": qout}])


def middle(dtype: type) -> int:
    return 0 if dtype == np.int8 else 128


def all_codes(dtype: type) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.arange(info.min, info.max + 1).astype(dtype).reshape(1, 256)


@pytest.mark.parametrize("op", ["LOGISTIC", "HARD_SWISH"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_float(backend: str, op: str, shape: tuple) -> None:
    check_model(unary_model(op, shape, np.float32), backend, seed=len(shape))


@pytest.mark.parametrize("op", ["LOGISTIC", "HARD_SWISH"])
def test_float_wide_range(backend: str, op: str) -> None:
    """Inputs across [-30, 30]: LOGISTIC's cut-offs at -9 and 16.6, HARD_SWISH's flat parts."""
    x = np.linspace(-30, 30, 601, dtype=np.float32).reshape(1, 601)
    check_model(unary_model(op, (1, 601), np.float32), backend, inputs=[x])


@pytest.mark.parametrize("qin", LOGISTIC_IN, ids=lambda q: f"s{q[0]}z{q[1]}")
@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_logistic_quantized_all_codes(backend: str, dtype: type, qin: tuple) -> None:
    model = unary_model("LOGISTIC", (1, 256), dtype, quantization(qin[0], middle(dtype) + qin[1]), LOGISTIC_OUT[dtype])
    check_model(model, backend, inputs=[all_codes(dtype)])


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_logistic_quantized(backend: str, dtype: type, shape: tuple) -> None:
    model = unary_model("LOGISTIC", shape, dtype, quantization(0.05, middle(dtype) - 7), LOGISTIC_OUT[dtype])
    check_model(model, backend, seed=len(shape))


@pytest.mark.parametrize("q", HARD_SWISH_Q, ids=lambda q: f"s{q[0]:.3g}-{q[2]:.3g}")
@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_hard_swish_quantized_all_codes(backend: str, dtype: type, q: tuple) -> None:
    in_scale, in_off, out_scale, out_off = q
    model = unary_model("HARD_SWISH", (1, 256), dtype, quantization(in_scale, middle(dtype) + in_off),
                        quantization(out_scale, middle(dtype) + out_off))
    check_model(model, backend, inputs=[all_codes(dtype)])


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype", DTYPES.values(), ids=DTYPES.keys())
def test_hard_swish_quantized(backend: str, dtype: type, shape: tuple) -> None:
    in_scale, in_off, out_scale, out_off = HARD_SWISH_Q[0]
    model = unary_model("HARD_SWISH", shape, dtype, quantization(in_scale, middle(dtype) + in_off),
                        quantization(out_scale, middle(dtype) + out_off))
    check_model(model, backend, seed=len(shape))
