"""SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION and INSTANCE_NORMALIZATION
from the spec's text: every input type each allows, the optional axis omitted, last and not
last. The twin is LiteRT's op on the input with the axis moved last by NumPy (LRN: LiteRT's
optimized kernel, whose window [c - radius, c + radius] is the spec's; its reference kernel's
is one shorter); INSTANCE_NORMALIZATION, which TFLite lacks, against the spec's formula."""
from __future__ import annotations

import numpy as np
import pytest
from ai_edge_litert.interpreter import OpResolverType

from teflon_py.nnapi import NNAPIError, OperationType, ResultCode
from teflon_py.nnapi import OperandType as T
from teflon_py.tflite.builder import quantization
from teflon_py.tflite.options import (
    L2NormOptions,
    LocalResponseNormalizationOptions,
    LogSoftmaxOptions,
    SoftmaxOptions,
)
from tests.harness import run_litert, single_op
from tests.nnapi.harness import Spec, check_vs, expect_bad_data, rng_array, run

#: NNAPI type -> (twin dtype, input (scale, zero point))
TYPES = {T.TENSOR_FLOAT32: (np.float32, None), T.TENSOR_FLOAT16: (np.float32, None),
         T.TENSOR_QUANT8_ASYMM: (np.uint8, (0.1, 120)), T.TENSOR_QUANT8_ASYMM_SIGNED: (np.int8, (0.07, -5))}
SOFTMAX_OUT = {T.TENSOR_QUANT8_ASYMM: (1 / 256, 0), T.TENSOR_QUANT8_ASYMM_SIGNED: (1 / 256, -128)}
L2_OUT = {T.TENSOR_QUANT8_ASYMM: (1 / 128, 128), T.TENSOR_QUANT8_ASYMM_SIGNED: (1 / 128, 0)}
FLOATS = [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16]


def param(s: Spec, t: T, value: float) -> int:
    """A float parameter of the type the spec pairs with ``t``."""
    return s.scalar(T.FLOAT16, value) if t == T.TENSOR_FLOAT16 else s.f32(value)


def as_param(t: T, value: float) -> float:
    """The value the parameter holds (float16 rounds)."""
    return float(np.float16(value)) if t == T.TENSOR_FLOAT16 else float(np.float32(value))


def tol(t: T) -> float:
    return 3e-3 if t == T.TENSOR_FLOAT16 else 1e-5


def q(grid: tuple[float, int] | None):
    return None if grid is None else quantization(grid[0], grid[1], 0)


def twin_last_axis(opcode: str, options: object, t: T, xs: np.ndarray, axis: int, out_grid, *,
                   shape4: bool = False, resolver: OpResolverType = OpResolverType.BUILTIN_REF) -> np.ndarray:
    """LiteRT's ``opcode`` along ``axis``: the input moved so the axis is last (and, with
    ``shape4``, padded to 4-D with leading 1s), the result moved back."""
    moved = np.moveaxis(xs, axis, -1)
    feed = moved.reshape((1,) * (4 - moved.ndim) + moved.shape) if shape4 else moved
    dtype = TYPES[t][0]
    tflite = single_op(opcode, [{"shape": feed.shape, "dtype": dtype, "quant": q(TYPES[t][1])}],
                       [{"shape": feed.shape, "dtype": dtype, "quant": q(out_grid)}], options)
    y = run_litert(tflite, [np.ascontiguousarray(feed.astype(dtype))], resolver)[0].reshape(moved.shape)
    y = np.moveaxis(y, -1, axis)
    return y.astype(np.float16) if t == T.TENSOR_FLOAT16 else np.ascontiguousarray(y)


def model_of(op: OperationType, t: T, shape: tuple[int, ...], params, out_grid) -> object:
    s = Spec()
    x = s.input(t, shape, *(TYPES[t][1] or (0.0, 0)))
    y = s.output(t, shape, *(out_grid or (0.0, 0)))
    s.op(op, [x, *params(s)], [y])
    return s.model()


