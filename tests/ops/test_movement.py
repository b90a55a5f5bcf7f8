"""Data-movement and shape ops against LiteRT's reference kernels, every dtype LiteRT accepts.

Parameters (axis, perm, multiples, paddings, block shapes...) are constant tensors, and for a few
cases runtime inputs (LiteRT then sizes the output at invoke; so does our executor). Quantized
tensors carry the same quantization in and out: these ops copy raw integers.
"""

from __future__ import annotations

import numpy as np
import pytest

from teflon_py.tflite import options as opt
from tests.ops.operands import ALL, NO_BOOL, const, data, qp, run, tensor

BASIC = ["float32", "int8", "uint8", "int32", "int64"]


# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3])
def test_expand_dims(backend: str, dtype: str, axis: int) -> None:
    shape = (3, 4)
    out = np.expand_dims(np.empty(shape), axis).shape
    run(
        backend,
        "EXPAND_DIMS",
        [tensor(shape, dtype), const(axis)],
        [tensor(out, dtype)],
        opt.ExpandDimsOptions(),
    )


@pytest.mark.parametrize("axis_type", ["int64", "runtime"])
def test_expand_dims_axis_forms(backend: str, axis_type: str) -> None:
    shape, axis = (2, 3, 4), -2
    out = np.expand_dims(np.empty(shape), axis).shape
    axis_in = tensor((1,), "int32") if axis_type == "runtime" else const([axis], "int64")
    feed = [data(shape, "float32"), np.array([axis], np.int32)] if axis_type == "runtime" else None
    run(
        backend,
        "EXPAND_DIMS",
        [tensor(shape, "float32"), axis_in],
        [tensor(out, "float32")],
        opt.ExpandDimsOptions(),
        feed,
        refuses="must be a constant",
    )


TRANSPOSES = [
    ((2, 3), (1, 0)),
    ((2, 3, 4), (2, 0, 1)),
    ((1, 2, 3, 4), (0, 3, 1, 2)),
    ((2, 3, 4, 2, 3), (4, 1, 3, 0, 2)),
    ((2, 1, 3, 2, 2, 3), (5, 3, 1, 4, 0, 2)),
]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape,perm", TRANSPOSES, ids=[str(p) for _, p in TRANSPOSES])
def test_transpose(backend: str, dtype: str, shape: tuple, perm: tuple) -> None:
    out = tuple(shape[p] for p in perm)
    run(
        backend,
        "TRANSPOSE",
        [tensor(shape, dtype), const(perm)],
        [tensor(out, dtype)],
        opt.TransposeOptions(),
    )


def test_transpose_runtime_perm(backend: str) -> None:
    shape, perm = (2, 3, 4), np.array([1, 2, 0], np.int32)
    run(
        backend,
        "TRANSPOSE",
        [tensor(shape, "int8"), tensor((3,), "int32")],
        [tensor((3, 4, 2), "int8")],
        opt.TransposeOptions(),
        [data(shape, "int8"), perm],
        refuses="must be a constant",
    )


SPLITS = [((6, 4), 0, 3), ((2, 6, 4), -2, 2), ((2, 3, 8), 2, 4), ((5,), 0, 1)]


@pytest.mark.parametrize("dtype", NO_BOOL)
@pytest.mark.parametrize("shape,axis,n", SPLITS, ids=[f"{s}-{a}-{n}" for s, a, n in SPLITS])
def test_split(backend: str, dtype: str, shape: tuple, axis: int, n: int) -> None:
    part = np.split(np.empty(shape), n, axis)[0].shape
    run(
        backend,
        "SPLIT",
        [const(axis), tensor(shape, dtype)],
        [tensor(part, dtype)] * n,
        opt.SplitOptions(num_splits=n),
    )


SPLIT_VS = [((6, 4), 0, [1, 3, 2]), ((2, 7, 3), 1, [2, -1, 1]), ((2, 3, 8), -1, [5, 0, 3]), ((4,), 0, [-1])]


