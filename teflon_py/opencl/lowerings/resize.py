"""RESIZE_BILINEAR (``resize.cl``) and RESIZE_NEAREST_NEIGHBOR (``movement.cl``'s table gather), NHWC.

The per-axis maths, which decides bit-exactness (source coordinates in float32 or in 1/1024
units, neighbours, fractions), is the fallback's own (``teflon_py.fallback.resize``), run once at
compile time on two small index vectors; the kernels only blend or copy. Bilinear: float32 blend
for float32 and uint8 (rounded half away from zero), LiteRT's integer blend for int8 and int16.
Nearest neighbour copies whole pixels of any element type. Quantized tensors resize their raw
values, so input and output must share one quantization.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teflon_py import ir
from teflon_py.fallback.resize import float_axis, integer_axis, nearest_axis
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.movement_plan import (
    KINDS,
    data_reason,
    dense_strides,
    dtype_name,
    fill_value,
    param,
    suffix,
    table_reason,
    table_spec,
)
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.lowerings.movement import launch
from teflon_py.opencl.registry import EmitContext, lowering, options
from teflon_py.tflite.options import ResizeBilinearOptions, ResizeNearestNeighborOptions

FILES = ("resize.cl",)
#: dtype -> bilinear kernel suffix (f32/u8 blend in float, i8/i16 in LiteRT's integer units)
BILINEAR = {"float32": "f32", "uint8": "u8", "int8": "i8", "int16": "i16"}
OPTIONS = {"RESIZE_BILINEAR": ResizeBilinearOptions, "RESIZE_NEAREST_NEIGHBOR": ResizeNearestNeighborOptions}


@dataclass(frozen=True)
class Resize:
    """One resize: input NHWC, output size, and the two coordinate modes."""

    shape: tuple[int, int, int, int]
    out_h: int
    out_w: int
    align: bool
    half: bool


def plan_resize(graph: ir.Graph, op: ir.Operation) -> Resize:
    """The resize an op asks for; ValueError for what LiteRT itself rejects."""
    shape = tuple(graph.tensors[op.inputs[0]].shape)
    if len(shape) != 4:
        raise ValueError(f"input must be 4-D NHWC, got {list(shape)}")
    size = param(graph, op, 1)
    if len(size) != 2 or min(size) < 1:
        raise ValueError(f"size {size} must hold two positive values")
    opts = options(op, OPTIONS[op.name])
    plan = Resize(shape, size[0], size[1], bool(opts.align_corners), bool(opts.half_pixel_centers))
    if op.name == "RESIZE_BILINEAR" and plan.align and plan.half:
        raise ValueError("align_corners and half_pixel_centers cannot both be set")
    return plan


def check_resize(graph: ir.Graph, op: ir.Operation) -> str | None:
    """Both resizes: raw values (one quantization), a size LiteRT accepts, the output shape."""
    x, y = op.inputs[0], op.outputs[0]
    reason = data_reason(graph, [x, y]) or table_reason(graph, x)
    if reason:
        return reason
    try:
        plan = plan_resize(graph, op)
    except ValueError as e:
        return str(e)
    n, _, _, c = plan.shape
    expected = (n, plan.out_h, plan.out_w, c)
    actual = tuple(graph.tensors[y].shape)
    return None if actual == expected else f"output shape {list(actual)}, expected {list(expected)}"


def bilinear_spec(kind: str, plan: Resize) -> KernelSpec:
    """The blend kernel of ``kind`` with its per-axis tables as constants."""
    n, h, w, c = plan.shape
    sfx = BILINEAR[kind]
    integer = sfx in ("i8", "i16")
    axis = integer_axis if integer else float_axis
    (sy, y0, y1), (sx, x0, x1) = (axis(h, plan.out_h, plan.align, plan.half),
                                  axis(w, plan.out_w, plan.align, plan.half))
    tab = [y0, y1, x0, x1]
    constants = {}
    if integer:
        tab += [sy - 1024 * y0, sx - 1024 * x0]
    else:
        constants["frac"] = np.concatenate([sy - y0.astype(np.float32), sx - x0.astype(np.float32)])
    constants["tab"] = np.concatenate(tab).astype(np.int32)
    pixels = n * plan.out_h * plan.out_w
    ppi = max(1, 2048 // c)
    args = kernels.scalars(pixels=pixels, ppi=ppi, oh=plan.out_h, ow=plan.out_w, h=h, w=w, c=c)
    tables = ("tab",) if integer else ("tab", "frac")
    return KernelSpec(files=FILES, name=f"bilinear_{sfx}", defines={}, global_size=(-(-pixels // ppi),),
                      local_size=(1,), args=("input", *tables, "output", *args), scalars=args,
                      constants=constants)


def resize_bilinear(ctx: EmitContext, op: ir.Operation) -> None:
    """One blend launch."""
    x = op.inputs[0]
    spec = bilinear_spec(dtype_name(ctx.graph, x), plan_resize(ctx.graph, op))
    launch(ctx, spec, input=x, output=ctx.output(op))


def nearest_tables(plan: Resize) -> list[np.ndarray]:
    """Offset tables of a nearest-neighbour resize: batch, source row, source column, channel."""
    n, h, w, c = plan.shape
    sn, sh, sw, _ = dense_strides(plan.shape)
    return [np.arange(n) * sn, nearest_axis(h, plan.out_h, plan.align, plan.half) * sh,
            nearest_axis(w, plan.out_w, plan.align, plan.half) * sw, np.arange(c)]


def resize_nearest_neighbor(ctx: EmitContext, op: ir.Operation) -> None:
    """A table gather of whole pixels."""
    x = op.inputs[0]
    spec = table_spec(suffix(ctx.graph, x), nearest_tables(plan_resize(ctx.graph, op)),
                      fill_value(0, dtype_name(ctx.graph, x)))
    launch(ctx, spec, input=x, output=ctx.output(op))


for _kind in BILINEAR:
    lowering("RESIZE_BILINEAR", kind=_kind, check=check_resize, params=(1,), max_rank=None)(resize_bilinear)
for _kind in KINDS:
    lowering("RESIZE_NEAREST_NEIGHBOR", kind=_kind, check=check_resize, params=(1,),
             max_rank=None)(resize_nearest_neighbor)
