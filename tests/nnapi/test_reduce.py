"""MEAN, REDUCE_SUM/PROD/MAX/MIN/ANY/ALL, ARGMAX/ARGMIN and TOPK_V2 from the spec's text: every
input type each allows, axes negative, repeated or all (the output is then [1]), keep_dims on and
off, against LiteRT's reference kernels on the same op (float16 as float32 on the same values);
TOPK_V2's indices against a NumPy statement of the spec's order (ties: larger index first)."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.nnapi import NNAPIError, OperationType, ResultCode
from teflon_py.nnapi import OperandType as T
from teflon_py.tflite.options import ArgMaxOptions, ArgMinOptions, ReducerOptions, TopKV2Options
from teflon_py.tflite.schema import fb
from tests.harness import run_litert, single_op
from tests.nnapi.harness import Spec, check_vs, rng_array

#: NNAPI tensor type -> (twin dtype, quantization (scale, zero point) or None)
TWIN = {T.TENSOR_FLOAT32: (np.float32, None), T.TENSOR_FLOAT16: (np.float32, None),
        T.TENSOR_INT32: (np.int32, None), T.TENSOR_BOOL8: (np.bool_, None),
        T.TENSOR_QUANT8_ASYMM: (np.uint8, (0.1, 120)), T.TENSOR_QUANT8_ASYMM_SIGNED: (np.int8, (0.07, -5))}
OPS = {  # NNAPI operation -> (TFLite op, the types the spec allows)
    OperationType.MEAN: ("MEAN", [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                                  T.TENSOR_QUANT8_ASYMM_SIGNED]),
    OperationType.REDUCE_SUM: ("SUM", [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16]),
    OperationType.REDUCE_PROD: ("REDUCE_PROD", [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16]),
    OperationType.REDUCE_MAX: ("REDUCE_MAX", [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                                              T.TENSOR_QUANT8_ASYMM_SIGNED]),
    OperationType.REDUCE_MIN: ("REDUCE_MIN", [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                                              T.TENSOR_QUANT8_ASYMM_SIGNED]),
    OperationType.REDUCE_ANY: ("REDUCE_ANY", [T.TENSOR_BOOL8]),
    OperationType.REDUCE_ALL: ("REDUCE_ALL", [T.TENSOR_BOOL8]),
}
CASES = [(op, t) for op, (_, types) in OPS.items() for t in types]
#: form -> (input shape, axes, keep_dims)
FORMS = {"two_axes_kept": ((2, 3, 4), [1, -1], True), "all_axes": ((3, 4), [0, 1], False),
         "repeated_negative": ((2, 3, 2, 2), [-2, 2, 0], False)}
INDEXED = [T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED]


def quant_args(t: T) -> tuple[float, int]:
    q = TWIN[t][1]
    return q if q is not None else (0.0, 0)


def twin_quant(t: T) -> ir.Quantization | None:
    from teflon_py.tflite.builder import quantization

    q = TWIN[t][1]
    return None if q is None else quantization(q[0], q[1], 0)


def tol(t: T) -> float:
    return 3e-3 if t == T.TENSOR_FLOAT16 else 1e-5


def as_twin(t: T, x: np.ndarray) -> np.ndarray:
    return x.astype(TWIN[t][0])


def from_twin(t: T, y: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """LiteRT's result as the NNAPI operand holds it (float16 rounded, a scalar as [1])."""
    y = y.astype(np.float16) if t == T.TENSOR_FLOAT16 else y
    return y.reshape(shape)


