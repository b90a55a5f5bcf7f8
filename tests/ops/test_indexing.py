"""Indexing ops against LiteRT's reference kernels: slices, gathers, scatters, one-hot, where,
top-k, embedding lookup; every dtype LiteRT accepts, constant and runtime index operands."""

from __future__ import annotations

import numpy as np
import pytest

from teflon_py.errors import TeflonError
from teflon_py.tflite import options as opt
from tests.harness import quantization, run_litert, run_teflon, single_op
from tests.ops.operands import ALL, NO_BOOL, NO_INT16, const, data, run, tensor

# ---------------------------------------------------------------------------------------------
# SLICE and STRIDED_SLICE

SLICES = [
    ((4, 5, 6), [1, 0, 2], [2, -1, 3]),
    ((7,), [2], [-1]),
    ((3, 4), [0, 0], [3, 4]),
    ((2, 3, 4, 5, 2), [1, 0, 1, 2, 0], [1, 2, -1, 3, 2]),
]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape,begin,size", SLICES, ids=[f"{len(s)}d" for s, _, _ in SLICES])
def test_slice(backend: str, dtype: str, shape: tuple, begin: list, size: list) -> None:
    out = tuple(d - b if s == -1 else s for d, b, s in zip(shape, begin, size))
    run(
        backend,
        "SLICE",
        [tensor(shape, dtype), const(begin), const(size)],
        [tensor(out, dtype)],
        opt.SliceOptions(),
    )


@pytest.mark.parametrize("form", ["int64", "runtime"])
def test_slice_param_forms(backend: str, form: str) -> None:
    shape, begin, size = (4, 5, 6), [2, 1, 0], [-1, 3, 4]
    if form == "runtime":
        ins = [tensor(shape, "int8"), tensor((3,), "int32"), tensor((3,), "int32")]
        feed = [data(shape, "int8"), np.array(begin, np.int32), np.array(size, np.int32)]
    else:
        ins, feed = [tensor(shape, "int8"), const(begin, "int64"), const(size, "int64")], None
    run(backend, "SLICE", ins, [tensor((2, 3, 4), "int8")], opt.SliceOptions(), feed, refuses="must be a constant")


N = None
#: (input shape, begin, end, strides, masks dict, the same slice as a NumPy index)
STRIDED = [
    ((5, 6), [1, 0], [4, 6], [1, 2], {}, np.s_[1:4, 0:6:2]),
    ((5, 6), [4, 0], [0, 0], [-1, -2], {"begin_mask": 2, "end_mask": 2}, np.s_[4:0:-1, ::-2]),
    ((4, 5, 6), [1, 2, 3], [3, 4, 5], [1, 1, 1], {"begin_mask": 5, "end_mask": 2}, np.s_[:3, 2:, :5]),
    ((4, 5, 6), [2, 0, -1], [3, 5, 0], [1, 1, 1], {"shrink_axis_mask": 5}, np.s_[2, 0:5, -1]),
    ((2, 3, 4, 5), [0, 1], [0, 3], [1, 1], {"ellipsis_mask": 1}, np.s_[..., 1:3]),
    ((2, 3, 4, 5), [1, 0, 2], [2, 0, 4], [1, 1, 1], {"ellipsis_mask": 2}, np.s_[1:2, ..., 2:4]),
    ((3, 4), [0, 0, 1], [0, 3, 4], [1, 1, 1], {"new_axis_mask": 1}, np.s_[N, 0:3, 1:4]),
    (
        (3, 4, 5),
        [1, 0, 0, 2],
        [2, 0, 4, 3],
        [1, 1, 1, 1],
        {"new_axis_mask": 2, "shrink_axis_mask": 1},
        np.s_[1, N, 0:4, 2:3],
    ),
    ((2, 3, 4), [0, 0], [0, 0], [1, 1], {"ellipsis_mask": 1, "new_axis_mask": 2}, np.s_[..., N]),
    ((5, 6), [1, 2], [3, 2], [1, 2], {"offset": True}, np.s_[1:4, 2:4:2]),
    ((4, 5), [-10, 2], [10, 100], [2, 1], {}, np.s_[0:4:2, 2:5]),
    ((6,), [-2], [-6], [-2], {}, np.s_[-2:-6:-2]),
    (
        (2, 3, 4, 3, 2),
        [0, 1, 0, 2, 1],
        [2, 3, 4, 0, 2],
        [1, 1, 2, -1, 1],
        {},
        np.s_[0:2, 1:3, 0:4:2, 2:0:-1, 1:2],
    ),
    ((3, 4), [0, 0], [0, 0], [-1, 1], {"begin_mask": 3, "end_mask": 3}, np.s_[::-1, :]),
    ((4, 5), [-1, 1], [0, 4], [1, 1], {"shrink_axis_mask": 1}, np.s_[-1, 1:4]),
    ((4, 6), [3, -1], [-5, 0], [-1, -3], {}, np.s_[3:-5:-1, -1:0:-3]),
    ((4, 5), [1, 2], [2, 3], [1, 1], {"shrink_axis_mask": 3}, np.s_[1, 2]),
]
STRIDED_IDS = [
    "stride2",
    "negative",
    "begin_end_mask",
    "shrink",
    "ellipsis_first",
    "ellipsis_mid",
    "new_axis",
    "new_axis_shrink",
    "ellipsis_new_axis",
    "offset",
    "clamped",
    "neg_begin_end",
    "5d",
    "reverse_masked",
    "shrink_last",
    "neg_both",
    "to_scalar",
]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape,begin,end,strides,masks,index", STRIDED, ids=STRIDED_IDS)
def test_strided_slice(
    backend: str, dtype: str, shape: tuple, begin: list, end: list, strides: list, masks: dict, index: tuple
) -> None:
    out = np.empty(shape)[index].shape
    run(
        backend,
        "STRIDED_SLICE",
        [tensor(shape, dtype), const(begin), const(end), const(strides)],
        [tensor(out, dtype)],
        opt.StridedSliceOptions(**masks),
    )