@pytest.mark.parametrize("dtype", NO_BOOL)
@pytest.mark.parametrize("shape,axis,sizes", SPLIT_VS, ids=[f"{s}-{a}-{z}" for s, a, z in SPLIT_VS])
def test_split_v(backend: str, dtype: str, shape: tuple, axis: int, sizes: list) -> None:
    full = [s if s >= 0 else shape[axis] - sum(z for z in sizes if z >= 0) for s in sizes]
    parts = [tensor(shape[: axis % len(shape)] + (s,) + shape[axis % len(shape) + 1 :], dtype) for s in full]
    run(
        backend,
        "SPLIT_V",
        [tensor(shape, dtype), const(sizes), const(axis)],
        parts,
        opt.SplitVOptions(num_splits=len(sizes)),
        refuses="empty or unknown dimension",
    )


def test_split_runtime_params(backend: str) -> None:
    """SPLIT's axis and SPLIT_V's sizes and axis as runtime inputs (dynamic outputs in LiteRT)."""
    x = data((4, 6), "int16")
    run(
        backend,
        "SPLIT",
        [tensor((), "int32"), tensor((4, 6), "int16")],
        [tensor((4, 2), "int16")] * 3,
        opt.SplitOptions(num_splits=3),
        [np.array(1, np.int32), x],
        refuses="must be a constant",
    )
    run(
        backend,
        "SPLIT_V",
        [tensor((4, 6), "int16"), tensor((2,), "int32"), tensor((), "int32")],
        [tensor((1, 6), "int16"), tensor((3, 6), "int16")],
        opt.SplitVOptions(num_splits=2),
        [x, np.array([1, -1], np.int32), np.array(0, np.int32)],
        refuses="must be a constant",
    )


@pytest.mark.parametrize("dtype", NO_BOOL)
@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_pack(backend: str, dtype: str, axis: int) -> None:
    shape, n = (2, 3), 3
    out = np.stack([np.empty(shape)] * n, axis).shape
    run(
        backend,
        "PACK",
        [tensor(shape, dtype)] * n,
        [tensor(out, dtype)],
        opt.PackOptions(values_count=n, axis=axis),
    )


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint8", "int16", "int32", "bool"])
@pytest.mark.parametrize("shape,axis", [((3, 2, 4), 0), ((3, 2, 4), 1), ((3, 2, 4), -1), ((3,), 0)])
def test_unpack(backend: str, dtype: str, shape: tuple, axis: int) -> None:
    n = shape[axis]
    part = np.take(np.empty(shape), 0, axis).shape
    run(
        backend,
        "UNPACK",
        [tensor(shape, dtype)],
        [tensor(part, dtype)] * n,
        opt.UnpackOptions(num=n, axis=axis),
    )


TILES = [((2, 3), (2, 1)), ((2, 3), (3, 2)), ((2, 1, 3), (1, 4, 2)), ((4,), (3,))]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape,multiples", TILES, ids=[f"{s}x{m}" for s, m in TILES])
def test_tile(backend: str, dtype: str, shape: tuple, multiples: tuple) -> None:
    out = np.tile(np.empty(shape), multiples).shape
    run(backend, "TILE", [tensor(shape, dtype), const(multiples)], [tensor(out, dtype)], opt.TileOptions())


@pytest.mark.parametrize("shape,multiples", [*TILES, ((50, 40), (3, 2))], ids=[f"{s}x{m}" for s, m in TILES] + ["big"])
def test_tile_gpu_family(gpu_family: str, shape: tuple, multiples: tuple) -> None:
    """The copy kernel's row split on the GPU family's grid."""
    out = np.tile(np.empty(shape), multiples).shape
    run(gpu_family, "TILE", [tensor(shape, "float32"), const(multiples)], [tensor(out, "float32")], opt.TileOptions())


