"""ADD, SUB, MUL: NumPy broadcasting, fused activations, TFLite's integer rescaling when quantized.

Quantized ADD/SUB follow ``kernels/add.cc`` / ``sub.cc``: both inputs are shifted left by 20 bits
(15 for int16), scaled by ``scale_i / (2 * max input scale)`` and summed; the sum is scaled by
``2 * max input scale / (2^left_shift * output scale)``. SUB subtracts the scaled input 2 (LiteRT
2.x; older sub.cc negated input 2's multiplier instead, which rounds exact halves the other way).
Quantized MUL rescales the product of the offset inputs by ``s1 * s2 / s_out`` (computed in float).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import ir, quant
from teflon_py.fallback.registry import Node, register
from teflon_py.ops.common import Act, FusedActivation

#: Quantized storage types of the general (rescaling) integer path.
QUANTIZED = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
#: Plain integer types computed without quantization.
INTEGER = (np.dtype(np.int32), np.dtype(np.int64))


def _activation(node: Node) -> FusedActivation:
    """The op's fused activation."""
    return node.attrs.activation


def _check_types(node: Node) -> np.dtype:
    """Both inputs and the output share one dtype (as TFLite requires); return it."""
    a, b = node.inputs[0], node.inputs[1]
    out = node.outputs[0]
    if a.dtype != b.dtype or a.dtype != out.dtype:
        raise node.error(f"input types {a.dtype}, {b.dtype} and output type {out.dtype} must match")
    return out.dtype


def apply_activation(node: Node, x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Clamp a float or plain-integer result to the fused activation's range, in ``dtype``. An
    unbounded side is the type's lowest / max (TFLite's CalculateActivationRange), so float
    infinities become +-FLT_MAX even with no activation; NaN stays."""
    act = _activation(node)
    if not act.is_clamp:
        raise node.error(f"fused activation {act.kind.name} is not supported")
    if act.kind == Act.NONE and dtype.kind in "iu":
        return x.astype(dtype, copy=False)
    lo, hi = activation_bounds(act, dtype)
    return np.minimum(np.maximum(x, dtype.type(lo)), dtype.type(hi)).astype(dtype, copy=False)


def activation_bounds(act: FusedActivation, dtype: np.dtype) -> tuple[float, float] | tuple[int, int]:
    """The clamp [lo, hi] of a clamping activation on a float or plain-integer output of ``dtype``:
    its real range within the type's (integer bounds truncated toward zero). Also what the OpenCL
    int32 ADD/SUB/MUL clamp to, so both backends share the rule."""
    lo, hi = act.range(np.float32)
    info = np.iinfo(dtype) if dtype.kind in "iu" else np.finfo(dtype)
    lo, hi = max(lo, info.min), min(hi, info.max)
    if dtype.kind in "iu":
        lo, hi = int(lo), int(hi)
    return lo, hi


def _quantized_activation(node: Node) -> FusedActivation:
    act = _activation(node)
    if not act.is_clamp:
        raise node.error(f"fused activation {act.kind.name} is not supported for quantized types")
    return act


def _tensors(node: Node) -> tuple[ir.Tensor, ir.Tensor, ir.Tensor]:
    return node.inputs[0], node.inputs[1], node.outputs[0]


# -- ADD / SUB -------------------------------------------------------------------------------

def _add_sub_pot_int16(node: Node, a: np.ndarray, b: np.ndarray, sign: int) -> np.ndarray:
    """int16 fixed-point ADD/SUB: the finer input rounded to the output scale, saturating sum."""
    shift1, shift2, lo, hi = node.memo("pot", lambda: quant.pot_params(*_tensors(node), _quantized_activation(node),
                                                                       node.error))
    x1 = quant.rounding_divide_by_pot(a, -shift1)
    x2 = quant.rounding_divide_by_pot(b, -shift2)
    raw = np.clip(x1 + sign * x2, -32768, 32767)
    return np.clip(raw, lo, hi).astype(np.int16)


def _add_sub_quantized(node: Node, a: np.ndarray, b: np.ndarray, sign: int) -> np.ndarray:
    """Quantized a + sign * b: both inputs on a common 2^-left_shift grid, summed, requantized."""
    if a.dtype == np.int16 and node.memo(
            "pot_int16", lambda: quant.pot_int16(*_tensors(node), node.attrs.pot_scale_int16)):
        return _add_sub_pot_int16(node, a, b, sign)
    p = node.memo("add_sub", lambda: quant.add_sub_params(*_tensors(node), _quantized_activation(node), node.error))
    x1 = quant.scale_input(a, p["off1"], p["left_shift"], p["m1"], p["e1"])
    x2 = quant.scale_input(b, p["off2"], p["left_shift"], p["m2"], p["e2"])
    raw = quant.multiply_by_quantized_multiplier(x1 + sign * x2, p["mo"], p["eo"]) + p["out_off"]
    return np.clip(raw, p["lo"], p["hi"]).astype(node.outputs[0].dtype)


def _add_sub(node: Node, inputs: Sequence[np.ndarray | None], sign: int) -> np.ndarray:
    """ADD (sign=+1) or SUB (sign=-1) for every supported dtype."""
    dtype = _check_types(node)
    a, b = inputs[0], inputs[1]
    if dtype in QUANTIZED:
        return _add_sub_quantized(node, a, b, sign)
    if dtype == np.float32 or dtype in INTEGER:
        return apply_activation(node, np.add(a, b) if sign > 0 else np.subtract(a, b), dtype)
    raise node.error(f"type {dtype} is not supported")


@register("ADD")
def add(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Elementwise a + b with broadcasting and a fused activation."""
    return _add_sub(node, inputs, +1)


@register("SUB")
def sub(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Elementwise a - b with broadcasting and a fused activation."""
    return _add_sub(node, inputs, -1)


# -- MUL -------------------------------------------------------------------------------------

@register("MUL")
def mul(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Elementwise a * b with broadcasting and a fused activation."""
    dtype = _check_types(node)
    a, b = inputs[0], inputs[1]
    if dtype in QUANTIZED:
        p = node.memo("mul", lambda: quant.mul_params(*_tensors(node), _quantized_activation(node), node.error))
        prod = (a.astype(np.int64) + p["off1"]) * (b.astype(np.int64) + p["off2"])
        raw = quant.multiply_by_quantized_multiplier(prod, p["m"], p["e"]) + p["out_off"]
        return np.clip(raw, p["lo"], p["hi"]).astype(dtype)
    if dtype == np.float32 or dtype in INTEGER:
        return apply_activation(node, np.multiply(a, b), dtype)
    raise node.error(f"type {dtype} is not supported")
