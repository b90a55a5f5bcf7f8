"""QUANTIZE, DEQUANTIZE and CAST from the spec's text, for every operand type each allows:
QUANTIZE and DEQUANTIZE against LiteRT's reference kernels on the same graph (per-channel and
TENSOR_QUANT8_SYMM inputs against the spec's formula), CAST against Android's reference
conversion (``static_cast``, a uint8 output saturated to [0, 255]; scales and zero points ignored)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from teflon_py.nnapi import NNAPIError, OperationType, ResultCode
from teflon_py.nnapi import OperandType as T
from tests.harness import run_litert
from tests.nnapi.harness import DTYPES, Spec, check_vs, expect_bad_data, rng_array
from tests.nnapi.tflite_graphs import TfliteGraph

F32, F16, U8, I8, I32, B8 = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                             T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_INT32, T.TENSOR_BOOL8)
Q8S, Q8PC, Q16S, Q16A = (T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL, T.TENSOR_QUANT16_SYMM,
                         T.TENSOR_QUANT16_ASYMM)
DIMS = [2, 3, 4]
GRID = {U8: (0.05, 120), I8: (0.03, -7), Q8S: (0.02, 0), Q16S: (0.5, 0), Q16A: (0.25, 300)}


def one_op(op: str, t_in: T, t_out: T, q_in=(), q_out=(), dims=DIMS):
    s = Spec()
    x = s.input(t_in, dims, *q_in)
    s.op(OperationType[op], [x], [s.output(t_out, dims, *q_out)])
    return s.model()


@pytest.mark.parametrize(("t_in", "t_out"), list(itertools.product([F32, F16], [U8, I8])))
def test_quantize_vs_litert(backend: str, t_in: T, t_out: T) -> None:
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(DIMS) * 4).astype(DTYPES[t_in])
    x.reshape(-1)[:4] = [0.025, -0.025, 0.075, 100.0]  # halves of the grid (away from zero), saturation
    q = GRID[t_out]
    g = TfliteGraph()
    tx = g.input(DIMS, np.float32)
    ty = g.tensor(DIMS, DTYPES[t_out], *q)
    g.op("QUANTIZE", [tx], [ty])
    expected = run_litert(g.build(ty), [x.astype(np.float32)])[0]
    check_vs(one_op("QUANTIZE", t_in, t_out, q_out=q), [x], [expected], backend)


@pytest.mark.parametrize(("t_in", "t_out"), list(itertools.product([U8, I8, Q8S], [F32, F16])))
def test_dequantize_vs_litert(backend: str, t_in: T, t_out: T) -> None:
    rng = np.random.default_rng(2)
    x = rng_array(rng, t_in, DIMS)
    q = GRID[t_in]
    g = TfliteGraph()  # TENSOR_QUANT8_SYMM is int8 with zero point 0
    tx = g.input(DIMS, DTYPES[t_in], *q)
    ty = g.tensor(DIMS, np.float32)
    g.op("DEQUANTIZE", [tx], [ty])
    expected = run_litert(g.build(ty), [x])[0].astype(DTYPES[t_out])
    check_vs(one_op("DEQUANTIZE", t_in, t_out, q_in=q), [x], [expected], backend)


@pytest.mark.parametrize("t_out", [F32, F16])
@pytest.mark.parametrize("channel_dim", [0, 2])
def test_dequantize_per_channel(backend: str, t_out: T, channel_dim: int) -> None:
    """realValue[..., C, ...] = integerValue[..., C, ...] * scales[C]."""
    scales = np.array([0.5, 0.25, 0.125, 0.0625], np.float32)[:DIMS[channel_dim]]
    x = np.arange(-12, 12, dtype=np.int8).reshape(DIMS) * 5
    s = Spec()
    xi = s.operand(Q8PC, DIMS, channel=(scales, channel_dim))
    s.inputs.append(xi)
    s.op(OperationType.DEQUANTIZE, [xi], [s.output(t_out, DIMS)])
    shape = [1, 1, 1]
    shape[channel_dim] = scales.size
    expected = (x.astype(np.float32) * scales.reshape(shape)).astype(DTYPES[t_out])
    check_vs(s.model(), [x], [expected], backend)


def test_dequantize_rank_up_to_4() -> None:
    expect_bad_data(lambda: one_op("DEQUANTIZE", U8, F32, GRID[U8], dims=[1, 2, 1, 2, 1]),
                    "operation 0 (DEQUANTIZE): input 0: ranks up to 4 are supported, got 5")


def test_quantize_output_types() -> None:
    s = Spec()
    x = s.input(F32, [2])
    expect_bad_data(lambda: s.op(OperationType.QUANTIZE, [x], [s.output(Q16S, [2], 0.5)]),
                    "(QUANTIZE): output 0 of type TENSOR_QUANT16_SYMM is not supported")


# -- CAST ---------------------------------------------------------------------------------------------

CONVERTIBLE = [F16, F32, I32, U8]
SOURCE = {
    F32: [-300.7, -1.5, -0.4, 0.0, 0.6, 1.5, 2.5, 254.9, 255.5, 300.2, 1000.9, 65519.0],
    F16: [-300.7, -1.5, -0.4, 0.0, 0.6, 1.5, 2.5, 254.9, 255.5, 300.2, 1000.9, 65504.0],
    I32: [-70000, -5, -1, 0, 1, 7, 255, 256, 2049, 65519, 65520, 100000],
    U8: [0, 1, 2, 7, 100, 127, 128, 129, 200, 254, 255, 3],
}


def android_cast(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Cast.cpp's copyCast: ``static_cast``, saturating to [0, 255] first for a uint8 output."""
    v = x.astype(np.float64)
    if np.dtype(dtype) == np.uint8:
        v = np.clip(v, 0, 255)
    if np.dtype(dtype).kind in "iu":
        return np.trunc(v).astype(dtype)
    with np.errstate(over="ignore"):
        return x.astype(np.float32).astype(dtype) if np.dtype(dtype) == np.float16 else v.astype(dtype)