@pytest.mark.parametrize("multiples_type", ["int64", "runtime"])
def test_tile_multiples_forms(backend: str, multiples_type: str) -> None:
    shape, multiples = (2, 3), [2, 3]
    m_in = tensor((2,), "int32") if multiples_type == "runtime" else const(multiples, "int64")
    feed = [data(shape, "uint8"), np.array(multiples, np.int32)] if multiples_type == "runtime" else None
    run(backend, "TILE", [tensor(shape, "uint8"), m_in], [tensor((4, 9), "uint8")], opt.TileOptions(), feed, refuses="must be a constant")


BROADCASTS = [
    ((3, 1), (2, 3, 4)),
    ((1,), (2, 2)),
    ((2, 1, 3), (2, 4, 3)),
    ((4,), (4,)),
    ((1, 1), (1, 5, 2, 3)),
]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape,target", BROADCASTS, ids=[f"{s}to{t}" for s, t in BROADCASTS])
def test_broadcast_to(backend: str, dtype: str, shape: tuple, target: tuple) -> None:
    run(
        backend,
        "BROADCAST_TO",
        [tensor(shape, dtype), const(target)],
        [tensor(target, dtype)],
        opt.BroadcastToOptions(),
        version=2,
    )


@pytest.mark.parametrize("shape_type", ["int64", "runtime"])
def test_broadcast_to_shape_forms(backend: str, shape_type: str) -> None:
    shape, target = (3, 1), [2, 3, 5]
    s_in = tensor((3,), "int32") if shape_type == "runtime" else const(target, "int64")
    feed = [data(shape, "float32"), np.array(target, np.int32)] if shape_type == "runtime" else None
    run(
        backend,
        "BROADCAST_TO",
        [tensor(shape, "float32"), s_in],
        [tensor(target, "float32")],
        opt.BroadcastToOptions(),
        feed,
        version=2,
        refuses="must be a constant",
    )


@pytest.mark.parametrize("dtype", ["int32", "int64"])
@pytest.mark.parametrize("s0,s1", [([2, 1, 3], [4, 1]), ([1], [5, 2]), ([3, 1, 4], [3, 6, 1]), ([7], [7])])
def test_broadcast_args(backend: str, dtype: str, s0: list, s1: list) -> None:
    out = np.broadcast_shapes(tuple(s0), tuple(s1))
    run(
        backend,
        "BROADCAST_ARGS",
        [tensor((len(s0),), dtype), tensor((len(s1),), dtype)],
        [tensor((len(out),), dtype)],
        None,
        [np.array(s0, dtype), np.array(s1, dtype)],
    )


# ---------------------------------------------------------------------------------------------
# pads

PADS = [
    ((2, 3), [[1, 2], [0, 1]]),
    ((1, 4, 4, 3), [[0, 0], [1, 1], [2, 0], [0, 0]]),
    ((2, 3, 2, 2, 3), [[0, 1], [1, 0], [0, 0], [2, 1], [1, 1]]),
    ((3,), [[0, 0]]),
]


def pad_constant(dtype: str) -> dict:
    """PADV2's value operand: a raw constant, with the input's quantization where quantized."""
    value = {"float32": -1.5, "bool": True, "uint8": 200, "int8": -100, "int16": 1234}.get(dtype, 77)
    return const(value, dtype, qp(dtype))


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape,pads", PADS, ids=[str(len(s)) + "d" for s, _ in PADS])
def test_padv2(backend: str, dtype: str, shape: tuple, pads: list) -> None:
    out = np.pad(np.empty(shape), pads).shape
    run(
        backend,
        "PADV2",
        [tensor(shape, dtype), const(pads), pad_constant(dtype)],
        [tensor(out, dtype)],
        opt.PadV2Options(),
    )


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("shape,pads", [*PADS, ((40, 30, 3), [[1, 1], [0, 2], [1, 0]])],
                         ids=[str(len(s)) + "d" for s, _ in PADS] + ["rows"])
