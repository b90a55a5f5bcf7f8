"""The OpenCL data-movement lowerings (ops_movement, ops_shape, ops_resize): registry coverage, the
pure planning helpers, and what the per-op conformance tests in tests/ops do not reach: copies of
more than five dimensions, long rows, chains of int8 movement ops in one partition, constant data
operands, requantizing copies left to NumPy, shared programs."""
from __future__ import annotations

import numpy as np
import pytest

import teflon_py
from teflon_py import ir
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import ModelBuilder, quantization
from teflon_py.tflite.reader import read_model
from tests.harness import check_model, run_teflon, single_op

pytest.importorskip("pyopencl")

#: op -> data kinds it is lowered for
MOVEMENT_KINDS = ("float32", "int32", "int8", "uint8", "bool", "int16", "int64")
LOWERED = {
    **{op: MOVEMENT_KINDS for op in (
        "SPLIT", "SPLIT_V", "PACK", "UNPACK", "TRANSPOSE", "PADV2", "MIRROR_PAD", "SLICE", "STRIDED_SLICE",
        "TILE", "GATHER", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH", "RESIZE_NEAREST_NEIGHBOR", "CONCATENATION",
        "PAD", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "REVERSE_V2", "BROADCAST_TO")},
    "ONE_HOT": ("int32", "int64"),  # selected by the indices' type; any output type
    "RESIZE_BILINEAR": ("float32", "uint8", "int8", "int16"),
}
I8 = quantization(0.05, -3)


@pytest.mark.parametrize("op", sorted(LOWERED))
def test_registry_lowers_every_movement_op(op: str) -> None:
    """Every type LiteRT computes the op for (RESIZE_NEAREST_NEIGHBOR: float32, uint8, int8, int16)."""
    from teflon_py.opencl.lowerings import supported_ops
    from teflon_py.opencl.lowerings.movement import NO_ORACLE

    kinds = ("float32", "uint8", "int8", "int16") if op == "RESIZE_NEAREST_NEIGHBOR" else LOWERED[op]
    missing = [kind for kind in kinds if op not in supported_ops(kind) and (op, kind) not in NO_ORACLE]
    assert not missing, f"{op} not lowered for {missing}"


# -- pure helpers --------------------------------------------------------------------------------


def test_collapse_merges_linear_neighbours_and_drops_unit_dims() -> None:
    from teflon_py.opencl.kernels.movement_plan import Copy, collapse, dense_strides, permute

    shape = (2, 3, 4, 5)
    assert collapse(Copy(shape, dense_strides(shape), dense_strides(shape))) == [(120, 1, 1)]
    # NHWC -> NCHW of a batch of one: H and W merge, N drops
    assert collapse(permute((1, 4, 5, 3), (0, 3, 1, 2))) == [(3, 1, 20), (20, 3, 1)]


def test_copies_of_more_than_five_dims_loop_on_the_host() -> None:
    from teflon_py.opencl.kernels.movement_plan import copy_specs, permute

    specs = copy_specs("u32", permute((2, 3, 2, 3, 2, 3), (5, 4, 3, 2, 1, 0)))
    assert len(specs) == 3  # the outermost of six unmergeable dims, one launch per index
    with pytest.raises(ValueError, match="launches"):
        copy_specs("u32", permute((3,) * 10, tuple(range(9, -1, -1))))


def test_fold_tables_merges_outer_axes_and_keeps_padding_negative() -> None:
    from teflon_py.opencl.kernels.movement_plan import PAD_MARK, fold_tables

    tables = [np.array([0, 100]), np.array([0, 10, PAD_MARK]), np.array([5]), np.array([0, 1000]),
              np.array([0, 2000]), np.array([0, 3]), np.array([0, 1, 2])]
    tabs, linear = fold_tables(tables)
    assert len(tabs) == 5 and linear
    merged = tabs[0]  # axes 0 and 1
    assert list(merged[[0, 1, 3, 4]]) == [0, 10, 100, 110] and (merged[[2, 5]] < 0).all()
    assert list(tabs[-2]) == [5, 8] and list(tabs[-1]) == [0, 1, 2]  # the size-1 axis's 5 moved outwards


def test_strided_slice_ranges_match_numpy() -> None:
    from teflon_py.ops.indexing import StridedSliceAttrs, strided_slice_ranges

    opts = StridedSliceAttrs(begin_mask=2, shrink_axis_mask=4)
    shape, axes = strided_slice_ranges(opts, (5, 6, 7), [4, 9, 2], [0, 4, 3], [-2, 1, 1])
    assert shape == [5, 6, 7]
    assert axes == [range(4, 0, -2), range(4), 2]
    x = np.arange(5 * 6 * 7).reshape(5, 6, 7)
    assert np.array_equal(x[4:0:-2, :4, 2], x[np.ix_(axes[0], axes[1])][:, :, 2])


