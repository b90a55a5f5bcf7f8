"""The execution plan of one graph: compiled partitions and fallback nodes over one tensor store.

Built at ``allocate_tensors``: every delegate answers ``check`` for every node, the partitioner
groups the supported nodes, the delegate compiles each partition; every node left over gets its
NumPy kernel (an unknown op is an error here, not at invoke). A partition that fails to build or
to run falls back to NumPy for its nodes, with one warning naming it and the error; their NumPy
kernels are looked up only then, so a delegate may run an op the fallback lacks. What a failure
does is the delegate's ``fallback`` policy (``errors.fallback_policy``: "warn" or "error"); every
fallback taken is recorded in ``GraphExecutor.fallbacks``.

A tensor that a compiled partition produces and uses only inside itself never reaches the host:
``hidden(i)`` names the partition holding it. With ``preserve_all_tensors`` each partition is
compiled with every tensor it produces as an output, so all of them are read back after a run.

``run(observer)`` reports each step it takes (a NumPy node or a delegate partition, host-timed) to
a ``RunObserver``, which may also run the partitions another way (``teflon_py.profile`` runs
OpenCL ones on a profiling queue); without one, ``run`` does no timing at all.

``ModelState`` is what every executor of one interpreter shares, as TFLite's interpreter-wide
maps: resource variables, which subgraphs CALL_ONCE has run, and one NumPy executor per subgraph
that control flow (WHILE, IF, CALL_ONCE) runs. Kernels reach it through ``node.context`` (the
executor): ``context.run_subgraph(index, inputs)``, ``context.resources``, ``context.state``.
"""
from __future__ import annotations

import copy
import dataclasses
import os
import sys
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from teflon_py import ir, memory_budget, ops, partitioner, run_limits, shape_folding
from teflon_py.delegate import CompiledPartition, Delegate, Verdict
from teflon_py.errors import (
    BackendError,
    FallbackWarning,
    ModelError,
    TeflonError,
    UnsupportedError,
    fallback_policy,
)
from teflon_py.fallback import Node, kernel_for
from teflon_py.fallback.constant_folding import is_folded
from teflon_py.ops import control_flow


@dataclass
class Placement:
    """Where one node runs and why (a row of ``teflon-py inspect``)."""

    backend: str  # delegate name or "numpy"
    partition: int | None
    reason: str | None


@dataclass(frozen=True)
class Fallback:
    """One fallback to NumPy a delegate's failure caused: ``stage`` is "unavailable" (no usable
    device: ``partition`` None, ``nodes`` every node it could have claimed), "build" or "run"."""

    delegate: str
    stage: str
    partition: int | None
    nodes: tuple[int, ...]
    reason: str

    def describe(self) -> str:
        if self.stage == "unavailable":
            return f"{self.delegate} is unavailable, running on NumPy: {self.reason}"
        what = f"{self.delegate} partition {self.partition}"
        if self.stage == "build":
            return f"{what} ({len(self.nodes)} nodes) failed to build, running it on NumPy: {self.reason}"
        return f"{what} failed to run, running it on NumPy from now on: {self.reason}"


@dataclass
class _PartitionStep:
    partition: Any  # partitioner.Partition
    delegate: Delegate
    compiled: CompiledPartition | None
    fallback: list[tuple[Node, Any]] | None = None  # NumPy kernels for its nodes, built when the device fails


@dataclass(frozen=True)
class StepRecord:
    """One step of an observed ``GraphExecutor.run``, timed on the host (``time.perf_counter_ns``).

    A NumPy node has ``op`` set (and no delegate); a partition its delegate ran has ``op`` None and
    ``delegate``/``partition`` set. A partition that fell back to NumPy is reported node by node.
    """

    executor: GraphExecutor
    op: ir.Operation | None
    delegate: str | None
    partition: int | None
    start_ns: int
    end_ns: int


