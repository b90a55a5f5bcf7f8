"""MEAN over the axes of a constant (or runtime) int32 tensor, as TFLite's reference kernels compute it.

Axes may be negative or repeated (TFLite's ResolveAxis). Floats are summed in float32 in the input's
row-major order, one output at a time, then divided by the element count. Quantized inputs
(int8, uint8, int16) follow ``reference_ops::QuantizedMeanOrSum``, the only quantized path of
LiteRT 2.x's reference MEAN (no special case for 4-D means over H and W): the raw values are summed
in int32, the input zero point times the count is taken off, and the sum is requantized by the
input/output scale ratio with 1/count folded into the multiplier: ``(m << s) / count`` with
``s = floor(log2(count))`` capped at 32 and at ``31 + shift``, and a shift lowered by ``s``.

SUM, REDUCE_PROD/MAX/MIN/ANY/ALL follow reduce.cc's EvalType: every output folds its elements in
the input's row-major order from the op's neutral element, floats in float32, integers wrapping.
A reduction over every axis starts from the first element instead (ReduceAllDims; LiteRT splits it
across threads only with more than one interpreter thread and 1024 elements per thread, and its
Python interpreter runs one thread by default). 8/16-bit SUM takes the QuantizedMeanOrSum path
without the 1/count (LiteRT 2.3.0's BUILTIN_REF reads int8/int16 data as uint8 there; this kernel
computes the int8/int16 sum the same way as uint8, see tests/ops/test_reductions.py); 8/16-bit
MAX/MIN need equal input and output grids; quantized int8/int16 REDUCE_PROD rescales after every
product (QuantizedReduceProd).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from teflon_py import quant
from teflon_py.fallback.registry import Node, register
from teflon_py.ops.common import Requantization
from teflon_py.ops.reduce import axes_reason, normalize_axes, reduced_shape

QUANTIZED = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))


def resolve_axes(node: Node, axis: np.ndarray, ndim: int) -> list[int]:
    """TFLite's ResolveAxis: negative axes wrapped, duplicates dropped, order kept (the axes the
    frontend recorded, or the runtime tensor's)."""
    if ndim == 0:
        return []
    attrs = node.attrs
    axes = attrs.axes if getattr(attrs, "axes", None) is not None else normalize_axes(axis, ndim)
    reason = axes_reason(axes, ndim)
    if reason:
        raise node.error(reason)
    return list(axes)


def rows_to_reduce(x: np.ndarray, axes: list[int]) -> np.ndarray:
    """(outputs, count) view: each row holds one output's elements in the input's row-major order."""
    kept = [i for i in range(x.ndim) if i not in axes]
    count = int(np.prod([x.shape[i] for i in axes], dtype=np.int64))
    return np.transpose(x, kept + sorted(axes)).reshape(-1, count)


def mean_multiplier(node: Node, count: int) -> tuple[int, int]:
    """The (multiplier, shift) that requantizes a sum of ``count`` values into the output's mean."""
    real = float(np.float32(node.inputs[0].scale)) / float(np.float32(node.outputs[0].scale))
    multiplier, shift = (int(v) for v in quant.quantize_multiplier(real))
    s = min(count.bit_length() - 1, 32, 31 + shift)
    return (multiplier << s) // count, shift - s


def _check(node: Node, x: np.ndarray) -> np.dtype:
    """The output type, after checking the input/output types agree and are supported."""
    xt, yt = node.inputs[0], node.outputs[0]
    if xt.dtype != yt.dtype:
        raise node.invalid(f"input type {xt.dtype} differs from output type {yt.dtype}")
    if yt.dtype != np.float32 and yt.dtype not in QUANTIZED:
        raise node.error(f"type {yt.dtype} is not supported")
    if yt.dtype in QUANTIZED and (xt.quantization is None or yt.quantization is None):
        raise node.error(f"quantized {yt.dtype} tensors need quantization parameters")
    if yt.dtype == np.int16 and (xt.zero_point or yt.zero_point):
        raise node.error("int16 needs zero points 0")
    return yt.dtype


