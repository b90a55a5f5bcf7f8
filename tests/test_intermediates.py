"""Intermediates are real or refused: after ``invoke`` a tensor that a delegate's partition keeps to
itself is LiteRT's "Tensor data is null" ValueError (never stale zeros), and with
``experimental_preserve_all_tensors=True`` every tensor is read back and equals the NumPy backend's.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter

import teflon_py
from teflon_py import ir, zoo
from teflon_py.delegate import CompiledPartition
from teflon_py.errors import BackendError, FallbackWarning
from teflon_py.tflite.builder import ModelBuilder
from tests.echo_delegate import EchoDelegate

F32 = np.float32


@pytest.fixture(scope="module")
def small_v2() -> bytes:
    return zoo.build("mobilenet_v2", input_size=32, alpha=0.35, num_classes=10)


def _input(it: Any) -> np.ndarray:
    d = it.get_input_details()[0]
    rng = np.random.default_rng(7)
    if np.dtype(d["dtype"]).kind == "f":
        return rng.uniform(-1, 1, d["shape"]).astype(d["dtype"])
    info = np.iinfo(d["dtype"])
    return rng.integers(info.min, info.max, d["shape"], endpoint=True).astype(d["dtype"])


def _invoked(model: bytes, delegates: Sequence[Any] = (), **kwargs: Any) -> teflon_py.Interpreter:
    it = teflon_py.Interpreter(model_content=model, experimental_delegates=list(delegates), **kwargs)
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], _input(it))
    it.invoke()
    return it


def _produced(it: teflon_py.Interpreter) -> set[int]:
    return {t for op in it.graph.operations for t in op.outputs if t != ir.NO_TENSOR}


def _rel_l2(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64), b.astype(np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


@pytest.mark.model
@pytest.mark.parametrize(("dtype", "zero_copy"), [("float32", True), ("int8", True), ("float32", False)])
def test_preserve_all_tensors_reads_every_tensor_back_from_the_device(device, monkeypatch: pytest.MonkeyPatch,
                                                                     dtype: str, zero_copy: bool) -> None:
    """MobileNetV2 as one OpenCL partition: each of its tensors equals the NumPy backend's (int8
    bit-exact, float within relative L2 1e-4), none is left as zeros; also where device buffers
    are not host memory (a GPU's), so each tensor is copied back after the run."""
    from teflon_py.opencl.runtime.device import DeviceContext

    if not zero_copy:
        monkeypatch.setattr(DeviceContext, "zero_copy", property(lambda self: False))
    model = zoo.build("mobilenet_v2", dtype=dtype, input_size=32, alpha=0.35, num_classes=10)
    ours = _invoked(model, [teflon_py.load_delegate("opencl")], experimental_preserve_all_tensors=True)
    assert {p.backend for p in ours.placements()} == {"opencl"}
    ref = _invoked(model)
    produced = _produced(ours)
    assert len(produced) > 60
    for t in ours.get_tensor_details():
        got, want = ours.get_tensor(t["index"]), ref.get_tensor(t["index"])
        assert got.dtype == want.dtype and got.shape == want.shape, t["name"]
        if dtype == "int8" or got.dtype.kind != "f":
            np.testing.assert_array_equal(got, want, err_msg=t["name"])
        else:
            assert _rel_l2(got, want) <= 1e-4, t["name"]
        if t["index"] in produced and want.any():
            assert got.any(), f"{t['name']} read back as zeros"


@pytest.mark.model
def test_without_preserve_a_partition_intermediate_is_refused_as_litert_does(device, small_v2: bytes) -> None:
    """Exactly the tensors the partition keeps to itself raise ValueError, through get_tensor and
    tensor(); LiteRT refuses its XNNPACK delegate's intermediates with a ValueError too."""
    it = _invoked(small_v2, [teflon_py.load_delegate("opencl")])
    outputs = set(it.graph.outputs)
    hidden = _produced(it) - outputs
    assert hidden
    for t in it.get_tensor_details():
        i = t["index"]
        if i in hidden:
            with pytest.raises(ValueError, match=r"intermediate of opencl partition 0.*experimental_preserve_all_tensors"):
                it.get_tensor(i)
            with pytest.raises(ValueError, match="Tensor data is null"):
                it.tensor(i)()
        else:
            it.get_tensor(i)  # inputs, constants, outputs
    out = it.get_output_details()[0]["index"]
    assert it.get_tensor(out).any()

    lite = LiteRTInterpreter(model_content=small_v2)  # default resolver: XNNPACK claims the graph
    lite.allocate_tensors()
    lite.set_tensor(lite.get_input_details()[0]["index"], _input(lite))
    lite.invoke()
    refused = []
    for i in sorted(hidden):
        try:
            lite.get_tensor(i)
        except ValueError as e:
            refused.append(str(e))
    assert refused and all("Tensor data is null" in m for m in refused)


def chain_model() -> bytes:
    """x -> ADD(x, x) = a -> MUL(a, x) = b -> SUB(b, x) = y: a and b are intermediates."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (2, 3), F32)
    a = g.add_tensor("a", (2, 3), F32)
    b = g.add_tensor("b", (2, 3), F32)
    y = g.add_tensor("y", (2, 3), F32)
    g.add_op("ADD", [x, x], [a])
    g.add_op("MUL", [a, x], [b])
    g.add_op("SUB", [b, x], [y])
    g.mark_outputs(y)
    return mb.build()


def test_preserve_all_tensors_asks_any_delegate_for_every_tensor() -> None:
    """The contract is the executor's, not OpenCL's: a partition is compiled with every tensor it
    produces among its outputs, so the echo backend's intermediates are readable too."""
    model = chain_model()
    echo = EchoDelegate(["ADD", "MUL", "SUB"])
    it = _invoked(model, [echo])
    with pytest.raises(ValueError, match="intermediate of echo partition 0"):
        it.get_tensor(1)
    preserved = _invoked(model, [EchoDelegate(["ADD", "MUL", "SUB"])], experimental_preserve_all_tensors=True)
    ref = _invoked(model)
    for i in range(4):
        np.testing.assert_array_equal(preserved.get_tensor(i), ref.get_tensor(i))
    assert preserved.preserve_all_tensors and not it.preserve_all_tensors


def test_a_partition_that_fell_back_has_its_intermediates_on_the_host(lenient) -> None:
    """Once a partition fails to run and its nodes run on NumPy, its tensors are the host's."""
    class Flaky(EchoDelegate):
        def compile(self, graph: ir.Graph, partition: Any) -> CompiledPartition:
            compiled = super().compile(graph, partition)

            def fail(inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
                raise BackendError("flaky")

            compiled.invoke = fail  # type: ignore[method-assign]
            return compiled

    model = chain_model()
    it = teflon_py.Interpreter(model_content=model, experimental_delegates=[Flaky(["ADD", "MUL", "SUB"])])
    it.allocate_tensors()
    with pytest.raises(ValueError, match="intermediate of echo partition 0"):
        it.get_tensor(2)
    it.set_tensor(0, np.arange(6, dtype=F32).reshape(2, 3))
    with pytest.warns(FallbackWarning, match="failed to run"):
        it.invoke()
    x = np.arange(6, dtype=F32).reshape(2, 3)
    np.testing.assert_array_equal(it.get_tensor(2), (x + x) * x)
