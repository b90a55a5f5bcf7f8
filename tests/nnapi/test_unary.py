"""One-input NNAPI operations from the spec's text: FLOOR, ABS, EXP, LOG, NEG, RSQRT, SIN, SQRT,
LOGISTIC, RELU, RELU1, RELU6, TANH, HARD_SWISH and ELU, for every operand type each allows,
against LiteRT's reference kernels on the same graph (float16 as float32 rounded back); the two
compositions TFLite lacks (uint8 RSQRT, ELU with alpha != 1) against NumPy derivations of the
spec's formulas; and the quantization rules as BAD_DATA."""
from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert.interpreter import OpResolverType

from teflon_py.nnapi import NNAPIError, OperationType, ResultCode
from teflon_py.nnapi import OperandType as T
from tests.harness import run_litert
from tests.nnapi.harness import Spec, check_vs, expect_bad_data, rng_array, run
from tests.nnapi.tflite_graphs import TfliteGraph

F32, F16, U8, I8, I32 = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                         T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_INT32)
TFLITE = {"RELU1": "RELU_N1_TO_1"}
#: every (operation, type) the spec allows, TFLite's kernels computing it
CASES = [
    ("FLOOR", F32), ("FLOOR", F16),
    *((op, t) for op in ("LOGISTIC", "RELU", "RELU1", "RELU6", "TANH", "HARD_SWISH") for t in (F32, F16, U8, I8)),
    ("ABS", F32), ("ABS", F16), ("ABS", I32), ("NEG", F32), ("NEG", F16), ("NEG", I32),
    *((op, t) for op in ("EXP", "LOG", "SIN", "SQRT", "RSQRT") for t in (F32, F16)),
    ("RSQRT", I8),
]
#: quantized (input, output) grids: the spec fixes LOGISTIC's and TANH's outputs, the RELUs keep the input's
GRIDS = {
    "LOGISTIC": {U8: ((0.06, 120), (1 / 256, 0)), I8: ((0.05, -5), (1 / 256, -128))},
    "TANH": {U8: ((0.03, 130), (1 / 128, 128)), I8: ((0.04, 3), (1 / 128, 0))},
    "HARD_SWISH": {U8: ((0.05, 100), (0.04, 30)), I8: ((0.05, 10), (0.03, -90))},
    "RSQRT": {I8: ((0.02, -128), (0.05, -100))},
}
DOMAIN = {"LOG": "positive", "SQRT": "positive", "RSQRT": "positive"}
TYPES = {F32: np.float32, F16: np.float32, U8: np.uint8, I8: np.int8, I32: np.int32}


def grids(op: str, t: T) -> tuple[tuple[float, int] | None, tuple[float, int] | None]:
    if t not in (U8, I8):
        return None, None
    if op in GRIDS:
        return GRIDS[op][t]
    q = (0.04, 128) if t == U8 else (0.04, 0)  # RELU, RELU1, RELU6: the output takes the input's grid
    return q, q


def inputs_for(rng: np.random.Generator, op: str, t: T, dims: list[int], xq) -> np.ndarray:
    x = rng_array(rng, t, dims)
    if t in (F32, F16):
        x = (x * 3).astype(x.dtype)
        if DOMAIN.get(op) == "positive":
            x = (np.abs(x) + 0.1).astype(x.dtype)
    elif DOMAIN.get(op) == "positive":  # quantized RSQRT: real values >= 0
        lo = xq[1]
        x = rng.integers(lo, np.iinfo(x.dtype).max, dims, endpoint=True).astype(x.dtype)
    return x


def unary_model(op: str, t: T, dims: list[int], xq, yq, extra=()):
    s = Spec()
    x = s.input(t, dims, *(xq or (0.0, 0)))
    y = s.output(t, dims, *(yq or (0.0, 0)))
    s.op(OperationType[op], [x, *(f(s) for f in extra)], [y])
    return s.model()


def twin(op: str, t: T, dims: list[int], xq, yq) -> bytes:
    g = TfliteGraph()
    dtype = TYPES[t]
    tx = g.input(dims, dtype, *(xq or (None,)))
    ty = g.tensor(dims, dtype, *(yq or (None,)))
    g.op(TFLITE.get(op, op), [tx], [ty])
    return g.build(ty)


@pytest.mark.parametrize(("op", "t"), CASES, ids=[f"{op}-{t.name}" for op, t in CASES])
def test_unary_vs_litert(backend: str, op: str, t: T) -> None:
    rng = np.random.default_rng(sum(map(ord, op + t.name)))
    dims = [2, 3, 4, 5]
    xq, yq = grids(op, t)
    x = inputs_for(rng, op, t, dims, xq)
    model = unary_model(op, t, dims, xq, yq)
    expected = run_litert(twin(op, t, dims, xq, yq), [x.astype(np.float32) if t == F16 else x])[0]
    if t == F16:
        expected = expected.astype(np.float16)
    check_vs(model, [x], [expected], backend, float_tol=3e-3 if t == F16 else 1e-5)


def test_rank_5_float_ok_where_spec_allows_any_rank(backend: str) -> None:
    x = np.linspace(-2, 2, 32, dtype=np.float32).reshape(2, 2, 2, 2, 2)
    check_vs(unary_model("NEG", F32, [2] * 5, None, None), [x], [-x], backend)


@pytest.mark.parametrize("op", ["FLOOR", "LOGISTIC", "RELU", "TANH"])
def test_rank_above_4_is_refused_where_spec_says_up_to_4(op: str) -> None:
    with pytest.raises(NNAPIError) as e:
        unary_model(op, F32, [1, 2, 1, 2, 1], None, None)
    assert e.value.code == ResultCode.BAD_DATA
    assert f"({op}): input 0: ranks up to 4 are supported, got 5" in str(e.value)


