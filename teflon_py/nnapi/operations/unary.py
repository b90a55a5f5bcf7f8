"""One-input elementwise operations: FLOOR, ABS, EXP, LOG, NEG, RSQRT, SIN, SQRT and the activations
LOGISTIC, RELU, RELU1, RELU6, TANH, HARD_SWISH and ELU (op layer: the TFLite ops of the same
names; RELU1 is RELU_N1_TO_1).

Quantized forms compute what LiteRT's kernels compute, with NNAPI's parameter rules checked first
(LOGISTIC's and TANH's fixed output grids, the RELUs' output grid equal to the input's). Two
cases TFLite lacks are composed: a uint8 RSQRT (feature level 7) dequantizes, takes a float32
1 / sqrt and quantizes, as Android's reference implementation computes both quantized RSQRTs (an
int8 RSQRT is TFLite's fixed-point kernel instead, LiteRT's bit-exact result); an ELU with an
alpha other than 1 (TFLite's ELU has alpha 1) is the spec's formula
``max(0, x) + min(0, alpha * (exp(x) - 1))`` in float32 operations, as Android's reference.
"""
from __future__ import annotations

import numpy as np

from teflon_py import quant
from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.common import Act, FusedActivation, NoAttrs
from teflon_py.ops.elementwise import BinaryAttrs

F32, F16, U8, I8, I32 = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16, T.TENSOR_QUANT8_ASYMM,
                         T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_INT32)
FLOATS = {F32: 3, F16: 3}
ACTIVATION = {F32: 1, U8: 1, F16: 3, I8: 4}

#: operation -> (op-layer op, operand type -> feature level, the largest rank the spec allows)
UNARY: dict[Op, tuple[str, dict[T, int], int | None]] = {
    Op.FLOOR: ("FLOOR", {F32: 1, F16: 3}, 4),
    Op.LOGISTIC: ("LOGISTIC", ACTIVATION, 4),
    Op.RELU: ("RELU", ACTIVATION, 4),
    Op.RELU1: ("RELU_N1_TO_1", ACTIVATION, 4),
    Op.RELU6: ("RELU6", ACTIVATION, 4),
    Op.TANH: ("TANH", {F32: 1, F16: 3, U8: 3, I8: 4}, 4),
    Op.ABS: ("ABS", {F16: 3, F32: 3, I32: 4}, None),
    Op.EXP: ("EXP", FLOATS, None),
    Op.LOG: ("LOG", FLOATS, None),
    Op.NEG: ("NEG", {F16: 3, F32: 3, I32: 3}, None),
    Op.RSQRT: ("RSQRT", {F16: 3, F32: 3, U8: 7, I8: 7}, None),
    Op.SIN: ("SIN", FLOATS, None),
    Op.SQRT: ("SQRT", FLOATS, None),
    Op.HARD_SWISH: ("HARD_SWISH", {F16: 4, F32: 4, U8: 4, I8: 4}, None),
}

#: the output grid (scale, zero point) the spec fixes for quantized LOGISTIC and TANH
FIXED_OUTPUT = {
    (Op.LOGISTIC, U8): (1 / 256, 0), (Op.LOGISTIC, I8): (1 / 256, -128),
    (Op.TANH, U8): (1 / 128, 128), (Op.TANH, I8): (1 / 128, 0),
}
SAME_GRID = (Op.RELU, Op.RELU1, Op.RELU6)


@signature(*UNARY)
def unary_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, UNARY[s.op][1])
    s.expect([t], [t])


def check_quantization(c: Call) -> None:
    """NNAPI's rules on a quantized output's scale and zero point (BAD_DATA where broken)."""
    t = c.type(0)
    if t not in (U8, I8):
        return
    x, y = c.operand(0), c.out_operand(0)
    fixed = FIXED_OUTPUT.get((c.op, t))
    if fixed is not None:
        scale, zero_point = fixed
        if np.float32(y.scale) != np.float32(scale) or y.zero_point != zero_point:
            raise c.error(f"a {t.name} {c.op.name} output takes scale 1/{round(1 / scale)} and zero point "
                          f"{zero_point}, got {y.scale} and {y.zero_point}", 0, "output")
    if c.op in SAME_GRID and (np.float32(y.scale) != np.float32(x.scale) or y.zero_point != x.zero_point):
        raise c.error(f"a {t.name} {c.op.name} output takes the input's scale and zero point ({x.scale}, "
                      f"{x.zero_point}), got {y.scale} and {y.zero_point}", 0, "output")
    if c.op == Op.HARD_SWISH:
        # LiteRT's 8-bit HARD_SWISH needs a right shift from its input / 128 grid onto the output's
        # (its multiplier's exponent <= 0, in float32 as hard_swish.cc); NNAPI allows any scale
        hires = np.float32(1 / 128) * np.float32(x.scale)
        if quant.quantize_multiplier(float(hires / np.float32(y.scale)))[1] > 0:
            raise c.error(f"output scale {y.scale} not above input scale / 128 ({x.scale} / 128) is not "
                          "supported", 0, "output")


@lowering(*UNARY)
def lower_unary(c: Call) -> None:
    name, _, max_rank = UNARY[c.op]
    if max_rank is not None and c.rank(0) > max_rank:
        raise c.error(f"ranks up to {max_rank} are supported, got {c.rank(0)}", 0)
    check_quantization(c)
    if c.op == Op.RSQRT and c.type(0) == U8:
        real = c.temp(np.float32, what="dequantized")
        c.emit("DEQUANTIZE", NoAttrs(), [c.input(0)], [real])
        root = c.temp(np.float32, what="rsqrt")
        c.emit("RSQRT", NoAttrs(), [real], [root])
        c.emit("QUANTIZE", NoAttrs(), [root], [c.output(0)])
        return
    c.emit(name, NoAttrs(), [c.input(0)], [c.output(0)])


# -- ELU ------------------------------------------------------------------------------------------

@signature(Op.ELU)
def elu_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, {F16: 4, F32: 4})
    s.expect([t, T.FLOAT16 if t == F16 else T.FLOAT32], [t], level=4)


@lowering(Op.ELU)
def lower_elu(c: Call) -> None:
    alpha = float(c.scalar(1))
    x, y = c.input(0), c.output(0)
    if alpha == 1.0:
        c.emit("ELU", NoAttrs(), [x], [y])
        return
    # max(0, x) + min(0, alpha * (exp(x) - 1)) = relu(x) - relu(-alpha * (exp(x) - 1)), every
    # step one float32 operation as in Android's reference (negating alpha is exact)
    none, relu = BinaryAttrs(), BinaryAttrs(FusedActivation.of(Act.RELU))
    e = c.temp(np.float32, what="exp")
    c.emit("EXP", NoAttrs(), [x], [e])
    em1 = c.temp(np.float32, what="exp - 1")
    c.emit("SUB", none, [e, c.const(np.ones(1, np.float32), what="one")], [em1])
    neg = c.temp(np.float32, what="-min(0, alpha (exp - 1))")
    c.emit("MUL", relu, [em1, c.const(np.full(1, -alpha, np.float32), what="-alpha")], [neg])
    pos = c.temp(np.float32, what="max(0, x)")
    c.emit("RELU", NoAttrs(), [x], [pos])
    c.emit("SUB", none, [pos, neg], [y])
