"""A test-only backend: claims the ops it is told to, runs them with the NumPy kernels.

It exercises the whole delegate path (check, partition, compile, invoke, placements) without a
device, and records what it was asked to compile so tests can see the shapes it got.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.delegate import CompiledPartition, Delegate, Verdict
from teflon_py.fallback import Node, kernel_for


class EchoDelegate(Delegate):
    """Runs ``ops`` (op names) as partitions; everything else is left to the fallback."""

    name = "echo"

    def __init__(self, ops: Iterable[str] = ("ADD", "CONV_2D", "DEPTHWISE_CONV_2D")):
        self.ops = frozenset(ops)
        self.compiled: list[dict[int, tuple[int, ...]]] = []  # per compile: input tensor -> shape

    def check(self, graph: ir.Graph, op: ir.Operation) -> Verdict:
        if op.name in self.ops:
            return Verdict.ok()
        return Verdict.no(f"echo runs only {', '.join(sorted(self.ops))}")

    def compile(self, graph: ir.Graph, partition: Any) -> CompiledPartition:
        self.compiled.append({i: graph.tensors[i].shape for i in partition.inputs})
        return _EchoPartition(graph, partition)


class _EchoPartition(CompiledPartition):
    def __init__(self, graph: ir.Graph, partition: Any):
        self.graph = graph
        self.inputs = tuple(partition.inputs)
        self.outputs = tuple(partition.outputs)
        ops = [graph.operations[i] for i in partition.nodes]
        self.steps = [(Node.of(graph, op), kernel_for(graph, op)) for op in ops]

    def invoke(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        values: dict[int, np.ndarray] = dict(zip(self.inputs, inputs))
        for node, kernel in self.steps:
            args = [None if i == ir.NO_TENSOR else values.get(i, self.graph.tensors[i].data) for i in node.op.inputs]
            result = kernel(node, args)
            values.update(zip(node.op.outputs, result if isinstance(result, (list, tuple)) else [result]))
        return [values[i] for i in self.outputs]
