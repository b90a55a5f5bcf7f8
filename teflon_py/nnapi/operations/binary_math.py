"""MAXIMUM, MINIMUM, POW and PRELU: broadcasting two-input maths without a fused activation (op
layer: the TFLite ops of the same names).

NNAPI lets a quantized MAXIMUM / MINIMUM take inputs whose scales and zero points differ from each
other and from the output; TFLite's kernels compare stored values and need one grid. Each input
whose grid differs is moved onto the output's first (``on_output_grid``: Android's reference
requantizes both inputs so, then takes the max / min of the stored values). PRELU's quantized
grids may all differ in TFLite as in NNAPI: LiteRT's kernel computes it.
"""
from __future__ import annotations

from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operations.quantize import QUANT8, on_output_grid
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.common import NoAttrs

F32, F16, U8, I8, I32 = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                         T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_INT32)
LEVELS = {
    Op.MAXIMUM: {F16: 3, F32: 3, I32: 3, U8: 3, I8: 4},
    Op.MINIMUM: {F16: 3, F32: 3, I32: 3, U8: 3, I8: 4},
    Op.POW: {F16: 3, F32: 3},
    Op.PRELU: {F16: 3, F32: 3, U8: 3, I8: 4},
}


@signature(*LEVELS)
def binary_math_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, LEVELS[s.op])
    s.expect([t, t], [t])


@lowering(*LEVELS)
def lower_binary_math(c: Call) -> None:
    if c.op in (Op.MAXIMUM, Op.MINIMUM) and c.type(0) in QUANT8:
        a, b = on_output_grid(c, 0), on_output_grid(c, 1)
    else:
        a, b = c.input(0), c.input(1)
    c.emit(c.op.name, NoAttrs(), [a, b], [c.output(0)])
