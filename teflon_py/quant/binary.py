"""Prepare-time constants of quantized ADD, SUB and MUL, as LiteRT's add.cc / sub.cc / mul.cc.

ADD/SUB: both inputs are shifted left by 20 bits (15 for int16), scaled by
``scale_i / (2 * max input scale)`` and summed; the sum is scaled by
``2 * max input scale / (2^left_shift * output scale)``. int16 ADD/SUB with ``pot_scale_int16``
and power-of-two scales (zero points 0) take the fixed-point path instead. MUL rescales the
product of the offset inputs by ``s1 * s2 / s_out`` (computed in float32). The NumPy fallback and
the OpenCL lowerings (``qelementwise``, the int8 conv's folded residual ADD) use these same numbers.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.errors import UnsupportedError
from teflon_py.quant import core

Fail = Callable[[str], Exception]


def _unsupported(message: str) -> Exception:
    return UnsupportedError(message)


def quantized_activation_range(activation: Any, out: ir.Tensor) -> tuple[int, int]:
    """TFLite's CalculateActivationRangeQuantized of a fused activation for ``out``."""
    return activation.range(out.dtype, out.scale, out.zero_point)


def require_per_tensor(tensors: Sequence[ir.Tensor], fail: Fail = _unsupported) -> None:
    """Quantized binary ops take one scale and zero point per tensor (``fail(reason)`` raised otherwise)."""
    for t in tensors:
        if t.quantization is None:
            raise fail(f"{t.describe()} of type {t.dtype} has no quantization parameters")
        if t.quantization.per_channel:
            raise fail(f"{t.describe()} is quantized per channel; only per-tensor is supported")


def add_sub_params(in1: ir.Tensor, in2: ir.Tensor, out: ir.Tensor, activation: Any, fail: Fail = _unsupported) -> dict:
    """add.cc / sub.cc's constants: left_shift, offsets (off1, off2, out_off), input multipliers
    (m1, e1, m2, e2), output multiplier (mo, eo) and the activation's bounds (lo, hi)."""
    require_per_tensor((in1, in2, out), fail)
    left_shift = 15 if out.dtype == np.int16 else 20
    s1, s2, so = np.float32(in1.scale), np.float32(in2.scale), np.float32(out.scale)
    twice_max = float(np.float32(2) * max(s1, s2))  # float product, widened to double
    m1, e1 = core.quantize_multiplier(float(s1) / twice_max)
    m2, e2 = core.quantize_multiplier(float(s2) / twice_max)
    mo, eo = core.quantize_multiplier(twice_max / float(np.float32(1 << left_shift) * so))
    lo, hi = quantized_activation_range(activation, out)
    return {
        "left_shift": left_shift, "off1": -in1.zero_point, "off2": -in2.zero_point, "out_off": out.zero_point,
        "m1": int(m1), "e1": int(e1), "m2": int(m2), "e2": int(e2), "mo": int(mo), "eo": int(eo), "lo": lo, "hi": hi,
    }


def scale_input(x: np.ndarray, offset: int, left_shift: int, multiplier: int, shift: int) -> np.ndarray:
    """One input of quantized ADD/SUB: (q + offset) << left_shift, times its multiplier (< 1)."""
    shifted = (x.astype(np.int64) + offset) << left_shift
    return core.multiply_by_quantized_multiplier(shifted, multiplier, shift)


def pot_int16(in1: ir.Tensor, in2: ir.Tensor, out: ir.Tensor, pot_scale_int16: bool) -> bool:
    """Whether int16 ADD/SUB takes TFLite's power-of-two (LSTM) path rather than the general one."""
    if not pot_scale_int16:
        return False
    return all(core.checked_log2(t.scale)[0] and t.zero_point == 0 for t in (in1, in2, out))


def pot_params(in1: ir.Tensor, in2: ir.Tensor, out: ir.Tensor, activation: Any,
               fail: Fail = _unsupported) -> tuple[int, int, int, int]:
    """(input 1 shift, input 2 shift, qmin, qmax) of int16 ADD/SUB with power-of-two scales."""
    require_per_tensor((in1, in2, out), fail)
    log_out = core.checked_log2(out.scale)[1]
    shift1 = core.checked_log2(in1.scale)[1] - log_out
    shift2 = core.checked_log2(in2.scale)[1] - log_out
    if shift1 > 0 or shift2 > 0 or (shift1 and shift2):
        raise fail("power-of-two int16: one input must share the output scale, the other be finer")
    return shift1, shift2, *quantized_activation_range(activation, out)


def mul_params(in1: ir.Tensor, in2: ir.Tensor, out: ir.Tensor, activation: Any, fail: Fail = _unsupported) -> dict:
    """mul.cc's constants: offsets (off1, off2, out_off), multiplier (m, e), bounds (lo, hi)."""
    require_per_tensor((in1, in2, out), fail)
    if out.dtype == np.int16 and (in1.zero_point or in2.zero_point or out.zero_point):
        raise fail("int16 MUL needs zero points 0")
    real = np.float32(in1.scale) * np.float32(in2.scale) / np.float32(out.scale)
    m, e = core.quantize_multiplier(float(real))
    lo, hi = quantized_activation_range(activation, out)
    return {
        "off1": -in1.zero_point, "off2": -in2.zero_point, "out_off": out.zero_point,
        "m": int(m), "e": int(e), "lo": lo, "hi": hi,
    }
