"""The movement operations from the spec's text: CONCATENATION, PACK, SPLIT, TRANSPOSE, TILE,
REVERSE, DEPTH_TO_SPACE, SPACE_TO_DEPTH, SPACE_TO_BATCH_ND, BATCH_TO_SPACE_ND, PAD, PAD_V2,
MIRROR_PAD, STRIDED_SLICE, SLICE, GATHER, EMBEDDING_LOOKUP against LiteRT's reference kernels on
the same graph (``Twin``), every operand type each allows and the NCHW layout where there is one;
CHANNEL_SHUFFLE (not in TFLite) against the spec's formula; and the rules as BAD_DATA."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from teflon_py.nnapi import NNAPIError, OperationType, ResultCode
from teflon_py.nnapi import OperandType as T
from teflon_py.tflite import options as O
from tests.nnapi.harness import Spec, check_vs, expect_bad_data, rng_array, run
from tests.nnapi.twin_case import MODES, NCHW_FROM_NHWC, NHWC_FROM_NCHW, Twin

FOUR = ["float32", "float16", "uint8", "int8"]  # the classic movement types
FIVE = [*FOUR, "int32"]


def nchw_twin_op(tw: Twin, opcode: str, x: int, x_shape: Sequence[int], extra: Sequence[int], y: int,
                 y_nhwc: Sequence[int], nchw: bool, options: object = None) -> None:
    """The twin's ``opcode`` on ``x`` into ``y``, in NHWC between TRANSPOSEs when ``nchw``."""
    if not nchw:
        tw.g.op(opcode, [x, *extra], [y], options)
        return
    src = tw.transposed(x, x_shape, NHWC_FROM_NCHW)
    mid = tw.tensor(y_nhwc)
    tw.g.op(opcode, [src, *extra], [mid], options)
    tw.transpose_to(mid, y, NCHW_FROM_NHWC)


def nchw_dims(nhwc: Sequence[int], nchw: bool) -> list[int]:
    return [nhwc[i] for i in NCHW_FROM_NHWC] if nchw else list(nhwc)




# -- CONCATENATION / PACK / SPLIT -------------------------------------------------------------------

@pytest.mark.parametrize("mode", [*FOUR, "uint8_rescale", "int8_rescale"])
def test_concatenation(backend: str, mode: str) -> None:
    """Three inputs along axis 1; the _rescale cases give each input its own scale and zero point
    (allowed since feature level 3 for uint8; int8 is shifted to uint8 and back, as Android's)."""
    base = mode.split("_")[0]
    tw = Twin(base, seed=1)
    rescale = mode.endswith("rescale")
    quants = [(0.5, 120), (0.25, 3), (1.5, 200)] if base == "uint8" else [(0.25, -3), (0.1, 40), (0.75, -100)]
    shapes = [[2, 1, 3], [2, 4, 3], [2, 2, 3]]
    xs = [tw.input(sh, quant=quants[k] if rescale else MODES[base].quant) for k, sh in enumerate(shapes)]
    y = tw.output([2, 7, 3])
    tw.s.op(OperationType.CONCATENATION, [x[0] for x in xs] + [tw.s.i32(1)], [y[0]])
    if rescale and base == "int8":  # Android: int8 + 128 as uint8, the uint8 concatenation, back
        shifted = [(s, z + 128) for s, z in quants]
        wide = []
        for (nn, tf), sh, q in zip(xs, shapes, shifted):
            w = tw.tensor(sh, quant=q, dtype=np.uint8)
            tw.g.op("QUANTIZE", [tf], [w])
            wide.append(w)
        joined = tw.tensor([2, 7, 3], quant=(0.25, 125), dtype=np.uint8)
        tw.g.op("CONCATENATION", wide, [joined], O.ConcatenationOptions(axis=1))
        tw.g.op("QUANTIZE", [joined], [y[1]])
    else:
        tw.g.op("CONCATENATION", [x[1] for x in xs], [y[1]], O.ConcatenationOptions(axis=1))
    tw.check(backend)