def test_padv2_gpu_family(gpu_family: str, dtype: str, shape: tuple, pads: list) -> None:
    """PAD's whole-row work split on the GPU family's grid."""
    out = np.pad(np.empty(shape), pads).shape
    run(gpu_family, "PADV2", [tensor(shape, dtype), const(pads), pad_constant(dtype)], [tensor(out, dtype)],
        opt.PadV2Options())


@pytest.mark.parametrize("paddings_type", ["int64", "runtime"])
def test_padv2_paddings_forms(backend: str, paddings_type: str) -> None:
    shape, pads = (2, 3, 2), [[1, 0], [2, 2], [0, 1]]
    p_in = tensor((3, 2), "int32") if paddings_type == "runtime" else const(pads, "int64")
    feed = [data(shape, "int8"), np.array(pads, np.int32)] if paddings_type == "runtime" else None
    run(
        backend,
        "PADV2",
        [tensor(shape, "int8"), p_in, pad_constant("int8")],
        [tensor((3, 7, 3), "int8")],
        opt.PadV2Options(),
        feed,
        refuses="must be a constant",
    )


@pytest.mark.parametrize("dtype", ["float32", "int8", "uint8", "int32"])
def test_padv2_without_value(backend: str, dtype: str) -> None:
    """The value operand absent: pads with the output zero point (0 unless quantized)."""
    shape, pads = (2, 3), [[1, 1], [2, 0]]
    run(
        backend,
        "PADV2",
        [tensor(shape, dtype), const(pads), {"none": True}],
        [tensor((4, 5), dtype)],
        opt.PadV2Options(),
    )


MIRRORS = [
    ((3, 4), [[1, 2], [2, 0]]),
    ((2, 3, 3), [[1, 1], [0, 2], [2, 1]]),
    ((1, 4, 5, 2), [[0, 0], [3, 2], [1, 3], [0, 1]]),
]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("mode", [0, 1], ids=["REFLECT", "SYMMETRIC"])
@pytest.mark.parametrize("shape,pads", MIRRORS, ids=[str(len(s)) + "d" for s, _ in MIRRORS])
def test_mirror_pad(backend: str, dtype: str, mode: int, shape: tuple, pads: list) -> None:
    out = np.pad(np.empty(shape), pads).shape
    run(
        backend,
        "MIRROR_PAD",
        [tensor(shape, dtype), const(pads)],
        [tensor(out, dtype)],
        opt.MirrorPadOptions(mode=mode),
    )


@pytest.mark.parametrize("mode", [0, 1], ids=["REFLECT", "SYMMETRIC"])
def test_mirror_pad_widest(backend: str, mode: int) -> None:
    """The widest padding each mode allows (size - 1 for REFLECT, size for SYMMETRIC), int64 paddings."""
    shape = (3, 4)
    w = [s - 1 + mode for s in shape]
    pads = [[w[0], w[0]], [w[1], 0]]
    out = np.pad(np.empty(shape), pads).shape
    run(
        backend,
        "MIRROR_PAD",
        [tensor(shape, "float32"), const(pads, "int64")],
        [tensor(out, "float32")],
        opt.MirrorPadOptions(mode=mode),
    )


def test_mirror_pad_runtime_paddings(backend: str) -> None:
    shape, pads = (3, 4), np.array([[2, 1], [1, 3]], np.int32)
    run(
        backend,
        "MIRROR_PAD",
        [tensor(shape, "uint8"), tensor((2, 2), "int32")],
        [tensor((6, 8), "uint8")],
        opt.MirrorPadOptions(mode=0),
        [data(shape, "uint8"), pads],
        refuses="must be a constant",
    )


# ---------------------------------------------------------------------------------------------
# block reshuffles