@pytest.mark.parametrize("case", [0, 1, 3, 9, 12], ids=[STRIDED_IDS[i] for i in (0, 1, 3, 9, 12)])
def test_strided_slice_runtime(backend: str, case: int) -> None:
    """begin/end/strides as runtime inputs: LiteRT sizes the output at invoke."""
    shape, begin, end, strides, masks, index = STRIDED[case]
    out = np.empty(shape)[index].shape
    n = len(begin)
    ins = [tensor(shape, "float32")] + [tensor((n,), "int32")] * 3
    feed = [data(shape, "float32")] + [np.array(v, np.int32) for v in (begin, end, strides)]
    run(backend, "STRIDED_SLICE", ins, [tensor(out, "float32")], opt.StridedSliceOptions(**masks), feed, refuses="must be a constant")


# ---------------------------------------------------------------------------------------------
# gathers and scatters

#: (input shape, axis, batch_dims, positions shape)
GATHERS = [
    ((5, 4, 3), 0, 0, (3,)),
    ((5, 4, 3), 1, 0, (2, 2)),
    ((5, 4, 3), -1, 0, ()),
    ((2, 5, 3), 1, 1, (2, 4)),
    ((2, 3, 5, 4), 2, 2, (2, 3, 2)),
    ((2, 3, 5), 2, 1, (2, 4)),
    ((2, 5, 3), 1, -1, (2, 4)),
    ((3, 2, 4, 2), 2, 1, (3, 2, 3)),
    ((7,), 0, 0, ()),
]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize(
    "shape,axis,batch_dims,pos_shape", GATHERS, ids=[f"{s}-ax{a}-b{b}-{p}" for s, a, b, p in GATHERS]
)
def test_gather(backend: str, dtype: str, shape: tuple, axis: int, batch_dims: int, pos_shape: tuple) -> None:
    axis_n = axis % len(shape)
    bd = batch_dims % len(pos_shape) if batch_dims < 0 else batch_dims
    positions = np.random.default_rng(1).integers(0, shape[axis_n], pos_shape).astype(np.int32)
    out = shape[:axis_n] + pos_shape[bd:] + shape[axis_n + 1 :]
    run(
        backend,
        "GATHER",
        [tensor(shape, dtype), const(positions)],
        [tensor(out, dtype)],
        opt.GatherOptions(axis=axis, batch_dims=batch_dims),
    )


@pytest.mark.parametrize("pos_type", ["int16", "int32", "int64"])
def test_gather_runtime_positions(backend: str, pos_type: str) -> None:
    shape, positions = (6, 3), np.array([[5, 0], [2, 2], [1, 4]], pos_type)
    run(
        backend,
        "GATHER",
        [tensor(shape, "int8"), tensor(positions.shape, pos_type)],
        [tensor((3, 2, 3), "int8")],
        opt.GatherOptions(axis=0),
        [data(shape, "int8"), positions],
        refuses="positions not supported (int32 only)",
    )


#: (params shape, indices array)
GATHER_NDS = [
    ((4, 5, 3), [[0], [3]]),
    ((4, 5, 3), [[1, 4], [3, 0], [0, 2]]),
    ((4, 5, 3), [[[0, 1, 2], [3, 4, 0]], [[2, 2, 2], [1, 0, 1]]]),
    ((6,), [[5], [0], [5]]),
]


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize(
    "shape,indices", GATHER_NDS, ids=[f"{s}-depth{np.shape(i)[-1]}" for s, i in GATHER_NDS]
)
def test_gather_nd(backend: str, dtype: str, shape: tuple, indices: list) -> None:
    idx = np.array(indices, np.int32)
    out = idx.shape[:-1] + shape[idx.shape[-1] :]
    run(backend, "GATHER_ND", [tensor(shape, dtype), const(idx)], [tensor(out, dtype)], opt.GatherNdOptions())