@pytest.mark.parametrize("mode", FIVE)
def test_pack(backend: str, mode: str) -> None:
    tw = Twin(mode, seed=2)
    xs = [tw.input([3, 4]) for _ in range(3)]
    y = tw.output([3, 3, 4])
    tw.s.op(OperationType.PACK, [tw.s.i32(1)] + [x[0] for x in xs], [y[0]])
    tw.g.op("PACK", [x[1] for x in xs], [y[1]], O.PackOptions(values_count=3, axis=1))
    tw.check(backend)


@pytest.mark.parametrize("mode", FIVE)
def test_split(backend: str, mode: str) -> None:
    """Three parts of the last axis, named by a negative axis."""
    tw = Twin(mode, seed=3)
    x = tw.input([2, 3, 6])
    ys = [tw.output([2, 3, 2]) for _ in range(3)]
    tw.s.op(OperationType.SPLIT, [x[0], tw.s.i32(-1), tw.s.i32(3)], [y[0] for y in ys])
    tw.g.op("SPLIT", [tw.g.const(np.array([2], np.int32), np.int32), x[1]], [y[1] for y in ys],
            O.SplitOptions(num_splits=3))
    tw.check(backend)


# -- TRANSPOSE / CHANNEL_SHUFFLE / TILE / REVERSE -------------------------------------------------------

@pytest.mark.parametrize("mode", FOUR)
@pytest.mark.parametrize("perm", [(1, 2, 0), None])
def test_transpose(backend: str, mode: str, perm: tuple[int, ...] | None) -> None:
    """A given perm, and none (the dimensions reversed)."""
    tw = Twin(mode, seed=4)
    shape = [2, 3, 4]
    x = tw.input(shape)
    order = perm or (2, 1, 0)
    y = tw.output([shape[p] for p in order])
    nn_perm = tw.s.const(T.TENSOR_INT32, np.array(perm, np.int32)) if perm else tw.s.omitted(T.TENSOR_INT32, [3])
    tw.s.op(OperationType.TRANSPOSE, [x[0], nn_perm], [y[0]])
    tw.g.op("TRANSPOSE", [x[1], tw.g.const(np.array(order, np.int32), np.int32)], [y[1]], O.TransposeOptions())
    tw.check(backend)


def channel_shuffle_reference(x: np.ndarray, groups: int, axis: int) -> np.ndarray:
    """The spec's formula, index by index: output channel k * groups + g = input channel
    g * group_size + k."""
    channels = x.shape[axis]
    size = channels // groups
    source = np.empty(channels, np.int64)
    for g in range(groups):
        for k in range(size):
            source[k * groups + g] = g * size + k
    return np.take(x, source, axis=axis)


def test_channel_shuffle_by_hand() -> None:
    """Six channels in three groups: [0 1 | 2 3 | 4 5] -> [0 2 4 1 3 5]."""
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [1, 6])
    y = s.output(T.TENSOR_FLOAT32, [1, 6])
    s.op(OperationType.CHANNEL_SHUFFLE, [x, s.i32(3), s.i32(1)], [y])
    check_vs(s.model(), [np.arange(6, dtype=np.float32).reshape(1, 6)],
             [np.array([[0, 2, 4, 1, 3, 5]], np.float32)], "numpy")


@pytest.mark.parametrize("mode", FOUR)
@pytest.mark.parametrize("axis", [-1, 1])
def test_channel_shuffle(backend: str, mode: str, axis: int) -> None:
    rng = np.random.default_rng(5)
    m = MODES[mode]
    shape = [2, 6, 3, 6]
    s = Spec()
    q = m.quant or (0.0, 0)
    x = s.input(m.type, shape, *q)
    y = s.output(m.type, shape, *q)
    s.op(OperationType.CHANNEL_SHUFFLE, [x, s.i32(2 if axis == -1 else 3), s.i32(axis)], [y])
    xs = rng_array(rng, m.type, shape)
    check_vs(s.model(), [xs], [channel_shuffle_reference(xs, 2 if axis == -1 else 3, axis)], backend)


