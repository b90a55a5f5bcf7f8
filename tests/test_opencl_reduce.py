"""The OpenCL reductions beyond tests/ops: registry coverage, sizes the op grids do not reach
(long rows, MobileNet's global mean, many work-items), float sums bit-equal to the fallback's
sequential order, one shared program for every reduction, and the reasons for what stays unclaimed.
"""
from __future__ import annotations

import numpy as np
import pytest

import teflon_py
from teflon_py import partitioner
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import ModelBuilder
from teflon_py.tflite.reader import read_model
from tests.harness import check_model, run_teflon, single_op

pytest.importorskip("pyopencl")

F32 = np.float32
REDUCERS = ["SUM", "REDUCE_PROD", "REDUCE_MAX", "REDUCE_MIN"]


def test_registry_lowers_the_reductions() -> None:
    from teflon_py.opencl.lowerings import supported_ops

    assert {"MEAN", "SOFTMAX", "LOG_SOFTMAX", "CUMSUM", *REDUCERS} <= supported_ops("float32")
    for kind in ("int32", "int64"):
        assert {"CUMSUM", *REDUCERS} <= supported_ops(kind), kind
    assert {"REDUCE_ANY", "REDUCE_ALL"} <= supported_ops("bool")


def reduce_model(op: str, shape: tuple, axes: list, keep_dims: bool = False, dtype: type = F32) -> bytes:
    norm = {a % len(shape) for a in axes}
    out = tuple(1 if i in norm else d for i, d in enumerate(shape) if keep_dims or i not in norm)
    return single_op(op, [{"shape": shape, "dtype": dtype}, {"data": np.array(axes, np.int32)}],
                     [{"shape": out, "dtype": dtype}], O.ReducerOptions(keep_dims=keep_dims))


@pytest.mark.parametrize("op,shape,axes", [
    ("MEAN", (1, 7, 7, 1024), [1, 2]),  # MobileNet's global average pool: 16 work-items
    ("SUM", (1, 7, 7, 1024), [1, 2]),
    ("SUM", (3, 5000), [1]),  # long rows: one output per work-item
    ("SUM", (300, 40), [0]),  # a strided fold over the outer axis
    ("REDUCE_MAX", (2, 50, 3, 33), [0, 2]),
    ("REDUCE_MIN", (4, 1000), [0, 1]),  # every axis: seeded with the first element
], ids=lambda v: "x".join(map(str, v)) if isinstance(v, (tuple, list)) else v)
def test_float_reductions_match_the_fallback_bit_for_bit(device, op: str, shape: tuple, axes: list) -> None:
    """Each output folds its elements in row-major order, as LiteRT and the fallback do: same floats."""
    model = reduce_model(op, shape, axes)
    x = (np.random.default_rng(len(shape)).standard_normal(shape) * 10 + 3).astype(F32)
    it = check_model(model, "opencl", inputs=[x])
    assert [p.backend for p in it.placements()] == ["opencl"]
    (ours,), _ = run_teflon(model, [x], "opencl")
    (numpy,), _ = run_teflon(model, [x], "numpy")
    np.testing.assert_array_equal(ours, numpy)


@pytest.mark.parametrize("op", REDUCERS)
def test_int64_reductions_wrap(device, op: str) -> None:
    x = np.random.default_rng(1).integers(1 << 60, 1 << 62, (4, 9)).astype(np.int64)
    check_model(reduce_model(op, (4, 9), [1], dtype=np.int64), "opencl", inputs=[x])


@pytest.mark.parametrize("shape,axis,exclusive,reverse", [
    ((2, 2000), 1, False, False), ((2, 2000), 1, True, True), ((700, 3), 0, True, False), ((3, 40, 50), 1, False, True),
], ids=str)
def test_cumsum_long_axes(device, shape: tuple, axis: int, exclusive: bool, reverse: bool) -> None:
    model = single_op("CUMSUM", [{"shape": shape, "dtype": F32}, {"data": np.array(axis, np.int32)}],
                      [{"shape": shape, "dtype": F32}], O.CumsumOptions(exclusive=exclusive, reverse=reverse))
    x = (np.random.default_rng(2).standard_normal(shape) + 5).astype(F32)
    check_model(model, "opencl", inputs=[x])
    (ours,), _ = run_teflon(model, [x], "opencl")
    (numpy,), _ = run_teflon(model, [x], "numpy")
    np.testing.assert_array_equal(ours, numpy)


