"""GraphExecutor planning and running: NumPy fallback kernels of delegated nodes are looked up only
when their partition fails (a delegate may run ops the fallback lacks), and ``run(observer)``
reports each step it takes."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

import teflon_py
from teflon_py import ir
from teflon_py.delegate import CompiledPartition, Delegate, Verdict
from teflon_py.errors import BackendError, UnsupportedError
from teflon_py.executor import RunObserver, StepRecord
from teflon_py.tflite.builder import ModelBuilder
from tests.echo_delegate import EchoDelegate

DEVICE_OP = "TeflonTestDeviceOnly"  # a custom op with no NumPy kernel
F32 = np.float32


class DeviceOnlyDelegate(Delegate):
    """Claims DEVICE_OP (y = 2x) and computes it itself; ``fail`` makes build or run raise."""

    name = "device-only"

    def __init__(self, fail: str | None = None):
        self.fail = fail

    def check(self, graph: ir.Graph, op: ir.Operation) -> Verdict:
        return Verdict.ok() if op.name == DEVICE_OP else Verdict.no(f"runs only {DEVICE_OP}")

    def compile(self, graph: ir.Graph, partition: Any) -> CompiledPartition:
        if self.fail == "build":
            raise BackendError("test build failure", partition=partition.index)
        return _Doubler(partition, self)


class _Doubler(CompiledPartition):
    def __init__(self, partition: Any, owner: DeviceOnlyDelegate):
        self.inputs, self.outputs, self.owner = tuple(partition.inputs), tuple(partition.outputs), owner

    def invoke(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        if self.owner.fail == "run":
            raise BackendError("test run failure")
        return [inputs[0] * F32(2)]


def device_op_model() -> bytes:
    """x -> DEVICE_OP -> ADD with x -> y: node 0 only a delegate runs, node 1 on NumPy."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (2, 3), F32)
    d = g.add_tensor("doubled", (2, 3), F32)
    y = g.add_tensor("y", (2, 3), F32)
    g.add_op("CUSTOM", [x], [d], custom_code=DEVICE_OP)
    g.add_op("ADD", [d, x], [y])
    g.mark_outputs(y)
    return mb.build()


def run(it: teflon_py.Interpreter, x: np.ndarray, observer: RunObserver | None = None) -> np.ndarray:
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke(observer)
    return it.get_tensor(it.get_output_details()[0]["index"])


X = np.arange(6, dtype=F32).reshape(2, 3)


def test_delegate_runs_an_op_the_fallback_lacks() -> None:
    """Planning does not ask the NumPy registry for kernels of delegated nodes."""
    it = teflon_py.Interpreter(model_content=device_op_model(), experimental_delegates=[DeviceOnlyDelegate()])
    it.allocate_tensors()
    assert [p.backend for p in it.placements()] == ["device-only", "numpy"]
    np.testing.assert_array_equal(run(it, X), X * 3)


def test_run_failure_without_fallback_names_node_and_op(lenient) -> None:
    """A partition that fails at run time and has no NumPy kernel is an UnsupportedError naming the
    node, the op and the run failure."""
    it = teflon_py.Interpreter(model_content=device_op_model(),
                               experimental_delegates=[DeviceOnlyDelegate(fail="run")])
    it.allocate_tensors()
    with pytest.raises(UnsupportedError, match=rf"failed to run \(test run failure\).*node 0 \({DEVICE_OP}\)"
                       r".*no NumPy fallback") as info:
        run(it, X)
    assert info.value.node == 0 and info.value.op == DEVICE_OP


def test_build_failure_without_fallback_fails_at_allocate(lenient) -> None:
    it = teflon_py.Interpreter(model_content=device_op_model(),
                               experimental_delegates=[DeviceOnlyDelegate(fail="build")])
    with pytest.raises(UnsupportedError, match=rf"failed to build \(test build failure\).*node 0 \({DEVICE_OP}\)"
                       r".*no NumPy fallback") as info:
        it.allocate_tensors()
    assert info.value.node == 0 and info.value.op == DEVICE_OP


def test_strict_mode_raises_backend_failures_instead_of_falling_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """TEFLON_STRICT=1: a partition that fails to build or run raises the backend's own error."""
    monkeypatch.setenv("TEFLON_STRICT", "1")
    it = teflon_py.Interpreter(model_content=device_op_model(),
                               experimental_delegates=[DeviceOnlyDelegate(fail="build")])
    with pytest.raises(BackendError, match="test build failure"):
        it.allocate_tensors()
    it = teflon_py.Interpreter(model_content=device_op_model(),
                               experimental_delegates=[DeviceOnlyDelegate(fail="run")])
    it.allocate_tensors()
    with pytest.raises(BackendError, match="test run failure"):
        run(it, X)


def test_unclaimed_unknown_op_still_fails_at_allocate() -> None:
    it = teflon_py.Interpreter(model_content=device_op_model(), experimental_delegates=[EchoDelegate(["ADD"])])
    with pytest.raises(UnsupportedError, match=rf"node 0 \({DEVICE_OP}\).*no NumPy fallback"):
        it.allocate_tensors()


class Recorder(RunObserver):
    def __init__(self) -> None:
        self.records: list[StepRecord] = []
        self.invoked = 0

    def invoke(self, compiled: CompiledPartition, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        self.invoked += 1
        return super().invoke(compiled, inputs)

    def step(self, record: StepRecord) -> None:
        self.records.append(record)


def test_observer_sees_nodes_and_partitions() -> None:
    """A delegated partition is one record (its delegate and index), a NumPy node one with its op."""
    it = teflon_py.Interpreter(model_content=device_op_model(), experimental_delegates=[DeviceOnlyDelegate()])
    it.allocate_tensors()
    seen = Recorder()
    np.testing.assert_array_equal(run(it, X, seen), X * 3)
    assert seen.invoked == 1
    assert [(r.op.name if r.op else None, r.delegate, r.partition) for r in seen.records] == [
        (None, "device-only", 0), ("ADD", None, None)]
    assert all(0 < r.start_ns <= r.end_ns for r in seen.records)


def test_observer_sees_fallback_nodes_of_a_failed_partition(lenient) -> None:
    """After a run failure the partition's nodes run on NumPy (kernels built then), one record each."""
    class Flaky(EchoDelegate):
        def compile(self, graph: ir.Graph, partition: Any) -> CompiledPartition:
            compiled = super().compile(graph, partition)
            compiled.invoke = _raise  # type: ignore[method-assign]
            return compiled

    def _raise(inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        raise BackendError("flaky")

    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (2, 3), F32)
    a = g.add_tensor("a", (2, 3), F32)
    y = g.add_tensor("y", (2, 3), F32)
    g.add_op("ADD", [x, x], [a])
    g.add_op("MUL", [a, x], [y])
    g.mark_outputs(y)
    it = teflon_py.Interpreter(model_content=mb.build(), experimental_delegates=[Flaky(["ADD", "MUL"])])
    it.allocate_tensors()
    seen = Recorder()
    with pytest.warns(RuntimeWarning, match="echo partition 0 failed to run"):
        out = run(it, X, seen)
    np.testing.assert_array_equal(out, (X + X) * X)
    assert [r.op.name for r in seen.records] == ["ADD", "MUL"] and seen.invoked == 1
    assert [p.backend for p in it.placements()] == ["numpy", "numpy"]
    np.testing.assert_array_equal(run(it, X), (X + X) * X)  # stays on NumPy, no observer needed