@pytest.mark.parametrize("mode", FIVE)
def test_tile(backend: str, mode: str) -> None:
    tw = Twin(mode, seed=6)
    x = tw.input([2, 3])
    m = tw.ints([2, 3])
    y = tw.output([4, 9])
    tw.s.op(OperationType.TILE, [x[0], m[0]], [y[0]])
    tw.g.op("TILE", [x[1], m[1]], [y[1]], O.TileOptions())
    tw.check(backend)


@pytest.mark.parametrize("mode", FIVE)
def test_reverse(backend: str, mode: str) -> None:
    tw = Twin(mode, seed=7)
    x = tw.input([2, 5, 3])
    axis = tw.ints([1])
    y = tw.output([2, 5, 3])
    tw.s.op(OperationType.REVERSE, [x[0], axis[0]], [y[0]])
    tw.g.op("REVERSE_V2", [x[1], axis[1]], [y[1]], O.ReverseV2Options())
    tw.check(backend)


# -- DEPTH_TO_SPACE / SPACE_TO_DEPTH / SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND -------------------------------

@pytest.mark.parametrize("mode", FOUR)
@pytest.mark.parametrize("layout", ["nhwc", "nchw", "omitted"])
@pytest.mark.parametrize("op", ["DEPTH_TO_SPACE", "SPACE_TO_DEPTH"])
def test_depth_space(backend: str, mode: str, layout: str, op: str) -> None:
    """Block size 2, in NHWC (layout flag false or left off) and NCHW."""
    tw = Twin(mode, seed=8)
    nchw = layout == "nchw"
    x_nhwc, y_nhwc = ([2, 3, 2, 8], [2, 6, 4, 2]) if op == "DEPTH_TO_SPACE" else ([2, 4, 6, 3], [2, 2, 3, 12])
    x = tw.input(nchw_dims(x_nhwc, nchw))
    y = tw.output(nchw_dims(y_nhwc, nchw))
    flag = [] if layout == "omitted" else [tw.s.boolean(nchw)]
    tw.s.op(OperationType[op], [x[0], tw.s.i32(2), *flag], [y[0]])
    cls = O.DepthToSpaceOptions if op == "DEPTH_TO_SPACE" else O.SpaceToDepthOptions
    nchw_twin_op(tw, op, x[1], nchw_dims(x_nhwc, nchw), [], y[1], y_nhwc, nchw, cls(block_size=2))
    tw.check(backend)


@pytest.mark.parametrize("mode", FOUR)
@pytest.mark.parametrize("nchw", [False, True])
def test_space_to_batch_nd(backend: str, mode: str, nchw: bool) -> None:
    """Block 2x3 with paddings: quantized padding is the zero point (the logical zero)."""
    tw = Twin(mode, seed=9)
    x_nhwc, y_nhwc = [1, 3, 4, 2], [6, 2, 2, 2]
    x = tw.input(nchw_dims(x_nhwc, nchw))
    block, pads = tw.ints([2, 3]), tw.ints([[1, 0], [0, 2]])
    y = tw.output(nchw_dims(y_nhwc, nchw))
    flag = [tw.s.boolean(True)] if nchw else []  # NHWC: the layout flag left off (feature level 2)
    tw.s.op(OperationType.SPACE_TO_BATCH_ND, [x[0], block[0], pads[0], *flag], [y[0]])
    nchw_twin_op(tw, "SPACE_TO_BATCH_ND", x[1], nchw_dims(x_nhwc, nchw), [block[1], pads[1]], y[1], y_nhwc, nchw,
                 O.SpaceToBatchNDOptions())
    tw.check(backend)


@pytest.mark.parametrize("mode", FOUR)
@pytest.mark.parametrize("nchw", [False, True])
def test_batch_to_space_nd(backend: str, mode: str, nchw: bool) -> None:
    """NNAPI takes no crops: the twin's are zero."""
    tw = Twin(mode, seed=10)
    x_nhwc, y_nhwc = [6, 2, 2, 3], [1, 4, 6, 3]
    x = tw.input(nchw_dims(x_nhwc, nchw))
    block = tw.ints([2, 3])
    y = tw.output(nchw_dims(y_nhwc, nchw))
    flag = [tw.s.boolean(True)] if nchw else []
    tw.s.op(OperationType.BATCH_TO_SPACE_ND, [x[0], block[0], *flag], [y[0]])
    crops = tw.g.const(np.zeros((2, 2), np.int32), np.int32)
    nchw_twin_op(tw, "BATCH_TO_SPACE_ND", x[1], nchw_dims(x_nhwc, nchw), [block[1], crops], y[1], y_nhwc, nchw,
                 O.BatchToSpaceNDOptions())
    tw.check(backend)