@register("MEAN")
def mean(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Mean over the given axes; keep_dims keeps them as size-1 dimensions."""
    x, axis = inputs[0], inputs[1]
    dtype = _check(node, x)
    axes = resolve_axes(node, axis, x.ndim)
    out_shape = reduced_shape(x.shape, axes, bool(node.attrs.keep_dims))
    if x.size == 0:  # LiteRT fills the output with T's quiet NaN (0 for integers)
        return np.full(out_shape, np.nan if dtype == np.float32 else 0, dtype)
    rows = rows_to_reduce(x, axes)
    count = rows.shape[1]
    if dtype == np.float32:
        sums = np.cumsum(rows, axis=1, dtype=np.float32)[:, -1]  # sequential float32 accumulation
        return (sums / np.float32(count)).reshape(out_shape)
    sums = quant.wrap_int(rows.sum(axis=1, dtype=np.int64))
    shifted = quant.wrap_int(sums - node.inputs[0].zero_point * count)
    qmin, qmax = quant.QRANGE[dtype]
    if node.attrs.requantization == Requantization.FLOAT32:  # XNNPACK's global average pooling
        scale = quant.float32_mean_scale(node.inputs[0].scale, node.outputs[0].scale, count)
        return quant.requantize_float32(shifted, scale, node.outputs[0].zero_point, qmin, qmax,
                                        dtype).reshape(out_shape)
    multiplier, shift = node.memo(f"mean{count}", lambda: mean_multiplier(node, count))
    y = quant.multiply_by_quantized_multiplier(shifted, multiplier, shift) + node.outputs[0].zero_point
    return np.clip(y, qmin, qmax).astype(dtype).reshape(out_shape)


# -- SUM, REDUCE_PROD, REDUCE_MAX, REDUCE_MIN, REDUCE_ANY, REDUCE_ALL ---------------------------

FLOAT32, BOOL = np.dtype(np.float32), np.dtype(np.bool_)
INT8, INT16, INT32, INT64 = np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64)
#: the types reduce.cc's EvalGeneric takes (MEAN/SUM send 8/16-bit inputs to their quantized paths)
GENERIC = (FLOAT32, INT32, INT64, np.dtype(np.uint8), INT8, INT16)


def _same_type(node: Node, allowed: Sequence[np.dtype]) -> np.dtype:
    """The dtype shared by input 0 and output 0, which must be one of ``allowed``."""
    dtype = node.outputs[0].dtype
    if node.inputs[0].dtype != dtype:
        raise node.invalid(f"input type {node.inputs[0].dtype} differs from output type {dtype}")
    if dtype not in allowed:
        raise node.error(f"type {dtype} is not supported (LiteRT takes {', '.join(map(str, allowed))})")
    if dtype == INT16 and (node.inputs[0].zero_point or node.outputs[0].zero_point):
        raise node.error("int16 needs zero points 0")
    return dtype


def _same_grid(node: Node) -> None:
    """EvalType's check: quantized input and output share scale and zero point (no requantization)."""
    xt, yt = node.inputs[0], node.outputs[0]
    if np.float32(xt.scale) != np.float32(yt.scale) or xt.zero_point != yt.zero_point:
        raise node.error(f"input grid ({xt.scale}, {xt.zero_point}) differs from output grid "
                         f"({yt.scale}, {yt.zero_point}); LiteRT only reduces {yt.dtype} on one grid")


def _float_extremum(rows: np.ndarray, all_dims: bool, largest: bool) -> np.ndarray:
    """Float MAX/MIN with C's comparisons: NaN never wins a compare, so NaNs are skipped, and
    infinities lose to the neutral element +-FLT_MAX, except over every axis where the first element
    seeds the fold (and a leading NaN then sticks)."""
    info = np.finfo(np.float32)
    pick, worst = (np.max, -np.inf) if largest else (np.min, np.inf)
    neutral = info.min if largest else info.max  # numeric_limits<float>::lowest() / max()
    first, rest = (rows[:, 0], rows[:, 1:]) if all_dims else (np.full(rows.shape[0], neutral), rows)
    best = pick(np.where(np.isnan(rest), worst, rest), axis=1, initial=worst)
    wins = best > first if largest else best < first
    return np.where(wins, best, first).astype(np.float32)


# Folds: (outputs, count) rows in input order -> one value per output, in C's arithmetic.

def _fold_sum(rows: np.ndarray, dtype: np.dtype, all_dims: bool) -> np.ndarray:
    if dtype == FLOAT32:  # one float32 accumulator per output, in input order
        return np.cumsum(rows, axis=1, dtype=np.float32)[:, -1]
    return rows.sum(axis=1, dtype=np.int64).astype(dtype)  # wraps like C's integer adds


def _fold_prod(rows: np.ndarray, dtype: np.dtype, all_dims: bool) -> np.ndarray:
    if dtype == FLOAT32:
        return np.multiply.accumulate(rows, axis=1, dtype=np.float32)[:, -1]
    return rows.prod(axis=1, dtype=np.int64).astype(dtype)  # products modulo 2^bits, as C wraps


def _fold_max(rows: np.ndarray, dtype: np.dtype, all_dims: bool) -> np.ndarray:
    return _float_extremum(rows, all_dims, True) if dtype == FLOAT32 else rows.max(axis=1)


def _fold_min(rows: np.ndarray, dtype: np.dtype, all_dims: bool) -> np.ndarray:
    return _float_extremum(rows, all_dims, False) if dtype == FLOAT32 else rows.min(axis=1)


def _fold_any(rows: np.ndarray, dtype: np.dtype, all_dims: bool) -> np.ndarray:
    return rows.any(axis=1)


def _fold_all(rows: np.ndarray, dtype: np.dtype, all_dims: bool) -> np.ndarray:
    return rows.all(axis=1)


Fold = Callable[[np.ndarray, np.dtype, bool], np.ndarray]


def _neutral(fold: Fold, dtype: np.dtype) -> int | float | bool:
    """The value an output over zero elements keeps: the op's neutral element."""
    if fold is _fold_max:
        return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min
    if fold is _fold_min:
        return np.finfo(dtype).max if dtype.kind == "f" else np.iinfo(dtype).max
    return {_fold_sum: 0, _fold_prod: 1, _fold_any: False, _fold_all: True}[fold]


def reduce_generic(node: Node, x: np.ndarray, axis: np.ndarray, fold: Fold) -> np.ndarray:
    """reduce.cc's EvalType: ``fold`` each output's elements, in row-major order."""
    dtype = np.dtype(node.outputs[0].dtype)
    axes = resolve_axes(node, axis, x.ndim)
    out_shape = reduced_shape(x.shape, axes, bool(node.attrs.keep_dims))
    if math.prod(x.shape[a] for a in axes) == 0 or x.size == 0:
        return np.full(out_shape, _neutral(fold, dtype), dtype)
    rows = rows_to_reduce(x, axes)
    return np.asarray(fold(rows, dtype, len(axes) == x.ndim), dtype).reshape(out_shape)


def sum_multiplier(node: Node) -> tuple[int, int]:
    """PrepareMeanOrSum's (multiplier, shift) for double(input scale) / double(output scale)."""
    real = float(np.float32(node.inputs[0].scale)) / float(np.float32(node.outputs[0].scale))
    multiplier, shift = quant.quantize_multiplier(real)
    return int(multiplier), int(shift)


def sum_quantized(node: Node, x: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """reference_ops::QuantizedMeanOrSum with compute_sum: int32 sum less count * input zero point,
    requantized by the input/output scale ratio, plus the output zero point, saturated."""
    dtype = np.dtype(node.outputs[0].dtype)
    axes = resolve_axes(node, axis, x.ndim)  # no axes: each element requantized on its own
    out_shape = reduced_shape(x.shape, axes, bool(node.attrs.keep_dims))
    if x.size == 0:  # outputs stay T() = 0
        return np.zeros(out_shape, dtype)
    rows = rows_to_reduce(x, axes)
    multiplier, shift = node.memo("sum", lambda: sum_multiplier(node))
    sums = quant.wrap_int(rows.sum(axis=1, dtype=np.int64))
    shifted = quant.wrap_int(sums - node.inputs[0].zero_point * rows.shape[1])
    y = quant.wrap_int(quant.multiply_by_quantized_multiplier(shifted, multiplier, shift) + node.outputs[0].zero_point)
    qmin, qmax = quant.QRANGE[dtype]
    return np.clip(y, qmin, qmax).astype(dtype).reshape(out_shape)


@register("SUM")
def sum_(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Sum over the given axes: float32 in order, int32/int64 wrapping, 8/16-bit quantized requantized."""
    dtype = _same_type(node, (FLOAT32, INT32, INT64) + QUANTIZED)
    if dtype in QUANTIZED:
        if node.inputs[0].quantization is None or node.outputs[0].quantization is None:
            raise node.error(f"quantized {dtype} tensors need quantization parameters")
        return sum_quantized(node, inputs[0], inputs[1])
    return reduce_generic(node, inputs[0], inputs[1], _fold_sum)


def _reduce_extremum(node: Node, inputs: Sequence[np.ndarray | None], fold: Fold) -> np.ndarray:
    dtype = _same_type(node, GENERIC)
    if dtype in QUANTIZED:
        _same_grid(node)
    return reduce_generic(node, inputs[0], inputs[1], fold)


@register("REDUCE_MAX")
def reduce_max(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Largest element over the given axes (quantized types on one grid: the raw integers)."""
    return _reduce_extremum(node, inputs, _fold_max)


@register("REDUCE_MIN")
def reduce_min(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Smallest element over the given axes (quantized types on one grid: the raw integers)."""
    return _reduce_extremum(node, inputs, _fold_min)


@register("REDUCE_ANY")
def reduce_any(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Logical or over the given axes (bool only)."""
    _same_type(node, (BOOL,))
    return reduce_generic(node, inputs[0], inputs[1], _fold_any)


@register("REDUCE_ALL")
def reduce_all(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Logical and over the given axes (bool only)."""
    _same_type(node, (BOOL,))
    return reduce_generic(node, inputs[0], inputs[1], _fold_all)


def prod_multiplier(node: Node, count: int) -> tuple[int, int]:
    """PrepareProd's per-step scaling: input_scale / output_scale^(1/count), in double."""
    scaling = float(np.float32(node.inputs[0].scale)) / math.pow(float(np.float32(node.outputs[0].scale)), 1.0 / count)
    multiplier, shift = quant.quantize_multiplier(scaling)
    return int(multiplier), int(shift)


def _rescale_int64(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """MultiplyByQuantizedMultiplier on an int64 value, returned as C's int32."""
    return quant.wrap_int(quant.multiply_by_quantized_multiplier_int64(x, multiplier, shift))


def prod_quantized(node: Node, x: np.ndarray, axis: np.ndarray) -> np.ndarray:
    """reference_ops::QuantizedReduceProd: each product of (q - zero point) is rescaled at once by the
    per-step scaling (int64 MultiplyByQuantizedMultiplier), the final value once more.

    The fold is sequential and rescaled at every step, so it loops over the reduced length, each
    step vectorised over all outputs."""
    dtype = np.dtype(node.outputs[0].dtype)
    axes = resolve_axes(node, axis, x.ndim)
    out_shape = reduced_shape(x.shape, axes, bool(node.attrs.keep_dims))
    if x.size == 0:  # LiteRT returns before writing the output
        return np.zeros(out_shape, dtype)
    rows = rows_to_reduce(x, axes).astype(np.int64) - node.inputs[0].zero_point
    count = rows.shape[1]
    multiplier, shift = node.memo(f"prod{count}", lambda: prod_multiplier(node, count))
    prod = rows[:, 0]
    for k in range(1, count):
        prod = _rescale_int64(prod * rows[:, k], multiplier, shift)
    y = quant.wrap_int(_rescale_int64(prod, multiplier, shift) + node.outputs[0].zero_point)
    qmin, qmax = quant.QRANGE[dtype]
    return np.clip(y, qmin, qmax).astype(dtype).reshape(out_shape)


@register("REDUCE_PROD")
def reduce_prod(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Product over the given axes: float32 in order, integers wrapping, quantized int8/int16 rescaled."""
    dtype = _same_type(node, GENERIC)
    if node.inputs[0].quantization is not None:
        if dtype not in (INT8, INT16):
            raise node.error(f"quantized {dtype} is not supported (LiteRT takes quantized int8 and int16)")
        if node.outputs[0].quantization is None:
            raise node.error("a quantized input needs a quantized output")
        return prod_quantized(node, inputs[0], inputs[1])
    return reduce_generic(node, inputs[0], inputs[1], _fold_prod)