@pytest.mark.parametrize("idx_type", ["int32", "int64"])
def test_gather_nd_runtime_indices(backend: str, idx_type: str) -> None:
    shape, idx = (3, 4, 2), np.array([[2, 3], [0, 1], [2, 0]], idx_type)
    run(
        backend,
        "GATHER_ND",
        [tensor(shape, "float32"), tensor(idx.shape, idx_type)],
        [tensor((3, 2), "float32")],
        opt.GatherNdOptions(),
        [data(shape, "float32"), idx],
    )


#: (output shape, indices with duplicates)
SCATTERS = [
    ((8, 3), [[1], [6], [1], [0]]),
    ((4, 5, 2), [[0, 1], [3, 4], [0, 1]]),
    ((3, 4, 2), [[[0, 1, 1], [2, 3, 0]], [[1, 1, 1], [2, 3, 0]]]),
    ((5,), [[4], [0], [4], [4]]),
]


@pytest.mark.parametrize("dtype", NO_INT16)
@pytest.mark.parametrize("shape,indices", SCATTERS, ids=[f"{s}-depth{np.shape(i)[-1]}" for s, i in SCATTERS])
def test_scatter_nd(backend: str, dtype: str, shape: tuple, indices: list) -> None:
    idx = np.array(indices, np.int32)
    upd = idx.shape[:-1] + shape[idx.shape[-1] :]
    run(
        backend,
        "SCATTER_ND",
        [const(idx), tensor(upd, dtype), const(shape)],
        [tensor(shape, dtype)],
        opt.ScatterNdOptions(),
    )


def test_scatter_nd_runtime(backend: str) -> None:
    idx, shape = np.array([[3], [1], [3]], np.int32), np.array([5, 2], np.int32)
    run(
        backend,
        "SCATTER_ND",
        [tensor((3, 1), "int32"), tensor((3, 2), "float32"), tensor((2,), "int32")],
        [tensor((5, 2), "float32")],
        opt.ScatterNdOptions(),
        [idx, data((3, 2), "float32"), shape],
    )


# ---------------------------------------------------------------------------------------------
# ONE_HOT, WHERE, TOPK_V2, EMBEDDING_LOOKUP

ON_OFF = {
    "float32": (2.5, -0.5),
    "int8": (100, -7),
    "uint8": (255, 3),
    "int32": (70000, -2),
    "int64": (1 << 40, 9),
    "bool": (True, False),
}


@pytest.mark.parametrize("dtype", list(ON_OFF))
@pytest.mark.parametrize("idx_shape,axis", [((4,), -1), ((4,), 0), ((2, 3), 0), ((2, 3), 1), ((2, 3), -1)])
@pytest.mark.parametrize("idx_type", ["int32", "int64"])
def test_one_hot(backend: str, dtype: str, idx_shape: tuple, axis: int, idx_type: str) -> None:
    depth = 5
    indices = (
        np.random.default_rng(2).integers(-1, depth + 2, idx_shape).astype(idx_type)
    )  # some out of range
    on, off = ON_OFF[dtype]
    out = list(idx_shape)
    out.insert(axis % (len(idx_shape) + 1), depth)
    run(
        backend,
        "ONE_HOT",
        [tensor(idx_shape, idx_type), const(depth), const(on, dtype), const(off, dtype)],
        [{"shape": out, "dtype": dtype}],
        opt.OneHotOptions(axis=axis),
        [indices],
    )


def test_one_hot_runtime_depth(backend: str) -> None:
    indices = np.array([[0, 3], [6, 1]], np.int32)
    run(
        backend,
        "ONE_HOT",
        [tensor((2, 2), "int32"), tensor((), "int32"), const(1.0, "float32"), const(0.0, "float32")],
        [tensor((2, 2, 6), "float32")],
        opt.OneHotOptions(axis=-1),
        [indices, np.array(6, np.int32)],
        refuses="must be a constant",
    )


@pytest.mark.parametrize("dtype", NO_INT16)
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)], ids=str)
def test_where(backend: str, dtype: str, shape: tuple) -> None:
    rng = np.random.default_rng(4)
    cond = (data(shape, dtype) * (rng.random(shape) < 0.5)).astype(dtype)  # about half zeros
    cond.flat[1] = 1  # at least one hit: LiteRT hands out no 0-size tensors
    count = int(np.count_nonzero(cond))
    run(
        backend,
        "WHERE",
        [{"shape": list(shape), "dtype": dtype}],
        [{"shape": [count, len(shape)], "dtype": "int64"}],
        opt.WhereOptions(),
        [cond],
    )


