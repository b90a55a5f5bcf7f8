"""Float32 maths beyond ADD/SUB/MUL and the common activations, as cases of two kernels in
``math.cl`` (after ``broadcast.cl``): binary ops with broadcasting (DIV, POW, MAXIMUM, MINIMUM,
SQUARED_DIFFERENCE, PRELU with a constant or runtime alpha, ATAN2) and unary ops (ABS, NEG, EXP,
LOG, SQRT, RSQRT, SQUARE, SIN, COS, FLOOR, CEIL, ROUND, SIGN, LEAKY_RELU, ELU, GELU).

Each computes TFLite's float formula with OpenCL's accurate builtins (no relaxed math), and any
following RELU may fold in. DIV also clamps to +-FLT_MAX, as TFLite's does with no activation.
"""
from __future__ import annotations

import numpy as np

from teflon_py import ir
from teflon_py.opencl.fusion import intersect
from teflon_py.opencl.lowerings.elementwise import broadcast_spec, check_binary, check_unary, flat_spec
from teflon_py.opencl.registry import EmitContext, lowering, options
from teflon_py.tflite.options import GeluOptions, LeakyReluOptions

FILES = ("broadcast.cl", "math.cl")
#: binary_math's op codes: the position in this tuple (the cases of math.cl)
BINARY_OPS = ("DIV", "POW", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "PRELU", "ATAN2")
#: unary_math's op codes; GELU's approximate form is GELU_APPROXIMATE
UNARY_OPS = ("ABS", "NEG", "EXP", "LOG", "SQRT", "RSQRT", "SQUARE", "SIN", "COS", "FLOOR", "SIGN", "LEAKY_RELU",
             "ELU", "GELU", "GELU_APPROXIMATE", "CEIL", "ROUND")
FLT_MAX = float(np.finfo(np.float32).max)
#: What TFLite's float DIV clamps to without an activation (CalculateActivationRange's bounds).
DIV_RANGE = (-FLT_MAX, FLT_MAX)


def check_binary_math(graph: ir.Graph, op: ir.Operation) -> str | None:
    """check_binary, and equal shapes for ATAN2 (LiteRT's does not broadcast)."""
    if op.name == "ATAN2" and len({tuple(graph.tensors[t].shape) for t in (*op.inputs, *op.outputs)}) != 1:
        return "operands of different shapes (ATAN2 does not broadcast)"
    return check_binary(graph, op)


@lowering(*BINARY_OPS, check=check_binary_math, fuses_activation=True, max_rank=6)
def binary_math(ctx: EmitContext, op: ir.Operation) -> None:
    """One broadcasting launch; PRELU is ``x >= 0 ? x : x * alpha``, alpha broadcast as operand b."""
    a, b = op.inputs[0], op.inputs[1]
    lo, hi = intersect(ctx.clamp(op), DIV_RANGE) if op.name == "DIV" else ctx.clamp(op)
    spec = broadcast_spec(FILES, "binary_math", [ctx.shape(a), ctx.shape(b)], ctx.shape(op.outputs[0]),
                          ("a", "b"), lo=float(lo), hi=float(hi), op=BINARY_OPS.index(op.name))
    ctx.launch(spec, a=a, b=b, output=ctx.output(op))


def unary_code(op: ir.Operation) -> int:
    """The op's case in unary_math."""
    if op.name == "GELU" and options(op, GeluOptions).approximate:
        return UNARY_OPS.index("GELU_APPROXIMATE")
    return UNARY_OPS.index(op.name)


@lowering(*(name for name in UNARY_OPS if name != "GELU_APPROXIMATE"), check=check_unary, fuses_activation=True,
          max_rank=None)
def unary_math(ctx: EmitContext, op: ir.Operation) -> None:
    """One launch over the flat tensor; RSQRT is ``1 / sqrt(x)``, SIGN keeps 0 and NaN, GELU is
    ``0.5 x erfc(-x / sqrt 2)`` or ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``."""
    x = op.inputs[0]
    alpha = float(np.float32(options(op, LeakyReluOptions).alpha)) if op.name == "LEAKY_RELU" else 0.0
    lo, hi = ctx.clamp(op)
    spec = flat_spec(FILES, "unary_math", int(np.prod(ctx.shape(x))), lo=float(lo), hi=float(hi), p=alpha,
                     op=unary_code(op))
    ctx.launch(spec, input=x, output=ctx.output(op))