#: form -> (shape, beta, axis or None for the omitted operand)
SOFTMAX_FORMS = {"2d_axis_omitted": ((3, 5), 1.0, None), "4d_axis_1": ((2, 3, 2, 4), 0.7, 1),
                 "3d_axis_last": ((2, 3, 4), 2.0, -1)}


@pytest.mark.parametrize("form", list(SOFTMAX_FORMS))
@pytest.mark.parametrize("t", list(TYPES), ids=lambda t: t.name)
def test_softmax(backend: str, t: T, form: str) -> None:
    shape, beta, axis = SOFTMAX_FORMS[form]
    rng = np.random.default_rng(list(TYPES).index(t) * 7 + len(shape))
    xs = rng_array(rng, t, shape)
    grid = SOFTMAX_OUT.get(t)
    model = model_of(OperationType.SOFTMAX, t, shape,
                     lambda s: [param(s, t, beta)] + ([] if axis is None else [s.i32(axis)]), grid)
    expected = twin_last_axis("SOFTMAX", SoftmaxOptions(beta=as_param(t, beta)), t, xs,
                              -1 if axis is None else axis, grid)
    check_vs(model, [xs], [expected], backend, float_tol=tol(t))


@pytest.mark.parametrize("beta,axis", [(1.0, -1), (2.5, 0)], ids=["beta1_last", "beta2.5_axis0"])
@pytest.mark.parametrize("t", FLOATS, ids=lambda t: t.name)
def test_log_softmax(backend: str, t: T, beta: float, axis: int) -> None:
    shape = (4, 3, 5)
    xs = rng_array(np.random.default_rng(FLOATS.index(t)), t, shape)
    model = model_of(OperationType.LOG_SOFTMAX, t, shape, lambda s: [param(s, t, beta), s.i32(axis)], None)
    # the spec's logits * beta - log(sum(exp(logits * beta))): LiteRT's LOG_SOFTMAX of beta * x
    scaled = xs.astype(np.float32) * np.float32(as_param(t, beta))
    expected = twin_last_axis("LOG_SOFTMAX", LogSoftmaxOptions(), t, scaled, axis, None)
    check_vs(model, [xs], [expected], backend, float_tol=tol(t))


#: form -> (shape, axis or None for the omitted operand)
L2_FORMS = {"4d_axis_omitted": ((2, 2, 3, 4), None), "3d_axis_0": ((3, 2, 4), 0), "1d": ((6,), -1)}


@pytest.mark.parametrize("form", list(L2_FORMS))
@pytest.mark.parametrize("t", list(TYPES), ids=lambda t: t.name)
def test_l2_normalization(backend: str, t: T, form: str) -> None:
    shape, axis = L2_FORMS[form]
    rng = np.random.default_rng(list(TYPES).index(t) * 5 + len(shape))
    xs = rng_array(rng, t, shape)
    zero = TYPES[t][1][1] if TYPES[t][1] else 0
    a = -1 if axis is None else axis
    np.moveaxis(xs, a, -1)[(0,) * (len(shape) - 1)] = zero  # one all-zero vector: a logical zero since level 4
    grid = L2_OUT.get(t)
    model = model_of(OperationType.L2_NORMALIZATION, t, shape, lambda s: [] if axis is None else [s.i32(axis)], grid)
    expected = twin_last_axis("L2_NORMALIZATION", L2NormOptions(), t, xs, a, grid)
    out = check_vs(model, [xs], [expected], backend, float_tol=tol(t))[0]
    assert np.all(np.moveaxis(out, a, -1)[(0,) * (len(shape) - 1)] == (grid[1] if grid else 0))


def spec_lrn(x: np.ndarray, axis: int, radius: int, bias: float, alpha: float, beta: float) -> np.ndarray:
    """The spec's formula: sqr_sum over [d - radius, d + radius] along ``axis``."""
    moved = np.moveaxis(x.astype(np.float64), axis, -1)
    sq = np.pad(moved ** 2, [(0, 0)] * (moved.ndim - 1) + [(radius, radius)])
    sums = sum(sq[..., i:i + moved.shape[-1]] for i in range(2 * radius + 1))
    return np.moveaxis(moved / (bias + alpha * sums) ** beta, -1, axis)


