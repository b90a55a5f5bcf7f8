"""TFLite options <-> op-layer attributes: the movement family (see ``teflon_py.ops.movement``)."""
from __future__ import annotations

from typing import Any

from teflon_py import ir
from teflon_py.ops.movement import (
    BlockAttrs,
    ConcatenationAttrs,
    MirrorMode,
    MirrorPadAttrs,
    PackAttrs,
    SplitAttrs,
    UnpackAttrs,
)
from teflon_py.tflite import options as O
from teflon_py.tflite.translate.common import activation_code, activation_of, register_empty
from teflon_py.tflite.translate.registry import Source, parses, writes
from teflon_py.tflite.translate.shape import axis_in, constant_ints

EMPTY = {"TRANSPOSE": O.TransposeOptions, "PAD": O.PadOptions, "PADV2": O.PadV2Options,
         "TILE": O.TileOptions, "REVERSE_V2": O.ReverseV2Options,
         "SPACE_TO_BATCH_ND": O.SpaceToBatchNDOptions, "BATCH_TO_SPACE_ND": O.BatchToSpaceNDOptions}
MIRROR_MODES = {0: MirrorMode.REFLECT, 1: MirrorMode.SYMMETRIC}


def rank_of(t: ir.Tensor | None, extra: int = 0) -> int:
    return len(t.shape) + extra if t is not None else 0


register_empty(EMPTY)


@parses("CONCATENATION")
def parse_concatenation(src: Source) -> ConcatenationAttrs:
    opts = src.option(O.ConcatenationOptions)
    return ConcatenationAttrs(axis_in(int(opts.axis), rank_of(src.input(0))),
                              activation_of(src, opts.fused_activation_function))


@writes("CONCATENATION")
def write_concatenation(attrs: ConcatenationAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.ConcatenationOptions(axis=attrs.axis, fused_activation_function=activation_code(attrs.activation))


@parses("PACK")
def parse_pack(src: Source) -> PackAttrs:
    opts = src.option(O.PackOptions)
    return PackAttrs(axis_in(int(opts.axis), rank_of(src.input(0), 1)), int(opts.values_count))


@writes("PACK")
def write_pack(attrs: PackAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.PackOptions(values_count=attrs.count, axis=attrs.axis)


@parses("UNPACK")
def parse_unpack(src: Source) -> UnpackAttrs:
    opts = src.option(O.UnpackOptions)
    return UnpackAttrs(axis_in(int(opts.axis), rank_of(src.input(0))), int(opts.num))


@writes("UNPACK")
def write_unpack(attrs: UnpackAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.UnpackOptions(num=attrs.count, axis=attrs.axis)


def _axis_operand(src: Source, k: int, x: ir.Tensor | None) -> int | None:
    axis = constant_ints(src.input(k))
    return axis_in(axis[0], rank_of(x)) if axis else None


@parses("SPLIT")
def parse_split(src: Source) -> SplitAttrs:
    return SplitAttrs(int(src.option(O.SplitOptions).num_splits), _axis_operand(src, 0, src.input(1)))


@writes("SPLIT")
def write_split(attrs: SplitAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.SplitOptions(num_splits=attrs.num_splits)


@parses("SPLIT_V")
def parse_split_v(src: Source) -> SplitAttrs:
    return SplitAttrs(int(src.option(O.SplitVOptions).num_splits), _axis_operand(src, 2, src.input(0)))


@writes("SPLIT_V")
def write_split_v(attrs: SplitAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.SplitVOptions(num_splits=attrs.num_splits)


@parses("MIRROR_PAD")
def parse_mirror_pad(src: Source) -> MirrorPadAttrs:
    mode = int(src.option(O.MirrorPadOptions).mode)
    if mode not in MIRROR_MODES:
        raise src.fail(f"unknown mirror pad mode {mode}")
    return MirrorPadAttrs(MIRROR_MODES[mode])


@writes("MIRROR_PAD")
def write_mirror_pad(attrs: MirrorPadAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.MirrorPadOptions(mode=0 if attrs.mode == MirrorMode.REFLECT else 1)


@parses("DEPTH_TO_SPACE", "SPACE_TO_DEPTH")
def parse_block(src: Source) -> BlockAttrs:
    cls = O.DepthToSpaceOptions if src.name == "DEPTH_TO_SPACE" else O.SpaceToDepthOptions
    return BlockAttrs(int(src.option(cls).block_size))


@writes("DEPTH_TO_SPACE", "SPACE_TO_DEPTH")
def write_block(attrs: BlockAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    cls = O.DepthToSpaceOptions if op.name == "DEPTH_TO_SPACE" else O.SpaceToDepthOptions
    return cls(block_size=attrs.block_size)
