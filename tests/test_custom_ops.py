"""Custom ops in general: unknown ones fail at allocate_tensors, users can register their own,
and ``custom_options`` decodes the FlexBuffer map custom ops carry."""
from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pytest
from flatbuffers import flexbuffers

import teflon_py
from teflon_py import UnsupportedError
from teflon_py.fallback import KERNELS, Node
from teflon_py.fallback.custom_options import custom_options
from teflon_py.tflite.reader import read_model
from tests.harness import run_teflon, single_op

USER_OP = "TeflonTestScaleShift"


def custom_model(code: str, opts: bytes | None = None) -> bytes:
    return single_op("CUSTOM", [{"shape": (2, 3), "dtype": np.float32}], [{"shape": (2, 3), "dtype": np.float32}],
                     custom_code=code, custom_options=opts)


def interpreter(model: bytes, backend: str) -> teflon_py.Interpreter:
    delegates = [] if backend == "numpy" else [teflon_py.load_delegate(backend)]
    return teflon_py.Interpreter(model_content=model, experimental_delegates=delegates)


def test_unknown_custom_op_fails_at_allocate(backend: str) -> None:
    """Loading works; allocate_tensors (planning), not invoke, raises an UnsupportedError that
    names the op, the node and how to provide a kernel."""
    it = interpreter(custom_model("NoSuchCustomOp"), backend)
    with pytest.raises(UnsupportedError, match=r"node 0 \(NoSuchCustomOp\).*register_custom_op") as info:
        it.allocate_tensors()
    assert info.value.op == "NoSuchCustomOp" and info.value.node == 0


@pytest.fixture
def user_op() -> Iterator[str]:
    """A user kernel registered for the test, removed afterwards (the registry is global)."""
    def scale_shift(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
        opts = custom_options(node)
        return (inputs[0] * np.float32(opts["scale"]) + np.float32(opts.get("shift", 0.0))).astype(np.float32)

    teflon_py.register_custom_op(USER_OP, scale_shift)
    try:
        yield USER_OP
    finally:
        KERNELS.pop(USER_OP, None)


def test_register_custom_op_runs(backend: str, user_op: str) -> None:
    """A kernel registered with teflon_py.register_custom_op runs the op, reading its options."""
    model = custom_model(user_op, bytes(flexbuffers.Dumps({"scale": 2.5, "shift": -1.0})))
    x = np.random.default_rng(0).standard_normal((2, 3)).astype(np.float32)
    (y,), _ = run_teflon(model, [x], backend)
    np.testing.assert_array_equal(y, x * np.float32(2.5) - np.float32(1.0))


def _node(opts: bytes | None) -> Node:
    graph = read_model(custom_model("AnyOp", opts)).main
    return Node.of(graph, graph.operations[0])


def test_custom_options_decodes_flexbuffer_map() -> None:
    """Ints, floats, bools, strings and vectors come back as Python values; absent options read {}."""
    value = {"n": 3, "f": 0.5, "b": True, "s": "bilinear", "v": [4, 5]}
    assert custom_options(_node(bytes(flexbuffers.Dumps(value)))) == value
    assert custom_options(_node(None)) == {}


@pytest.mark.parametrize("raw", [b"\x00", bytes(flexbuffers.Dumps([1, 2]))], ids=["truncated", "not-a-map"])
def test_custom_options_rejects_non_maps(raw: bytes) -> None:
    """A blob that is not a FlexBuffer map is an UnsupportedError naming the node."""
    with pytest.raises(UnsupportedError, match=r"node 0 \(AnyOp\).*FlexBuffer"):
        custom_options(_node(raw))
