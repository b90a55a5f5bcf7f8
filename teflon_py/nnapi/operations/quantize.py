"""QUANTIZE, DEQUANTIZE and CAST, and the requantization helper the quantized SELECT, MAXIMUM and
MINIMUM share.

QUANTIZE and DEQUANTIZE are the op layer's (TFLite's) ops: NNAPI's formulas are the same
(``round(x / scale) + zeroPoint`` with halves away from zero, saturated; ``(q - zeroPoint) * scale``
in float32), per channel for a TENSOR_QUANT8_SYMM_PER_CHANNEL input.

CAST ignores scales and zero points (the spec: a TENSOR_QUANT8_ASYMM input is a tensor of uint8
values). Android's reference converts with ``static_cast``, except that a uint8 output saturates
to [0, 255] first; the op layer's CAST truncates floats into integers saturating (so float ->
uint8 is the reference's), and wraps integers, so an int32 -> uint8 cast goes through float32
(exact on [0, 255], order-preserving elsewhere) to saturate as well.
"""
from __future__ import annotations

import numpy as np

from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operands import Operand
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.common import NoAttrs

F32, F16, U8, I8, I32 = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                         T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_INT32)
QUANT8 = (U8, I8)


def same_grid(a: Operand, b: Operand) -> bool:
    return np.float32(a.scale) == np.float32(b.scale) and a.zero_point == b.zero_point


def on_output_grid(c: Call, k: int) -> int:
    """Quantized input ``k`` on output 0's scale and zero point: as it is where they match, else
    through NNAPI_REQUANTIZE (Android's reference requantizes so for SELECT, MAXIMUM, MINIMUM)."""
    x, y = c.operand(k), c.out_operand(0)
    t = c.input(k)
    if same_grid(x, y):
        return t
    moved = c.temp(y.info.dtype, y.quantization(), what=f"input {k} on the output's grid")
    c.emit("NNAPI_REQUANTIZE", NoAttrs(), [t], [moved])
    return moved


def dequantized(c: Call, k: int) -> int:
    """Quantized input ``k`` as float32 real values."""
    real = c.temp(np.float32, what=f"input {k} dequantized")
    c.emit("DEQUANTIZE", NoAttrs(), [c.input(k)], [real])
    return real


# -- QUANTIZE, DEQUANTIZE ---------------------------------------------------------------------------

@signature(Op.QUANTIZE)
def quantize_signature(s: Sig) -> None:
    t, out = s.input_type(0), s.output_type(0)
    s.supported(t, {F32: 3, F16: 3})
    s.supported(out, {U8: 3, I8: 4}, "output 0")
    s.expect([t], [out])


@lowering(Op.QUANTIZE)
def lower_quantize(c: Call) -> None:
    c.emit("QUANTIZE", NoAttrs(), [c.input(0)], [c.output(0)])


@signature(Op.DEQUANTIZE)
def dequantize_signature(s: Sig) -> None:
    t, out = s.input_type(0), s.output_type(0)
    s.supported(t, {U8: 1, T.TENSOR_QUANT8_SYMM: 3, T.TENSOR_QUANT8_SYMM_PER_CHANNEL: 3, I8: 4})
    s.supported(out, {F32: 1, F16: 3}, "output 0")
    s.expect([t], [out])


@lowering(Op.DEQUANTIZE)
def lower_dequantize(c: Call) -> None:
    if c.rank(0) > 4:
        raise c.error(f"ranks up to 4 are supported, got {c.rank(0)}", 0)
    x = c.operand(0)
    if x.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL and not 0 <= x.channel_dim < c.rank(0):
        raise c.error(f"channel dimension {x.channel_dim} is outside rank {c.rank(0)}", 0)
    c.emit("DEQUANTIZE", NoAttrs(), [c.input(0)], [c.output(0)])


# -- CAST -------------------------------------------------------------------------------------------

#: cast between any two of these (feature level 3) ...
CONVERTIBLE = (F16, F32, I32, U8)
#: ... and from each of these to itself (feature level 4)
COPYABLE = (T.TENSOR_BOOL8, I32, T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM, I8, T.TENSOR_QUANT8_SYMM)


@signature(Op.CAST)
def cast_signature(s: Sig) -> None:
    t, out = s.input_type(0), s.output_type(0)
    if t in CONVERTIBLE and out in CONVERTIBLE:
        level = 3
    elif t == out and t in COPYABLE:
        level = 4
    else:
        raise s.error(f"cast from {t.name} to {out.name} is not supported (any two of "
                      f"{', '.join(x.name for x in CONVERTIBLE)}; a type to itself for "
                      f"{', '.join(x.name for x in COPYABLE)})")
    s.expect([t], [out], level=level)


@lowering(Op.CAST)
def lower_cast(c: Call) -> None:
    x, y = c.input(0), c.output(0)
    if c.type(0) == I32 and c.out_operand(0).type == U8:
        wide = c.temp(np.float32, what="as float32")
        c.emit("CAST", NoAttrs(), [x], [wide])
        x = wide
    c.emit("CAST", NoAttrs(), [x], [y])
