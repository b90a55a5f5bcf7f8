"""TFLite options <-> op-layer attributes: the indexing family (see ``teflon_py.ops.indexing``)."""
from __future__ import annotations

from typing import Any

from teflon_py import ir
from teflon_py.ops.indexing import GatherAttrs, OneHotAttrs, StridedSliceAttrs
from teflon_py.tflite import options as O
from teflon_py.tflite.translate.common import register_empty
from teflon_py.tflite.translate.movement import rank_of
from teflon_py.tflite.translate.registry import Source, parses, writes
from teflon_py.tflite.translate.shape import axis_in

EMPTY = {"SLICE": O.SliceOptions, "GATHER_ND": O.GatherNdOptions, "SCATTER_ND": O.ScatterNdOptions,
         "WHERE": O.WhereOptions, "TOPK_V2": O.TopKV2Options, "EMBEDDING_LOOKUP": None,
         "DENSIFY": O.DensifyOptions}


register_empty(EMPTY)


@parses("STRIDED_SLICE")
def parse_strided_slice(src: Source) -> StridedSliceAttrs:
    o = src.option(O.StridedSliceOptions)
    return StridedSliceAttrs(int(o.begin_mask), int(o.end_mask), int(o.ellipsis_mask), int(o.new_axis_mask),
                             int(o.shrink_axis_mask), bool(o.offset))


@writes("STRIDED_SLICE")
def write_strided_slice(attrs: StridedSliceAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.StridedSliceOptions(begin_mask=attrs.begin_mask, end_mask=attrs.end_mask,
                                 ellipsis_mask=attrs.ellipsis_mask, new_axis_mask=attrs.new_axis_mask,
                                 shrink_axis_mask=attrs.shrink_axis_mask, offset=attrs.offset)


@parses("GATHER")
def parse_gather(src: Source) -> GatherAttrs:
    o = src.option(O.GatherOptions)
    bd = int(o.batch_dims)
    positions = rank_of(src.input(1))
    if bd < 0 and bd + positions >= 0:
        bd += positions
    return GatherAttrs(axis_in(int(o.axis), rank_of(src.input(0))), bd)


@writes("GATHER")
def write_gather(attrs: GatherAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.GatherOptions(axis=attrs.axis, batch_dims=attrs.batch_dims)


@parses("ONE_HOT")
def parse_one_hot(src: Source) -> OneHotAttrs:
    return OneHotAttrs(axis_in(int(src.option(O.OneHotOptions).axis), rank_of(src.input(0), 1)))


@writes("ONE_HOT")
def write_one_hot(attrs: OneHotAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.OneHotOptions(axis=attrs.axis)