def reduce_model(op: OperationType, t: T, shape: tuple[int, ...], axes: list[int], keep: bool,
                 out_shape: tuple[int, ...]):
    s = Spec()
    x = s.input(t, shape, *quant_args(t))
    keep_operand = s.i32(1 if keep else 0) if op == OperationType.MEAN else s.boolean(keep)
    y = s.output(t, out_shape, *quant_args(t))
    s.op(op, [x, s.const(T.TENSOR_INT32, axes), keep_operand], [y])
    return s.model()


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("op,t", CASES, ids=[f"{op.name}-{t.name}" for op, t in CASES])
def test_reduction(backend: str, op: OperationType, t: T, form: str) -> None:
    shape, axes, keep = FORMS[form]
    rank = len(shape)
    reduced = {a % rank for a in axes}
    out_shape = tuple(1 if i in reduced else d for i, d in enumerate(shape)) if keep else \
        tuple(d for i, d in enumerate(shape) if i not in reduced) or (1,)
    rng = np.random.default_rng(len(CASES) * list(FORMS).index(form) + CASES.index((op, t)))
    xs = rng_array(rng, t, shape)
    if op == OperationType.REDUCE_PROD:
        xs = (xs * 0.5 + np.sign(xs)).astype(xs.dtype)  # magnitudes near 1: the product stays in range
    model = reduce_model(op, t, shape, axes, keep, out_shape)
    opcode = OPS[op][0]
    twin_shape = out_shape if keep or len(reduced) < rank else ()
    tflite = single_op(opcode, [{"shape": shape, "dtype": TWIN[t][0], "quant": twin_quant(t)},
                                {"shape": (len(axes),), "dtype": np.int32, "data": np.array(axes, np.int32)}],
                       [{"shape": twin_shape, "dtype": TWIN[t][0], "quant": twin_quant(t)}],
                       ReducerOptions(keep_dims=keep))
    expected = from_twin(t, run_litert(tflite, [as_twin(t, xs)])[0], out_shape)
    check_vs(model, [xs], [expected], backend, float_tol=tol(t))


@pytest.mark.parametrize("op", [OperationType.ARGMAX, OperationType.ARGMIN])
@pytest.mark.parametrize("t", INDEXED)
@pytest.mark.parametrize("shape,axis", [((3, 5, 4), -2), ((6,), 0)], ids=["3d_negative_axis", "1d"])
def test_arg(backend: str, op: OperationType, t: T, shape: tuple[int, ...], axis: int) -> None:
    rng = np.random.default_rng(INDEXED.index(t) + 10 * len(shape))
    xs = rng_array(rng, t, shape)
    if t != T.TENSOR_FLOAT16 and t != T.TENSOR_FLOAT32:
        xs = (xs % 7).astype(xs.dtype)  # ties: the first index wins
    out_shape = tuple(d for i, d in enumerate(shape) if i != axis % len(shape)) or (1,)
    s = Spec()
    x = s.input(t, shape, *quant_args(t))
    y = s.output(T.TENSOR_INT32, out_shape)
    s.op(op, [x, s.i32(axis)], [y])
    opcode, options = ("ARG_MAX", ArgMaxOptions) if op == OperationType.ARGMAX else ("ARG_MIN", ArgMinOptions)
    twin_shape = out_shape if len(shape) > 1 else ()
    tflite = single_op(opcode, [{"shape": shape, "dtype": TWIN[t][0], "quant": twin_quant(t)},
                                {"shape": (1,), "dtype": np.int32, "data": np.array([axis], np.int32)}],
                       [{"shape": twin_shape, "dtype": np.int32}], options(output_type=fb.TensorType.INT32))
    expected = run_litert(tflite, [as_twin(t, xs)])[0].reshape(out_shape)
    check_vs(s.model(), [xs], [expected], backend)


def spec_topk(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The spec's TOPK_V2: the k largest of each last-axis row, descending, equal values with the
    larger index first."""
    n = x.shape[-1]
    index = np.broadcast_to(np.arange(n), x.shape)
    rows, idx = x.reshape(-1, n), index.reshape(-1, n)
    order = np.stack([np.lexsort((-i, -r.astype(np.float64)))[:k] for r, i in zip(rows, idx)])
    values = np.take_along_axis(rows, order, axis=1)
    return values.reshape(x.shape[:-1] + (k,)), order.astype(np.int32).reshape(x.shape[:-1] + (k,))


def test_spec_topk_statement() -> None:
    """The NumPy statement itself, on the spec's rule by hand."""
    values, index = spec_topk(np.array([[1, 3, 3, 2, 3]]), 3)
    assert values.tolist() == [[3, 3, 3]] and index.tolist() == [[4, 2, 1]]


@pytest.mark.parametrize("t", INDEXED)
@pytest.mark.parametrize("shape,k", [((2, 3, 7), 3), ((5,), 5)], ids=["3d", "1d_all"])
def test_topk_v2(backend: str, t: T, shape: tuple[int, ...], k: int) -> None:
    rng = np.random.default_rng(INDEXED.index(t) + len(shape))
    xs = rng_array(rng, t, shape)
    xs = (xs if t in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16) else xs % 4).astype(xs.dtype)
    xs.reshape(-1)[[0, 2]] = xs.reshape(-1)[1]  # a tie in every case
    out_shape = shape[:-1] + (k,)
    s = Spec()
    x = s.input(t, shape, *quant_args(t))
    v = s.output(t, out_shape, *quant_args(t))
    i = s.output(T.TENSOR_INT32, out_shape)
    s.op(OperationType.TOPK_V2, [x, s.i32(k)], [v, i])
    values, index = spec_topk(xs, k)
    # LiteRT's TOPK_V2 finds the same values (its ties differ only in the index order)
    tflite = single_op("TOPK_V2", [{"shape": shape, "dtype": TWIN[t][0], "quant": twin_quant(t)},
                                   {"shape": (1,), "dtype": np.int32, "data": np.array([k], np.int32)}],
                       [{"shape": out_shape, "dtype": TWIN[t][0], "quant": twin_quant(t)},
                        {"shape": out_shape, "dtype": np.int32}], TopKV2Options())
    litert_values = from_twin(t, run_litert(tflite, [as_twin(t, xs)])[0], out_shape)
    np.testing.assert_array_equal(litert_values, values)
    check_vs(s.model(), [xs], [values, index], backend)


