"""The reduce family: MEAN, SUM, REDUCE_PROD/MAX/MIN/ANY/ALL over a set of axes, ARG_MAX / ARG_MIN
and CUMSUM along one axis.

TFLite gives the axes as an operand; where it is a constant, the frontend records them here
(normalised: non-negative, duplicates dropped, in their given order - TFLite's ResolveAxis), else
``axes`` is None and the kernels read the runtime tensor. Axes out of range are kept as given so
that ``infer`` reports them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from teflon_py import ir
from teflon_py.ops.common import Requantization
from teflon_py.ops.registry import Inputs, Meta, define

REDUCTIONS = ("MEAN", "SUM", "REDUCE_PROD", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_ANY", "REDUCE_ALL")


@dataclass(frozen=True)
class ReduceAttrs:
    """A reduction: its axes (None: a runtime tensor) and whether they stay as size-1 dims; a
    quantized MEAN's requantization rule (XNNPACK's global average pooling: float32)."""

    axes: tuple[int, ...] | None = None
    keep_dims: bool = False
    requantization: Requantization = Requantization.TFLITE


@dataclass(frozen=True)
class ArgAttrs:
    """ARG_MAX / ARG_MIN: the axis (None: a runtime tensor) and the index type."""

    axis: int | None = None
    output_type: np.dtype = field(default_factory=lambda: np.dtype(np.int64))


@dataclass(frozen=True)
class CumsumAttrs:
    """CUMSUM: the axis (None: a runtime tensor), exclusive and reversed scans."""

    axis: int | None = None
    exclusive: bool = False
    reverse: bool = False


def normalize_axes(values: object, rank: int) -> tuple[int, ...]:
    """TFLite's ResolveAxis on constant axes: in-range negatives wrapped, duplicates dropped,
    order kept; out-of-range values kept as they are (``axes_reason`` names them)."""
    out: list[int] = []
    for a in np.asarray(values).reshape(-1).tolist():
        a = int(a)
        current = a + rank if -rank <= a < 0 else a
        if current not in out:
            out.append(current)
    return tuple(out)


def axes_reason(axes: tuple[int, ...], rank: int) -> str | None:
    """Why recorded axes break the rule (each in [0, rank)), or None."""
    for a in axes:
        if not 0 <= a < rank:
            return f"axis {a} is out of range for a rank-{rank} input"
    return None


def reduced_shape(shape: tuple[int, ...], axes: tuple[int, ...] | list[int], keep_dims: bool) -> tuple[int, ...]:
    """The output shape of a reduction over ``axes``."""
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(shape))
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def reduce_shape_reason(attrs: ReduceAttrs, x: ir.Tensor, y: ir.Tensor) -> str | None:
    """Recorded axes in range and an output with as many elements as they leave (the OpenCL
    lowerings' rule; LiteRT resizes the output)."""
    if attrs.axes is None:
        return "the axes must be a constant"
    reason = axes_reason(attrs.axes, len(x.shape))
    if reason:
        return reason
    expected = reduced_shape(tuple(x.shape), attrs.axes, attrs.keep_dims)
    if int(np.prod(expected, dtype=np.int64)) != int(np.prod(y.shape, dtype=np.int64)):
        return f"output shape {list(y.shape)} does not follow from the axes"
    return None


def infer_reduce(attrs: ReduceAttrs, ins: Inputs) -> list[Meta]:
    x, y = ins[0], ins.outputs[0]
    if x is None:
        raise ins.error("input 0 is missing")
    if attrs.axes is None:
        return [Meta(None, np.dtype(y.dtype))]
    reason = axes_reason(attrs.axes, len(x.shape))
    if reason:
        raise ins.error(reason)
    return [Meta(reduced_shape(tuple(x.shape), attrs.axes, attrs.keep_dims), np.dtype(y.dtype))]


def one_axis_reason(axis: int, rank: int) -> str | None:
    if rank < 1:
        return "input must have at least one dimension"
    return None if 0 <= axis < rank else f"axis {axis} is out of range for a rank-{rank} input"


def infer_arg(attrs: ArgAttrs, ins: Inputs) -> list[Meta]:
    x, y = ins[0], ins.outputs[0]
    if x is None:
        raise ins.error("input 0 is missing")
    if attrs.axis is None:
        return [Meta(None, np.dtype(y.dtype))]
    reason = one_axis_reason(attrs.axis, len(x.shape))
    if reason:
        raise ins.error(reason)
    return [Meta(tuple(d for i, d in enumerate(x.shape) if i != attrs.axis), np.dtype(y.dtype))]


def infer_cumsum(attrs: CumsumAttrs, ins: Inputs) -> list[Meta]:
    x, y = ins[0], ins.outputs[0]
    if x is None:
        raise ins.error("input 0 is missing")
    if attrs.axis is not None:
        reason = one_axis_reason(attrs.axis, len(x.shape))
        if reason:
            raise ins.error(reason)
    return [Meta(tuple(x.shape), np.dtype(y.dtype))]


define(*REDUCTIONS, attrs=ReduceAttrs)(infer_reduce)
define("ARG_MAX", "ARG_MIN", attrs=ArgAttrs)(infer_arg)
define("CUMSUM", attrs=CumsumAttrs)(infer_cumsum)