# -- conformance beyond tests/ops ----------------------------------------------------------------


def transpose_model(shape: tuple, perm: tuple, dtype: str = "float32", quant: object = None) -> bytes:
    out = tuple(shape[p] for p in perm)
    return single_op("TRANSPOSE", [{"shape": shape, "dtype": dtype, "quant": quant},
                                   {"data": np.array(perm, np.int32), "dtype": np.int32}],
                     [{"shape": out, "dtype": dtype, "quant": quant}], O.TransposeOptions())


@pytest.mark.parametrize("shape,perm", [
    ((2, 3, 2, 3, 2, 3), (5, 4, 3, 2, 1, 0)),  # six dims that do not merge: host loop
    ((1, 37, 29, 131), (0, 3, 1, 2)),  # NHWC -> NCHW, odd sizes
    ((3, 5000), (1, 0)),
], ids=str)
def test_transpose_shapes(device, shape: tuple, perm: tuple) -> None:
    check_model(transpose_model(shape, perm), "opencl")


def test_long_rows_are_split_between_work_items(device) -> None:
    """Rows longer than a work-item's share (4096 elements) are cut into chunks."""
    shapes = [(2, 5000), (2, 7000)]
    model = single_op("CONCATENATION", [{"shape": s, "dtype": np.int8, "quant": I8} for s in shapes],
                      [{"shape": (2, 12000), "dtype": np.int8, "quant": I8}], O.ConcatenationOptions(axis=1))
    check_model(model, "opencl")


