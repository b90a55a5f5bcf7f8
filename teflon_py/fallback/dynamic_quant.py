"""DYNAMIC_QUANTIZE and DYNAMIC_FULLY_CONNECTED: per-row run-time int8 quantization and the
fully connected layer over it (XNNPACK's qd8 path). Exact integer accumulation, then
``acc * row_scale * weight_scale[unit] + bias`` in float32."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

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
