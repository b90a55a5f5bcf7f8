"""MEAN over the axes of a constant (or runtime) int32 tensor, as TFLite's reference kernels compute it.

Axes may be negative or repeated (TFLite's ResolveAxis). Floats are summed in float32 in the input's
row-major order, one output at a time, then divided by the element count. Quantized inputs
(int8, uint8, int16) follow ``reference_ops::QuantizedMeanOrSum``, the only quantized path of
LiteRT 2.x's reference MEAN (no special case for 4-D means over H and W): the raw values are summed
in int32, the input zero point times the count is taken off, and the sum is requantized by the
input/output scale ratio with 1/count folded into the multiplier: ``(m << s) / count`` with
``s = floor(log2(count))`` capped at 32 and at ``31 + shift``, and a shift lowered by ``s``.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import quant
from teflon_py.fallback.registry import Node, register

QUANTIZED = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))


def resolve_axes(node: Node, axis: np.ndarray, ndim: int) -> list[int]:
    """TFLite's ResolveAxis: negative axes wrapped, duplicates dropped, order kept."""
    resolved: list[int] = []
    if ndim == 0:
        return resolved
    for a in np.asarray(axis).reshape(-1).tolist():
        current = a + ndim if a < 0 else a
        if not 0 <= current < ndim:
            raise node.error(f"axis {a} is out of range for a rank-{ndim} input")
        if current not in resolved:
            resolved.append(current)
    return resolved


def reduced_shape(shape: tuple[int, ...], axes: list[int], keep_dims: bool) -> tuple[int, ...]:
    """The output shape of a reduction over ``axes``."""
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


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
        raise node.error(f"input type {xt.dtype} differs from output type {yt.dtype}")
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
    out_shape = reduced_shape(x.shape, axes, bool(node.options.keep_dims))
    if x.size == 0:  # LiteRT fills the output with T's quiet NaN (0 for integers)
        return np.full(out_shape, np.nan if dtype == np.float32 else 0, dtype)
    rows = rows_to_reduce(x, axes)
    count = rows.shape[1]
    if dtype == np.float32:
        sums = np.cumsum(rows, axis=1, dtype=np.float32)[:, -1]  # sequential float32 accumulation
        return (sums / np.float32(count)).reshape(out_shape)
    multiplier, shift = node.memo(f"mean{count}", lambda: mean_multiplier(node, count))
    sums = quant.wrap_int(rows.sum(axis=1, dtype=np.int64))
    shifted = quant.wrap_int(sums - node.inputs[0].zero_point * count)
    y = quant.multiply_by_quantized_multiplier(shifted, multiplier, shift) + node.outputs[0].zero_point
    qmin, qmax = quant.QRANGE[dtype]
    return np.clip(y, qmin, qmax).astype(dtype).reshape(out_shape)
