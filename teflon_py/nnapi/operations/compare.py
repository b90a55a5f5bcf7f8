"""Comparisons (EQUAL, NOT_EQUAL, LESS, LESS_EQUAL, GREATER, GREATER_EQUAL), LOGICAL_AND / OR / NOT
and SELECT (op layer: the TFLite ops of the same names).

Quantized comparisons compare real values: NNAPI's spec compares x and y as numbers, and Android's
reference dequantizes both operands in float32 and compares those. LiteRT's kernel instead brings
both onto a fixed-point grid ((q - zp) << 8 times a multiplier of the scale) whose rounding can
merge different real values (0.5 and 0.5005 compare equal there), so the quantized operands are
DEQUANTIZEd here and compared as float32. Ordering comparisons of TENSOR_BOOL8 (false < true)
compare the values cast to int32. SELECT's quantized x and y move onto the output's grid first
(``on_output_grid``), as Android's reference does; its three tensors have one shape.
"""
from __future__ import annotations

import numpy as np

from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operations.quantize import QUANT8, dequantized, on_output_grid
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.common import NoAttrs

B8 = T.TENSOR_BOOL8
COMPARISONS = (Op.EQUAL, Op.NOT_EQUAL, Op.LESS, Op.LESS_EQUAL, Op.GREATER, Op.GREATER_EQUAL)
COMPARED = {B8: 3, T.TENSOR_FLOAT16: 3, T.TENSOR_FLOAT32: 3, T.TENSOR_INT32: 3, T.TENSOR_QUANT8_ASYMM: 3,
            T.TENSOR_QUANT8_ASYMM_SIGNED: 4}
SELECTED = {T.TENSOR_FLOAT16: 3, T.TENSOR_FLOAT32: 3, T.TENSOR_INT32: 3, T.TENSOR_QUANT8_ASYMM: 3,
            T.TENSOR_QUANT8_ASYMM_SIGNED: 4}


@signature(*COMPARISONS)
def compare_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, COMPARED)
    s.expect([t, t], [B8])


def _as_int32(c: Call, k: int) -> int:
    wide = c.temp(np.int32, what=f"input {k} as int32")
    c.emit("CAST", NoAttrs(), [c.input(k)], [wide])
    return wide


@lowering(*COMPARISONS)
def lower_compare(c: Call) -> None:
    t = c.type(0)
    if t in QUANT8:
        a, b = dequantized(c, 0), dequantized(c, 1)
    elif t == B8 and c.op not in (Op.EQUAL, Op.NOT_EQUAL):
        a, b = _as_int32(c, 0), _as_int32(c, 1)
    else:
        a, b = c.input(0), c.input(1)
    c.emit(c.op.name, NoAttrs(), [a, b], [c.output(0)])


@signature(Op.LOGICAL_AND, Op.LOGICAL_OR)
def logical_signature(s: Sig) -> None:
    s.supported(s.input_type(0), {B8: 3})
    s.expect([B8, B8], [B8])


@signature(Op.LOGICAL_NOT)
def logical_not_signature(s: Sig) -> None:
    s.supported(s.input_type(0), {B8: 3})
    s.expect([B8], [B8])


@lowering(Op.LOGICAL_AND, Op.LOGICAL_OR, Op.LOGICAL_NOT)
def lower_logical(c: Call) -> None:
    c.emit(c.op.name, NoAttrs(), [c.input(k) for k in range(c.n_in)], [c.output(0)])


@signature(Op.SELECT)
def select_signature(s: Sig) -> None:
    t = s.input_type(1)
    s.supported(t, SELECTED, "input 1")
    s.expect([B8, t, t], [t])


@lowering(Op.SELECT)
def lower_select(c: Call) -> None:
    shapes = [c.shape(k) for k in range(3)]
    if shapes[1] != shapes[0]:
        raise c.error(f"must have input 0's shape {list(shapes[0])}, got {list(shapes[1])}", 1)
    if shapes[2] != shapes[1]:
        raise c.error(f"must have input 1's shape {list(shapes[1])}, got {list(shapes[2])}", 2)
    if c.type(1) in QUANT8:
        x, y = on_output_grid(c, 1), on_output_grid(c, 2)
    else:
        x, y = c.input(1), c.input(2)
    c.emit("SELECT", NoAttrs(), [c.input(0), x, y], [c.output(0)])
