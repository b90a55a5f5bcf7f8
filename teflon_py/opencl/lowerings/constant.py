"""Nodes whose outputs are already constants: claimed at no cost (no launch, no memory).

The Interpreter folds constant DENSIFY (sparse weights) and float16 DEQUANTIZE (float16 weights)
at load time (``fallback.constant_folding``); the folded node stays in the graph with a constant
output that its consumers read as any other constant (packed weights, or uploaded once by
``compiled``). Claiming it keeps such models one partition, with no node left on the fallback.
"""
from __future__ import annotations

from typing import Any

from teflon_py.opencl.caps import Caps
from teflon_py.opencl.registry import OpEmit, OpTensors, register


def check_folded(attrs: Any, tensors: OpTensors, caps: Caps) -> str | None:
    """Only a node the Interpreter folded into a constant, whose output is no graph output."""
    if not tensors.outputs or not all(t.is_constant for t in tensors.outputs):
        return "only constant inputs folded at load time are supported"
    if any(tensors.escapes):
        return "its constant output is a graph output: nothing to run"
    return None


def folded(ctx: OpEmit, attrs: Any) -> None:
    """Nothing to launch: the output is a constant."""


register("DEQUANTIZE", kind="float16", dtypes=("float16", "float32"), check=check_folded, max_rank=None)(folded)
for _kind in ("float32", "int8", "float16"):
    register("DENSIFY", kind=_kind, check=check_folded, max_rank=None)(folded)
