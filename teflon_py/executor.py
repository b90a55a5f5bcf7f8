"""The execution plan of one graph: compiled partitions and fallback nodes over one tensor store.

Built at ``allocate_tensors``: every delegate answers ``check`` for every node, the partitioner
groups the supported nodes, the delegate compiles each partition; every node left over gets its
NumPy kernel (an unknown op is an error here, not at invoke). A partition that fails to build or
to run falls back to NumPy for its nodes, with one warning naming it and the error.
"""
from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

import partitioner
from teflon_py import ir
from teflon_py.delegate import CompiledPartition, Delegate
from teflon_py.errors import BackendError, TeflonError
from teflon_py.fallback import Node, kernel_for


@dataclass
class Placement:
    """Where one node runs and why (a row of ``teflon-py inspect``)."""

    backend: str  # delegate name or "numpy"
    partition: int | None
    reason: str | None


@dataclass
class _PartitionStep:
    partition: Any  # partitioner.Partition
    delegate: Delegate
    compiled: CompiledPartition | None
    fallback: list[tuple[Node, Any]]  # NumPy kernels for the same nodes, used if the device fails


class GraphExecutor:
    """Runs one graph of a model; ``values[i]`` holds tensor i's current array."""

    def __init__(self, model: ir.Model, graph: ir.Graph, delegates: Sequence[Delegate] = ()):
        self.model = model
        self.graph = graph
        self.values: list[np.ndarray | None] = [t.data for t in graph.tensors]
        self.placements: list[Placement] = [Placement("numpy", None, None) for _ in graph.operations]
        self.partitions: list[tuple[str, Any]] = []  # (backend name, partitioner.Partition)
        self.steps: list[Any] = []
        self._plan(list(delegates))

    # -- planning -------------------------------------------------------------------------
    def _plan(self, delegates: list[Delegate]) -> None:
        claimed: set[int] = set()
        partitions = []
        owners: list[Delegate] = []
        for delegate in delegates:
            supported = set()
            for op in self.graph.operations:
                if op.index in claimed:
                    continue
                verdict = delegate.check(self.graph, op)
                if verdict.supported:
                    supported.add(op.index)
                else:
                    self.placements[op.index].reason = f"{delegate.name}: {verdict.reason}"
            found = partitioner.partition(
                self.graph, supported, max_partitions=delegate.max_partitions, min_nodes=delegate.min_nodes
            )
            for p in found:
                partitions.append(dataclasses.replace(p, index=len(partitions)))
                owners.append(delegate)
                claimed.update(p.nodes)
            for i in supported - {n for p in found for n in p.nodes}:
                self.placements[i].reason = f"{delegate.name}: partition too small or over the partition limit"
        by_index = {p.index: (p, d) for p, d in zip(partitions, owners)}
        for kind, index in partitioner.execution_plan(self.graph, partitions):
            if kind == "node":
                self.steps.append(self._fallback(self.graph.operations[index]))
            else:
                p, delegate = by_index[index]
                self.steps.append(self._compile(p, delegate))

    def _fallback(self, op: ir.Operation) -> tuple[Node, Any]:
        node = Node.of(self.graph, op, self.model)
        node.context = self  # stateful kernels write variables back through ``assign``
        return node, kernel_for(self.graph, op)

    def _compile(self, p: Any, delegate: Delegate) -> _PartitionStep:
        fallback = [self._fallback(self.graph.operations[i]) for i in p.nodes]
        try:
            compiled = delegate.compile(self.graph, p)
        except (BackendError, TeflonError) as e:
            warnings.warn(
                f"{delegate.name} partition {p.index} ({len(p.nodes)} nodes) failed to build, "
                f"running it on NumPy: {e}", RuntimeWarning, stacklevel=3,
            )
            compiled = None
        for i in p.nodes:
            self.placements[i] = Placement(delegate.name if compiled else "numpy", p.index if compiled else None,
                                           None if compiled else f"{delegate.name} build failed")
        if compiled is not None:
            self.partitions.append((delegate.name, p))
        return _PartitionStep(p, delegate, compiled, fallback)

    # -- running --------------------------------------------------------------------------
    def run(self) -> None:
        for step in self.steps:
            if isinstance(step, _PartitionStep):
                self._run_partition(step)
            else:
                self._run_node(*step)

    def _run_node(self, node: Node, kernel: Any) -> None:
        args = [None if i == ir.NO_TENSOR else self.values[i] for i in node.op.inputs]
        result = kernel(node, args)
        outs = result if isinstance(result, (list, tuple)) else [result]
        for t, value in zip(node.outputs, outs):
            if value.dtype != t.dtype:
                raise TypeError(f"{node.op.describe()}: kernel returned {value.dtype} for {t.describe()} of {t.dtype}")
            self.values[t.index] = value

    def _run_partition(self, step: _PartitionStep) -> None:
        if step.compiled is not None:
            try:
                outs = step.compiled.invoke([self.values[i] for i in step.compiled.inputs])
            except (BackendError, TeflonError) as e:
                warnings.warn(
                    f"{step.delegate.name} partition {step.partition.index} failed to run, "
                    f"running it on NumPy from now on: {e}", RuntimeWarning, stacklevel=3,
                )
                step.compiled = None
                for i in step.partition.nodes:
                    self.placements[i] = Placement("numpy", None, f"{step.delegate.name} run failed")
            else:
                for i, value in zip(step.compiled.outputs, outs):
                    self.values[i] = value
                return
        for node, kernel in step.fallback:
            self._run_node(node, kernel)

    def assign(self, tensor_index: int, value: np.ndarray) -> None:
        """Overwrite a tensor's value (a variable's state); it persists across ``run`` calls."""
        t = self.graph.tensors[tensor_index]
        if value.dtype != t.dtype:
            raise TypeError(f"assigning {value.dtype} to {t.describe()} of {t.dtype}")
        self.values[tensor_index] = value

    def close(self) -> None:
        for step in self.steps:
            if isinstance(step, _PartitionStep) and step.compiled is not None:
                step.compiled.close()
