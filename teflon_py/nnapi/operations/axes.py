"""Axis helpers the reduce and normalization families share: reading an NNAPI axis scalar, and
the op-layer moves that bring an NNAPI operation to the op layer's conventions (the op layer's
SOFTMAX, L2_NORMALIZATION and LOCAL_RESPONSE_NORMALIZATION work on the last axis; NNAPI names any
axis; NNAPI gives shape [1] where the op layer's reductions give a scalar)."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import ops
from teflon_py.nnapi.lowering import Call
from teflon_py.ops.shape import ReshapeAttrs


def read_axis(c: Call, k: int, rank: int, default: int | None = None) -> int:
    """The INT32 axis scalar at input ``k`` (``default`` where optional and omitted), which must
    lie in [-rank, rank); returned non-negative."""
    axis = c.scalar(k, default)
    if not -rank <= axis < rank:
        raise c.error(f"axis {axis} is out of range for a rank-{rank} input (must be in [{-rank}, {rank}))", k)
    return axis % rank


def swap_last(rank: int, axis: int) -> list[int]:
    """The permutation exchanging ``axis`` and the last axis (its own inverse)."""
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    return perm


def transpose(c: Call, t: int, perm: Sequence[int], what: str) -> int:
    """``t`` transposed by ``perm`` into a new temporary (same type and quantization)."""
    out = c.temp(like=t, what=what)
    c.emit("TRANSPOSE", ops.NoAttrs(), [t, c.const(np.array(perm, np.int32), what="perm")], [out])
    return out


def reshape(c: Call, t: int, shape: Sequence[int], what: str) -> int:
    """``t`` reshaped into a new temporary."""
    out = c.temp(like=t, what=what)
    c.emit("RESHAPE", ReshapeAttrs(tuple(int(d) for d in shape)), [t], [out])
    return out


def then_transpose(c: Call, target: int, perm: Sequence[int], what: str) -> int:
    """A temporary to compute into; after the operation a TRANSPOSE by ``perm`` writes ``target``."""
    tmp = c.temp(like=target, what=what)
    perm_t = c.const(np.array(perm, np.int32), what="perm")
    c.after("TRANSPOSE", ops.NoAttrs(), [tmp, perm_t], [target])
    return tmp


def then_reshape(c: Call, target: int, shape: Sequence[int], what: str) -> int:
    """A temporary to compute into; after the operation a RESHAPE to ``shape`` writes ``target``."""
    tmp = c.temp(like=target, what=what)
    attrs = ReshapeAttrs(tuple(int(d) for d in shape))
    c.after("RESHAPE", attrs, [tmp], [target])
    return tmp


def along_last(c: Call, x: int, k_out: int, rank: int, axis: int) -> tuple[int, int]:
    """(input, output) ir tensors for an op-layer op working on the last axis: with ``axis``
    not last, the input is transposed to bring it last and the result transposed back into
    output ``k_out``."""
    y = c.output(k_out)
    if axis == rank - 1:
        return x, y
    perm = swap_last(rank, axis)
    return transpose(c, x, perm, f"axis {axis} last"), then_transpose(c, y, perm, f"result with axis {axis} last")