#: form -> (shape, axis or None, radius, bias, alpha, beta)
LRN_FORMS = {"4d_axis_omitted": ((1, 2, 3, 6), None, 2, 1.0, 0.5, 0.75),
             "2d_axis_0": ((5, 3), 0, 1, 2.0, 0.1, 0.5), "3d_axis_1": ((2, 7, 3), 1, 3, 1.5, 0.25, 1.0)}


@pytest.mark.parametrize("form", list(LRN_FORMS))
@pytest.mark.parametrize("t", FLOATS, ids=lambda t: t.name)
def test_local_response_normalization(backend: str, t: T, form: str) -> None:
    shape, axis, radius, bias, alpha, beta = LRN_FORMS[form]
    xs = rng_array(np.random.default_rng(FLOATS.index(t) + len(shape)), t, shape)
    a = -1 if axis is None else axis
    model = model_of(OperationType.LOCAL_RESPONSE_NORMALIZATION, t, shape,
                     lambda s: [s.i32(radius), param(s, t, bias), param(s, t, alpha), param(s, t, beta)]
                     + ([] if axis is None else [s.i32(axis)]), None)
    bias, alpha, beta = (as_param(t, v) for v in (bias, alpha, beta))
    options = LocalResponseNormalizationOptions(radius=radius, bias=bias, alpha=alpha, beta=beta)
    expected = twin_last_axis("LOCAL_RESPONSE_NORMALIZATION", options, t, xs, a, None, shape4=True,
                              resolver=OpResolverType.BUILTIN)
    # LiteRT's optimized kernel is the spec's formula (so the twin states the spec's window)
    np.testing.assert_allclose(expected.astype(np.float64), spec_lrn(xs, a, radius, bias, alpha, beta),
                               rtol=tol(t), atol=tol(t))
    check_vs(model, [xs], [expected], backend, float_tol=tol(t))


@pytest.mark.parametrize("nchw", [False, True], ids=["nhwc", "nchw"])
@pytest.mark.parametrize("t", FLOATS, ids=lambda t: t.name)
def test_instance_normalization(backend: str, t: T, nchw: bool) -> None:
    shape = (2, 3, 4, 5)
    xs = (rng_array(np.random.default_rng(FLOATS.index(t) + 2 * nchw), t, shape) * 2 + 1).astype(
        np.float16 if t == T.TENSOR_FLOAT16 else np.float32)
    gamma, beta, epsilon = 1.5, -0.25, 1e-3
    model = model_of(OperationType.INSTANCE_NORMALIZATION, t, shape,
                     lambda s: [param(s, t, gamma), param(s, t, beta), param(s, t, epsilon), s.boolean(nchw)], None)
    gamma, beta, epsilon = (as_param(t, v) for v in (gamma, beta, epsilon))
    spatial = (2, 3) if nchw else (1, 2)
    x = xs.astype(np.float64)
    mean = x.mean(axis=spatial, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=spatial, keepdims=True)
    expected = ((x - mean) * gamma / np.sqrt(var + epsilon) + beta).astype(xs.dtype)
    check_vs(model, [xs], [expected], backend, float_tol=tol(t))


def bad(build) -> str:
    with pytest.raises(NNAPIError) as e:
        build()
    assert e.value.code == ResultCode.BAD_DATA
    return str(e.value)


def test_softmax_uint8_output_grid() -> None:
    assert "operation 0 (SOFTMAX): output 0: a TENSOR_QUANT8_ASYMM output takes scale 1/256 and zero point 0" in bad(
        lambda: model_of(OperationType.SOFTMAX, T.TENSOR_QUANT8_ASYMM, (2, 3), lambda s: [s.f32(1.0)], (1 / 255, 0)))