@pytest.mark.parametrize("dtype", BASIC)
@pytest.mark.parametrize("shape,block", [((1, 2, 3, 8), 2), ((2, 2, 2, 18), 3), ((1, 1, 1, 4), 2)])
def test_depth_to_space(backend: str, dtype: str, shape: tuple, block: int) -> None:
    n, h, w, c = shape
    run(
        backend,
        "DEPTH_TO_SPACE",
        [tensor(shape, dtype)],
        [tensor((n, h * block, w * block, c // block**2), dtype)],
        opt.DepthToSpaceOptions(block_size=block),
    )


@pytest.mark.parametrize("dtype", BASIC)
@pytest.mark.parametrize("shape,block", [((1, 4, 6, 3), 2), ((2, 6, 3, 2), 3), ((1, 2, 2, 1), 2)])
def test_space_to_depth(backend: str, dtype: str, shape: tuple, block: int) -> None:
    n, h, w, c = shape
    run(
        backend,
        "SPACE_TO_DEPTH",
        [tensor(shape, dtype)],
        [tensor((n, h // block, w // block, c * block**2), dtype)],
        opt.SpaceToDepthOptions(block_size=block),
    )


#: (input shape, block shape, paddings); 3-D inputs have one spatial axis.
SPACE_TO_BATCH = [
    ((1, 4, 4, 3), [2, 2], [[0, 0], [0, 0]]),
    ((2, 5, 3, 2), [2, 3], [[1, 0], [1, 2]]),
    ((2, 5, 3), [2], [[1, 0]]),
    ((1, 3, 3, 1), [3, 1], [[0, 3], [0, 0]]),
]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape,block,pads", SPACE_TO_BATCH, ids=[f"{s}-{b}" for s, b, _ in SPACE_TO_BATCH])
def test_space_to_batch_nd(backend: str, dtype: str, shape: tuple, block: list, pads: list) -> None:
    padded = [s + a + b for s, (a, b) in zip(shape[1:], pads)]
    out = (
        (shape[0] * int(np.prod(block)),)
        + tuple(p // b for p, b in zip(padded, block))
        + shape[1 + len(block) :]
    )
    run(
        backend,
        "SPACE_TO_BATCH_ND",
        [tensor(shape, dtype), const(block), const(pads)],
        [tensor(out, dtype)],
        opt.SpaceToBatchNDOptions(),
    )


#: (input shape, block shape, crops)
BATCH_TO_SPACE = [
    ((4, 2, 2, 3), [2, 2], [[0, 0], [0, 0]]),
    ((12, 3, 2, 2), [2, 3], [[1, 0], [2, 1]]),
    ((4, 3, 2), [2], [[1, 2]]),
    ((3, 2, 2, 1), [3, 1], [[0, 2], [0, 1]]),
]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape,block,crops", BATCH_TO_SPACE, ids=[f"{s}-{b}" for s, b, _ in BATCH_TO_SPACE])
def test_batch_to_space_nd(backend: str, dtype: str, shape: tuple, block: list, crops: list) -> None:
    spatial = [s * b - c0 - c1 for s, b, (c0, c1) in zip(shape[1:], block, crops)]
    out = (shape[0] // int(np.prod(block)),) + tuple(spatial) + shape[1 + len(block) :]
    run(
        backend,
        "BATCH_TO_SPACE_ND",
        [tensor(shape, dtype), const(block), const(crops)],
        [tensor(out, dtype)],
        opt.BatchToSpaceNDOptions(),
    )


def test_space_batch_runtime_params(backend: str) -> None:
    shape, block, pads = (1, 5, 4, 2), np.array([2, 2], np.int32), np.array([[1, 0], [0, 2]], np.int32)
    run(
        backend,
        "SPACE_TO_BATCH_ND",
        [tensor(shape, "int8"), tensor((2,), "int32"), tensor((2, 2), "int32")],
        [tensor((4, 3, 3, 2), "int8")],
        opt.SpaceToBatchNDOptions(),
        [data(shape, "int8"), block, pads],
    )
    run(
        backend,
        "BATCH_TO_SPACE_ND",
        [tensor((4, 3, 3, 2), "int8"), tensor((2,), "int32"), tensor((2, 2), "int32")],
        [tensor((1, 5, 4, 2), "int8")],
        opt.BatchToSpaceNDOptions(),
        [data((4, 3, 3, 2), "int8"), block, pads],
    )


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("axes", [[0], [1], [-1], [1, 2], [0, 1, 2]], ids=str)  # LiteRT: contiguous axes only
def test_reverse_v2(backend: str, dtype: str, axes: list) -> None:
    shape = (3, 4, 5)
    run(
        backend,
        "REVERSE_V2",
        [tensor(shape, dtype), const(axes)],
        [tensor(shape, dtype)],
        opt.ReverseV2Options(),
    )


def test_reverse_v2_runtime_axis(backend: str) -> None:
    shape = (2, 3, 4)
    run(
        backend,
        "REVERSE_V2",
        [tensor(shape, "int16"), tensor((1,), "int32")],
        [tensor(shape, "int16")],
        opt.ReverseV2Options(),
        [data(shape, "int16"), np.array([1], np.int32)],
        refuses="must be a constant",
    )


# ---------------------------------------------------------------------------------------------
# shape queries and generators

TENSOR_TYPE = {"int32": 2, "int64": 4}  # schema TensorType codes for ShapeOptions.out_type


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("out_type", ["int32", "int64"])
def test_shape(backend: str, dtype: str, out_type: str) -> None:
    shape = (2, 1, 3, 4)
    run(
        backend,
        "SHAPE",
        [tensor(shape, dtype)],
        [tensor((4,), out_type)],
        opt.ShapeOptions(out_type=TENSOR_TYPE[out_type]),
    )


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
@pytest.mark.parametrize("shape", [(5,), (2, 3), (1, 2, 3, 4, 5)], ids=str)
def test_rank(backend: str, dtype: str, shape: tuple) -> None:
    run(backend, "RANK", [tensor(shape, dtype)], [tensor((), "int32")], opt.RankOptions())


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("dims_type", ["int32", "int64"])
def test_fill(backend: str, dtype: str, dims_type: str) -> None:
    dims = [2, 3, 4]
    run(
        backend,
        "FILL",
        [const(dims, dims_type), tensor((), dtype)],
        [tensor(dims, dtype)],
        opt.FillOptions(),
        [data((), dtype, seed=3)],
    )


def test_fill_runtime_dims(backend: str) -> None:
    dims = np.array([3, 1, 2], np.int32)
    run(
        backend,
        "FILL",
        [tensor((3,), "int32"), tensor((), "float32")],
        [tensor(tuple(dims), "float32")],
        opt.FillOptions(),
        [dims, np.array(2.5, np.float32)],
    )


RANGES = {
    "int32": [
        (0, 10, 3),
        (10, 0, -3),
        (-5, 5, 1),
        (7, 8, 5),
    ],  # no empty range: LiteRT hands out no 0-size tensors
    "int64": [(0, 10, 3), (-(1 << 40), -(1 << 40) + 9, 2)],
    "float32": [(0.5, 3.7, 0.3), (1.0, -2.0, -0.25), (-1.0, 1.0, 0.1), (0.0, 100.0, 0.7)],
}


@pytest.mark.parametrize(
    "dtype,args",
    [(d, a) for d, cases in RANGES.items() for a in cases],
    ids=[f"{d}-{a}" for d, cases in RANGES.items() for a in cases],
)
def test_range(backend: str, dtype: str, args: tuple) -> None:
    start, limit, delta = (np.array(v, dtype) for v in args)
    if dtype == "float32":
        n = int(np.ceil(np.abs((limit - start) / delta)))
    else:
        n = (abs(int(limit) - int(start)) + abs(int(delta)) - 1) // abs(int(delta))
    run(
        backend,
        "RANGE",
        [tensor((), dtype)] * 3,
        [tensor((n,), dtype)],
        opt.RangeOptions(),
        [start, limit, delta],
    )


def test_range_constant(backend: str) -> None:
    """All-constant operands (LiteRT computes the output at prepare), feeding an ADD-free graph."""
    run(backend, "RANGE", [const(2), const(20), const(4)], [tensor((5,), "int32")], opt.RangeOptions(), [])