def test_int8_movement_chain_is_one_partition(device) -> None:
    """TRANSPOSE -> PAD -> STRIDED_SLICE -> CONCATENATION -> RESHAPE on int8: raw bytes through the arena."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 6, 5, 4), np.int8, quantization=I8)
    t = g.add_tensor("t", (1, 4, 6, 5), np.int8, quantization=I8)
    g.add_op("TRANSPOSE", [x, g.add_constant("perm", np.array([0, 3, 1, 2], np.int32))], [t],
             O.TransposeOptions())
    p = g.add_tensor("p", (1, 4, 8, 7), np.int8, quantization=I8)
    g.add_op("PAD", [t, g.add_constant("pads", np.array([[0, 0], [0, 0], [1, 1], [2, 0]], np.int32))], [p])
    s = g.add_tensor("s", (1, 4, 4, 7), np.int8, quantization=I8)
    g.add_op("STRIDED_SLICE", [p] + [g.add_constant(n, np.array(v, np.int32)) for n, v in
                                     (("b", [0, 0, 0, 0]), ("e", [1, 4, 8, 7]), ("st", [1, 1, 2, 1]))],
             [s], O.StridedSliceOptions())
    c = g.add_tensor("c", (1, 8, 4, 7), np.int8, quantization=I8)
    g.add_op("CONCATENATION", [s, s], [c], O.ConcatenationOptions(axis=1))
    y = g.add_tensor("y", (8, 28), np.int8, quantization=I8)
    g.add_op("RESHAPE", [c, g.add_constant("shape", np.array([8, 28], np.int32))], [y], O.ReshapeOptions())
    g.mark_outputs(y)
    it = check_model(mb.build(), "opencl")
    assert [p["nodes"] for p in it.partitions()] == [[0, 1, 2, 3, 4]]


def test_gather_from_a_constant_table(device) -> None:
    """An int8 embedding table as a constant: its bytes go to the device as they are."""
    table = np.random.default_rng(3).integers(-128, 128, (10, 6)).astype(np.int8)
    model = single_op("GATHER", [{"data": table, "dtype": np.int8, "quant": I8},
                                 {"shape": (4,), "dtype": np.int32}],
                      [{"shape": (4, 6), "dtype": np.int8, "quant": I8}], O.GatherOptions(axis=0))
    it = check_model(model, "opencl", inputs=[np.array([9, 0, 3, 3], np.int32)])
    assert [p.backend for p in it.placements()] == ["opencl"]


def test_gather_runtime_index_out_of_range_reads_zeros(device) -> None:
    """On the device an index outside the axis cannot fail the invoke (TFLite's does): zeros."""
    model = single_op("GATHER", [{"shape": (4, 3), "dtype": np.float32}, {"shape": (2,), "dtype": np.int32}],
                      [{"shape": (2, 3), "dtype": np.float32}], O.GatherOptions(axis=0))
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    (y,), it = run_teflon(model, [x, np.array([1, 7], np.int32)], "opencl")
    assert it.placements()[0].backend == "opencl"
    assert np.array_equal(y, np.stack([x[1], np.zeros(3, np.float32)]))


@pytest.mark.parametrize("op", ["TRANSPOSE", "CONCATENATION"])
def test_requantizing_copy_is_left_to_numpy(device, op: str) -> None:
    from teflon_py.opencl.lowerings import check_op

    q_out = quantization(0.1, 5)
    if op == "TRANSPOSE":
        model = single_op("TRANSPOSE", [{"shape": (2, 3), "dtype": np.int8, "quant": I8},
                                        {"data": np.array([1, 0], np.int32), "dtype": np.int32}],
                          [{"shape": (3, 2), "dtype": np.int8, "quant": q_out}], O.TransposeOptions())
    else:  # int8 must share the scale (LiteRT refuses); uint8 is requantized on the device
        q_in = quantization(0.05, 13)  # (tests/test_opencl_quantized.py)
        model = single_op("CONCATENATION", [{"shape": (2, 3), "dtype": np.int8, "quant": q_in}] * 2,
                          [{"shape": (4, 3), "dtype": np.int8, "quant": q_out}],
                          O.ConcatenationOptions(axis=0))
    g = read_model(model).main
    verdict = check_op(g, g.operations[0], teflon_py.load_delegate("opencl").caps)
    assert not verdict and "requantizing copy not supported" in verdict.reason


def test_movement_ops_share_one_program(device) -> None:
    """Sizes and strides are kernel arguments: new shapes and ops build no new program."""
    from teflon_py.opencl.runtime import programs

    check_model(transpose_model((2, 3, 4), (2, 0, 1)), "opencl")
    before = len(programs._memo)
    check_model(transpose_model((5, 1, 7, 2), (3, 2, 0, 1), "int8", I8), "opencl")
    check_model(single_op("TILE", [{"shape": (2, 3), "dtype": np.int32},
                                   {"data": np.array([2, 2], np.int32), "dtype": np.int32}],
                          [{"shape": (4, 6), "dtype": np.int32}], O.TileOptions()), "opencl")
    assert len(programs._memo) == before


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_tile_of_six_dims_merges_tables(device, dtype: str) -> None:
    shape, multiples = (2, 2, 1, 3, 2, 2), (2, 1, 3, 2, 1, 2)
    q = I8 if dtype == "int8" else None
    model = single_op("TILE", [{"shape": shape, "dtype": dtype, "quant": q},
                               {"data": np.array(multiples, np.int32), "dtype": np.int32}],
                      [{"shape": tuple(s * m for s, m in zip(shape, multiples)), "dtype": dtype, "quant": q}],
                      O.TileOptions())
    check_model(model, "opencl")


def test_resize_bilinear_large_upscale(device) -> None:
    """A wide image with many channels: several pixels per work-item, every blend weight."""
    model = single_op("RESIZE_BILINEAR", [{"shape": (1, 13, 17, 40), "dtype": np.uint8,
                                           "quant": quantization(0.05, 3)},
                                          {"data": np.array([50, 61], np.int32), "dtype": np.int32}],
                      [{"shape": (1, 50, 61, 40), "dtype": np.uint8, "quant": quantization(0.05, 3)}],
                      O.ResizeBilinearOptions(half_pixel_centers=True))
    check_model(model, "opencl")


def test_one_hot_bool_is_delegated(device) -> None:
    model = single_op("ONE_HOT", [{"shape": (3, 2), "dtype": np.int64},
                                  {"data": np.array(4, np.int32), "dtype": np.int32},
                                  {"data": np.array(True), "dtype": np.bool_},
                                  {"data": np.array(False), "dtype": np.bool_}],
                      [{"shape": (3, 4, 2), "dtype": np.bool_}], O.OneHotOptions(axis=1))
    idx = np.array([[0, 3], [5, -1], [(1 << 33) + 2, 2]], np.int64)  # LiteRT casts to int: 2
    it = check_model(model, "opencl", inputs=[idx])
    assert it.placements()[0].backend == "opencl"


def test_unknown_activation_in_concatenation_is_rejected() -> None:
    from teflon_py.opencl.lowerings import check_op

    model = single_op("CONCATENATION", [{"shape": (2, 3), "dtype": np.float32}] * 2,
                      [{"shape": (2, 6), "dtype": np.float32}],
                      O.ConcatenationOptions(axis=1, fused_activation_function=ir.Activation.RELU))
    g = read_model(model).main
    assert "fused activation" in check_op(g, g.operations[0], teflon_py.load_delegate("opencl").caps).reason
