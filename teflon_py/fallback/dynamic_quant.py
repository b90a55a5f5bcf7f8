"""DYNAMIC_QUANTIZE, DYNAMIC_FULLY_CONNECTED and DYNAMIC_CONV_2D: per-row run-time int8
quantization and the layers over it (XNNPACK's qd8 path). Exact integer accumulation, then
``acc * row_scale * weight_scale[channel] + bias`` in float32."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py.fallback.conv import im2col, pad_input, window
from teflon_py.fallback.registry import Node, register
from teflon_py.ops import matmul as ops_matmul
from teflon_py.quant import dynamic


@register("DYNAMIC_QUANTIZE")
def dynamic_quantize(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    x = np.asarray(inputs[0], np.float32)
    rows = x.reshape(ops_matmul.dynamic_rows(node.attrs, x.shape), -1)
    scale, zero_point = dynamic.row_params(rows)
    q = dynamic.quantize_rows(rows, scale, zero_point).reshape(x.shape)
    return [q, np.stack([scale, zero_point.astype(np.float32)], axis=1)]


@register("DYNAMIC_FULLY_CONNECTED")
def dynamic_fully_connected(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    q, params, w, bias = inputs[0], inputs[1], inputs[2], inputs[3] if len(inputs) > 3 else None
    wt = node.inputs[2]
    depth = w.shape[1]
    rows = q.reshape(-1, depth).astype(np.int64) - params[:, 1].astype(np.int64)[:, None]
    wq = w.astype(np.int64) - wt.quantization.zero_point.astype(np.int64).reshape(-1, 1)
    acc = (rows @ wq.T).astype(np.float32)  # the int32 accumulators, converted as XNNPACK does
    w_scale = np.broadcast_to(wt.quantization.scale.astype(np.float32), (w.shape[0],))
    out = acc * params[:, 0:1] * w_scale[None, :]
    if bias is not None:
        out = out + bias.astype(np.float32)
    act = node.attrs.activation
    lo, hi = act.range(np.float32)
    out = np.clip(out, lo, hi).astype(np.float32)
    return out.reshape(ops_matmul.fc_output_shape(node.attrs, q.shape, w.shape))


def _finish(node: Node, acc: np.ndarray, row_scale: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    """float32(acc) * row scale * weight scale (+ bias), clamped: acc's last axis is channels."""
    wt = node.inputs[2]
    w_scale = np.broadcast_to(wt.quantization.scale.astype(np.float32), (acc.shape[-1],))
    out = acc.astype(np.float32) * row_scale * w_scale
    if bias is not None:
        out = out + bias.astype(np.float32)
    lo, hi = node.attrs.activation.range(np.float32)
    return np.clip(out, lo, hi).astype(np.float32)


@register("DYNAMIC_CONV_2D")
def dynamic_conv_2d(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    q, params, w, bias = inputs[0], inputs[1], inputs[2], inputs[3] if len(inputs) > 3 else None
    n, h, wd, c = q.shape
    o, kh, kw, cg = w.shape
    groups = c // cg
    win = window(node, h, wd, kh, kw)
    x = q.astype(np.float64) - params[:, 1].astype(np.float64)[:, None, None, None]  # padding reads 0
    wq = w.astype(np.int64) - node.inputs[2].quantization.zero_point.astype(np.int64).reshape(-1, 1, 1, 1)
    weights = wq.reshape(groups, o // groups, -1).transpose(0, 2, 1).astype(np.float64)
    acc = im2col(pad_input(x, win, 0.0), win, np.dtype(np.float64), groups) @ weights  # exact integers
    acc = acc[0] if groups == 1 else acc.transpose(1, 0, 2).reshape(-1, o)
    acc = acc.reshape(n, win.oh * win.ow, o).astype(np.int64).astype(np.int32)
    out = _finish(node, acc, params[:, 0].astype(np.float32)[:, None, None], bias)
    return out.reshape(n, win.oh, win.ow, o)
