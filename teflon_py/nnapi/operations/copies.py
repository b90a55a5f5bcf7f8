"""Rules NNAPI states for the operations that copy or rearrange elements without arithmetic
(movement, shape, slicing, resizing), and the small lowering helpers they share.

Each check raises BAD_DATA naming the operation and the operand position (``Call.error``).
Values of tensor operands are read only where a constant holds them (``int_constant``): an
operand fed at run time passes through to the op layer, whose kernels check it when they run.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import ir, ops
from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.lowering import Call
from teflon_py.ops.shape import ReshapeAttrs

QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
#: the usual type table of a movement operation: type -> the feature level that added it
CLASSIC = {T.TENSOR_FLOAT32: 1, T.TENSOR_QUANT8_ASYMM: 1, T.TENSOR_FLOAT16: 3, T.TENSOR_QUANT8_ASYMM_SIGNED: 4}
#: the table of the operations added in feature level 3 (int32 included)
LEVEL3 = {T.TENSOR_FLOAT16: 3, T.TENSOR_FLOAT32: 3, T.TENSOR_INT32: 3, T.TENSOR_QUANT8_ASYMM: 3,
          T.TENSOR_QUANT8_ASYMM_SIGNED: 4}


def same_quantization(c: Call, k: int = 0, out: int = 0) -> None:
    """A QUANT8 output ``out`` must have input ``k``'s scale and zero point."""
    if c.type(k) not in QUANT8:
        return
    x, y = c.operand(k), c.out_operand(out)
    if x.scale != y.scale or x.zero_point != y.zero_point:
        raise c.error(f"scale {y.scale} and zero point {y.zero_point} must be input {k}'s ({x.scale}, "
                      f"{x.zero_point})", out, "output")


def rank_between(c: Call, k: int, lo: int, hi: int | None) -> int:
    """Input ``k``'s rank, which must lie in [lo, hi] (hi None: no upper bound)."""
    r = c.rank(k)
    if r < lo or (hi is not None and r > hi):
        bound = f"from {lo}" if hi is None else f"{lo} to {hi}" if lo != hi else f"{lo}"
        raise c.error(f"rank {r} is not supported (rank {bound})", k)
    return r


def axis_in(c: Call, k: int, rank: int, lo: int | None = None) -> int:
    """The INT32 axis scalar at input ``k``, in [lo, rank) (lo default -rank), made non-negative."""
    axis = c.scalar(k)
    lo = -rank if lo is None else lo
    if not lo <= axis < rank:
        raise c.error(f"axis {axis} is outside [{lo}, {rank})", k)
    return axis % rank


def vector_shape(c: Call, k: int, length: int | None = None) -> None:
    """Input ``k`` must be a 1-D tensor (of ``length`` values where given)."""
    shape = c.shape(k)
    if len(shape) != 1 or (length is not None and shape[0] != length):
        want = "a 1-D tensor" + (f" of {length} values" if length is not None else "")
        raise c.error(f"must be {want}, got shape {list(shape)}", k)


def int_constant(c: Call, k: int) -> np.ndarray | None:
    """Input ``k``'s values as int64 where it is a constant, else None (a run-time tensor)."""
    value = c.constant(k)
    return None if value is None else np.asarray(value).astype(np.int64)


def check_paddings(c: Call, k: int, rows: int) -> np.ndarray | None:
    """The ``[rows, 2]`` paddings tensor at input ``k``: its shape, and where it is a constant,
    values >= 0 (returned)."""
    shape = c.shape(k)
    if tuple(shape) != (rows, 2):
        raise c.error(f"paddings must have shape [{rows}, 2], got {list(shape)}", k)
    p = int_constant(c, k)
    if p is not None and (p < 0).any():
        raise c.error(f"paddings {p.tolist()} must be >= 0", k)
    return p


def reshape(c: Call, x: int, shape: Sequence[int], y: int) -> None:
    """Emit a RESHAPE of ir tensor ``x`` into ``y`` with a constant target shape."""
    shape = tuple(int(d) for d in shape)
    c.emit("RESHAPE", ReshapeAttrs(shape), [x, c.const(np.array(shape, np.int32), what="shape")], [y])


def shifted(q: ir.Quantization, delta: int) -> ir.Quantization:
    """``q`` with its zero point moved by ``delta`` (int8 <-> uint8 at one scale)."""
    return ir.Quantization(q.scale.copy(), q.zero_point + delta, q.quantized_dimension)


def requantize(c: Call, x: int, dtype: type, delta: int, what: str) -> int:
    """ir tensor ``x`` moved to ``dtype`` with its zero point moved by ``delta`` at the same
    scale: a QUANTIZE whose multiplier is exactly 1, so the values shift by ``delta`` exactly."""
    src = c.ir_tensor(x)
    out = c.temp(dtype, shifted(src.quantization, delta), what=what)
    c.emit("QUANTIZE", ops.NoAttrs(), [x], [out])
    return out
