"""RESHAPE, SQUEEZE, CONCATENATION, PAD: data movement, with TFLite's rules for each op's shape.

Only uint8 CONCATENATION does arithmetic: TFLite requantizes each input whose scale or zero point
differs from the output's in float (``ConcatenationWithScaling``); int8 requires equal parameters.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import ir, quant
from teflon_py.fallback.registry import Node, register

#: Types PAD fills with the output zero point (plain 0 for the others, as pad.cc).
_QUANTIZED = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))


# -- RESHAPE ---------------------------------------------------------------------------------

def _infer_stretch(node: Node, shape: list[int], size: int) -> tuple[int, ...]:
    """Resolve one -1 in ``shape`` so that it holds ``size`` elements, as reshape.cc does."""
    stretch = [i for i, d in enumerate(shape) if d == -1]
    if len(stretch) > 1:
        raise node.error(f"new shape {shape} has more than one -1")
    known = int(np.prod([d for d in shape if d != -1], dtype=np.int64))
    if stretch:
        if known == 0 or size % known:
            raise node.error(f"cannot reshape {size} elements into {shape}")
        shape[stretch[0]] = size // known
    elif known != size:
        raise node.error(f"cannot reshape {size} elements into {shape}")
    return tuple(shape)


def _reshape_target(node: Node, inputs: Sequence[np.ndarray | None]) -> list[int]:
    """The requested shape: the 1-D int32 shape operand if any, else ``new_shape``, else the output's."""
    operand = node.inputs[1] if len(node.inputs) > 1 else None
    if operand is not None and operand.dtype == np.int32 and len(operand.shape) == 1:
        values = inputs[1] if inputs[1] is not None else np.zeros(0, np.int32)  # an empty constant
        return [int(d) for d in values.reshape(-1)]
    new_shape = getattr(node.attrs, "new_shape", None)
    if new_shape is not None:
        shape = [int(d) for d in new_shape]
        return [] if shape == [0] else shape  # legacy models write [0] for a scalar
    return list(node.outputs[0].shape)


@register("RESHAPE")
def reshape(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """The input's elements in a new shape (one -1 inferred)."""
    x = inputs[0]
    return x.reshape(_infer_stretch(node, _reshape_target(node, inputs), x.size))


# -- SQUEEZE ---------------------------------------------------------------------------------

@register("SQUEEZE")
def squeeze(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Drop the listed size-1 dims (negative counts from the end), or every size-1 dim."""
    x = inputs[0]
    dims = getattr(node.attrs, "squeeze_dims", None) or ()
    if not dims:
        return x.reshape([d for d in x.shape if d != 1])
    axes = sorted({d + x.ndim if d < 0 else d for d in dims})
    for a in axes:
        if not 0 <= a < x.ndim or x.shape[a] != 1:
            raise node.error(f"cannot squeeze dim {a} of shape {x.shape}")
    return x.reshape([d for i, d in enumerate(x.shape) if i not in axes])


# -- CONCATENATION ---------------------------------------------------------------------------

def _concat_rescale(node: Node, x: np.ndarray, t: ir.Tensor) -> np.ndarray:
    """One uint8 input moved to the output's grid, in float as ConcatenationWithScaling."""
    out = node.outputs[0]
    if t.scale == out.scale and t.zero_point == out.zero_point:
        return x
    scale = np.float32(t.scale) * (np.float32(1) / np.float32(out.scale))
    bias = np.float32(-t.zero_point) * scale
    value = quant.round_half_away(x.astype(np.float32) * scale + bias) + out.zero_point
    lo, hi = quant.QRANGE[out.dtype]
    return np.clip(value, lo, hi).astype(out.dtype)


@register("CONCATENATION")
def concatenation(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Join the inputs along ``axis`` (negative counts from the end)."""
    out = node.outputs[0]
    rank = inputs[0].ndim
    axis = int(getattr(node.attrs, "axis", 0) or 0)
    axis = axis + rank if axis < 0 else axis
    if not 0 <= axis < rank:
        raise node.error(f"axis {axis} out of range for rank {rank}")
    if any(t.dtype != out.dtype for t in node.inputs):
        raise node.error("all inputs must have the output's type")
    act = ir.Activation(int(getattr(node.attrs, "fused_activation_function", 0) or 0))
    if out.dtype == np.uint8:
        parts = [_concat_rescale(node, x, t) for x, t in zip(inputs, node.inputs)]
    else:
        if out.dtype == np.int8 and any(
            t.scale != out.scale or t.zero_point != out.zero_point for t in node.inputs
        ):
            raise node.error("int8 inputs must share the output's scale and zero point")
        parts = list(inputs)
    y = np.concatenate(parts, axis=axis)
    if act != ir.Activation.NONE:
        if out.dtype != np.float32:
            raise node.error(f"fused activation {act.name} is only supported for float32")
        lo, hi = quant.activation_range(act, np.float32)
        y = np.clip(y, np.float32(lo), np.float32(hi))
    return y.astype(out.dtype, copy=False)


# -- PAD -------------------------------------------------------------------------------------

@register("PAD")
def pad(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Pad with zeros (the output zero point for quantized types) by a (rank, 2) paddings tensor."""
    x, paddings = inputs[0], inputs[1]
    out = node.outputs[0]
    paddings = np.asarray(paddings, np.int64)
    if paddings.shape != (x.ndim, 2):
        raise node.error(f"paddings of shape {paddings.shape} do not match input rank {x.ndim}")
    if (paddings < 0).any():
        raise node.error("negative paddings are not supported")
    value = out.zero_point if out.dtype in _QUANTIZED and out.quantization is not None else 0
    return np.pad(x, paddings, mode="constant", constant_values=out.dtype.type(value))