def test_cumsum_int64_wraps(device) -> None:
    x = np.random.default_rng(3).integers(1 << 61, 1 << 62, (3, 30)).astype(np.int64)
    model = single_op("CUMSUM", [{"shape": (3, 30), "dtype": np.int64}, {"data": np.array(-1, np.int32)}],
                      [{"shape": (3, 30), "dtype": np.int64}], O.CumsumOptions(exclusive=True))
    check_model(model, "opencl", inputs=[x])


def chain_model() -> bytes:
    """SUM -> LOG_SOFTMAX -> CUMSUM -> REDUCE_MAX, with a SOFTMAX and a MEAN on the side."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (2, 6, 5, 8), F32)
    s = g.add_tensor("sum", (2, 5, 8), F32)
    g.add_op("SUM", [x, g.add_constant("ax1", np.array([1], np.int32))], [s], O.ReducerOptions())
    ls = g.add_tensor("log_softmax", (2, 5, 8), F32)
    g.add_op("LOG_SOFTMAX", [s], [ls], O.LogSoftmaxOptions())
    cs = g.add_tensor("cumsum", (2, 5, 8), F32)
    g.add_op("CUMSUM", [ls, g.add_constant("ax", np.array(1, np.int32))], [cs], O.CumsumOptions(reverse=True))
    mx = g.add_tensor("max", (2, 1, 8), F32)
    g.add_op("REDUCE_MAX", [cs, g.add_constant("ax2", np.array([-2], np.int32))], [mx],
             O.ReducerOptions(keep_dims=True))
    sm = g.add_tensor("softmax", (2, 6, 5, 8), F32)
    g.add_op("SOFTMAX", [x], [sm], O.SoftmaxOptions(beta=0.5))
    mean = g.add_tensor("mean", (2, 8), F32)
    g.add_op("MEAN", [sm, g.add_constant("ax3", np.array([1, 2], np.int32))], [mean], O.ReducerOptions())
    g.mark_outputs(mx, mean)
    return mb.build()


def test_reductions_share_one_program(device) -> None:
    """Six reduction ops, one partition, every launch from the one size-generic reduce.cl program."""
    model = chain_model()
    it = check_model(model, "opencl")
    assert len(it.partitions()) == 1
    graph = read_model(model).main
    d = teflon_py.load_delegate("opencl")
    from teflon_py.opencl.compiled import Builder, OpEmitter
    from teflon_py.opencl.fusion import FusionPlan
    from teflon_py.opencl.lowerings import lowering_for

    b = Builder(graph, range(len(graph.operations)), FusionPlan())
    for op in graph.operations:
        b.current = op.index
        lowering_for(graph, op).emit(OpEmitter(b, op), op.attrs)
    assert len(b.launches) == 6
    assert {(la.spec.files, tuple(la.spec.defines.items())) for la in b.launches} == {(("common.cl", "reduce.cl"), ())}
    parts = partitioner.partition(graph, {op.index for op in graph.operations if d.check(graph, op)})
    assert len(parts) == 1


def _reason(model: bytes) -> str | None:
    graph = read_model(model).main
    return teflon_py.load_delegate("opencl").check(graph, graph.operations[0]).reason


def test_unclaimed_reductions_say_why() -> None:
    runtime_axes = single_op("SUM", [{"shape": (4, 6), "dtype": F32}, {"shape": (1,), "dtype": np.int32}],
                             [{"shape": (4,), "dtype": F32}], O.ReducerOptions())
    assert "must be a constant" in _reason(runtime_axes)
    bad_axis = single_op("CUMSUM", [{"shape": (4, 6), "dtype": F32}, {"data": np.array(2, np.int32)}],
                         [{"shape": (4, 6), "dtype": F32}], O.CumsumOptions())
    assert "out of range" in _reason(bad_axis)
    assert "rank 5" in _reason(reduce_model("REDUCE_MAX", (2, 3, 2, 2, 4), [1]))