def test_softmax_int8_output_zero_point() -> None:
    assert "output 0: a TENSOR_QUANT8_ASYMM_SIGNED output takes scale 1/256 and zero point -128" in bad(
        lambda: model_of(OperationType.SOFTMAX, T.TENSOR_QUANT8_ASYMM_SIGNED, (2, 3), lambda s: [s.f32(1.0)],
                         (1 / 256, 0)))


def test_softmax_beta_must_be_positive() -> None:
    assert "operation 0 (SOFTMAX): input 1: beta must be positive, got 0.0" in bad(
        lambda: model_of(OperationType.SOFTMAX, T.TENSOR_FLOAT32, (2, 3), lambda s: [s.f32(0.0)], None))


def test_l2_normalization_int8_output_grid() -> None:
    assert "operation 0 (L2_NORMALIZATION): output 0: a TENSOR_QUANT8_ASYMM_SIGNED output takes scale 1/128" in bad(
        lambda: model_of(OperationType.L2_NORMALIZATION, T.TENSOR_QUANT8_ASYMM_SIGNED, (2, 3), lambda s: [],
                         (1 / 128, 1)))


def test_lrn_with_bias_zero(backend: str) -> None:
    """bias 0, alpha 1, beta 0.5 and a radius over all six channels: x / sqrt(sum of squares); the
    squares sum to 4, so each value is halved (the spec asks for a non-zero bias, Android's
    reference and its conformance tests take 0)."""
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [1, 1, 1, 6])
    y = s.output(T.TENSOR_FLOAT32, [1, 1, 1, 6])
    s.op(OperationType.LOCAL_RESPONSE_NORMALIZATION, [x, s.i32(20), s.f32(0.0), s.f32(1.0), s.f32(0.5)], [y])
    data = np.array([-1.1, 0.6, 0.7, 1.2, -0.7, 0.1], np.float32).reshape(1, 1, 1, 6)
    check_vs(s.model(), [data], [data / np.float32(2.0)], backend)


def test_log_softmax_axis_out_of_range() -> None:
    assert "operation 0 (LOG_SOFTMAX): input 2: axis 2 is out of range for a rank-2 input" in bad(
        lambda: model_of(OperationType.LOG_SOFTMAX, T.TENSOR_FLOAT32, (2, 3), lambda s: [s.f32(1.0), s.i32(2)], None))


def test_instance_normalization_takes_4d() -> None:
    assert "operation 0 (INSTANCE_NORMALIZATION): input 0: rank 3 is not supported (ranks 4 to 4)" in bad(
        lambda: model_of(OperationType.INSTANCE_NORMALIZATION, T.TENSOR_FLOAT32, (2, 3, 4),
                         lambda s: [s.f32(1.0), s.f32(0.0), s.f32(1e-5), s.boolean(False)], None))


@pytest.mark.parametrize("t", list(TYPES), ids=lambda t: t.name)
def test_softmax_zero_sized_input(backend: str, t: T) -> None:
    """Since feature level 3 the input may be zero-sized (its dimensions given at execution)."""
    s = Spec()
    x = s.input(t, [0, 5], *(TYPES[t][1] or (0.0, 0)))
    y = s.output(t, [0, 5], *(SOFTMAX_OUT.get(t) or (0.0, 0)))
    s.op(OperationType.SOFTMAX, [x, param(s, t, 1.0)], [y])
    xs = np.zeros((0, 5), np.float16 if t == T.TENSOR_FLOAT16 else TYPES[t][0])
    out = run(s.model(), [xs], backend)[0][0]
    assert out.shape == (0, 5) and out.dtype == xs.dtype


def test_softmax_float16_takes_a_float16_beta() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT16, [2, 3])
    y = s.output(T.TENSOR_FLOAT16, [2, 3])
    expect_bad_data(lambda: s.op(OperationType.SOFTMAX, [x, s.f32(1.0)], [y]),
                    "operation 0 (SOFTMAX): input 1 has type FLOAT32, the operation takes FLOAT16")