# -- PAD / PAD_V2 / MIRROR_PAD ----------------------------------------------------------------------------

PADDINGS = [[0, 1], [2, 0], [1, 1]]


@pytest.mark.parametrize("mode", FOUR)
def test_pad(backend: str, mode: str) -> None:
    tw = Twin(mode, seed=11)
    x = tw.input([2, 3, 2])
    p = tw.ints(PADDINGS)
    y = tw.output([3, 5, 4])
    tw.s.op(OperationType.PAD, [x[0], p[0]], [y[0]])
    tw.g.op("PAD", [x[1], p[1]], [y[1]], O.PadOptions())
    tw.check(backend)


@pytest.mark.parametrize("mode", FOUR)
def test_pad_v2(backend: str, mode: str) -> None:
    """The pad value: FLOAT16 / FLOAT32 scalars, or the quantized value itself as INT32."""
    tw = Twin(mode, seed=12)
    x = tw.input([2, 3, 2])
    p = tw.ints(PADDINGS)
    y = tw.output([3, 5, 4])
    m = MODES[mode]
    value = {"float32": 1.75, "float16": -2.5, "uint8": 7, "int8": -100}[mode]
    scalar = {T.TENSOR_FLOAT32: T.FLOAT32, T.TENSOR_FLOAT16: T.FLOAT16}.get(m.type, T.INT32)
    tw.s.op(OperationType.PAD_V2, [x[0], p[0], tw.s.scalar(scalar, value)], [y[0]])
    tw.g.op("PADV2", [x[1], p[1], tw.g.const(np.array([value], m.twin), m.twin, *(m.quant or (None,)))], [y[1]],
            O.PadV2Options())
    tw.check(backend)


@pytest.mark.parametrize("mode", FIVE)
@pytest.mark.parametrize("code", [0, 1])
def test_mirror_pad(backend: str, mode: str, code: int) -> None:
    """REFLECT (0) and SYMMETRIC (1), padding up to the most each mode allows."""
    tw = Twin(mode, seed=13)
    x = tw.input([3, 4])
    most = 2 if code == 0 else 3
    p = tw.ints([[most, 1], [0, most]])
    y = tw.output([3 + most + 1, 4 + most])
    tw.s.op(OperationType.MIRROR_PAD, [x[0], p[0], tw.s.i32(code)], [y[0]])
    tw.g.op("MIRROR_PAD", [x[1], p[1]], [y[1]], O.MirrorPadOptions(mode=code))
    tw.check(backend)


# -- STRIDED_SLICE / SLICE / GATHER / EMBEDDING_LOOKUP ------------------------------------------------------

@pytest.mark.parametrize("mode", FOUR)
@pytest.mark.parametrize("case", ["masks", "all_shrunk"])
def test_strided_slice(backend: str, mode: str, case: str) -> None:
    """Begin and end masks, a negative stride and a shrunk axis; and every axis shrunk, which
    NNAPI gives shape [1] (the twin: a scalar, then RESHAPE)."""
    tw = Twin(mode, seed=14)
    x = tw.input([3, 4, 5])
    if case == "masks":
        begin, end, strides, masks, out = [1, 2, 4], [3, 3, 1], [1, 1, -2], (0b001, 0b100, 0b010), [3, 3]
    else:
        begin, end, strides, masks, out = [2, -1, 1], [3, 4, 2], [1, 1, 1], (0, 0, 0b111), [1]
    b, e, st = tw.ints(begin), tw.ints(end), tw.ints(strides)
    y = tw.output(out)
    tw.s.op(OperationType.STRIDED_SLICE, [x[0], b[0], e[0], st[0], *(tw.s.i32(v) for v in masks)], [y[0]])
    opts = O.StridedSliceOptions(begin_mask=masks[0], end_mask=masks[1], shrink_axis_mask=masks[2])
    if case == "masks":
        tw.g.op("STRIDED_SLICE", [x[1], b[1], e[1], st[1]], [y[1]], opts)
    else:
        scalar = tw.tensor([])
        tw.g.op("STRIDED_SLICE", [x[1], b[1], e[1], st[1]], [scalar], opts)
        tw.g.op("RESHAPE", [scalar, tw.g.const(np.array([1], np.int32), np.int32)], [y[1]], O.ReshapeOptions())
    tw.check(backend)


