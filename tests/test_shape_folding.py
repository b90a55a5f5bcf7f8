"""Shape arithmetic folded at plan time (``teflon_py.shape_folding``): a squeeze-excite block as Keras
converts it (MEAN, SHAPE, STRIDED_SLICE, PACK, RESHAPE, MUL) runs as one delegate partition, the
numbers stay LiteRT's, and an input resize re-plans with the new shape."""
from __future__ import annotations

import numpy as np
import pytest

import teflon_py
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import ModelBuilder
from tests.harness import check_model

F32 = np.float32
SHAPE_OPS = ("SHAPE", "STRIDED_SLICE", "PACK")


def squeeze_excite(channels: int = 8) -> bytes:
    """x * reshape(mean(x), [batch of shape(mean), 1, 1, C]): the batch read at run time."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 6, 5, channels), F32)
    axes = g.add_constant("axes", np.array([1, 2], np.int32))
    m = g.add_tensor("mean", (1, channels), F32)
    g.add_op("MEAN", [x, axes], [m], O.ReducerOptions(keep_dims=False))
    s = g.add_tensor("shape", (2,), np.int32)
    g.add_op("SHAPE", [m], [s], O.ShapeOptions(out_type=2))  # TensorType INT32
    begin, end, step = (g.add_constant(n, np.array([v], np.int32)) for n, v in (("b", 0), ("e", 1), ("s", 1)))
    batch = g.add_tensor("batch", (), np.int32)
    g.add_op("STRIDED_SLICE", [s, begin, end, step], [batch], O.StridedSliceOptions(shrink_axis_mask=1))
    one = g.add_constant("one", np.array(1, np.int32))
    c = g.add_constant("c", np.array(channels, np.int32))
    target = g.add_tensor("target", (4,), np.int32)
    g.add_op("PACK", [batch, one, one, c], [target], O.PackOptions(values_count=4, axis=0))
    r = g.add_tensor("gate", (1, 1, 1, channels), F32)
    g.add_op("RESHAPE", [m, target], [r])
    y = g.add_tensor("y", (1, 6, 5, channels), F32)
    g.add_op("MUL", [x, r], [y], O.MulOptions())
    g.mark_outputs(y)
    return mb.build()


def test_squeeze_excite_is_one_partition_with_its_shape_ops_folded() -> None:
    """The shape ops become constants when the graph is planned; the delegate claims them at no
    cost (nothing to launch), so the block is one partition with every node on OpenCL."""
    pytest.importorskip("pyopencl")
    it = check_model(squeeze_excite(), "opencl")
    placements = it.placements()
    assert [p.backend for p in placements] == ["opencl"] * len(placements)
    assert len(it.partitions()) == 1
    executor = it._runnable(0)
    for op in executor.graph.operations:
        assert executor.graph.tensors[op.outputs[0]].is_constant == (op.name in SHAPE_OPS), op.describe()
    (step,) = [s for s in executor.steps if getattr(s, "compiled", None) is not None]
    assert step.compiled.stats["launches"] == 2  # MEAN and MUL (the RESHAPE is an alias): no shape op


@pytest.mark.parametrize("backend", ["numpy", "opencl"])
def test_a_resize_refolds_the_shape(backend: str) -> None:
    if backend == "opencl":
        pytest.importorskip("pyopencl")
    delegates = [teflon_py.load_delegate("opencl")] if backend == "opencl" else []
    it = teflon_py.Interpreter(model_content=squeeze_excite(), experimental_delegates=delegates)
    it.allocate_tensors()
    for batch in (3, 1):
        it.resize_tensor_input(it.get_input_details()[0]["index"], [batch, 6, 5, 8])
        it.allocate_tensors()
        x = np.random.default_rng(batch).standard_normal((batch, 6, 5, 8)).astype(F32)
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        y = it.get_tensor(it.get_output_details()[0]["index"])
        expected = x * x.mean(axis=(1, 2), dtype=np.float64).astype(F32)[:, None, None, :]
        assert y.shape == (batch, 6, 5, 8)
        np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-6)


def test_shapes_only_a_run_knows_are_not_folded() -> None:
    """SHAPE of a tensor whose shape depends on values (here: a RESHAPE to a runtime shape) stays a
    run-time node."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (6,), F32)
    shape_in = g.add_input("new_shape", (2,), np.int32)
    r = g.add_tensor("r", (2, 3), F32)
    g.add_op("RESHAPE", [x, shape_in], [r])
    s = g.add_tensor("s", (2,), np.int32)
    g.add_op("SHAPE", [r], [s], O.ShapeOptions(out_type=2))
    g.mark_outputs(s)
    it = teflon_py.Interpreter(model_content=mb.build())
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], np.arange(6, dtype=F32))
    it.set_tensor(it.get_input_details()[1]["index"], np.array([3, 2], np.int32))
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(it.get_output_details()[0]["index"]), [3, 2])
    assert it.placements()[1].reason != "folded into a constant at load time"
