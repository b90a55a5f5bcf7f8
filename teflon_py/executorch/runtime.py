"""ExecuTorch programs behind ``executorch.runtime``'s API, on teflon-py's backends.

    from teflon_py.executorch import Runtime
    program = Runtime.get().load_program("model.pte",
                                         experimental_delegates=[teflon_py.load_delegate("opencl")])
    method = program.load_method("forward")
    outputs = method.execute([x])          # NumPy arrays in, NumPy arrays out

A method runs its instruction chain in order. Each XNNPACK delegate call is translated to the op
layer once (``xnnpack.translate``) and runs as a graph of its own through the partitioner: the
delegates given to ``load_program`` claim what they support, the rest runs on NumPy (no
delegates: all NumPy). Kernel calls run ExecuTorch's portable operators in NumPy (``portable``).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.delegate import Delegate
from teflon_py.errors import ModelError, UnsupportedError
from teflon_py.executor import Fallback, GraphExecutor, Placement
from teflon_py.executorch import portable
from teflon_py.executorch.program import DelegateCall, KernelCall, Program, TensorValue, read_program
from teflon_py.executorch.xnnpack.payload import read_payload
from teflon_py.executorch.xnnpack.translate import DelegateGraph, translate

XNNPACK_BACKEND = "XnnpackBackend"


@dataclass(frozen=True)
class TensorInfo:
    """A method input's or output's metadata (``executorch.runtime``'s TensorInfo)."""

    shape: tuple[int, ...]
    dtype: np.dtype

    def sizes(self) -> tuple[int, ...]:
        return self.shape


@dataclass(frozen=True)
class MethodMeta:
    """``method.metadata``, as ``executorch.runtime``'s MethodMeta."""

    name: str
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]

    def num_inputs(self) -> int:
        return len(self.inputs)

    def num_outputs(self) -> int:
        return len(self.outputs)

    def input_tensor_meta(self, index: int) -> TensorInfo:
        return self.inputs[index]

    def output_tensor_meta(self, index: int) -> TensorInfo:
        return self.outputs[index]


class Runtime:
    """The entry point, as ``executorch.runtime.Runtime``: ``Runtime.get().load_program(...)``."""

    _instance: Runtime | None = None

    @classmethod
    def get(cls) -> Runtime:
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def load_program(self, data: str | os.PathLike | bytes | bytearray | memoryview,
                     experimental_delegates: Sequence[Delegate] = (), verification: Any = None) -> LoadedProgram:
        """Read a ``.pte`` (path or bytes); ``experimental_delegates`` run its delegate graphs."""
        return LoadedProgram(read_program(data), list(experimental_delegates))


class LoadedProgram:
    def __init__(self, program: Program, delegates: list[Delegate]):
        self.program = program
        self.delegates = delegates
        self._methods: dict[str, Method] = {}

    @property
    def method_names(self) -> set[str]:
        return set(self.program.methods)

    def load_method(self, name: str) -> Method:
        if name not in self.program.methods:
            raise ModelError(f"{self.program.source}: no method '{name}' (methods: "
                             f"{', '.join(sorted(self.program.methods))})")
        if name not in self._methods:
            self._methods[name] = Method(self.program, name, self.delegates)
        return self._methods[name]


@dataclass
class _DelegateStep:
    call: DelegateCall
    graph: DelegateGraph
    executor: GraphExecutor
    label: str


