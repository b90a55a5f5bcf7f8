"""ADD, SUB, MUL, DIV: broadcasting arithmetic with a fused activation (op layer: the TFLite ops
of the same names, whose quantized arithmetic NNAPI's reference implementation shares)."""
from __future__ import annotations

from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.common import Act
from teflon_py.ops.elementwise import BinaryAttrs

LEVELS = {
    Op.ADD: {T.TENSOR_FLOAT32: 1, T.TENSOR_QUANT8_ASYMM: 1, T.TENSOR_FLOAT16: 3, T.TENSOR_QUANT8_ASYMM_SIGNED: 4,
             T.TENSOR_INT32: 4},
    Op.MUL: {T.TENSOR_FLOAT32: 1, T.TENSOR_QUANT8_ASYMM: 1, T.TENSOR_FLOAT16: 3, T.TENSOR_QUANT8_ASYMM_SIGNED: 4,
             T.TENSOR_INT32: 4},
    Op.SUB: {T.TENSOR_FLOAT32: 2, T.TENSOR_FLOAT16: 3, T.TENSOR_QUANT8_ASYMM: 3, T.TENSOR_QUANT8_ASYMM_SIGNED: 4,
             T.TENSOR_INT32: 4},
    Op.DIV: {T.TENSOR_FLOAT32: 2, T.TENSOR_FLOAT16: 3, T.TENSOR_INT32: 4},
}


@signature(Op.ADD, Op.SUB, Op.MUL, Op.DIV)
def binary_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, LEVELS[s.op])
    s.expect([t, t, T.INT32], [t])


@lowering(Op.ADD, Op.SUB, Op.MUL, Op.DIV)
def lower_binary(c: Call) -> None:
    act = c.fuse(2)
    if c.type(0) == T.TENSOR_INT32 and act.kind != Act.NONE:
        raise c.error(f"a TENSOR_INT32 {c.op.name} takes FuseCode NONE, got {act.kind.name}", 2)
    if c.rank(0) > 4 or c.rank(1) > 4:
        raise c.error(f"ranks up to 4 are supported, got {c.rank(0)} and {c.rank(1)}")
    if c.op == Op.MUL and c.type(0) in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
        a, b, out = c.operand(0), c.operand(1), c.out_operand(0)
        if not out.scale > a.scale * b.scale:
            raise c.error(f"output scale {out.scale} must exceed input1 scale x input2 scale "
                          f"({a.scale} x {b.scale})", 0, "output")
    c.emit(c.op.name, BinaryAttrs(activation=act), [c.input(0), c.input(1)], [c.output(0)])
