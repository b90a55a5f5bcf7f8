"""Plan-time folding of shape arithmetic into constants.

LiteRT computes a SHAPE op's output once, at Prepare, into a persistent tensor; Keras models then
compute RESHAPE targets from it (STRIDED_SLICE, PACK, CONCATENATION on a handful of int32s:
squeeze-excite blocks, flatten heads). Run at every node, that arithmetic splits a delegate's
graph around each SHAPE: EfficientNet-B0 ran as 33 OpenCL partitions with NumPy between them.

When the executor plans a graph (shapes as they flow for the current input shapes), ``fold``
computes such a node's value with its fallback kernel, so the numbers are the ones the node would
compute at run time: SHAPE and RANK of a tensor whose shape the plan knows, and the small
integer ops in ``FOLDABLE`` whose inputs are all constants (or folded). The node stays in the
graph (node numbers are the model's) and the executor skips it (``constant_folding.is_folded``).
Input resizes re-plan, so a folded shape is always the current one.
"""
from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from teflon_py import ir

#: single-output integer ops folded when every input is a constant
FOLDABLE = frozenset({
    "SHAPE", "RANK", "STRIDED_SLICE", "SLICE", "PACK", "CONCATENATION", "GATHER", "CAST", "RESHAPE",
    "SQUEEZE", "EXPAND_DIMS", "ADD", "SUB", "MUL", "FLOOR_DIV", "REDUCE_PROD", "MAXIMUM", "MINIMUM",
})
#: the most elements a folded value may have (shape vectors, not data)
MAX_ELEMENTS = 64


def fold(graph: ir.Graph, op: ir.Operation, tensors: Sequence[ir.Tensor], dynamic: Collection[int]) -> np.ndarray | None:
    """The value of ``op``'s one output when it is shape arithmetic the plan can compute now
    (``tensors``: the plan's tensors, shapes as inferred; ``dynamic``: tensors whose shapes only a
    run knows), else None."""
    if op.opcode not in FOLDABLE or len(op.outputs) != 1 or op.outputs[0] == ir.NO_TENSOR:
        return None
    out = tensors[op.outputs[0]]
    if out.is_constant or out.is_variable or out.dtype.kind not in "iu" or op.outputs[0] in dynamic:
        return None
    if any(d < 0 for d in out.shape) or int(np.prod(out.shape, dtype=np.int64)) > MAX_ELEMENTS:
        return None
    if ir.NO_TENSOR in op.inputs:
        return None
    ins = [tensors[i] for i in op.inputs]
    if op.opcode in ("SHAPE", "RANK"):
        src = op.inputs[0]
        if src in dynamic or any(d < 0 for d in ins[0].shape):
            return None
        values = [np.broadcast_to(np.zeros((), ins[0].dtype), ins[0].shape)]  # only its shape is read
    elif all(t.is_constant for t in ins):
        values = [t.data for t in ins]
    else:
        return None
    from teflon_py.fallback.registry import KERNELS, Node

    kernel = KERNELS.get(op.opcode)
    if kernel is None:
        return None
    value = np.array(kernel(Node(op, graph, ins, [out]), values), dtype=out.dtype, copy=True)
    if value.shape != tuple(out.shape):
        return None
    value.flags.writeable = False
    return value
