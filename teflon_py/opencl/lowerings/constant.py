"""Nodes whose outputs are already constants: claimed at no cost (no launch, no memory).

The Interpreter folds constant DENSIFY (sparse weights) and float16 DEQUANTIZE (float16 weights)
at load time (``fallback.constant_folding``); the folded node stays in the graph with a constant
output that its consumers read as any other constant (packed weights, or uploaded once by
``compiled``). Claiming it keeps such models one partition, with no node left on the fallback.
"""
from __future__ import annotations

from teflon_py import ir
from teflon_py.fallback.constant_folding import is_folded
from teflon_py.opencl.registry import EmitContext, lowering


def check_folded(graph: ir.Graph, op: ir.Operation) -> str | None:
    """Only a node the Interpreter folded into a constant, whose output is no graph output."""
    if not is_folded(graph, op):
        return "only constant inputs folded at load time are supported"
    if any(t in graph.outputs for t in op.outputs):
        return "its constant output is a graph output: nothing to run"
    return None


def folded(ctx: EmitContext, op: ir.Operation) -> None:
    """Nothing to launch: the output is a constant."""


lowering("DEQUANTIZE", kind="float16", dtypes=("float16", "float32"), check=check_folded,
         max_rank=None)(folded)
for _kind in ("float32", "int8", "float16"):
    lowering("DENSIFY", kind=_kind, check=check_folded, max_rank=None)(folded)