@pytest.mark.parametrize("dtype", NO_BOOL)
@pytest.mark.parametrize("shape,k", [((3, 10), 1), ((3, 10), 3), ((3, 10), 10), ((2, 2, 7), 4), ((6,), 6)])
@pytest.mark.parametrize("idx_type", ["int32", "int16"])
def test_topk_v2(backend: str, dtype: str, shape: tuple, k: int, idx_type: str) -> None:
    x = data(shape, "int32", seed=5, low=0, high=4).astype(dtype)  # many ties: lower index first
    out = shape[:-1] + (k,)
    run(
        backend,
        "TOPK_V2",
        [tensor(shape, dtype), const(k)],
        [tensor(out, dtype), tensor(out, idx_type)],
        opt.TopKV2Options(),
        [x],
    )


def test_topk_v2_runtime_k(backend: str) -> None:
    x = data((4, 9), "float32", seed=6)
    run(
        backend,
        "TOPK_V2",
        [tensor((4, 9), "float32"), tensor((), "int32")],
        [tensor((4, 5), "float32"), tensor((4, 5), "int32")],
        opt.TopKV2Options(),
        [x, np.array(5, np.int32)],
    )


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("shape", [(5, 3), (6, 2, 3)], ids=str)
def test_embedding_lookup(backend: str, dtype: str, shape: tuple) -> None:
    lookup = np.array([4, 0, 4, 2], np.int32)
    run(
        backend,
        "EMBEDDING_LOOKUP",
        [tensor((4,), "int32"), tensor(shape, dtype)],
        [tensor((4,) + shape[1:], dtype)],
        None,
        [lookup, data(shape, dtype)],
    )


@pytest.mark.parametrize("dtype,per_row", [("int8", False), ("int8", True), ("uint8", False)])
def test_embedding_lookup_hybrid(backend: str, dtype: str, per_row: bool) -> None:
    """int8/uint8 rows into float32: dequantized with the (per-row) scale, zero point 0."""
    shape = (5, 2, 3)
    scale = np.linspace(0.01, 0.2, 5).astype(np.float32) if per_row else 0.037
    value = {
        "shape": list(shape),
        "dtype": dtype,
        "data": data(shape, dtype, seed=7, low=-128, high=255),
        "quant": quantization(scale, 0, 0),
    }
    run(
        backend,
        "EMBEDDING_LOOKUP",
        [tensor((4,), "int32"), value],
        [tensor((4, 2, 3), "float32")],
        None,
        [np.array([3, 0, 4, 3], np.int32)],
    )


#: (op, operands, outputs, options, feed with an index out of range)
BAD_INDICES = {
    "gather_high": (
        "GATHER",
        [tensor((4, 3), "float32"), tensor((2,), "int32")],
        [tensor((2, 3), "float32")],
        opt.GatherOptions(),
        [data((4, 3), "float32"), np.array([0, 4], np.int32)],
    ),
    "gather_negative": (
        "GATHER",
        [tensor((4, 3), "float32"), tensor((2,), "int32")],
        [tensor((2, 3), "float32")],
        opt.GatherOptions(),
        [data((4, 3), "float32"), np.array([-1, 2], np.int32)],
    ),
    "gather_nd": (
        "GATHER_ND",
        [tensor((3, 4), "int8"), tensor((1, 2), "int32")],
        [tensor((1,), "int8")],
        opt.GatherNdOptions(),
        [data((3, 4), "int8"), np.array([[0, 5]], np.int32)],
    ),
    "scatter_nd": (
        "SCATTER_ND",
        [tensor((1, 2), "int32"), tensor((1,), "float32"), const([3, 4])],
        [tensor((3, 4), "float32")],
        opt.ScatterNdOptions(),
        [np.array([[1, -1]], np.int32), np.ones(1, np.float32)],
    ),
    "embedding": (
        "EMBEDDING_LOOKUP",
        [tensor((2,), "int32"), tensor((4, 3), "float32")],
        [tensor((2, 3), "float32")],
        None,
        [np.array([1, 4], np.int32), data((4, 3), "float32")],
    ),
}


@pytest.mark.parametrize("case", list(BAD_INDICES))
def test_out_of_range_indices_raise(case: str) -> None:
    """LiteRT fails such invokes; we raise our own error naming the node instead of wrapping around."""
    op, ins, outs, options, feed = BAD_INDICES[case]
    model = single_op(op, ins, outs, options)
    with pytest.raises(RuntimeError):
        run_litert(model, feed)
    with pytest.raises(TeflonError, match=rf"node 0 \({op}\): .*index out of range"):
        run_teflon(model, feed)