@pytest.mark.parametrize("mode", FIVE)
def test_slice(backend: str, mode: str) -> None:
    """A size of -1 takes the rest of its dimension."""
    tw = Twin(mode, seed=15)
    x = tw.input([3, 4, 5])
    b, n = tw.ints([1, 0, 2]), tw.ints([2, -1, 2])
    y = tw.output([2, 4, 2])
    tw.s.op(OperationType.SLICE, [x[0], b[0], n[0]], [y[0]])
    tw.g.op("SLICE", [x[1], b[1], n[1]], [y[1]], O.SliceOptions())
    tw.check(backend)


@pytest.mark.parametrize("mode", FIVE)
def test_gather(backend: str, mode: str) -> None:
    """NNAPI's order (input, axis, indices); 2-D indices along axis 1 (given as -2)."""
    tw = Twin(mode, seed=16)
    x = tw.input([2, 5, 3])
    idx = tw.ints([[4, 0], [2, 2]])
    y = tw.output([2, 2, 2, 3])
    tw.s.op(OperationType.GATHER, [x[0], tw.s.i32(-2), idx[0]], [y[0]])
    tw.g.op("GATHER", [x[1], idx[1]], [y[1]], O.GatherOptions(axis=1))
    tw.check(backend)


@pytest.mark.parametrize("mode", FIVE)
def test_embedding_lookup(backend: str, mode: str) -> None:
    tw = Twin(mode, seed=17)
    lookups = tw.ints([3, 0, 3, 1])
    values = tw.input([5, 2, 3])
    y = tw.output([4, 2, 3])
    tw.s.op(OperationType.EMBEDDING_LOOKUP, [lookups[0], values[0]], [y[0]])
    tw.g.op("EMBEDDING_LOOKUP", [lookups[1], values[1]], [y[1]])
    tw.check(backend)


def test_gather_indices_given_at_run_time(backend: str) -> None:
    """Indices as a model input pass through to the op layer (OpenCL reads them as they come)."""
    tw = Twin("float32", seed=18)
    x = tw.input([4, 3])
    idx = tw.s.input(T.TENSOR_INT32, [3]), tw.g.input([3], np.int32)
    tw.feeds.append(np.array([2, 0, 2], np.int32))
    y = tw.output([4, 3])
    tw.s.op(OperationType.GATHER, [x[0], tw.s.i32(1), idx[0]], [y[0]])
    tw.g.op("GATHER", [x[1], idx[1]], [y[1]], O.GatherOptions(axis=1))
    tw.check(backend)


def test_embedding_lookup_out_of_bounds_at_run_time_fails() -> None:
    """The spec: a lookup out of bounds must fail the operation (a model input here: OP_FAILED)."""
    s = Spec()
    lookups = s.input(T.TENSOR_INT32, [2])
    values = s.const(T.TENSOR_FLOAT32, np.ones((3, 2), np.float32))
    y = s.output(T.TENSOR_FLOAT32, [2, 2])
    s.op(OperationType.EMBEDDING_LOOKUP, [lookups, values], [y])
    model = s.model()
    with pytest.raises(NNAPIError) as e:
        run(model, [np.array([1, 3], np.int32)])
    assert e.value.code == ResultCode.OP_FAILED
    assert "index out of range [0, 3)" in str(e.value)


# -- the rules: BAD_DATA naming the operation and the operand -------------------------------------------------