# -- compositions TFLite lacks ----------------------------------------------------------------------

def test_rsqrt_uint8_as_android_reference(backend: str) -> None:
    """Dequantize, 1 / sqrt in float32, round(r / scale) + zero point (halves away), saturate."""
    xq, yq = (0.02, 10), (0.05, 3)
    x = np.arange(10, 256, dtype=np.uint8).reshape(2, 3, 41)
    real = (x.astype(np.int32) - xq[1]).astype(np.float32) * np.float32(xq[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.float32(1) / np.sqrt(real)
        q = r / np.float32(yq[0])
        rounded = np.where(np.isinf(q), q, np.trunc(q) + np.where(q - np.trunc(q) >= 0.5, 1, 0))
    expected = np.clip(rounded + yq[1], 0, 255).astype(np.uint8)
    assert expected[0, 0, 0] == 255 and expected[0, 0, 1] == 3 + round(1 / np.sqrt(0.02) / 0.05)
    check_vs(unary_model("RSQRT", U8, [2, 3, 41], xq, yq), [x], [expected], backend)


@pytest.mark.parametrize("t", [F32, F16])
@pytest.mark.parametrize("alpha", [1.0, 0.5, 2.5, -0.75])
def test_elu(backend: str, t: T, alpha: float) -> None:
    """ELU(x) = max(0, x) + min(0, alpha * (exp(x) - 1)); with alpha 1 LiteRT's ELU is the twin."""
    rng = np.random.default_rng(7)
    dims = [3, 4, 5]
    x = (rng.standard_normal(dims) * 2).astype(np.float16 if t == F16 else np.float32)
    scalar = T.FLOAT16 if t == F16 else T.FLOAT32
    model = unary_model("ELU", t, dims, None, None, extra=[lambda s: s.scalar(scalar, alpha)])
    if alpha == 1.0:
        # LiteRT's reference resolver lacks ELU: its builtin kernel (expm1) is the twin
        expected = run_litert(twin("ELU", F32, dims, None, None), [x.astype(np.float32)], OpResolverType.BUILTIN)[0]
    else:
        v = x.astype(np.float32)
        expected = np.maximum(v, 0) + np.minimum(0, np.float32(alpha) * (np.exp(v) - 1))
    check_vs(model, [x], [expected.astype(x.dtype)], backend, float_tol=3e-3 if t == F16 else 1e-5)


@pytest.mark.parametrize(("op", "extra"), [("LOGISTIC", ()), ("RELU6", ()), ("ELU", (0.5,))])
def test_zero_sized_input(backend: str, op: str, extra: tuple) -> None:
    """Since feature level 3 the input may be zero-sized (a dimension given as 0, fixed at execution)."""
    model = unary_model(op, F32, [0, 3], None, None, extra=[lambda s, v=v: s.f32(v) for v in extra])
    out, _ = run(model, [np.zeros((0, 3), np.float32)], backend)
    assert out[0].shape == (0, 3) and out[0].dtype == np.float32


def test_elu_scalar_type_follows_tensor_type() -> None:
    s = Spec()
    x = s.input(F16, [4])
    y = s.output(F16, [4])
    expect_bad_data(lambda: s.op(OperationType.ELU, [x, s.f32(1.0)], [y]),
                    "(ELU): input 1 has type FLOAT32, the operation takes FLOAT16 there")


# -- quantization rules --------------------------------------------------------------------------------

@pytest.mark.parametrize(("op", "t", "yq", "message"), [
    ("LOGISTIC", U8, (1 / 128, 0), "a TENSOR_QUANT8_ASYMM LOGISTIC output takes scale 1/256 and zero point 0"),
    ("LOGISTIC", I8, (1 / 256, 0), "LOGISTIC output takes scale 1/256 and zero point -128"),
    ("TANH", U8, (1 / 128, 0), "a TENSOR_QUANT8_ASYMM TANH output takes scale 1/128 and zero point 128"),
    ("TANH", I8, (1 / 64, 0), "a TENSOR_QUANT8_ASYMM_SIGNED TANH output takes scale 1/128 and zero point 0"),
    ("RELU", U8, (0.05, 128), "a TENSOR_QUANT8_ASYMM RELU output takes the input's scale and zero point"),
    ("RELU6", I8, (0.04, 1), "a TENSOR_QUANT8_ASYMM_SIGNED RELU6 output takes the input's scale and zero point"),
    ("HARD_SWISH", U8, (0.0001, 0), "output scale 0.0001 not above input scale / 128"),
    ("HARD_SWISH", I8, (0.04 / 128, 0), "output scale 0.0003125 not above input scale / 128"),
])
def test_quantized_output_rules(op: str, t: T, yq, message: str) -> None:
    xq = (0.04, 128) if t == U8 else (0.04, 0)
    with pytest.raises(NNAPIError) as e:
        unary_model(op, t, [2, 3], xq, yq)
    assert e.value.code == ResultCode.BAD_DATA
    assert f"operation 0 ({op}): output 0: " in str(e.value) and message in str(e.value)


@pytest.mark.parametrize(("op", "t"), [("EXP", U8), ("ABS", I8), ("FLOOR", I32), ("RELU", I32), ("ELU", U8)])
def test_unsupported_types(op: str, t: T) -> None:
    s = Spec()
    x = s.input(t, [2], *((0.5, 0) if t in (U8, I8) else ()))
    y = s.output(t, [2], *((0.5, 0) if t in (U8, I8) else ()))
    with pytest.raises(NNAPIError) as e:
        s.op(OperationType[op], [x] + ([s.f32(1.0)] if op == "ELU" else []), [y])
    assert e.value.code == ResultCode.BAD_DATA
    assert f"({op}): input 0 of type {t.name} is not supported" in str(e.value)
