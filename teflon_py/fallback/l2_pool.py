"""L2_POOL_2D: the root mean square of each window, as TFLite's reference kernel (float32 only).

Windows are placed as AVERAGE_POOL_2D's (``teflon_py.fallback.pooling``); only in-bounds elements
count. Squares are summed in float32 tap by tap in the reference order (filter rows, then
columns), divided by the in-bounds count, square-rooted, then clamped by the fused activation.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py.fallback.pooling import FLOAT_MAX, pool_geometry, window_counts, window_taps
from teflon_py.fallback.registry import Node, register
from teflon_py.ops.pool import pool_types_reason


@register("L2_POOL_2D")
def l2_pool_2d(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """sqrt(sum of squares / in-bounds count) per window, then the fused activation."""
    x = inputs[0]
    if x.ndim != 4:
        raise node.error(f"input must be 4-D NHWC, got shape {x.shape}")
    reason = pool_types_reason(node.op.name, x.dtype, node.outputs[0].dtype)
    if reason:
        raise node.error(reason)
    g = pool_geometry(node, x.shape[1], x.shape[2])
    lo, hi = node.attrs.activation.range(np.float32)
    total = np.zeros((x.shape[0], g.out_h, g.out_w, x.shape[3]), np.float32)
    for tap in window_taps(x, g, 0.0):
        total += tap * tap
    counts = window_counts(g, x.shape[1], x.shape[2]).astype(np.float32)
    with np.errstate(invalid="ignore", divide="ignore"):  # an all-padding window is 0/0, NaN, as in C
        result = np.sqrt(total / counts)
    return np.clip(result, np.float32(max(lo, -FLOAT_MAX)), np.float32(min(hi, FLOAT_MAX)))
