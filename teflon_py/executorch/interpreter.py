"""A ``.pte`` method behind the Interpreter calls ``teflon-py run``, ``inspect`` and ``bench``
make (``allocate_tensors``, input/output details, ``set_tensor``, ``invoke``, ``get_tensor``),
and its placement as rows: one per XNode of every delegate call and one per kernel call."""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from teflon_py.delegate import Delegate
from teflon_py.executor import Fallback
from teflon_py.executorch.program import KernelCall
from teflon_py.executorch.runtime import Method, Runtime, _DelegateStep
from teflon_py.plan_report import describe_tensor, tensor_info


def _describe(t: Any) -> str:
    return f"{t.dtype.name}[{','.join(str(d) for d in t.sizes)}]"


def is_program(path: str | os.PathLike) -> bool:
    """Whether ``path`` holds an ExecuTorch program (identifier ET12), whatever its name."""
    try:
        with open(path, "rb") as f:
            return f.read(8)[4:8] == b"ET12"
    except OSError:
        return False


class ProgramInterpreter:
    def __init__(self, path: str, delegates: Sequence[Delegate] = (), method: str = "forward"):
        self.path = path
        self.program = Runtime.get().load_program(path, experimental_delegates=list(delegates))
        names = sorted(self.program.method_names)
        self.method_name = method if method in names else names[0]
        self.method: Method | None = None
        self._inputs: list[np.ndarray | None] = []
        self._outputs: list[np.ndarray] = []

    def allocate_tensors(self) -> None:
        self.method = self.program.load_method(self.method_name)
        self._inputs = [None] * len(self.method.inputs)

    def _details(self, infos: list[Any], kind: str) -> list[dict[str, Any]]:
        return [{"name": f"{kind}{k}", "index": k, "shape": np.array(info.shape, np.int32), "dtype": info.dtype,
                 "quantization_parameters": {"scales": np.zeros(0, np.float32),
                                             "zero_points": np.zeros(0, np.int32), "quantized_dimension": 0}}
                for k, info in enumerate(infos)]

    def get_input_details(self) -> list[dict[str, Any]]:
        assert self.method is not None, "call allocate_tensors() first"
        return self._details(self.method.inputs, "input")

    def get_output_details(self) -> list[dict[str, Any]]:
        assert self.method is not None, "call allocate_tensors() first"
        return [{**d, "index": len(self._inputs) + d["index"]} for d in self._details(self.method.outputs, "output")]

    def set_tensor(self, index: int, value: np.ndarray) -> None:
        self._inputs[index] = np.asarray(value)

    def invoke(self) -> None:
        assert self.method is not None, "call allocate_tensors() first"
        self._outputs = self.method.execute(self._inputs)

    def get_tensor(self, index: int) -> np.ndarray:
        return self._outputs[index - len(self._inputs)]

    # -- placement ---------------------------------------------------------------------------------

    def plan_rows(self) -> list[dict[str, Any]]:
        """One row per XNode (its ops' backend; "mixed" when they differ) and per kernel call."""
        assert self.method is not None, "call allocate_tensors() first"
        rows: list[dict[str, Any]] = []
        self._partitions: list[dict[str, Any]] = []
        for step in self.method.steps:
            if isinstance(step, KernelCall):
                values = self.method.plan.values
                args = [values[a].value for a in step.args if values[a].kind == "Tensor"]
                tensors = [_describe(t) for t in args]
                info = [{"tensor": None, "dtype": t.dtype.name, "shape": [int(d) for d in t.sizes]} for t in args]
                rows.append({"index": len(rows), "op": step.name, "inputs": tensors[:-1], "outputs": tensors[-1:],
                             "backend": "numpy", "partition": None, "reason": "portable operator",
                             "input_info": info[:-1], "output_info": info[-1:]})
                continue
            rows.extend(self._delegate_rows(step, len(rows)))
        return rows

    def _delegate_rows(self, step: _DelegateStep, first: int) -> list[dict[str, Any]]:
        dg, placements = step.graph, step.executor.placements
        by_node: dict[int, list[int]] = {}
        for op_index, node in enumerate(dg.sources):
            by_node.setdefault(node, []).append(op_index)
        base = len(self._partitions)
        for name, p in step.executor.partitions:
            self._partitions.append({"index": base + p.index, "backend": name, "nodes": [],
                                     **step.executor.partition_info.get(p.index, {})})
        rows = []
        for node in dg.nodes:
            ops_of = by_node.get(node.index, [])
            backends = {placements[i].backend for i in ops_of}
            parts = {placements[i].partition for i in ops_of}
            reasons = sorted({placements[i].reason for i in ops_of if placements[i].reason})
            graph = dg.graph
            first_op = graph.operations[ops_of[0]] if ops_of else None
            last_op = graph.operations[ops_of[-1]] if ops_of else None
            row = {"index": first + len(rows), "op": node.type,
                   "inputs": [describe_tensor(graph, i) for i in graph.operations[ops_of[0]].inputs] if ops_of else [],
                   "outputs": [describe_tensor(graph, i) for i in graph.operations[ops_of[-1]].outputs]
                   if ops_of else [],
                   "backend": backends.pop() if len(backends) == 1 else ("mixed" if backends else "none"),
                   "partition": None, "reason": "; ".join(reasons) or None,
                   "delegate_call": step.call.delegate,
                   "ops": [dg.graph.operations[i].name for i in ops_of],
                   "input_info": [tensor_info(graph, i) for i in first_op.inputs] if first_op else [],
                   "output_info": [tensor_info(graph, i) for i in last_op.outputs] if last_op else []}
            if len(parts) == 1 and None not in parts:
                row["partition"] = base + parts.pop()
                self._partitions[row["partition"]]["nodes"].append(row["index"])
            rows.append(row)
        return rows

    def fallbacks(self) -> list[Fallback]:
        """Every fallback to NumPy a delegate's failure caused in the method's delegate graphs."""
        assert self.method is not None, "call allocate_tensors() first"
        return self.method.fallbacks()

    def devices(self) -> dict[str, str]:
        """{delegate name: its device and driver} for each delegate that runs an op of the method."""
        assert self.method is not None, "call allocate_tensors() first"
        return self.method.devices()

    def partitions(self) -> list[dict[str, Any]]:
        if not hasattr(self, "_partitions"):
            self.plan_rows()
        return self._partitions
