"""SUM, REDUCE_PROD/MAX/MIN/ANY/ALL, ARG_MAX/ARG_MIN and CUMSUM against LiteRT's reference kernels.

Axes tensors with negative and repeated entries, keep_dims, every type LiteRT takes. Quantized
int8 / int16 SUM: LiteRT 2.3.0's BUILTIN_REF reads their data as uint8 (reduce.cc passes
``GetTensorData<uint8_t>`` to reference_ops::QuantizedMeanOrSum for every type), so those tests
check teflon-py's int8 / int16 SUM, the same integer algorithm on the right type, against oracles
that run LiteRT's correct paths: uint8 SUM on the shifted data, and MEAN over power-of-two counts.
"""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py.errors import UnsupportedError
from teflon_py.tflite import options
from tests.harness import check_model, quantization, run_litert, run_teflon, single_op

#: (input shape, axes)
CASES = [
    ((7,), [0]),
    ((4, 6), [1]),
    ((4, 6), [-2]),
    ((4, 6), [0, 1]),
    ((2, 5, 6), [0, 2]),
    ((2, 5, 6), [-1, 0]),
    ((2, 6, 5, 8), [1, 2]),
    ((2, 3, 4, 5), [2, 2]),
    ((2, 3, 4, 5), [3, -1, 1]),
    ((2, 3, 4, 5), [0, 1, 2, 3]),
    ((2, 3, 4, 5), []),
    ((1, 1, 33, 40), [2]),
]
CASE_IDS = [f"{'x'.join(map(str, s))}-ax{'_'.join(map(str, a)) or 'none'}" for s, a in CASES]
#: a smaller grid for the integer and bool types
SMALL = [CASES[i] for i in (0, 2, 4, 6, 8, 9, 10)]
SMALL_IDS = [CASE_IDS[i] for i in (0, 2, 4, 6, 8, 9, 10)]
REDUCERS = ["SUM", "REDUCE_PROD", "REDUCE_MAX", "REDUCE_MIN"]
KEEP = pytest.mark.parametrize("keep_dims", [True, False], ids=["keep", "drop"])


def reduced(shape: tuple, axes: list, keep_dims: bool) -> tuple:
    norm = {a % len(shape) for a in axes}
    return tuple(1 if i in norm else d for i, d in enumerate(shape) if keep_dims or i not in norm)


def reduce_model(op: str, shape: tuple, axes: list, keep_dims: bool, dtype: type, qin=None, qout=None) -> bytes:
    return single_op(op, [{"shape": shape, "dtype": dtype, "quant": qin}, {"data": np.array(axes, np.int32)}],
                     [{"shape": reduced(shape, axes, keep_dims), "dtype": dtype, "quant": qout}],
                     options.ReducerOptions(keep_dims=keep_dims))


# -- float32, int32, int64, bool -----------------------------------------------------------------

@KEEP
@pytest.mark.parametrize("shape,axes", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("op", REDUCERS)
def test_reduce_float(backend: str, op: str, shape: tuple, axes: list, keep_dims: bool) -> None:
    check_model(reduce_model(op, shape, axes, keep_dims, np.float32), backend, seed=len(shape) + len(axes))


@pytest.mark.parametrize("shape,axes", SMALL, ids=SMALL_IDS)
@pytest.mark.parametrize("op", ["SUM", "REDUCE_MAX"])
def test_reduce_float_gpu_family(gpu_family: str, op: str, shape: tuple, axes: list) -> None:
    """The folds on the GPU family's grid: one output per work-item, real work-groups."""
    check_model(reduce_model(op, shape, axes, False, np.float32), gpu_family, seed=len(shape) + len(axes))


@KEEP
@pytest.mark.parametrize("shape,axes", SMALL, ids=SMALL_IDS)
@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("op", REDUCERS)
def test_reduce_int(backend: str, op: str, dtype: type, shape: tuple, axes: list, keep_dims: bool) -> None:
    """Random values up to 2^20: products wrap, as C's integer multiplies do."""
    check_model(reduce_model(op, shape, axes, keep_dims, dtype), backend, seed=len(axes))


@pytest.mark.parametrize("shape,axes", SMALL, ids=SMALL_IDS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16], ids=["i8", "u8", "i16"])
@pytest.mark.parametrize("op", ["REDUCE_PROD", "REDUCE_MAX", "REDUCE_MIN"])
def test_reduce_raw_small_ints(backend: str, op: str, dtype: type, shape: tuple, axes: list) -> None:
    """8/16-bit tensors without quantization parameters: the raw integers, products wrapping."""
    check_model(reduce_model(op, shape, axes, False, dtype), backend, seed=len(axes))


