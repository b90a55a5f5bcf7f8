"""The sliding-window parameters NNAPI's convolutions and pools share: explicit or implicit
padding, strides, the op's own scalars, the fused activation, the NCHW layout flag and
dilation factors, in the order the spec gives them after the op's tensor inputs."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.lowering import Call
from teflon_py.ops.common import FusedActivation, Padding


def is_implicit(types: Sequence[T], first: int, extra: int) -> bool:
    """Whether the operands from ``first`` on are the implicit-padding form (a PaddingCode, two
    strides, ``extra`` scalars, a FuseCode, then optional layout...) rather than the explicit one
    (four pads, two strides, ...): told apart by count, or by the BOOL layout flag's position."""
    base = first + 4 + extra  # operand count of the implicit form without optional inputs
    return len(types) == base or (len(types) > base and types[base] == T.BOOL)


def scalar_types(types: Sequence[T], first: int, extra: int, dilation: bool,
                 layout_required: bool = False) -> tuple[list[T], int]:
    """The scalar types expected from ``first`` on, and how many trailing ones are optional
    (the layout flag, unless the operation requires it, and the two dilation factors)."""
    lead = [T.INT32] if is_implicit(types, first, extra) else [T.INT32] * 4
    scalars = lead + [T.INT32] * (2 + extra + 1) + [T.BOOL]
    optional = 0 if layout_required else 1
    if dilation:
        scalars += [T.INT32, T.INT32]
        optional += 2
    return scalars, optional


@dataclass(frozen=True)
class WindowParams:
    padding: Padding
    strides: tuple[int, int]  # (h, w)
    extra: tuple[int, ...]  # the op's own scalars between the strides and the FuseCode
    activation: FusedActivation
    nchw: bool
    dilations: tuple[int, int]  # (h, w)
    extra_at: int  # the input position of the first of ``extra``


def window_params(c: Call, first: int, extra: int = 0, dilation: bool = False) -> WindowParams:
    """Read the window parameters from input ``first`` on (see the module's docstring)."""
    types = [c.type(k) for k in range(c.n_in)]
    if is_implicit(types, first, extra):
        padding = c.padding_code(first)
        k = first + 1
    else:
        left, right, top, bottom = (c.scalar(first + i) for i in range(4))
        if min(left, right, top, bottom) < 0:
            raise c.error(f"paddings (left {left}, right {right}, top {top}, bottom {bottom}) must be >= 0", first)
        padding = Padding(((top, bottom), (left, right)))
        k = first + 4
    stride_w, stride_h = c.scalar(k), c.scalar(k + 1)
    if stride_w < 1 or stride_h < 1:
        raise c.error(f"strides (width {stride_w}, height {stride_h}) must be >= 1", k)
    extras = tuple(c.scalar(k + 2 + i) for i in range(extra))
    activation = c.fuse(k + 2 + extra)
    layout = k + 3 + extra
    nchw = c.nchw(layout)
    dil_w = c.scalar(layout + 1, 1) if dilation else 1
    dil_h = c.scalar(layout + 2, 1) if dilation else 1
    if dilation and c.omitted(layout + 1) != c.omitted(layout + 2):
        raise c.error("the dilation factors for width and height are given together or not at all", layout + 1)
    if dil_w < 1 or dil_h < 1:
        raise c.error(f"dilation factors (width {dil_w}, height {dil_h}) must be >= 1", layout + 1)
    return WindowParams(padding, (stride_h, stride_w), extras, activation, nchw, (dil_h, dil_w), k + 2)
