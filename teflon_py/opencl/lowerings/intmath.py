"""int32 ADD, SUB and MUL on OpenCL (``intmath.cl``, after ``broadcast.cl``): token-id models add
int32 position ids. One broadcasting switch kernel computes what the NumPy fallback does (LiteRT's
reference kernels): two's complement wrapping arithmetic, then the fused activation's clamp with
the fallback's own integer bounds (``fallback.elementwise.activation_bounds``). Quantization
parameters on int32 tensors are ignored, as there. No following RELU folds in (the kernel clamps
only with the op's own activation)."""
from __future__ import annotations

import numpy as np

from teflon_py.fallback.elementwise import activation_bounds
from teflon_py.opencl.lowerings.elementwise import broadcast_spec, check_binary
from teflon_py.opencl.registry import OpEmit, register
from teflon_py.ops.common import NO_ACTIVATION

FILES = ("broadcast.cl", "intmath.cl")
#: int_binary's op codes: the position in this tuple (the cases of intmath.cl)
OPS = ("ADD", "SUB", "MUL")
INT32 = np.dtype(np.int32)


def int32_bounds(attrs: object) -> tuple[int, int]:
    """The clamp of the op's fused activation on int32 (int32's limits when it has none)."""
    act = getattr(attrs, "activation", NO_ACTIVATION)
    lo, hi = activation_bounds(act, INT32)
    return int(lo), int(hi)


#: the check is the float ops' (a clamping activation, shapes the kernel broadcasts); that every
#: operand is int32 is the registry's condition (``dtypes`` defaults to the kind)
@register(*OPS, kind="int32", check=check_binary, max_rank=6)
def int_binary(ctx: OpEmit, attrs: object) -> None:
    """One broadcasting launch: wrapped x OP y, clamped to the activation's int32 bounds."""
    op = ctx.op
    a, b = ctx.operand(0), ctx.operand(1)
    lo, hi = int32_bounds(attrs)
    spec = broadcast_spec(FILES, "int_binary", [ctx.shape(a), ctx.shape(b)], ctx.shape(op.outputs[0]),
                          ("a", "b"), lo=lo, hi=hi, op=OPS.index(op.name))
    ctx.launch(spec, a=a, b=b, output=ctx.output())
