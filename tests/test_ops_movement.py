"""The movement, shape and indexing families on the op layer: TFLite translators round-trip
(``write_model(read_model(x))`` reads back the same attributes), inference gives the output
shapes (None where they depend on data) and refuses broken models with a ModelError."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.errors import ModelError
from teflon_py.ops import OPS, Act, FusedActivation, NoAttrs, infer
from teflon_py.ops.indexing import GatherAttrs, OneHotAttrs, StridedSliceAttrs, strided_slice_ranges
from teflon_py.ops.movement import ConcatenationAttrs, MirrorMode, MirrorPadAttrs, PackAttrs, SplitAttrs
from teflon_py.ops.shape import ExpandDimsAttrs, ReshapeAttrs, SqueezeAttrs
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import ModelBuilder, write_model
from teflon_py.tflite.reader import read_model

FAMILY = ("RESHAPE", "SQUEEZE", "EXPAND_DIMS", "SHAPE", "RANK", "BROADCAST_TO", "BROADCAST_ARGS", "FILL",
          "ZEROS_LIKE", "RANGE", "CONCATENATION", "PACK", "UNPACK", "SPLIT", "SPLIT_V", "TRANSPOSE", "PAD",
          "PADV2", "MIRROR_PAD", "TILE", "REVERSE_V2", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH",
          "SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND", "GATHER", "GATHER_ND", "SCATTER_ND", "STRIDED_SLICE",
          "SLICE", "ONE_HOT", "WHERE", "EMBEDDING_LOOKUP", "DENSIFY", "TOPK_V2")


def one_op(opcode, inputs, outputs, options):
    """A model of one op: ``inputs`` are (shape, dtype) or constant arrays; outputs (shape, dtype)."""
    mb = ModelBuilder()
    g = mb.main
    ins = []
    for k, spec in enumerate(inputs):
        if isinstance(spec, np.ndarray):
            ins.append(g.add_constant(f"c{k}", spec))
        else:
            ins.append(g.add_input(f"x{k}", *spec))
    outs = [g.add_tensor(f"y{k}", *spec) for k, spec in enumerate(outputs)]
    g.add_op(opcode, ins, outs, options)
    g.mark_outputs(*outs)
    g.graph.inputs = tuple(t for t, s in zip(ins, inputs) if not isinstance(s, np.ndarray))
    return mb


def parsed(mb):
    model = read_model(mb.build())
    return model.graphs[0], model.graphs[0].operations[0]


def roundtrip(mb):
    model = read_model(mb.build())
    again = read_model(write_model(model))
    return model.graphs[0].operations[0].attrs, again.graphs[0].operations[0].attrs


def test_every_op_of_the_family_is_defined() -> None:
    assert set(FAMILY) <= set(OPS)


CASES = {
    "concat": (one_op("CONCATENATION", [((2, 3), np.float32), ((2, 5), np.float32)], [((2, 8), np.float32)],
                      O.ConcatenationOptions(axis=-1, fused_activation_function=ir.Activation.RELU6)),
               ConcatenationAttrs(1, FusedActivation.of(Act.RELU6)), [(2, 8)]),
    "pack": (one_op("PACK", [((2, 3), np.float32)] * 2, [((2, 2, 3), np.float32)],
                    O.PackOptions(values_count=2, axis=-2)), PackAttrs(1, 2), [(2, 2, 3)]),
    "split": (one_op("SPLIT", [np.array(-1, np.int32), ((2, 6), np.float32)], [((2, 3), np.float32)] * 2,
                     O.SplitOptions(num_splits=2)), SplitAttrs(2, 1), [(2, 3), (2, 3)]),
    "reshape_operand": (one_op("RESHAPE", [((2, 6), np.float32), np.array([3, -1], np.int32)],
                               [((3, 4), np.float32)], O.ReshapeOptions(new_shape=(3, 4))),
                        ReshapeAttrs((3, -1)), [(3, 4)]),
    "reshape_runtime": (one_op("RESHAPE", [((2, 6), np.float32), ((2,), np.int32)], [((3, 4), np.float32)],
                               None), ReshapeAttrs(None), [None]),
    "squeeze": (one_op("SQUEEZE", [((1, 3, 1), np.float32)], [((3, 1), np.float32)],
                       O.SqueezeOptions(squeeze_dims=(0,))), SqueezeAttrs((0,)), [(3, 1)]),
    "expand_dims": (one_op("EXPAND_DIMS", [((2, 3), np.float32), np.array([-1], np.int32)],
                           [((2, 3, 1), np.float32)], O.ExpandDimsOptions()), ExpandDimsAttrs(2), [(2, 3, 1)]),
    "mirror_pad": (one_op("MIRROR_PAD", [((3, 4), np.float32), np.array([[1, 2], [0, 3]], np.int32)],
                          [((6, 7), np.float32)], O.MirrorPadOptions(mode=1)),
                   MirrorPadAttrs(MirrorMode.SYMMETRIC), [(6, 7)]),
    "gather": (one_op("GATHER", [((2, 5, 3), np.float32), ((2, 4), np.int32)], [((2, 4, 3), np.float32)],
                      O.GatherOptions(axis=-2, batch_dims=-1)), GatherAttrs(1, 1), [(2, 4, 3)]),
    "strided_slice": (one_op("STRIDED_SLICE", [((5, 6), np.float32), np.array([1, 0], np.int32),
                                               np.array([4, 6], np.int32), np.array([2, 1], np.int32)],
                             [((6,), np.float32)], O.StridedSliceOptions(shrink_axis_mask=1)),
                      StridedSliceAttrs(shrink_axis_mask=1), [(6,)]),
    "one_hot": (one_op("ONE_HOT", [((3,), np.int32), np.array(4, np.int32), np.array(1.0, np.float32),
                                   np.array(0.0, np.float32)], [((3, 4), np.float32)], O.OneHotOptions(axis=-1)),
                OneHotAttrs(1), [(3, 4)]),
    "where": (one_op("WHERE", [((3, 2), np.bool_)], [((4, 2), np.int64)], None), NoAttrs(), [None]),
    "range": (one_op("RANGE", [np.array(1, np.int32), np.array(10, np.int32), np.array(4, np.int32)],
                     [((3,), np.int32)], None), NoAttrs(), [(3,)]),
    "fill_runtime": (one_op("FILL", [((2,), np.int32), np.array(1.5, np.float32)], [((2, 2), np.float32)],
                            None), NoAttrs(), [None]),
    "space_to_batch": (one_op("SPACE_TO_BATCH_ND", [((1, 4, 3, 2), np.float32), np.array([2, 2], np.int32),
                                                    np.array([[0, 0], [0, 1]], np.int32)],
                              [((4, 2, 2, 2), np.float32)], None), NoAttrs(), [(4, 2, 2, 2)]),
}


@pytest.mark.parametrize("case", list(CASES))
def test_parse_round_trip_and_infer(case: str) -> None:
    mb, attrs, shapes = CASES[case]
    first, again = roundtrip(mb)
    assert first == attrs
    assert again == attrs
    graph, op = parsed(mb)
    metas = infer(graph, op)
    assert [m.shape for m in metas] == shapes
    assert all(m.dtype == np.dtype(graph.tensors[t].dtype) for m, t in zip(metas, op.outputs))


BROKEN = {
    "concat_off_axis": one_op("CONCATENATION", [((2, 3), np.float32), ((3, 5), np.float32)],
                              [((2, 8), np.float32)], O.ConcatenationOptions(axis=1)),
    "split_unequal": one_op("SPLIT", [np.array(1, np.int32), ((2, 5), np.float32)], [((2, 2), np.float32)] * 2,
                            O.SplitOptions(num_splits=2)),
    "reshape_size": one_op("RESHAPE", [((2, 6), np.float32), np.array([5, -1], np.int32)],
                           [((5, 2), np.float32)], None),
    "pack_axis": one_op("PACK", [((2, 3), np.float32)] * 2, [((2, 2, 3), np.float32)],
                        O.PackOptions(values_count=2, axis=3)),
    "mirror_reflect_too_wide": one_op("MIRROR_PAD", [((3, 4), np.float32), np.array([[3, 0], [0, 0]], np.int32)],
                                      [((6, 4), np.float32)], O.MirrorPadOptions(mode=0)),
    "transpose_perm": one_op("TRANSPOSE", [((2, 3), np.float32), np.array([0, 0], np.int32)],
                             [((2, 3), np.float32)], None),
    "gather_index": one_op("GATHER", [((4, 3), np.float32), np.array([0, 4], np.int32)],
                           [((2, 3), np.float32)], O.GatherOptions()),
    "depth_to_space": one_op("DEPTH_TO_SPACE", [((1, 2, 2, 6), np.float32)], [((1, 4, 4, 1), np.float32)],
                             O.DepthToSpaceOptions(block_size=2)),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_infer_refuses_broken_models(case: str) -> None:
    graph, op = parsed(BROKEN[case])
    with pytest.raises(ModelError, match=rf"node 0 \({op.name}\): "):
        infer(graph, op)


def test_the_error_names_the_broken_node_not_the_first() -> None:
    """Node indices in errors are the node's own: a bad RESHAPE after an ABS is node 1, refused
    at allocate_tensors (as LiteRT's Prepare refuses it)."""
    import teflon_py

    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (2, 6), np.float32)
    a = g.add_tensor("abs", (2, 6), np.float32)
    g.add_op("ABS", [x], [a])
    y = g.add_tensor("y", (5, 2), np.float32)
    g.add_op("RESHAPE", [a, g.add_constant("shape", np.array([5, -1], np.int32))], [y])
    g.mark_outputs(y)
    it = teflon_py.Interpreter(model_content=mb.build())
    with pytest.raises(ModelError, match=r"node 1 \(RESHAPE\): cannot reshape 12 elements into \[5, -1\]"):
        it.allocate_tensors()


def test_unknown_mirror_mode_is_a_model_error() -> None:
    mb = one_op("MIRROR_PAD", [((3, 4), np.float32), np.array([[1, 1], [1, 1]], np.int32)],
                [((5, 6), np.float32)], O.MirrorPadOptions(mode=7))
    with pytest.raises(ModelError, match=r"subgraph 0 operator 0 \(MIRROR_PAD\): unknown mirror pad mode 7"):
        read_model(mb.build())


def test_strided_slice_ranges_refuse_zero_strides() -> None:
    with pytest.raises(ModelError, match="STRIDED_SLICE: stride value has to be non-zero"):
        strided_slice_ranges(StridedSliceAttrs(), (4,), [0], [4], [0])
    zero = one_op("STRIDED_SLICE", [((4,), np.float32), np.array([0], np.int32), np.array([4], np.int32),
                                    np.array([0], np.int32)], [((4,), np.float32)], O.StridedSliceOptions())
    graph, op = parsed(zero)
    with pytest.raises(ModelError, match=r"node 0 \(STRIDED_SLICE\): stride value has to be non-zero"):
        infer(graph, op)
