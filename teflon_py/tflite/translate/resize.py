"""TFLite options <-> op-layer attributes: the resize family (see ``teflon_py.ops.resize``)."""
from __future__ import annotations

from teflon_py import ir
from teflon_py.ops.resize import ResizeAttrs
from teflon_py.tflite.options import ResizeBilinearOptions, ResizeNearestNeighborOptions
from teflon_py.tflite.translate.registry import Source, parses, writes

OPTIONS = {"RESIZE_BILINEAR": ResizeBilinearOptions, "RESIZE_NEAREST_NEIGHBOR": ResizeNearestNeighborOptions}


@parses(*OPTIONS)
def parse(src: Source) -> ResizeAttrs:
    o = src.option(OPTIONS[src.name])
    return ResizeAttrs(bool(o.align_corners), bool(o.half_pixel_centers))


@writes(*OPTIONS)
def write(attrs: ResizeAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    return OPTIONS[op.name](align_corners=attrs.align_corners, half_pixel_centers=attrs.half_pixel_centers)
