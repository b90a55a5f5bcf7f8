"""RESHAPE, SQUEEZE, CONCATENATION, PAD: data movement, with TFLite's rules for each op's shape.

Only uint8 CONCATENATION does arithmetic: TFLite requantizes each input whose scale or zero point
differs from the output's in float (``ConcatenationWithScaling``); int8 requires equal parameters.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import ir, quant
from teflon_py.fallback.registry import Node, register
from teflon_py.ops import movement as rules
from teflon_py.ops import shape as shape_rules
from teflon_py.ops.common import Act

#: Types PAD fills with the output zero point (plain 0 for the others, as pad.cc).
_QUANTIZED = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))


# -- RESHAPE ---------------------------------------------------------------------------------

def _reshape_target(node: Node, inputs: Sequence[np.ndarray | None]) -> list[int]:
    """The requested shape: the attribute, else (a runtime shape tensor) the operand's values."""
    if node.attrs.shape is not None:
        return list(node.attrs.shape)
    return [int(d) for d in np.asarray(inputs[1]).reshape(-1)]


@register("RESHAPE")
def reshape(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """The input's elements in a new shape (one -1 inferred)."""
    x = inputs[0]
    return x.reshape(shape_rules.resolve_shape(_reshape_target(node, inputs), x.size, node.op.describe()))


# -- SQUEEZE ---------------------------------------------------------------------------------

@register("SQUEEZE")
def squeeze(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Drop the listed size-1 dims (negative counts from the end), or every size-1 dim."""
    x = inputs[0]
    return x.reshape(shape_rules.squeeze_shape(x.shape, node.attrs.dims, node.op.describe()))


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
    label = node.op.describe()
    if any(t.dtype != out.dtype for t in node.inputs):
        raise node.error("all inputs must have the output's type")
    rules.concat_shape([x.shape for x in inputs], node.attrs.axis, label)
    axis = node.attrs.axis % inputs[0].ndim
    act = node.attrs.activation
    if out.dtype == np.uint8:
        parts = [_concat_rescale(node, x, t) for x, t in zip(inputs, node.inputs)]
    else:
        if out.dtype == np.int8 and any(
            t.scale != out.scale or t.zero_point != out.zero_point for t in node.inputs
        ):
            raise node.error("int8 inputs must share the output's scale and zero point")
        parts = list(inputs)
    y = np.concatenate(parts, axis=axis)
    if act.kind != Act.NONE:
        if out.dtype != np.float32:
            raise node.error(f"fused activation {act.kind.name} is only supported for float32")
        lo, hi = act.range(np.float32)
        y = np.clip(y, np.float32(lo), np.float32(hi))
    return y.astype(out.dtype, copy=False)


# -- PAD -------------------------------------------------------------------------------------

@register("PAD")
def pad(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Pad with zeros (the output zero point for quantized types) by a (rank, 2) paddings tensor."""
    x, paddings = inputs[0], inputs[1]
    out = node.outputs[0]
    paddings = rules.pad_widths(paddings, x.ndim, node.op.describe())
    value = out.zero_point if out.dtype in _QUANTIZED and out.quantization is not None else 0
    return np.pad(x, paddings, mode="constant", constant_values=out.dtype.type(value))