def bad(build) -> str:
    with pytest.raises(NNAPIError) as e:
        build()
    assert e.value.code == ResultCode.BAD_DATA
    return str(e.value)


def test_mean_quantized_output_keeps_the_input_grid() -> None:
    def build():
        s = Spec()
        x = s.input(T.TENSOR_QUANT8_ASYMM, [2, 3], 0.5, 10)
        y = s.output(T.TENSOR_QUANT8_ASYMM, [2], 0.25, 10)
        s.op(OperationType.MEAN, [x, s.const(T.TENSOR_INT32, [1]), s.i32(0)], [y])
        s.model()
    assert "operation 0 (MEAN): output 0: scale and zero point (0.25, 10) must equal input 0's" in bad(build)


def test_reduce_axis_out_of_range() -> None:
    def build():
        s = Spec()
        x = s.input(T.TENSOR_FLOAT32, [2, 3])
        y = s.output(T.TENSOR_FLOAT32, [2])
        s.op(OperationType.REDUCE_SUM, [x, s.const(T.TENSOR_INT32, [2]), s.boolean(False)], [y])
        s.model()
    assert "operation 0 (REDUCE_SUM): input 1: axis 2 is out of range for a rank-2 input" in bad(build)


def test_reduce_keep_dims_is_bool_except_for_mean() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [2, 3])
    y = s.output(T.TENSOR_FLOAT32, [2])
    with pytest.raises(NNAPIError) as e:
        s.op(OperationType.REDUCE_MAX, [x, s.const(T.TENSOR_INT32, [1]), s.i32(0)], [y])
    assert e.value.code == ResultCode.BAD_DATA and "input 2 has type INT32, the operation takes BOOL" in str(e.value)


def test_topk_k_beyond_the_last_dimension() -> None:
    def build():
        s = Spec()
        x = s.input(T.TENSOR_FLOAT32, [2, 3])
        v, i = s.output(T.TENSOR_FLOAT32, [2, 4]), s.output(T.TENSOR_INT32, [2, 4])
        s.op(OperationType.TOPK_V2, [x, s.i32(4)], [v, i])
        s.model()
    assert "operation 0 (TOPK_V2): input 1: k = 4 must be in [1, 3]" in bad(build)


def test_argmax_axis_out_of_range() -> None:
    def build():
        s = Spec()
        x = s.input(T.TENSOR_INT32, [2, 3])
        y = s.output(T.TENSOR_INT32, [2])
        s.op(OperationType.ARGMAX, [x, s.i32(-3)], [y])
        s.model()
    assert "operation 0 (ARGMAX): input 1: axis -3 is out of range for a rank-2 input" in bad(build)


def test_mean_axes_from_an_execution_input(backend: str) -> None:
    """The axes may be a model input: the graph is made for the values an execution gives."""
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [2, 3, 4])
    axes = s.input(T.TENSOR_INT32, [1])
    y = s.output(T.TENSOR_FLOAT32, [0, 0])
    s.op(OperationType.MEAN, [x, axes, s.i32(0)], [y])
    model = s.model()
    xs = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)
    for axis in (1, -1):
        expected = np.cumsum(np.moveaxis(xs, axis, -1), axis=-1, dtype=np.float32)[..., -1] / np.float32(xs.shape[axis])
        check_vs(model, [xs, np.array([axis], np.int32)], [expected], backend)
