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

from teflon_py.fallback.resize import float_axis, integer_axis, nearest_axis
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.movement_plan import (
    data_reason,
    dense_strides,
    dtype_name,
    fill_value,
    suffix,
    table_reason,
    table_spec,
)
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.lowerings.movement import launch
from teflon_py.opencl.registry import OpEmit, OpTensors, register
from teflon_py.ops.resize import ResizeAttrs, resize_reason, size_reason

FILES = ("resize.cl",)
#: dtype -> bilinear kernel suffix (f32/u8 blend in float, i8/i16 in LiteRT's integer units)
BILINEAR = {"float32": "f32", "uint8": "u8", "int8": "i8", "int16": "i16"}
#: the types LiteRT's RESIZE_NEAREST_NEIGHBOR computes (float32, uint8, int8, int16)
NEAREST = tuple(BILINEAR)


@dataclass(frozen=True)
class Resize:
    """One resize: input NHWC, output size, and the two coordinate modes."""

    shape: tuple[int, int, int, int]
    out_h: int
    out_w: int
    align: bool
    half: bool


def plan_resize(attrs: ResizeAttrs, shape: tuple[int, ...], size: np.ndarray) -> Resize:
    """The resize an op asks for (its checks passed)."""
    oh, ow = (int(v) for v in np.asarray(size).reshape(-1))
    return Resize(tuple(shape), oh, ow, attrs.align_corners, attrs.half_pixel_centers)


class _Tensors:
    """The op's tensors as ``movement_plan``'s graph-indexed rules read them (index = position)."""

    def __init__(self, tensors: OpTensors):
        self.tensors = [tensors.inputs[0], tensors.outputs[0]]


def check_resize(name: str):
    """Both resizes: raw values (one quantization), the op layer's rules, the output shape."""

    def check(attrs: ResizeAttrs, tensors: OpTensors, caps: object) -> str | None:
        xt, st, yt = tensors.inputs[0], tensors.input(1), tensors.outputs[0]
        view = _Tensors(tensors)
        reason = (data_reason(view, [0, 1]) or table_reason(view, 0) or resize_reason(name, attrs, xt, yt)
                  or size_reason(st.data if st is not None else None))
        if reason:
            return reason
        plan = plan_resize(attrs, xt.shape, st.data)
        n, _, _, c = plan.shape
        expected = (n, plan.out_h, plan.out_w, c)
        actual = tuple(yt.shape)
        return None if actual == expected else f"output shape {list(actual)}, expected {list(expected)}"

    return check


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


def resize_bilinear(ctx: OpEmit, attrs: ResizeAttrs) -> None:
    """One blend launch."""
    x = ctx.operand(0)
    plan = plan_resize(attrs, ctx.shape(x), ctx.graph.tensors[ctx.operand(1)].data)
    launch(ctx, bilinear_spec(dtype_name(ctx.graph, x), plan), input=x, output=ctx.output())


def nearest_tables(plan: Resize) -> list[np.ndarray]:
    """Offset tables of a nearest-neighbour resize: batch, source row, source column, channel."""
    n, h, w, c = plan.shape
    sn, sh, sw, _ = dense_strides(plan.shape)
    return [np.arange(n) * sn, nearest_axis(h, plan.out_h, plan.align, plan.half) * sh,
            nearest_axis(w, plan.out_w, plan.align, plan.half) * sw, np.arange(c)]


def resize_nearest_neighbor(ctx: OpEmit, attrs: ResizeAttrs) -> None:
    """A table gather of whole pixels."""
    x = ctx.operand(0)
    plan = plan_resize(attrs, ctx.shape(x), ctx.graph.tensors[ctx.operand(1)].data)
    spec = table_spec(suffix(ctx.graph, x), nearest_tables(plan), fill_value(0, dtype_name(ctx.graph, x)))
    launch(ctx, spec, input=x, output=ctx.output())


for _kind in BILINEAR:
    register("RESIZE_BILINEAR", kind=_kind, check=check_resize("RESIZE_BILINEAR"), params=(1,),
             max_rank=None)(resize_bilinear)
for _kind in NEAREST:
    register("RESIZE_NEAREST_NEIGHBOR", kind=_kind, check=check_resize("RESIZE_NEAREST_NEIGHBOR"), params=(1,),
             max_rank=None)(resize_nearest_neighbor)