@pytest.mark.parametrize(("t_in", "t_out"), list(itertools.product(CONVERTIBLE, CONVERTIBLE)),
                         ids=[f"{a.name}-{b.name}" for a, b in itertools.product(CONVERTIBLE, CONVERTIBLE)])
def test_cast(backend: str, t_in: T, t_out: T) -> None:
    """A quantized operand's scale and zero point are ignored: its stored uint8 values cast."""
    x = np.array(SOURCE[t_in], DTYPES[t_in]).reshape(3, 4)
    q_in = (0.5, 3) if t_in == U8 else ()
    q_out = (2.0, 9) if t_out == U8 else ()
    model = one_op("CAST", t_in, t_out, q_in, q_out, dims=[3, 4])
    check_vs(model, [x], [android_cast(x, DTYPES[t_out])], backend)


@pytest.mark.parametrize("t", [B8, I32, Q16A, Q16S, I8, Q8S])
def test_cast_to_same_type_copies_stored_values(backend: str, t: T) -> None:
    x = rng_array(np.random.default_rng(4), t, DIMS)
    q_in, q_out = GRID.get(t, ()), tuple(2 * v for v in GRID.get(t, ()))
    check_vs(one_op("CAST", t, t, q_in, q_out), [x], [x], backend)


@pytest.mark.parametrize(("t_in", "t_out"), [(F32, B8), (Q16A, Q16S), (I8, U8), (B8, I32)])
def test_cast_unsupported_pairs(t_in: T, t_out: T) -> None:
    s = Spec()
    x = s.input(t_in, [2], *GRID.get(t_in, ()))
    with pytest.raises(NNAPIError) as e:
        s.op(OperationType.CAST, [x], [s.output(t_out, [2], *GRID.get(t_out, ()))])
    assert e.value.code == ResultCode.BAD_DATA
    assert f"(CAST): cast from {t_in.name} to {t_out.name} is not supported" in str(e.value)
