"""Comparisons, LOGICAL_AND / OR / NOT and SELECT from the spec's text, with broadcasting, for every
operand type each allows: against LiteRT's reference kernels on the same graph where TFLite
computes the same thing, against NumPy derivations where NNAPI's rules differ (quantized operands
compared by their float32 real values, ordered booleans, SELECT requantizing onto the output's grid
as Android's reference does)."""
from __future__ import annotations

import operator

import numpy as np
import pytest

from teflon_py.fallback.requantize import nnapi_requantize
from teflon_py.nnapi import NNAPIError, OperationType, ResultCode
from teflon_py.nnapi import OperandType as T
from tests.harness import run_litert
from tests.nnapi.harness import Spec, check_vs, expect_bad_data, rng_array
from tests.nnapi.tflite_graphs import TfliteGraph

F32, F16, U8, I8, I32, B8 = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                             T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_INT32, T.TENSOR_BOOL8)
OPS = {"EQUAL": operator.eq, "NOT_EQUAL": operator.ne, "LESS": operator.lt, "LESS_EQUAL": operator.le,
       "GREATER": operator.gt, "GREATER_EQUAL": operator.ge}
TWIN_TYPES = {F32: np.float32, F16: np.float32, I32: np.int32, B8: np.bool_}
#: the spec's broadcasting: a [2, 3, 4] tensor against [3, 1]
DIMS = ([2, 3, 4], [3, 1])


def quant_args(t: T, q) -> tuple:
    return q if t in (U8, I8) else ()


def binary_model(op: str, t: T, dims_a, dims_b, out_type: T, out_dims, qa=None, qb=None, qo=None):
    s = Spec()
    a = s.input(t, dims_a, *quant_args(t, qa))
    b = s.input(t, dims_b, *quant_args(t, qb))
    y = s.output(out_type, out_dims, *quant_args(out_type, qo))
    s.op(OperationType[op], [a, b], [y])
    return s.model()


def small_values(rng: np.random.Generator, t: T, dims) -> np.ndarray:
    """Values drawn from a few so that equal pairs occur."""
    if t == B8:
        return np.arange(int(np.prod(dims))).reshape(dims) % 2 == 0 if dims == DIMS[1] else rng_array(rng, t, dims)
    v = rng.integers(-2, 3, dims)
    return v.astype(np.int32) if t == I32 else (v / 2).astype(np.float16 if t == F16 else np.float32)


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("t", [F32, F16, I32, B8])
def test_compare_vs_litert(backend: str, op: str, t: T) -> None:
    rng = np.random.default_rng(sum(map(ord, op + t.name)))
    a, b = small_values(rng, t, DIMS[0]), small_values(rng, t, DIMS[1])
    model = binary_model(op, t, *DIMS, B8, DIMS[0])
    if t == B8 and op not in ("EQUAL", "NOT_EQUAL"):  # TFLite orders no booleans: false < true
        expected = OPS[op](a.astype(np.int32), b.astype(np.int32))
    else:
        g = TfliteGraph()
        ta, tb = g.input(DIMS[0], TWIN_TYPES[t]), g.input(DIMS[1], TWIN_TYPES[t])
        ty = g.tensor(DIMS[0], np.bool_)
        g.op(op, [ta, tb], [ty])
        expected = run_litert(g.build(ty), [a.astype(TWIN_TYPES[t]), b.astype(TWIN_TYPES[t])])[0]
    assert expected.any() and not expected.all()
    check_vs(model, [a, b], [expected], backend)


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("t", [U8, I8])
def test_quantized_compare_real_values(backend: str, op: str, t: T) -> None:
    """Different grids: the spec compares the real values (Android's reference: in float32)."""
    rng = np.random.default_rng(len(op))
    qa, qb = ((0.1, 128), (0.05, 100)) if t == U8 else ((0.1, 0), (0.05, -28))
    a, b = rng_array(rng, t, DIMS[0]), rng_array(rng, t, DIMS[1])
    a.reshape(-1)[:3] = [a.reshape(-1)[0], qa[1] + 2, qa[1] - 2]  # real 0.2 and -0.2 ...
    b.reshape(-1)[:2] = [qb[1] + 4, qb[1] - 4]  # ... against 0.2 and -0.2: equal
    real_a = (a.astype(np.int32) - qa[1]).astype(np.float32) * np.float32(qa[0])
    real_b = (b.astype(np.int32) - qb[1]).astype(np.float32) * np.float32(qb[0])
    expected = OPS[op](real_a, real_b)
    check_vs(binary_model(op, t, *DIMS, B8, DIMS[0], qa, qb), [a, b], [expected], backend)


def test_quantized_equal_where_litert_merges_values(backend: str) -> None:
    """5 at scale 0.1 (0.5) against 5 at scale 0.1001 (0.5005): LiteRT's fixed-point grid rounds
    both to 128 and calls them equal; NNAPI compares real values, which differ."""
    model = binary_model("EQUAL", U8, [2], [2], B8, [2], (0.1, 0), (0.1001, 0))
    a, b = np.array([5, 10], np.uint8), np.array([5, 10], np.uint8)
    check_vs(model, [a, b], [np.array([False, False])], backend)
    g = TfliteGraph()
    ta, tb = g.input([2], np.uint8, 0.1, 0), g.input([2], np.uint8, 0.1001, 0)
    ty = g.tensor([2], np.bool_)
    g.op("EQUAL", [ta, tb], [ty])
    assert run_litert(g.build(ty), [a, b])[0].tolist() == [True, True]  # why LiteRT's kernel is not used