class Method:
    """One loaded method: its delegate graphs translated and planned, ready to ``execute``."""

    def __init__(self, program: Program, name: str, delegates: list[Delegate]):
        self.program = program
        self.name = name
        self.plan = program.methods[name]
        self.delegates = list(delegates)
        self.steps: list[_DelegateStep | KernelCall] = []
        translated: dict[int, DelegateGraph] = {}
        for k, ins in enumerate(self.plan.instructions):
            label = f"{program.source}: method '{name}': instruction {k}"
            if isinstance(ins, KernelCall):
                if ins.name not in portable.KERNELS and ins.operator not in portable.KERNELS:
                    raise UnsupportedError(f"{label}: portable operator {ins.name} is not implemented in teflon-py")
                self.steps.append(ins)
                continue
            if ins.backend != XNNPACK_BACKEND:
                raise UnsupportedError(f"{label}: delegate backend {ins.backend} is not supported "
                                       f"(only {XNNPACK_BACKEND} payloads)")
            what = f"{program.source}: method '{name}': delegate {ins.delegate}"
            if ins.delegate not in translated:
                xg = read_payload(self.plan.payloads[ins.delegate], program.named_data, what)
                translated[ins.delegate] = translate(xg, what)
            dg = translated[ins.delegate]
            for j in (*dg.input_args, *dg.output_args):
                if j >= len(ins.args):
                    raise ModelError(f"{label}: the payload binds external id {j}, the call passes "
                                     f"{len(ins.args)} arguments")
            self._check_bindings(dg, ins, label)
            model = ir.Model([dg.graph], source=what)
            self.steps.append(_DelegateStep(ins, dg, GraphExecutor(model, dg.graph, delegates), label))

    def _check_bindings(self, dg: DelegateGraph, call: DelegateCall, label: str) -> None:
        for tensors, args in ((dg.graph.inputs, dg.input_args), (dg.graph.outputs, dg.output_args)):
            for t, j in zip(tensors, args):
                value = self.plan.values[call.args[j]]
                graph_t = dg.graph.tensors[t]
                if not isinstance(value.value, TensorValue):
                    raise ModelError(f"{label}: argument {j} (value {call.args[j]}) is a {value.kind}, "
                                     "the payload expects a tensor")
                if int(np.prod(value.value.sizes)) != int(np.prod(graph_t.shape)):
                    raise ModelError(f"{label}: argument {j} (value {call.args[j]}) is "
                                     f"{list(value.value.sizes)}, the payload's {graph_t.name} is "
                                     f"{list(graph_t.shape)}")

    # -- metadata ----------------------------------------------------------------------------------

    def _info(self, index: int) -> TensorInfo:
        v = self.plan.values[index].value
        if isinstance(v, TensorValue):
            return TensorInfo(v.sizes, v.dtype)
        return TensorInfo((), np.dtype(object))

    @property
    def inputs(self) -> list[TensorInfo]:
        return [self._info(i) for i in self.plan.inputs]

    @property
    def outputs(self) -> list[TensorInfo]:
        return [self._info(i) for i in self.plan.outputs]

    @property
    def metadata(self) -> MethodMeta:
        return MethodMeta(self.name, tuple(self.inputs), tuple(self.outputs))

    def node_placements(self) -> list[tuple[str, ir.Graph, ir.Operation, Placement]]:
        """Per op of every delegate graph, in chain order: (label naming the delegate call and
        its xnode, the op-layer graph, the op, where it runs and why)."""
        rows = []
        for step in self.steps:
            if isinstance(step, _DelegateStep):
                for op, p in zip(step.graph.graph.operations, step.executor.placements):
                    node = step.graph.nodes[step.graph.sources[op.index]]
                    rows.append((f"delegate {step.call.delegate}: {node.describe()} -> {op.name}",
                                 step.graph.graph, op, p))
        return rows

    def fallbacks(self) -> list[Fallback]:
        """Every fallback to NumPy a delegate's failure caused in this method's delegate graphs
        (no usable device, a partition that failed to build or to run), in chain order."""
        return [f for step in self.steps if isinstance(step, _DelegateStep) for f in step.executor.fallbacks]

    def devices(self) -> dict[str, str]:
        """{delegate name: its device and driver} for each delegate that runs an op of the method."""
        running = {p.backend for step in self.steps if isinstance(step, _DelegateStep)
                   for p in step.executor.placements}
        return {d.name: desc for d in self.delegates
                if d.name in running and (desc := d.device_description()) is not None}

    # -- running ----------------------------------------------------------------------------------

    def execute(self, inputs: Sequence[Any]) -> list[np.ndarray]:
        """Run the method on ``inputs`` (arrays, in the method's input order); its outputs."""
        plan = self.plan
        where = f"{self.program.source}: method '{self.name}'"
        if len(inputs) != len(plan.inputs):
            raise ModelError(f"{where}: takes {len(plan.inputs)} inputs, got {len(inputs)}")
        values: list[Any] = [self._initial(v) for v in plan.values]
        for k, (index, x) in enumerate(zip(plan.inputs, inputs)):
            spec = plan.values[index].value
            if isinstance(spec, TensorValue):
                arr = np.asarray(x)
                if arr.dtype != spec.dtype or tuple(arr.shape) != spec.sizes:
                    raise ModelError(f"{where}: input {k} must be {spec.dtype} {list(spec.sizes)}, got "
                                     f"{arr.dtype} {list(arr.shape)}")
                values[index] = np.ascontiguousarray(arr)
            else:
                values[index] = x
        for step in self.steps:
            if isinstance(step, KernelCall):
                portable.run_kernel(step, plan.values, values, f"{where}: {step.name}")
            else:
                self._run_delegate(step, values)
        outs = []
        for k, index in enumerate(plan.outputs):
            if values[index] is None:
                raise ModelError(f"{where}: output {k} (value {index}) was never computed")
            outs.append(values[index])
        return outs

    @staticmethod
    def _initial(v: Any) -> Any:
        if isinstance(v.value, TensorValue):
            return v.value.data
        return v.value

    def _run_delegate(self, step: _DelegateStep, values: list[Any]) -> None:
        graph, ex, args = step.graph.graph, step.executor, step.call.args
        for t, j in zip(graph.inputs, step.graph.input_args):
            x = values[args[j]]
            if not isinstance(x, np.ndarray):
                raise ModelError(f"{step.label}: argument {j} (value {args[j]}) has not been computed")
            tensor = graph.tensors[t]
            if x.dtype != tensor.dtype:
                raise ModelError(f"{step.label}: argument {j} is {x.dtype}, the payload's {tensor.name} "
                                 f"is {tensor.dtype}")
            order = self.plan.values[args[j]].value.dim_order
            if x.size != _elements(tensor.shape) or (order and sorted(order) != list(range(x.ndim))):
                raise ModelError(f"{step.label}: argument {j} of shape {list(x.shape)} (dim order {list(order)}) "
                                 f"does not fit the payload's {tensor.name} of shape {list(tensor.shape)}")
            memory = x.transpose(order) if order else x  # the payload sees the memory order
            ex.values[t] = np.ascontiguousarray(memory).reshape(tensor.shape)
        ex.run()
        for t, j in zip(graph.outputs, step.graph.output_args):
            spec = self.plan.values[args[j]].value
            order = spec.dim_order
            y = np.asarray(ex.values[t])
            if y.size != _elements(spec.sizes) or (order and sorted(order) != list(range(len(spec.sizes)))):
                raise ModelError(f"{step.label}: the payload's {graph.tensors[t].name} of shape {list(y.shape)} "
                                 f"does not fit argument {j} of sizes {list(spec.sizes)} "
                                 f"(dim order {list(order)})")
            if order:
                physical = np.asarray(ex.values[t]).reshape([spec.sizes[d] for d in order])
                values[args[j]] = np.ascontiguousarray(physical.transpose(np.argsort(order)))
            else:
                values[args[j]] = np.ascontiguousarray(ex.values[t]).reshape(spec.sizes)


def _elements(shape: Sequence[int]) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n