def test_output_quantization_must_be_the_input_s() -> None:
    s = Spec()
    x = s.input(T.TENSOR_QUANT8_ASYMM, [2, 3], 0.5, 10)
    y = s.output(T.TENSOR_QUANT8_ASYMM, [3, 2], 0.5, 11)
    s.op(OperationType.TRANSPOSE, [x, s.const(T.TENSOR_INT32, [1, 0])], [y])
    expect_bad_data(s, "operation 0 (TRANSPOSE): output 0: scale 0.5 and zero point 11 must be input 0's")


def test_concatenation_axis_must_be_non_negative() -> None:
    s = Spec()
    a, b = s.input(T.TENSOR_FLOAT32, [2, 3]), s.input(T.TENSOR_FLOAT32, [2, 3])
    y = s.output(T.TENSOR_FLOAT32, [2, 6])
    s.op(OperationType.CONCATENATION, [a, b, s.i32(-1)], [y])
    expect_bad_data(s, "operation 0 (CONCATENATION): input 2: axis -1 is outside [0, 2)")


def test_split_must_divide_the_axis() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [2, 5])
    ys = [s.output(T.TENSOR_FLOAT32, [2, 0]) for _ in range(2)]
    s.op(OperationType.SPLIT, [x, s.i32(1), s.i32(2)], ys)
    expect_bad_data(s, "operation 0 (SPLIT): input 2: num_splits 2 does not divide dimension 1 of size 5")


def test_mirror_pad_reflect_limit() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [3])
    y = s.output(T.TENSOR_FLOAT32, [6])
    s.op(OperationType.MIRROR_PAD, [x, s.const(T.TENSOR_INT32, [[3, 0]]), s.i32(0)], [y])
    expect_bad_data(s, "operation 0 (MIRROR_PAD): input 1: paddings (3, 0) of dimension 0 (size 3) exceed 2")


def test_pad_v2_value_must_fit_the_type() -> None:
    s = Spec()
    x = s.input(T.TENSOR_QUANT8_ASYMM, [3], 0.5, 0)
    y = s.output(T.TENSOR_QUANT8_ASYMM, [5], 0.5, 0)
    s.op(OperationType.PAD_V2, [x, s.const(T.TENSOR_INT32, [[1, 1]]), s.i32(300)], [y])
    expect_bad_data(s, "operation 0 (PAD_V2): input 2: pad value 300 is outside the quantized range [0, 255]")


def test_strided_slice_shrunk_dimension_takes_one_element() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [4, 3])
    y = s.output(T.TENSOR_FLOAT32, [3])
    ints = [s.const(T.TENSOR_INT32, v) for v in ([0, 0], [2, 3], [1, 1])]
    s.op(OperationType.STRIDED_SLICE, [x, *ints, s.i32(0), s.i32(0), s.i32(1)], [y])
    expect_bad_data(s, "operation 0 (STRIDED_SLICE): input 6: dimension 0 is shrunk, but its slice holds 2")


def test_gather_indices_in_range() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [4, 3])
    y = s.output(T.TENSOR_FLOAT32, [2, 3])
    s.op(OperationType.GATHER, [x, s.i32(0), s.const(T.TENSOR_INT32, [1, 4])], [y])
    expect_bad_data(s, "operation 0 (GATHER): input 2: indices must lie in [0, 4), got 1 to 4")


def test_space_to_depth_block_must_divide() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [1, 3, 4, 1])
    y = s.output(T.TENSOR_FLOAT32, [1, 1, 2, 4])
    s.op(OperationType.SPACE_TO_DEPTH, [x, s.i32(2)], [y])
    expect_bad_data(s, "operation 0 (SPACE_TO_DEPTH): input 1: block_size 2 does not divide the height 3")


def test_signature_rejects_a_type_the_operation_lacks() -> None:
    """TENSOR_INT32 is no PAD type (it is a MIRROR_PAD one): refused when the operation is added."""
    s = Spec()
    x = s.input(T.TENSOR_INT32, [3])
    y = s.output(T.TENSOR_INT32, [5])
    with pytest.raises(NNAPIError) as e:
        s.op(OperationType.PAD, [x, s.const(T.TENSOR_INT32, [[1, 1]])], [y])
    assert e.value.code == ResultCode.BAD_DATA
    assert "PAD" in str(e.value) and "TENSOR_INT32 is not supported" in str(e.value)