def test_compare_shapes_must_broadcast() -> None:
    with pytest.raises(NNAPIError) as e:
        binary_model("LESS", F32, [2, 3], [2], B8, [2, 3])
    assert e.value.code == ResultCode.BAD_DATA
    assert "operation 0 (LESS)" in str(e.value) and "do not broadcast" in str(e.value)


def test_compare_output_must_be_bool8() -> None:
    s = Spec()
    a, b = s.input(F32, [2]), s.input(F32, [2])
    expect_bad_data(lambda: s.op(OperationType.GREATER, [a, b], [s.output(F32, [2])]),
                    "(GREATER): output 0 has type TENSOR_FLOAT32, the operation takes TENSOR_BOOL8 there")


# -- logical --------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ["LOGICAL_AND", "LOGICAL_OR", "LOGICAL_NOT"])
def test_logical_vs_litert(backend: str, op: str) -> None:
    rng = np.random.default_rng(3)
    n = 1 if op == "LOGICAL_NOT" else 2
    dims = [DIMS[0], DIMS[1]][:n]
    xs = [rng_array(rng, B8, d) for d in dims]
    s = Spec()
    ins = [s.input(B8, d) for d in dims]
    s.op(OperationType[op], ins, [s.output(B8, DIMS[0])])
    g = TfliteGraph()
    tins = [g.input(d, np.bool_) for d in dims]
    ty = g.tensor(DIMS[0], np.bool_)
    g.op(op, tins, [ty])
    check_vs(s.model(), xs, run_litert(g.build(ty), xs), backend)


def test_logical_takes_bool8_only() -> None:
    s = Spec()
    a, b = s.input(I32, [2]), s.input(I32, [2])
    expect_bad_data(lambda: s.op(OperationType.LOGICAL_OR, [a, b], [s.output(B8, [2])]),
                    "(LOGICAL_OR): input 0 of type TENSOR_INT32 is not supported")


# -- SELECT ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("t", [F32, F16, I32, U8, I8])
def test_select_vs_litert(backend: str, t: T) -> None:
    rng = np.random.default_rng(11)
    dims = [2, 3, 4]
    q = {U8: (0.5, 100), I8: (0.25, -3)}.get(t)
    c, x, y = rng_array(rng, B8, dims), rng_array(rng, t, dims), rng_array(rng, t, dims)
    s = Spec()
    ins = [s.input(B8, dims), s.input(t, dims, *(q or ())), s.input(t, dims, *(q or ()))]
    s.op(OperationType.SELECT, ins, [s.output(t, dims, *(q or ()))])
    dtype = {F32: np.float32, F16: np.float32, I32: np.int32, U8: np.uint8, I8: np.int8}[t]
    g = TfliteGraph()
    tins = [g.input(dims, np.bool_), g.input(dims, dtype, *(q or (None,))), g.input(dims, dtype, *(q or (None,)))]
    ty = g.tensor(dims, dtype, *(q or (None,)))
    g.op("SELECT", tins, [ty])
    expected = run_litert(g.build(ty), [c, x.astype(dtype), y.astype(dtype)])[0]
    check_vs(s.model(), [c, x, y], [expected.astype(x.dtype)], backend)


@pytest.mark.parametrize("t", [U8, I8])
def test_select_requantizes_onto_output_grid(backend: str, t: T) -> None:
    """x and y on grids of their own: each chosen value is requantized onto the output's, with
    Android's formula (real value in float32, divided in double, halves away from zero)."""
    dims = [4, 8]
    qx, qy, qo = ((0.5, 120), (0.25, 130), (1.0, 128)) if t == U8 else ((0.5, -8), (0.25, 2), (1.0, 0))
    dtype = np.uint8 if t == U8 else np.int8
    lo = np.iinfo(dtype).min
    c = np.arange(32).reshape(dims) % 3 == 0
    x = (np.arange(32).reshape(dims) * 7 + lo).astype(dtype)
    y = (np.arange(32).reshape(dims) * 5 + lo + 40).astype(dtype)
    s = Spec()
    ins = [s.input(B8, dims), s.input(t, dims, *qx), s.input(t, dims, *qy)]
    s.op(OperationType.SELECT, ins, [s.output(t, dims, *qo)])
    expected = np.where(c, nnapi_requantize(x, *qx, *qo, dtype), nnapi_requantize(y, *qy, *qo, dtype))
    # halves round away from zero after the zero point is added: x = 119 is -0.5 -> 127.5 -> 128
    assert nnapi_requantize(np.array([119, 121], np.uint8), 0.5, 120, 1.0, 128, np.uint8).tolist() == [128, 129]
    check_vs(s.model(), [c, x, y], [expected], backend)


def test_select_takes_one_shape() -> None:
    s = Spec()
    ins = [s.input(B8, [2, 3]), s.input(F32, [2, 3]), s.input(F32, [1, 3])]
    s.op(OperationType.SELECT, ins, [s.output(F32, [2, 3])])
    expect_bad_data(s, "operation 0 (SELECT): input 2: must have input 1's shape [2, 3], got [1, 3]")