@pytest.mark.parametrize("dtype", [np.int32, np.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("op", ["SUM", "REDUCE_PROD"])
def test_reduce_int_wraps(backend: str, op: str, dtype: type) -> None:
    info = np.iinfo(dtype)
    x = np.random.default_rng(3).integers(info.max // 4, info.max, (3, 9), endpoint=True).astype(dtype)
    check_model(reduce_model(op, (3, 9), [1], False, dtype), backend, inputs=[x])


@KEEP
@pytest.mark.parametrize("shape,axes", SMALL, ids=SMALL_IDS)
@pytest.mark.parametrize("op", ["REDUCE_ANY", "REDUCE_ALL"])
def test_reduce_bool(backend: str, op: str, shape: tuple, axes: list, keep_dims: bool) -> None:
    rng = np.random.default_rng(len(shape))
    p = 0.9 if op == "REDUCE_ALL" else 0.1  # both outcomes appear
    x = rng.random(shape) < p
    check_model(reduce_model(op, shape, axes, keep_dims, np.bool_), backend, inputs=[x])


@pytest.mark.parametrize("axes", [[1], [0, 1]], ids=["rows", "all"])
@pytest.mark.parametrize("op", ["REDUCE_MAX", "REDUCE_MIN"])
def test_reduce_extremum_nan_inf(backend: str, op: str, axes: list) -> None:
    """NaN never wins C's compare, +-inf lose to the neutral +-FLT_MAX; over every axis the first
    element seeds the fold instead (and a leading NaN sticks)."""
    nan, inf = np.nan, np.inf
    x = np.array([[1.0, nan, 3.0, -2.0], [nan, 5.0, -1.0, 0.5], [-inf, -inf, nan, -inf],
                  [inf, inf, inf, inf], [nan, nan, nan, nan]], np.float32)
    for rows in (x, x[1:4]):  # with and without a leading NaN
        check_model(reduce_model(op, rows.shape, axes, False, np.float32), backend, inputs=[rows])


# -- 8/16-bit quantized ---------------------------------------------------------------------------

#: (input, output) grids for a quantized SUM: same, finer, coarser
SUM_QUANTS = [(quantization(0.04, 131), quantization(0.04, 131)),
              (quantization(0.01, 131), quantization(0.3, 120)),
              (quantization(0.03, 100), quantization(0.9, 140)),
              (quantization(0.2, 128), quantization(0.07, 128))]


@KEEP
@pytest.mark.parametrize("quants", range(len(SUM_QUANTS)))
@pytest.mark.parametrize("shape,axes", CASES, ids=CASE_IDS)
def test_sum_uint8(backend: str, shape: tuple, axes: list, keep_dims: bool, quants: int) -> None:
    qin, qout = SUM_QUANTS[quants]
    check_model(reduce_model("SUM", shape, axes, keep_dims, np.uint8, qin, qout), backend, seed=quants)


def shifted(q, delta: int):
    return quantization(q.scale, q.zero_point + delta)


@KEEP
@pytest.mark.parametrize("quants", range(len(SUM_QUANTS)))
@pytest.mark.parametrize("shape,axes", CASES, ids=CASE_IDS)
def test_sum_int8(backend: str, shape: tuple, axes: list, keep_dims: bool, quants: int) -> None:
    """int8 SUM against LiteRT's uint8 SUM on x + 128 with zero points + 128: the integer algorithm
    is the same up to that shift (the sum less count * zero point, then the clamp)."""
    qin, qout = SUM_QUANTS[quants]
    qin8, qout8 = shifted(qin, -128), shifted(qout, -128)
    x = np.random.default_rng(quants).integers(-128, 128, shape).astype(np.int8)
    model8 = reduce_model("SUM", shape, axes, keep_dims, np.int8, qin8, qout8)
    (ours,), _ = run_teflon(model8, [x], backend)
    expected = run_litert(reduce_model("SUM", shape, axes, keep_dims, np.uint8, qin, qout),
                          [(x.astype(np.int16) + 128).astype(np.uint8)])[0]
    np.testing.assert_array_equal(ours.astype(np.int16) + 128, expected)


@pytest.mark.parametrize("scales", [(0.05, 0.05), (0.05, 0.3), (0.2, 0.03)], ids=["same", "coarser", "finer"])
@pytest.mark.parametrize("shape,axes", [((4, 8), [1]), ((2, 4, 4, 3), [1, 2]), ((16,), [0]), ((2, 2, 8), [0, -1])],
                         ids=["4x8-ax1", "2x4x4x3-ax1_2", "16-ax0", "2x2x8-ax0_-1"])
def test_sum_int16(backend: str, shape: tuple, axes: list, scales: tuple) -> None:
    """int16 SUM over 2^k elements equals LiteRT's int16 MEAN with the output scale divided by 2^k:
    the same multiplier, shifted k more, then MEAN's (m << k) / 2^k takes the k back exactly."""
    s_in, s_out = scales
    count = int(np.prod([shape[a] for a in axes]))
    x = np.random.default_rng(count).integers(-3000, 3000, shape).astype(np.int16)
    model = reduce_model("SUM", shape, axes, False, np.int16, quantization(s_in), quantization(s_out))
    (ours,), _ = run_teflon(model, [x], backend)
    mean = reduce_model("MEAN", shape, axes, False, np.int16, quantization(s_in), quantization(s_out / count))
    np.testing.assert_array_equal(ours, run_litert(mean, [x])[0])


#: dtype -> a per-tensor grid shared by input and output
SAME_GRID = {np.int8: quantization(0.05, -3), np.uint8: quantization(0.04, 131), np.int16: quantization(0.001)}


@KEEP
@pytest.mark.parametrize("shape,axes", CASES, ids=CASE_IDS)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16], ids=["i8", "u8", "i16"])
@pytest.mark.parametrize("op", ["REDUCE_MAX", "REDUCE_MIN"])
def test_reduce_extremum_quantized(backend: str, op: str, dtype: type, shape: tuple, axes: list,
                                   keep_dims: bool) -> None:
    q = SAME_GRID[dtype]
    check_model(reduce_model(op, shape, axes, keep_dims, dtype, q, q), backend, seed=len(axes))


@pytest.mark.parametrize("op", ["REDUCE_MAX", "REDUCE_MIN"])
def test_reduce_extremum_needs_one_grid(op: str) -> None:
    """LiteRT refuses 8-bit MAX/MIN whose output grid differs from the input's; so does teflon-py."""
    model = reduce_model(op, (4, 6), [1], False, np.int8, quantization(0.05, 1), quantization(0.1, 1))
    with pytest.raises(UnsupportedError, match=rf"node 0 \({op}\): input grid .* differs from output grid"):
        run_teflon(model, [np.zeros((4, 6), np.int8)])
    with pytest.raises(RuntimeError):
        run_litert(model, [np.zeros((4, 6), np.int8)])


#: (input shape, axes) with short reductions, so that products of real values stay in range
PROD_CASES = [((6,), [0]), ((4, 3), [1]), ((4, 3), [-2]), ((2, 3, 4), [0, 2]), ((2, 2, 3, 2), [1, 2, 3]),
              ((3, 2, 2), [1, 1]), ((5, 1, 2), [1])]
#: dtype -> [(input grid, output grid)]
PROD_QUANTS = {np.int8: [(quantization(0.01, 0), quantization(0.01, 0)), (quantization(0.012, 5), quantization(0.02, -7)),
                         (quantization(0.03, -10), quantization(0.5, 3))],
               np.int16: [(quantization(0.0001), quantization(0.0001)), (quantization(0.00005), quantization(0.0002))]}


@KEEP
@pytest.mark.parametrize("dtype,quants", [(t, k) for t, qs in PROD_QUANTS.items() for k in range(len(qs))],
                         ids=lambda v: v.__name__ if isinstance(v, type) else str(v))
@pytest.mark.parametrize("shape,axes", PROD_CASES, ids=lambda v: "x".join(map(str, v)))
def test_reduce_prod_quantized(backend: str, shape: tuple, axes: list, keep_dims: bool, dtype: type,
                               quants: int) -> None:
    qin, qout = PROD_QUANTS[dtype][quants]
    info = np.iinfo(dtype)
    x = np.random.default_rng(quants).integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    check_model(reduce_model("REDUCE_PROD", shape, axes, keep_dims, dtype, qin, qout), backend, inputs=[x])


# -- ARG_MAX, ARG_MIN -----------------------------------------------------------------------------

#: (input shape, axis)
ARG_CASES = [((9,), 0), ((4, 7), 1), ((4, 7), 0), ((4, 7), -1), ((2, 5, 6), 1), ((2, 5, 6), -3),
             ((2, 3, 4, 5), 3), ((2, 3, 4, 5), 2), ((1, 4, 4, 10), -1)]
ARG_TYPES = {np.float32: None, np.int8: quantization(0.1, 3), np.uint8: quantization(0.1, 128), np.int32: None,
             np.bool_: None}


def arg_input(shape: tuple, dtype: type, seed: int) -> np.ndarray:
    """Few distinct values, so ties are frequent (the first index must win)."""
    rng = np.random.default_rng(seed)
    if dtype is np.bool_:
        return rng.random(shape) < 0.3
    low = 250 if dtype is np.uint8 else -3
    return rng.integers(low, low + 6, shape).astype(dtype)


@pytest.mark.parametrize("out_type", [np.int32, np.int64], ids=["i32", "i64"])
@pytest.mark.parametrize("shape,axis", ARG_CASES, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
@pytest.mark.parametrize("dtype", list(ARG_TYPES), ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("op", ["ARG_MAX", "ARG_MIN"])
def test_arg_max_min(backend: str, op: str, dtype: type, shape: tuple, axis: int, out_type: type) -> None:
    opts = (options.ArgMaxOptions if op == "ARG_MAX" else options.ArgMinOptions)(
        output_type=2 if out_type is np.int32 else 4)
    axis_dtype = np.int64 if len(shape) % 2 else np.int32  # both axis types LiteRT takes
    out_shape = tuple(d for i, d in enumerate(shape) if i != axis % len(shape))
    model = single_op(op, [{"shape": shape, "dtype": dtype, "quant": ARG_TYPES[dtype]},
                           {"data": np.array([axis], axis_dtype)}],
                      [{"shape": out_shape, "dtype": out_type}], opts)
    x = arg_input(shape, dtype, len(shape) + axis % len(shape)) if dtype is not np.float32 else None
    check_model(model, backend, inputs=None if x is None else [x], seed=len(shape))


@pytest.mark.parametrize("op", ["ARG_MAX", "ARG_MIN"])
def test_arg_max_min_float_ties_and_nan(backend: str, op: str) -> None:
    """NaN never wins the compare; a leading NaN sticks (index 0); equal values keep the first index."""
    nan = np.nan
    x = np.array([[1.0, 2.0, 2.0, 0.0], [nan, 5.0, -1.0, 5.0], [0.5, nan, -1.0, -1.0], [3.0, 3.0, 3.0, 3.0]],
                 np.float32)
    opts = options.ArgMaxOptions(output_type=2) if op == "ARG_MAX" else options.ArgMinOptions(output_type=2)
    model = single_op(op, [{"shape": (4, 4), "dtype": np.float32}, {"data": np.array(-1, np.int32)}],
                      [{"shape": (4,), "dtype": np.int32}], opts)
    check_model(model, backend, inputs=[x])


# -- CUMSUM -----------------------------------------------------------------------------------------

CUMSUM_CASES = [((9,), 0), ((4, 7), 1), ((4, 7), 0), ((4, 7), -1), ((2, 5, 6), 1), ((2, 5, 6), -3),
                ((2, 3, 4, 5), 3), ((2, 3, 4, 5), 2), ((1, 3, 3, 300), -1)]


@pytest.mark.parametrize("reverse", [False, True], ids=["fwd", "rev"])
@pytest.mark.parametrize("exclusive", [False, True], ids=["incl", "excl"])
@pytest.mark.parametrize("shape,axis", CUMSUM_CASES, ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64], ids=["f32", "i32", "i64"])
def test_cumsum(backend: str, dtype: type, shape: tuple, axis: int, exclusive: bool, reverse: bool) -> None:
    model = single_op("CUMSUM", [{"shape": shape, "dtype": dtype}, {"data": np.array(axis, np.int32)}],
                      [{"shape": shape, "dtype": dtype}], options.CumsumOptions(exclusive=exclusive, reverse=reverse))
    x = None
    if dtype is np.float32:  # a large offset makes the float32 summation order visible
        x = (np.random.default_rng(axis % 7).standard_normal(shape) * 10 + 1000).astype(np.float32)
    elif dtype is np.int32:  # sums wrap
        x = np.random.default_rng(axis % 7).integers(1 << 28, 1 << 30, shape).astype(np.int32)
    check_model(model, backend, inputs=None if x is None else [x], seed=len(shape))


def test_litert_reference_int8_sum_reads_uint8() -> None:
    """Tripwire for the deviation above: LiteRT 2.3.0's BUILTIN_REF int8 SUM equals the uint8
    algorithm run on the int8 bytes read as uint8, its output bytes read back as int8. When this
    fails, LiteRT has changed: test int8 SUM with check_model again."""
    qin, qout = quantization(0.05, -3), quantization(0.2, 4)
    x = np.random.default_rng(5).integers(-128, 128, (4, 6)).astype(np.int8)
    litert = run_litert(reduce_model("SUM", (4, 6), [1], False, np.int8, qin, qout), [x])[0]
    (as_uint8,), _ = run_teflon(reduce_model("SUM", (4, 6), [1], False, np.uint8, qin, qout), [x.view(np.uint8)])
    np.testing.assert_array_equal(litert, as_uint8.view(np.int8))
    (ours,), _ = run_teflon(reduce_model("SUM", (4, 6), [1], False, np.int8, qin, qout), [x])
    assert not np.array_equal(ours, litert)
