"""FULLY_CONNECTED: TFLite's reference kernel as one matmul over the flattened input rows.

The input is read as ``[size / depth, depth]`` rows (``depth`` = the weights' second dimension),
whatever its rank, as TFLite does; the output is ``[rows, units]``, or the input's shape with its
last dimension replaced when ``keep_num_dims``. Weights, bias and requantization share the conv
plan (``teflon_py.fallback.conv``): exact integer accumulation through a float BLAS matmul.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py.fallback.conv import (
    Plan,
    check_types,
    epilogue,
    float_plan,
    input_bound,
    memo_plan,
    quantized_plan,
    weight_offset,
)
from teflon_py.fallback.registry import Node, register
from teflon_py.ops import matmul as ops_matmul


def _fc_plan(node: Node, w: np.ndarray, b: np.ndarray | None) -> Plan:
    """Weights [units, depth] -> [depth, units] and the epilogue constants, as LiteRT's Prepare."""
    if check_types(node) == np.float32:
        return float_plan(node, w.T, b)
    x, wt = node.inputs[0], node.inputs[1]
    dtype = np.dtype(x.dtype)
    per_channel = wt.quantization.per_channel
    if per_channel and wt.quantization.quantized_dimension != 0:
        raise node.error("per-channel weights must be quantized along dimension 0 (units)")
    wq = np.asarray(w, np.int64) - weight_offset(node, wt, ignore_zero_point=per_channel)
    bound = input_bound(dtype, zero_point_folded=True) * int(np.abs(wq).sum(axis=1).max(initial=0))
    return quantized_plan(node, wq.T, b, wq.sum(axis=1), bound, x.zero_point)


@register("FULLY_CONNECTED")
def fully_connected(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """FULLY_CONNECTED: ``rows @ weights.T + bias``, requantized and clamped."""
    x, w = inputs[0], inputs[1]
    attrs = node.attrs
    if attrs.weights_format != 0:
        raise node.error("shuffled (SHUFFLED4x16INT8) weights are not supported")
    reason = ops_matmul.fc_shape_reason(attrs, x.shape, w.shape)
    if reason:
        raise node.error(reason)
    depth = w.shape[1]
    plan = memo_plan(node, inputs, lambda w_, b_: _fc_plan(node, w_, b_))
    rows = np.asarray(x.reshape(-1, depth), plan.compute)
    out = epilogue(rows @ plan.weights, plan)
    return out.reshape(ops_matmul.fc_output_shape(attrs, x.shape, w.shape))
