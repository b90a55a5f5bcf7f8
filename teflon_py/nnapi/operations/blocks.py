"""DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND: blocks of a 4-D image
moved between its spatial axes and its depth or batch, in NHWC or (optional layout input) NCHW
(op layer: the TFLite ops of the same names, in NHWC between transposes).

NNAPI's BATCH_TO_SPACE_ND has no crops: the op layer's takes a zero crops constant. The padding
SPACE_TO_BATCH_ND adds is the logical zero (the output's zero point for QUANT8), as TFLite's.
"""
from __future__ import annotations

import numpy as np

from teflon_py import ops
from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import NHWC_FROM_NCHW, Call
from teflon_py.nnapi.operations.copies import (
    CLASSIC,
    check_paddings,
    int_constant,
    rank_between,
    same_quantization,
    vector_shape,
)
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.movement import BlockAttrs

BATCH_LEVELS = {**CLASSIC, T.TENSOR_FLOAT32: 2, T.TENSOR_QUANT8_ASYMM: 2}


def nhwc_shape(c: Call, k: int, nchw: bool) -> tuple[int, ...]:
    """4-D input ``k``'s shape in NHWC order."""
    rank_between(c, k, 4, 4)
    shape = c.shape(k)
    return tuple(shape[i] for i in NHWC_FROM_NCHW) if nchw else tuple(shape)


# -- DEPTH_TO_SPACE / SPACE_TO_DEPTH ----------------------------------------------------------------

@signature(Op.DEPTH_TO_SPACE, Op.SPACE_TO_DEPTH)
def block_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, CLASSIC)
    s.expect([t, T.INT32, T.BOOL], [t], optional=1)


@lowering(Op.DEPTH_TO_SPACE, Op.SPACE_TO_DEPTH)
def lower_block(c: Call) -> None:
    nchw = c.nchw(2)
    _, h, w, depth = nhwc_shape(c, 0, nchw)
    b = c.scalar(1)
    if b < 1:
        raise c.error(f"block_size {b} must be >= 1", 1)
    if c.op == Op.DEPTH_TO_SPACE and depth % (b * b):
        raise c.error(f"block_size^2 = {b * b} does not divide the depth {depth}", 1)
    if c.op == Op.SPACE_TO_DEPTH and (h % b or w % b):
        raise c.error(f"block_size {b} does not divide the height {h} and width {w}", 1)
    same_quantization(c)
    c.emit(c.op.name, BlockAttrs(b), [c.nhwc(c.input(0), nchw)], [c.nhwc_output(0, nchw)])


# -- SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND ------------------------------------------------------------

@signature(Op.SPACE_TO_BATCH_ND)
def space_to_batch_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, BATCH_LEVELS)
    s.expect([t, T.TENSOR_INT32, T.TENSOR_INT32, T.BOOL], [t], optional=1)


@signature(Op.BATCH_TO_SPACE_ND)
def batch_to_space_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, BATCH_LEVELS)
    s.expect([t, T.TENSOR_INT32, T.BOOL], [t], optional=1)


def block_sizes(c: Call, k: int) -> np.ndarray | None:
    """The block-size tensor at input ``k``: two values (height, width), each >= 1 where constant."""
    vector_shape(c, k, 2)
    block = int_constant(c, k)
    if block is not None and (block < 1).any():
        raise c.error(f"block sizes {block.tolist()} must be >= 1", k)
    return block


@lowering(Op.SPACE_TO_BATCH_ND)
def lower_space_to_batch(c: Call) -> None:
    nchw = c.nchw(3)
    _, h, w, _ = nhwc_shape(c, 0, nchw)
    block = block_sizes(c, 1)
    pads = check_paddings(c, 2, 2)
    if block is not None and pads is not None:
        padded = (h + pads[0].sum(), w + pads[1].sum())
        if padded[0] % block[0] or padded[1] % block[1]:
            raise c.error(f"the padded spatial size {int(padded[0])}x{int(padded[1])} is not divisible by the "
                          f"block sizes {block.tolist()}", 1)
    same_quantization(c)
    c.emit("SPACE_TO_BATCH_ND", ops.NoAttrs(), [c.nhwc(c.input(0), nchw), c.input(1), c.input(2)],
           [c.nhwc_output(0, nchw)])


@lowering(Op.BATCH_TO_SPACE_ND)
def lower_batch_to_space(c: Call) -> None:
    nchw = c.nchw(2)
    n = nhwc_shape(c, 0, nchw)[0]
    block = block_sizes(c, 1)
    if block is not None and n % int(block.prod()):
        raise c.error(f"the batch {n} is not divisible by the block sizes' product {int(block.prod())}", 1)
    same_quantization(c)
    crops = c.const(np.zeros((2, 2), np.int32), what="crops")
    c.emit("BATCH_TO_SPACE_ND", ops.NoAttrs(), [c.nhwc(c.input(0), nchw), c.input(1), crops],
           [c.nhwc_output(0, nchw)])