class RunObserver:
    """Watches ``GraphExecutor.run(observer)``: ``step`` after each step; ``invoke`` runs each
    delegate partition (override it to run them another way, e.g. profiled)."""

    def invoke(self, compiled: CompiledPartition, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run a delegate partition on ``inputs``; its outputs (the default: ``compiled.invoke``)."""
        return compiled.invoke(inputs)

    def step(self, record: StepRecord) -> None:
        """Called once a step has run; the default does nothing."""


class ModelState:
    """State shared by every graph executor of one interpreter (TFLite keeps it interpreter-wide).

    ``resources``: resource id -> value (a resource variable's array), set by ASSIGN_VARIABLE;
    ``resource_ids``: (container, shared_name) -> id, numbered as TFLite's VAR_HANDLE does (in
    order of first appearance, subgraph by subgraph, node by node); ``initialized``: subgraphs
    CALL_ONCE has run. Control flow runs subgraphs through ``run``: one NumPy executor per
    subgraph, built when a node first refers to it and kept, so its variable tensors persist.
    """

    def __init__(self, model: ir.Model, memory_budget: int | None = None):
        self.model = model
        #: bytes every graph's tensors are checked against at planning (None: the default budget)
        self.memory_budget = memory_budget
        self.resources: dict[int, Any] = {}
        self.resource_ids: dict[tuple[str, str], int] = _resource_ids(model)
        self.initialized: set[int] = set()
        #: seconds one WHILE may loop before it fails with ``LoopLimitError`` (None: no limit;
        #: NNAPI's executions set their loop timeout here)
        self.loop_timeout: float | None = None
        #: the running invoke's deadline (``run_limits``), checked before each step
        self.deadline = run_limits.Deadline(None)
        self._executors: dict[int, GraphExecutor] = {}
        self._building: set[int] = set()
        self._running: set[int] = set()

    def resource_id(self, container: str | None, shared_name: str | None) -> int:
        """The id of the resource (container, shared_name); a new one gets the next number."""
        key = (container or "", shared_name or "")
        return self.resource_ids.setdefault(key, len(self.resource_ids))

    def prepare(self, index: int, referrer: ir.Operation | None = None) -> None:
        """Build subgraph ``index``'s executor now (at allocation), so unknown ops fail early."""
        if index in self._executors or index in self._building:
            return  # built, or being built higher up (a cycle of references)
        if not 0 <= index < len(self.model.graphs):
            where = f"{referrer.describe()}: " if referrer is not None else ""
            raise ModelError(f"{where}subgraph index {index} out of range (model has {len(self.model.graphs)})")
        self._building.add(index)
        try:
            executor = GraphExecutor(self.model, self.model.graphs[index], (), self)
        finally:
            self._building.discard(index)
        executor.reset_variables()
        self._executors[index] = executor

    def executor(self, index: int) -> GraphExecutor:
        """Subgraph ``index``'s NumPy executor (built on first use)."""
        self.prepare(index)
        return self._executors[index]

    def run(self, index: int, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run subgraph ``index`` on ``inputs``; its outputs (shapes may differ call to call)."""
        executor = self.executor(index)
        graph = executor.graph
        if len(inputs) != len(graph.inputs):
            raise ModelError(f"subgraph {index} takes {len(graph.inputs)} inputs, got {len(inputs)}")
        if index in self._running:
            raise ModelError(f"subgraph {index} is called while it runs (recursion, which TFLite forbids too)")
        run_limits.check_nesting(len(self._running), index)
        for i, value in zip(graph.inputs, inputs):
            t = graph.tensors[i]
            if value is None or value.dtype != t.dtype:
                got = "nothing" if value is None else value.dtype
                raise ModelError(f"subgraph {index}: {t.describe()} is {t.dtype}, got {got}")
            executor.values[i] = value
        self._running.add(index)
        try:
            executor.run()
        finally:
            self._running.discard(index)
        outputs = [executor.values[i] for i in graph.outputs]
        for i, value in zip(graph.outputs, outputs):
            if value is None:
                raise ModelError(f"subgraph {index}: output {graph.tensors[i].describe()} was never computed")
        return outputs

    def reset_variables(self) -> None:
        """Reset the variable tensors of the control-flow subgraphs (resources are kept, as LiteRT)."""
        for executor in self._executors.values():
            executor.reset_variables()

    def fork(self) -> ModelState:
        """A copy to run a graph without side effects (shape probing): same resources, own executors."""
        other = ModelState(self.model, self.memory_budget)
        other.resources = copy.deepcopy(self.resources)
        other.resource_ids = dict(self.resource_ids)
        other.initialized = set(self.initialized)
        return other

    def close(self) -> None:
        for executor in self._executors.values():
            executor.close()
        self._executors.clear()


def _resource_ids(model: ir.Model) -> dict[tuple[str, str], int]:
    """TFLite's resource ids: VAR_HANDLEs number their (container, shared_name) as the model is read."""
    ids: dict[tuple[str, str], int] = {}
    for graph in model.graphs:
        for op in graph.operations:
            key = control_flow.resource_key(op.attrs) if op.opcode == "VAR_HANDLE" else None
            if key is not None:
                ids.setdefault(key, len(ids))
    return ids


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the directory holding teflon_py/


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside teflon-py: a warning points at the user's
    ``allocate_tensors()`` or ``invoke()`` line, not at the executor."""
    frame, level = sys._getframe(1), 1
    inside = os.path.join(_PACKAGE, "teflon_py") + os.sep
    while frame is not None and frame.f_code.co_filename.startswith(inside):
        frame, level = frame.f_back, level + 1
    return level


def _every_output(graph: ir.Graph, p: Any) -> tuple[int, ...]:
    """The partition's outputs, then every other tensor its nodes produce (in node order)."""
    outputs = list(p.outputs)
    seen = set(outputs)
    for i in p.nodes:
        for t in graph.operations[i].outputs:
            if t != ir.NO_TENSOR and t not in seen:
                seen.add(t)
                outputs.append(t)
    return tuple(outputs)


def _subgraph_references(op: ir.Operation) -> list[int]:
    """Subgraphs an op runs (WHILE, IF, CALL_ONCE): what its attributes name."""
    return control_flow.subgraphs(op.attrs)


class GraphExecutor:
    """Runs one graph of a model; ``values[i]`` holds tensor i's current array.

    ``state`` is shared with the interpreter's other executors (a fresh one when not given).
    """

    def __init__(self, model: ir.Model, graph: ir.Graph, delegates: Sequence[Delegate] = (),
                 state: ModelState | None = None, preserve_all_tensors: bool = False):
        self.model = model
        self.graph = graph
        self.preserve_all_tensors = preserve_all_tensors
        self.fallbacks: list[Fallback] = []
        self._hidden: dict[int, str] | None = None  # tensor -> partition keeping it (``hidden``)
        self.state = state if state is not None else ModelState(model)
        self._owns_state = state is None
        memory_budget.check_graph(graph, self.state.memory_budget, model.source)
        self._validate()
        self.values: list[np.ndarray | None] = [t.data for t in self.graph.tensors]  # folded shapes too
        self.placements: list[Placement] = [Placement("numpy", None, None) for _ in graph.operations]
        self.partitions: list[tuple[str, Any]] = []  # (backend name, partitioner.Partition)
        self.partition_info: dict[int, dict[str, Any]] = {}  # partition index -> compiled.describe()
        self.steps: list[Any] = []
        self._plan(list(delegates))

    # -- planning -------------------------------------------------------------------------
    def _plan(self, delegates: list[Delegate]) -> None:
        claimed: set[int] = set()
        partitions = []
        owners: list[Delegate] = []
        for delegate in delegates:
            supported = set()
            try:
                verdicts = [(op, delegate.check(self.graph, op)) for op in self.graph.operations
                            if op.index not in claimed]
            except BackendError as e:  # no usable device: nothing to check against
                if fallback_policy(getattr(delegate, "fallback", None)) == "error":
                    raise
                verdicts = [(op, Verdict.no(f"device unavailable ({e})")) for op in self.graph.operations
                            if op.index not in claimed]
                self._fell_back(Fallback(delegate.name, "unavailable", None,
                                         tuple(op.index for op, _ in verdicts), str(e)))
            for op, verdict in verdicts:
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
                op = self.graph.operations[index]
                if is_folded(self.graph, op):
                    self.placements[index] = Placement("numpy", None, "folded into a constant at load time")
                    continue
                self.steps.append(self._fallback(op))
            else:
                p, delegate = by_index[index]
                self.steps.append(self._compile(p, delegate))

    def _validate(self) -> None:
        """The op layer's rules for every node, once, before any backend sees it: a node that
        breaks them is a ModelError naming it (whether a valid node is computed is the kernels'
        and delegates' question, asked next). Shapes flow as LiteRT's Prepare resizes them: a
        node sees the shapes its producers compute, not only the ones the model declares."""
        tensors = list(self.graph.tensors)
        dynamic: set[int] = set()
        for op in self.graph.operations:
            d = ops.OPS.get(op.name)
            outs = [i for i in op.outputs if i != ir.NO_TENSOR]
            if d is None or d.infer is None or any(i in dynamic for i in op.inputs):
                dynamic.update(outs)
                continue
            ins = ops.Inputs(tuple(None if i == ir.NO_TENSOR else tensors[i] for i in op.inputs),
                             tuple(tensors[i] for i in outs), op.describe(), op.index, op.name)
            try:
                metas = d.infer(op.attrs, ins)
            except UnsupportedError:
                dynamic.update(outs)
                continue
            except ModelError as e:
                raise ModelError(f"{self._where()}{e}") from e
            except (ArithmeticError, AttributeError, IndexError, KeyError, TypeError, ValueError) as e:
                if not outs:
                    raise ModelError(f"{self._where()}{op.describe()}: the model gives it no outputs") from e
                operands = ", ".join("none" if t is None else f"{list(t.shape)} {t.dtype}" for t in ins.inputs)
                raise ModelError(f"{self._where()}{op.describe()}: its {len(ins.inputs)} inputs ({operands}) and "
                                 f"{len(outs)} outputs do not fit the op: {type(e).__name__}: {e}") from e
            for i, meta in zip(outs, metas or ()):
                t = tensors[i]
                if meta.shape is None:
                    dynamic.add(i)
                elif not t.is_constant and tuple(meta.shape) != t.shape:
                    tensors[i] = dataclasses.replace(t, shape=tuple(int(n) for n in meta.shape))
            if self.graph.index == 0:  # the primary graph: its input shapes are the plan's
                value = shape_folding.fold(self.graph, op, tensors, dynamic)
                if value is not None:
                    tensors[op.outputs[0]] = dataclasses.replace(tensors[op.outputs[0]], data=value)
        if any(a is not b for a, b in zip(tensors, self.graph.tensors)):
            # plan for the shapes that flow, as LiteRT resizes a node's outputs at Prepare: a
            # declared shape that disagrees must not reach a delegate compiling for it
            self.graph = dataclasses.replace(self.graph, tensors=tensors)

    def _fallback(self, op: ir.Operation) -> tuple[Node, Any]:
        node = Node.of(self.graph, op, self.model)
        node.context = self  # stateful kernels write variables back through ``assign``
        kernel = kernel_for(self.graph, op)
        for index in _subgraph_references(op):
            self.state.prepare(index, op)
        return node, kernel

    def _fell_back(self, fallback: Fallback) -> None:
        self.fallbacks.append(fallback)
        warnings.warn(FallbackWarning(fallback.describe()), stacklevel=_caller_level())

    def _compile(self, p: Any, delegate: Delegate) -> _PartitionStep:
        step = _PartitionStep(p, delegate, None)
        if self.preserve_all_tensors:
            p = dataclasses.replace(p, outputs=_every_output(self.graph, p))
        try:
            step.compiled = delegate.compile(self.graph, p)
        except (BackendError, UnsupportedError) as e:
            if fallback_policy(getattr(delegate, "fallback", None)) == "error":
                raise
            self._partition_fallback(step, f"failed to build ({e})")
            self._fell_back(Fallback(delegate.name, "build", p.index, tuple(p.nodes), str(e)))
        compiled = step.compiled
        for i in p.nodes:
            self.placements[i] = Placement(delegate.name if compiled else "numpy", p.index if compiled else None,
                                           None if compiled else f"{delegate.name} build failed")
        if compiled is not None:
            self.partitions.append((delegate.name, p))
            self.partition_info[p.index] = compiled.describe()
        return step

    def _partition_fallback(self, step: _PartitionStep, failure: str) -> list[tuple[Node, Any]]:
        """The NumPy kernels of a partition's nodes, built on its first failure; a node without
        one is an UnsupportedError naming it (the partition can then run nowhere)."""
        if step.fallback is None:
            fallback = []
            for i in step.partition.nodes:
                op = self.graph.operations[i]
                try:
                    fallback.append(self._fallback(op))
                except UnsupportedError as e:
                    raise UnsupportedError(
                        f"{step.delegate.name} partition {step.partition.index} {failure}, and it cannot "
                        f"run on NumPy: {e}", node=op.index, op=op.name,
                    ) from e
            step.fallback = fallback
        return step.fallback

    def hidden(self, tensor: int) -> str | None:
        """Which compiled partition keeps ``tensor`` to itself (it is produced and consumed inside
        and never copied to the host), e.g. "opencl partition 0"; None when the host has it."""
        if self._hidden is None:
            self._hidden = {}
            for step in self.steps:
                if isinstance(step, _PartitionStep) and step.compiled is not None:
                    kept = set(step.compiled.outputs)
                    for i in step.partition.nodes:
                        for t in self.graph.operations[i].outputs:
                            if t != ir.NO_TENSOR and t not in kept:
                                self._hidden[t] = f"{step.delegate.name} partition {step.partition.index}"
        return self._hidden.get(tensor)

    # -- running --------------------------------------------------------------------------
    def run(self, observer: RunObserver | None = None) -> None:
        """Run every step once; ``observer`` (if any) sees each step and runs the partitions."""
        deadline = self.state.deadline
        for step in self.steps:
            if deadline.at is not None:
                deadline.check(self._where() + "before " + (f"partition {step.partition.index}"
                                                            if isinstance(step, _PartitionStep)
                                                            else step[0].op.describe()))
            if isinstance(step, _PartitionStep):
                self._run_partition(step, observer)
            elif observer is None:
                self._run_node(*step)
            else:
                self._observe_node(*step, observer)

    def _observe_node(self, node: Node, kernel: Any, observer: RunObserver) -> None:
        start = time.perf_counter_ns()
        self._run_node(node, kernel)
        observer.step(StepRecord(self, node.op, None, None, start, time.perf_counter_ns()))

    def _run_node(self, node: Node, kernel: Any) -> None:
        args = [None if i == ir.NO_TENSOR else self.values[i] for i in node.op.inputs]
        for i, value in zip(node.op.inputs, args):
            if value is None and i != ir.NO_TENSOR:
                raise ModelError(f"{self._where()}{node.op.describe()} reads {self.graph.tensors[i].describe()}, "
                                 f"which is not a graph input, a constant or a variable and no earlier node writes")
        try:
            with np.errstate(all="ignore"):  # IEEE arithmetic, as LiteRT's: NaN / inf in, NaN / inf out, no warnings
                result = kernel(node, args)
        except (ArithmeticError, AttributeError, IndexError, KeyError, TypeError, ValueError,
                MemoryError) as e:
            if isinstance(e, TeflonError):
                raise
            # a kernel meeting inputs that break its op's rules in a way the op layer does not
            # check yet (declared shapes that do not fit together): the node and shapes named
            shapes = ", ".join("none" if a is None else f"{list(np.shape(a))} {np.asarray(a).dtype}" for a in args)
            raise ModelError(f"{self._where()}{node.op.describe()} cannot run on its inputs ({shapes}): "
                             f"{type(e).__name__}: {e}") from e
        outs = result if isinstance(result, (list, tuple)) else [result]
        for t, value in zip(node.outputs, outs):
            if value.dtype != t.dtype:
                raise ModelError(f"{self._where()}{node.op.describe()}: computes {value.dtype} for {t.describe()}, "
                                 f"which the model declares {t.dtype}")
            self.values[t.index] = value

    def _where(self) -> str:
        source = f"{self.model.source}: " if self.model.source else ""
        return f"{source}subgraph {self.graph.index} " if self.graph.index else source

    def _run_partition(self, step: _PartitionStep, observer: RunObserver | None = None) -> None:
        if step.compiled is not None:
            start = time.perf_counter_ns() if observer is not None else 0
            inputs = [self.values[i] for i in step.compiled.inputs]
            for i, value in zip(step.compiled.inputs, inputs):
                if value is None:
                    raise ModelError(f"{self._where()}{step.delegate.name} partition {step.partition.index} reads "
                                     f"{self.graph.tensors[i].describe()}, which is not a graph input, a constant "
                                     f"or a variable and no earlier node writes")
            try:
                outs = step.compiled.invoke(inputs) if observer is None else observer.invoke(step.compiled, inputs)
            except (BackendError, UnsupportedError) as e:
                if fallback_policy(getattr(step.delegate, "fallback", None)) == "error":
                    raise
                self._partition_fallback(step, f"failed to run ({e})")
                step.compiled = None
                self._hidden = None  # its tensors are the host's from now on
                p = step.partition
                self._fell_back(Fallback(step.delegate.name, "run", p.index, tuple(p.nodes), str(e)))
                for i in step.partition.nodes:
                    self.placements[i] = Placement("numpy", None, f"{step.delegate.name} run failed")
            else:
                for i, value in zip(step.compiled.outputs, outs):
                    self.values[i] = value
                if observer is not None:
                    observer.step(StepRecord(self, None, step.delegate.name, step.partition.index,
                                             start, time.perf_counter_ns()))
                return
        for node, kernel in self._partition_fallback(step, "failed"):
            if observer is None:
                self._run_node(node, kernel)
            else:
                self._observe_node(node, kernel, observer)

    @property
    def resources(self) -> dict[int, Any]:
        """The interpreter-wide resource store (resource id -> value), shared by all subgraphs."""
        return self.state.resources

    def run_subgraph(self, index: int, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run subgraph ``index`` of the model on NumPy (WHILE, IF, CALL_ONCE); its outputs."""
        return self.state.run(index, inputs)

    def reset_variables(self) -> None:
        """LiteRT's ResetVariableTensor on every variable tensor: zero bytes; int8 gets its zero point."""
        for t in self.graph.tensors:
            if not t.is_variable:
                continue
            fill = t.zero_point if t.dtype == np.int8 else 0
            current = self.values[t.index]
            if current is not None and current.flags.writeable and current.shape == t.shape:
                current.fill(fill)  # keeps views handed out by Interpreter.tensor() valid
            else:
                self.values[t.index] = np.full(t.shape, fill, t.dtype)

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
        if self._owns_state:
            self.state.close()
