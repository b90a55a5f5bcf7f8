"""Float32 maths beyond ADD/SUB/MUL and the common activations, as cases of two kernels in
``math.cl`` (after ``broadcast.cl``): binary ops with broadcasting (DIV, POW, MAXIMUM, MINIMUM,
SQUARED_DIFFERENCE, PRELU with a constant or runtime alpha, ATAN2) and unary ops (ABS, NEG, EXP,
LOG, SQRT, RSQRT, SQUARE, SIN, COS, FLOOR, CEIL, ROUND, SIGN, LEAKY_RELU, ELU, GELU).

Each computes TFLite's float formula with OpenCL's accurate builtins (no relaxed math), and any
following RELU may fold in. DIV also clamps to +-FLT_MAX, as TFLite's does with no activation.
"""
from __future__ import annotations

import numpy as np

from teflon_py.opencl.fusion import channel_slopes, intersect
from teflon_py.opencl.kernels.channel_specs import channel_map_spec
from teflon_py.opencl.lowerings.elementwise import (
    broadcast_spec,
    check_binary,
    check_unary,
    flat_spec,
    unary_spec,
)
from teflon_py.opencl.registry import OpEmit, OpTensors, register
from teflon_py.ops.unary import GeluAttrs, LeakyReluAttrs

FILES = ("broadcast.cl", "math.cl")
#: binary_math's op codes: the position in this tuple (the cases of math.cl)
BINARY_OPS = ("DIV", "POW", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "PRELU", "ATAN2")
#: unary_math's op codes; GELU's approximate form is GELU_APPROXIMATE
UNARY_OPS = ("ABS", "NEG", "EXP", "LOG", "SQRT", "RSQRT", "SQUARE", "SIN", "COS", "FLOOR", "SIGN", "LEAKY_RELU",
             "ELU", "GELU", "GELU_APPROXIMATE", "CEIL", "ROUND")
FLT_MAX = float(np.finfo(np.float32).max)
#: What TFLite's float DIV clamps to without an activation (CalculateActivationRange's bounds).
DIV_RANGE = (-FLT_MAX, FLT_MAX)


def check_atan2(attrs: object, tensors: OpTensors, caps: object) -> str | None:
    """check_binary, and equal shapes (LiteRT's ATAN2 does not broadcast)."""
    if len({tuple(t.shape) for t in (*tensors.inputs, *tensors.outputs) if t is not None}) != 1:
        return "operands of different shapes (ATAN2 does not broadcast)"
    return check_binary(attrs, tensors, caps)


@register("ATAN2", check=check_atan2, fuses_activation=True, max_rank=6)
@register(*(n for n in BINARY_OPS if n != "ATAN2"), check=check_binary, fuses_activation=True, max_rank=6)
def binary_math(ctx: OpEmit, attrs: object) -> None:
    """One broadcasting launch; PRELU is ``x >= 0 ? x : x * alpha``, alpha broadcast as operand b
    (constant per-channel slopes on the cpu family: ``channel_map``, whole vectors for any C)."""
    op = ctx.op
    a, b = ctx.operand(0), ctx.operand(1)
    if op.name == "PRELU" and not ctx.params.gpu:
        slopes = channel_slopes(ctx.constant(b), ctx.shape(a))
        if slopes is not None and ctx.shape(a) == ctx.shape(op.outputs[0]):  # constant per-channel slopes
            spec = channel_map_spec(int(np.prod(ctx.shape(a))), len(slopes), slopes=slopes, prelu_clamp=ctx.clamp())
            ctx.launch(spec, input=a, output=ctx.output())
            return
    lo, hi = intersect(ctx.clamp(), DIV_RANGE) if op.name == "DIV" else ctx.clamp()
    spec = broadcast_spec(FILES, "binary_math", [ctx.shape(a), ctx.shape(b)], ctx.shape(op.outputs[0]),
                          ("a", "b"), lo=float(lo), hi=float(hi), op=BINARY_OPS.index(op.name))
    ctx.launch(spec, a=a, b=b, output=ctx.output())


def unary_code(name: str, attrs: object) -> int:
    """The op's case in unary_math."""
    if isinstance(attrs, GeluAttrs) and attrs.approximate:
        return UNARY_OPS.index("GELU_APPROXIMATE")
    return UNARY_OPS.index(name)


@register(*(name for name in UNARY_OPS if name != "GELU_APPROXIMATE"), check=check_unary, fuses_activation=True,
          max_rank=None)
def unary_math(ctx: OpEmit, attrs: object) -> None:
    """One launch over the flat tensor; RSQRT is ``1 / sqrt(x)``, SIGN keeps 0 and NaN, GELU is
    ``0.5 x erfc(-x / sqrt 2)`` (elementwise.cl's ``gelu``, 16 lanes at a time) or
    ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))``."""
    x = ctx.operand(0)
    alpha = float(np.float32(attrs.alpha)) if isinstance(attrs, LeakyReluAttrs) else 0.0
    lo, hi = ctx.clamp()
    if isinstance(attrs, GeluAttrs) and not attrs.approximate:  # 16 lanes at a time, no erfc call
        ctx.launch(unary_spec("gelu", int(np.prod(ctx.shape(x))), (lo, hi)), input=x, output=ctx.output())
        return
    spec = flat_spec(FILES, "unary_math", int(np.prod(ctx.shape(x))), lo=float(lo), hi=float(hi), p=alpha,
                     op=unary_code(ctx.op.name, attrs))
    ctx.launch(spec, input=x, output=ctx.output())
