"""CONV_3D: TFLite's reference 3-D convolution (float32 only, as LiteRT), vectorised as im2col.

Input NDHWC, filter ``[KD, KH, KW, C, O]`` (DHWIO, unlike CONV_2D's OHWI), optional bias. Padding
per axis is CONV_2D's (ComputePadding3DValues: half the total before, the odd one after);
zero-padding stands for the taps the reference kernel skips. A strided view gathers each output
voxel's window into one row of ``KD*KH*KW*C`` values, one matmul with the filter reshaped to
``[KD*KH*KW*C, O]`` gives every output, then bias and the fused activation's clamp.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from teflon_py.fallback.registry import Node, register
from teflon_py.ops import conv as ops_conv

FLOAT_MAX = float(np.finfo(np.float32).max)


def _geometry(
    node: Node, spatial: tuple[int, ...], kernel: tuple[int, ...]
) -> list[tuple[int, int, int, int]]:
    """Per spatial axis (D, H, W): (stride, dilation, output size, padding before)."""
    attrs = node.attrs
    wins = ops_conv.conv3d_windows(attrs, spatial, kernel)
    return [(s, d, win.out, win.before) for s, d, win in zip(attrs.strides, attrs.dilations, wins)]


def _im2col(x: np.ndarray, kernel: tuple[int, ...], axes: list[tuple[int, int, int, int]]) -> np.ndarray:
    """Zero-padded NDHWC input -> ``[N*OD*OH*OW, KD*KH*KW*C]`` rows ordered like the filter."""
    n, c = x.shape[0], x.shape[4]
    spans = [(out - 1) * s + (k - 1) * d + 1 for k, (s, d, out, _) in zip(kernel, axes)]
    padded = np.zeros((n, *spans, c), np.float32)
    src, dst = [slice(None)], [slice(None)]
    for size, span, (_, _, _, before) in zip(x.shape[1:4], spans, axes):
        rows = max(0, min(size, span - before))
        src.append(slice(0, rows))
        dst.append(slice(before, before + rows))
    padded[tuple(dst)] = x[tuple(src)]
    eff = [(k - 1) * d + 1 for k, (_, d, _, _) in zip(kernel, axes)]
    views = sliding_window_view(padded, eff, axis=(1, 2, 3))  # N, D', H', W', C, ED, EH, EW
    (sd, dd, od, _), (sh, dh, oh, _), (sw, dw, ow, _) = axes
    views = views[:, ::sd, ::sh, ::sw, :, ::dd, ::dh, ::dw][:, :od, :oh, :ow]
    cols = np.empty((n, od, oh, ow, *kernel, c), np.float32)
    cols[...] = views.transpose(0, 1, 2, 3, 5, 6, 7, 4)
    return cols.reshape(n * od * oh * ow, -1)


@register("CONV_3D")
def conv_3d(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """CONV_3D (NDHWC input, DHWIO filter, optional bias): im2col + one matmul + bias + activation."""
    x, w = inputs[0], inputs[1]
    bias = inputs[2] if len(inputs) > 2 else None
    if x.ndim != 5 or w.ndim != 5:
        raise node.error(f"needs 5-D input and filter, got {x.shape} and {w.shape}")
    if (
        any(t is not None and t.dtype != np.float32 for t in (x, w, bias))
        or node.outputs[0].dtype != np.float32
    ):
        raise node.error("only float32 is supported (as LiteRT's CONV_3D)")
    reason = ops_conv.conv3d_reason(node.attrs, x.shape, w.shape)
    if reason:
        raise node.error(reason)
    kd, kh, kw, _, o = w.shape
    if bias is not None and bias.size != o:
        raise node.error(f"bias has {bias.size} values for {o} output channels")
    axes = _geometry(node, x.shape[1:4], (kd, kh, kw))
    act = node.attrs.activation
    reason = ops_conv.activation_reason(act)
    if reason:
        raise node.error(reason)
    acc = _im2col(x, (kd, kh, kw), axes) @ w.reshape(-1, o)
    if bias is not None:
        acc += bias.reshape(-1)
    lo, hi = act.range(np.dtype(np.float32))
    np.clip(acc, np.float32(max(lo, -FLOAT_MAX)), np.float32(min(hi, FLOAT_MAX)), out=acc)
    return acc.reshape(x.shape[0], *(a[2] for a in axes), o)
