"""Load-time folding of the ops LiteRT itself computes once: DENSIFY and float16 DEQUANTIZE.

Both only ever see constants (sparse weights; float16 weights of a float16-quantized model), and
LiteRT runs them once, at the first invoke, into a persistent tensor. ``fold_constants`` does it
at load time with the very fallback kernels (so the numbers cannot differ): each folded op's
output becomes a constant tensor, so delegates see plain float32 (or int8) weights. The op stays
in the graph (node numbers are the model's) and the executor skips it (``is_folded``). Chains
fold in order (DENSIFY of float16 values, then its DEQUANTIZE).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from teflon_py import ir
from teflon_py.fallback.registry import KERNELS, Node


def _foldable(tensors: list[ir.Tensor], op: ir.Operation) -> bool:
    """DENSIFY of a constant sparse tensor, or DEQUANTIZE of a constant float16 tensor."""
    if op.opcode not in ("DENSIFY", "DEQUANTIZE") or len(op.inputs) != 1 or len(op.outputs) != 1:
        return False
    if ir.NO_TENSOR in op.inputs or ir.NO_TENSOR in op.outputs:
        return False
    src, out = tensors[op.inputs[0]], tensors[op.outputs[0]]
    if not src.is_constant or out.is_constant or out.is_variable:
        return False
    if op.opcode == "DENSIFY":
        return src.sparsity is not None
    return src.sparsity is None and src.dtype == np.float16 and out.dtype == np.float32


def is_folded(graph: ir.Graph, op: ir.Operation) -> bool:
    """True when every output of ``op`` is already a constant (computed at load time)."""
    return bool(op.outputs) and all(i != ir.NO_TENSOR and graph.tensors[i].is_constant for i in op.outputs)


def fold_constants(graph: ir.Graph) -> ir.Graph:
    """``graph`` with its foldable ops' outputs computed into constants (a new Graph, same ops;
    ``graph`` is untouched); the graph itself is returned when nothing folds."""
    tensors = list(graph.tensors)
    folded = False
    for op in graph.operations:
        if not _foldable(tensors, op) or op.outputs[0] in graph.inputs:
            continue
        node = Node(op, graph, [tensors[i] for i in op.inputs], [tensors[i] for i in op.outputs])
        value = np.array(KERNELS[op.opcode](node, [tensors[i].data for i in op.inputs]), copy=True)
        value.flags.writeable = False
        out = tensors[op.outputs[0]]
        tensors[out.index] = dataclasses.replace(out, data=value, sparsity=None)
        folded = True
    if not folded:
        return graph
    return ir.Graph(tensors, list(graph.operations), graph.inputs, graph.outputs, graph.name, graph.index)


def fold_model(model: ir.Model) -> ir.Model:
    """``model`` with every graph's constant DENSIFY / float16 DEQUANTIZE folded."""
    graphs = [fold_constants(g) for g in model.graphs]
    if all(a is b for a, b in zip(graphs, model.graphs)):
        return model
    return dataclasses.replace(model, graphs=graphs)
