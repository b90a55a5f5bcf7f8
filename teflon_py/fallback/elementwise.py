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

#: Quantized storage types of the general (rescaling) integer path.
QUANTIZED = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
#: Plain integer types computed without quantization.
INTEGER = (np.dtype(np.int32), np.dtype(np.int64))


def _activation(node: Node) -> ir.Activation:
    """The op's fused activation (NONE when the op has no options)."""
    opts = node.attrs
    return ir.Activation(int(getattr(opts, "fused_activation_function", 0) or 0))


def _check_types(node: Node) -> np.dtype:
    """Both inputs and the output share one dtype (as TFLite requires); return it."""
    a, b = node.inputs[0], node.inputs[1]
    out = node.outputs[0]
    if a.dtype != b.dtype or a.dtype != out.dtype:
        raise node.error(f"input types {a.dtype}, {b.dtype} and output type {out.dtype} must match")
    return out.dtype


def apply_activation(node: Node, x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Clamp a float or plain-integer result to the fused activation's range, in ``dtype``."""
    act = _activation(node)
    if act not in (ir.Activation.NONE, ir.Activation.RELU, ir.Activation.RELU6, ir.Activation.RELU_N1_TO_1):
        raise node.error(f"fused activation {act.name} is not supported")
    if act == ir.Activation.NONE:
        return x.astype(dtype, copy=False)
    lo, hi = quant.activation_range(act, np.float32)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = int(max(lo, info.min)), int(min(hi, info.max))
    return np.clip(x, dtype.type(lo), dtype.type(hi)).astype(dtype, copy=False)


def quantized_activation_range(node: Node) -> tuple[int, int]:
    """TFLite's CalculateActivationRangeQuantized for the op's output tensor."""
    act = _activation(node)
    if act not in (ir.Activation.NONE, ir.Activation.RELU, ir.Activation.RELU6, ir.Activation.RELU_N1_TO_1):
        raise node.error(f"fused activation {act.name} is not supported for quantized types")
    out = node.outputs[0]
    return quant.activation_range(act, out.dtype, out.scale, out.zero_point)


def _require_per_tensor(node: Node) -> None:
    """Quantized binary ops take one scale and zero point per tensor."""
    for t in (*node.inputs[:2], node.outputs[0]):
        if t.quantization is None:
            raise node.error(f"{t.describe()} of type {t.dtype} has no quantization parameters")
        if t.quantization.per_channel:
            raise node.error(f"{t.describe()} is quantized per channel; only per-tensor is supported")


# -- ADD / SUB -------------------------------------------------------------------------------

def _add_sub_params(node: Node) -> dict:
    """Prepare-time constants shared by quantized ADD and SUB, as add.cc / sub.cc compute them."""
    _require_per_tensor(node)
    in1, in2, out = node.inputs[0], node.inputs[1], node.outputs[0]
    left_shift = 15 if out.dtype == np.int16 else 20
    s1, s2, so = np.float32(in1.scale), np.float32(in2.scale), np.float32(out.scale)
    twice_max = float(np.float32(2) * max(s1, s2))  # float product, widened to double
    m1, e1 = quant.quantize_multiplier(float(s1) / twice_max)
    m2, e2 = quant.quantize_multiplier(float(s2) / twice_max)
    mo, eo = quant.quantize_multiplier(twice_max / float(np.float32(1 << left_shift) * so))
    lo, hi = quantized_activation_range(node)
    return {
        "left_shift": left_shift, "off1": -in1.zero_point, "off2": -in2.zero_point, "out_off": out.zero_point,
        "m1": int(m1), "e1": int(e1), "m2": int(m2), "e2": int(e2), "mo": int(mo), "eo": int(eo), "lo": lo, "hi": hi,
    }


def _pot_int16(node: Node) -> bool:
    """Whether int16 ADD/SUB takes TFLite's power-of-two (LSTM) path rather than the general one."""
    opts = node.attrs  # TFLite zero-initialises absent options: no options, general path
    if opts is None or not getattr(opts, "pot_scale_int16", False):
        return False
    tensors = (*node.inputs[:2], node.outputs[0])
    return all(quant.checked_log2(t.scale)[0] and t.zero_point == 0 for t in tensors)


def _pot_params(node: Node) -> tuple[int, int, int, int]:
    """(input 1 shift, input 2 shift, qmin, qmax) of int16 ADD/SUB with power-of-two scales."""
    _require_per_tensor(node)
    in1, in2, out = node.inputs[0], node.inputs[1], node.outputs[0]
    log_out = quant.checked_log2(out.scale)[1]
    shift1 = quant.checked_log2(in1.scale)[1] - log_out
    shift2 = quant.checked_log2(in2.scale)[1] - log_out
    if shift1 > 0 or shift2 > 0 or (shift1 and shift2):
        raise node.error("power-of-two int16: one input must share the output scale, the other be finer")
    return shift1, shift2, *quantized_activation_range(node)


def _add_sub_pot_int16(node: Node, a: np.ndarray, b: np.ndarray, sign: int) -> np.ndarray:
    """int16 fixed-point ADD/SUB: the finer input rounded to the output scale, saturating sum."""
    shift1, shift2, lo, hi = node.memo("pot", lambda: _pot_params(node))
    x1 = quant.rounding_divide_by_pot(a, -shift1)
    x2 = quant.rounding_divide_by_pot(b, -shift2)
    raw = np.clip(x1 + sign * x2, -32768, 32767)
    return np.clip(raw, lo, hi).astype(np.int16)


def _scale_input(x: np.ndarray, offset: int, left_shift: int, multiplier: int, shift: int) -> np.ndarray:
    """One input of quantized ADD: (q + offset) << left_shift, times its multiplier (< 1)."""
    shifted = (x.astype(np.int64) + offset) << left_shift
    return quant.multiply_by_quantized_multiplier(shifted, multiplier, shift)


def _add_sub_quantized(node: Node, a: np.ndarray, b: np.ndarray, sign: int) -> np.ndarray:
    """Quantized a + sign * b: both inputs on a common 2^-left_shift grid, summed, requantized."""
    if a.dtype == np.int16 and node.memo("pot_int16", lambda: _pot_int16(node)):
        return _add_sub_pot_int16(node, a, b, sign)
    p = node.memo("add_sub", lambda: _add_sub_params(node))
    x1 = _scale_input(a, p["off1"], p["left_shift"], p["m1"], p["e1"])
    x2 = _scale_input(b, p["off2"], p["left_shift"], p["m2"], p["e2"])
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

def _mul_params(node: Node) -> dict:
    """Prepare-time constants of quantized MUL, as mul.cc: multiplier from s1 * s2 / s_out in float."""
    _require_per_tensor(node)
    in1, in2, out = node.inputs[0], node.inputs[1], node.outputs[0]
    if out.dtype == np.int16 and (in1.zero_point or in2.zero_point or out.zero_point):
        raise node.error("int16 MUL needs zero points 0")
    real = np.float32(in1.scale) * np.float32(in2.scale) / np.float32(out.scale)
    m, e = quant.quantize_multiplier(float(real))
    lo, hi = quantized_activation_range(node)
    return {
        "off1": -in1.zero_point, "off2": -in2.zero_point, "out_off": out.zero_point,
        "m": int(m), "e": int(e), "lo": lo, "hi": hi,
    }


@register("MUL")
def mul(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Elementwise a * b with broadcasting and a fused activation."""
    dtype = _check_types(node)
    a, b = inputs[0], inputs[1]
    if dtype in QUANTIZED:
        p = node.memo("mul", lambda: _mul_params(node))
        prod = (a.astype(np.int64) + p["off1"]) * (b.astype(np.int64) + p["off2"])
        raw = quant.multiply_by_quantized_multiplier(prod, p["m"], p["e"]) + p["out_off"]
        return np.clip(raw, p["lo"], p["hi"]).astype(dtype)
    if dtype == np.float32 or dtype in INTEGER:
        return apply_activation(node, np.multiply(a, b), dtype)
    raise node.error(f"type {dtype} is not supported")
