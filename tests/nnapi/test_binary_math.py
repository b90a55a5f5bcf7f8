"""MAXIMUM, MINIMUM, POW and PRELU from the spec's text: broadcasting (the spec's own example
shapes), every operand type each allows, against LiteRT's reference kernels on the same graph;
quantized MAXIMUM / MINIMUM on different grids against Android's requantize-then-compare."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py.fallback.requantize import nnapi_requantize
from teflon_py.nnapi import NNAPIError, OperationType, ResultCode
from teflon_py.nnapi import OperandType as T
from tests.harness import run_litert
from tests.nnapi.harness import Spec, check_vs, expect_bad_data, rng_array
from tests.nnapi.tflite_graphs import TfliteGraph

F32, F16, U8, I8, I32 = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                         T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_INT32)
DTYPES = {F32: np.float32, F16: np.float32, I32: np.int32, U8: np.uint8, I8: np.int8}
#: the spec's example: base {4, 1, 2} and exponent {5, 4, 3, 1} give {5, 4, 3, 2}
A, B, OUT = [4, 1, 2], [5, 4, 3, 1], [5, 4, 3, 2]
CASES = [*((op, t) for op in ("MAXIMUM", "MINIMUM") for t in (F32, F16, I32, U8, I8)),
         ("POW", F32), ("POW", F16), *(("PRELU", t) for t in (F32, F16, U8, I8))]
#: quantized (a, b, output) grids: MAXIMUM / MINIMUM on one grid (LiteRT's kernel needs it), PRELU's own
GRIDS = {
    ("MAXIMUM", U8): ((0.1, 120),) * 3, ("MINIMUM", U8): ((0.1, 120),) * 3,
    ("MAXIMUM", I8): ((0.1, -3),) * 3, ("MINIMUM", I8): ((0.1, -3),) * 3,
    ("PRELU", U8): ((0.05, 128), (0.01, 50), (0.04, 120)), ("PRELU", I8): ((0.05, 0), (0.01, -60), (0.04, -5)),
}


def model_of(op: str, t: T, grids=(None, None, None)):
    s = Spec()
    a = s.input(t, A, *(grids[0] or ()))
    b = s.input(t, B, *(grids[1] or ()))
    s.op(OperationType[op], [a, b], [s.output(t, OUT, *(grids[2] or ()))])
    return s.model()


def inputs(rng: np.random.Generator, op: str, t: T) -> list[np.ndarray]:
    a, b = rng_array(rng, t, A), rng_array(rng, t, B)
    if op == "POW":  # positive bases, small exponents
        a = (np.abs(a) + 0.5).astype(a.dtype)
    return [a, b]


@pytest.mark.parametrize(("op", "t"), CASES, ids=[f"{op}-{t.name}" for op, t in CASES])
def test_binary_math_vs_litert(backend: str, op: str, t: T) -> None:
    rng = np.random.default_rng(sum(map(ord, op + t.name)))
    grids = GRIDS.get((op, t), (None, None, None))
    xs = inputs(rng, op, t)
    # LiteRT's PRELU broadcasts alpha into the input's shape only: its twin takes the input
    # already broadcast to the output's shape (an elementwise op, so the same values)
    twin_in = [np.broadcast_to(xs[0], OUT) if op == "PRELU" else xs[0], xs[1]]
    g = TfliteGraph()
    dtype = DTYPES[t]
    ta = g.input(list(twin_in[0].shape), dtype, *(grids[0] or (None,)))
    tb = g.input(B, dtype, *(grids[1] or (None,)))
    ty = g.tensor(OUT, dtype, *(grids[2] or (None,)))
    g.op(op, [ta, tb], [ty])
    expected = run_litert(g.build(ty), [np.ascontiguousarray(x, dtype) for x in twin_in])[0]
    check_vs(model_of(op, t, grids), xs, [expected.astype(xs[0].dtype)], backend,
             float_tol=3e-3 if t == F16 else 1e-5)


@pytest.mark.parametrize("op", ["MAXIMUM", "MINIMUM"])
@pytest.mark.parametrize("t", [U8, I8])
def test_quantized_max_min_on_different_grids(backend: str, op: str, t: T) -> None:
    """Each input requantized onto the output's grid (Android's formula), then the max / min of
    the stored values; NNAPI lets all three grids differ."""
    grids = ((0.1, 120), (0.3, 100), (0.2, 128)) if t == U8 else ((0.1, -8), (0.3, -28), (0.2, 0))
    dtype = DTYPES[t]
    rng = np.random.default_rng(5)
    a, b = rng_array(rng, t, A), rng_array(rng, t, B)
    ra = nnapi_requantize(a, *grids[0], *grids[2], dtype)
    rb = nnapi_requantize(b, *grids[1], *grids[2], dtype)
    fn = np.maximum if op == "MAXIMUM" else np.minimum
    check_vs(model_of(op, t, grids), [a, b], [fn(ra, rb)], backend)


def test_max_takes_one_type() -> None:
    s = Spec()
    a, b = s.input(F32, [2]), s.input(I32, [2])
    expect_bad_data(lambda: s.op(OperationType.MAXIMUM, [a, b], [s.output(F32, [2])]),
                    "(MAXIMUM): input 1 has type TENSOR_INT32, the operation takes TENSOR_FLOAT32 there")


def test_pow_takes_floats_only() -> None:
    s = Spec()
    a, b = s.input(I32, [2]), s.input(I32, [2])
    expect_bad_data(lambda: s.op(OperationType.POW, [a, b], [s.output(I32, [2])]),
                    "(POW): input 0 of type TENSOR_INT32 is not supported")


def test_prelu_shapes_must_broadcast() -> None:
    s = Spec()
    a, b = s.input(F32, [2, 3]), s.input(F32, [2])
    s.op(OperationType.PRELU, [a, b], [s.output(F32, [2, 3])])
    with pytest.raises(NNAPIError) as e:
        s.model()
    assert e.value.code == ResultCode.BAD_DATA
    assert "operation 0 (PRELU)" in str(e.value) and "do not broadcast" in str(e.value)
