"""NumPy kernel of NNAPI's HEATMAP_MAX_KEYPOINT (NHWC heatmaps), as Android's reference CPU
implementation (HeatmapMaxKeypoint.cpp) computes it, in float32.

Per box and keypoint: the heatmap's first maximum; the 3x3 grid around it (mirrored at the
border: index -1 reads 1, index size reads size - 2); a second-order Taylor fit there, whose
offset (clipped to 1.5 cells, keeping its direction) moves the keypoint and whose value is the
score, unless the fit's Hessian is singular (|det| < tol + tol * A00 * A11; tol = the attrs'
``tolerance``), when the cell's centre and value stand. The keypoint maps the cell position
(index + offset + 0.5) / size into the box. Quantized operands are dequantized and the results
requantized (``android_quant``).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py.fallback.android_quant import from_float, to_float
from teflon_py.fallback.box_nms import invalid_boxes
from teflon_py.fallback.registry import Node, register
from teflon_py.ops.detection import HeatmapMaxKeypointAttrs

F32 = np.float32


def _grid(hm: np.ndarray, row: np.ndarray, col: np.ndarray) -> list[list[np.ndarray]]:
    """grid[dy + 1][dx + 1] (num_boxes, num_keypoints) around each maximum, mirrored at the border."""
    size = hm.shape[1]
    n, k = np.indices(row.shape)

    def mirror(i: np.ndarray) -> np.ndarray:
        return np.where(i < 0, 1, np.where(i >= size, size - 2, i))

    return [[hm[n, mirror(row + dy), mirror(col + dx), k] for dx in (-1, 0, 1)] for dy in (-1, 0, 1)]


def _fit(g: list[list[np.ndarray]], tol: np.float32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Android's solveForDelta, vectorised: (dx, dy, score) with dx = dy = 0 and the centre's
    value where the Hessian is singular."""
    two, four = F32(2), F32(4)
    b0 = -(g[1][2] - g[1][0]) / two
    b1 = -(g[2][1] - g[0][1]) / two
    a00 = g[1][0] - two * g[1][1] + g[1][2]
    a01 = (g[2][2] - g[2][0] - g[0][2] + g[0][0]) / four
    a11 = g[0][1] - two * g[1][1] + g[2][1]
    cross = a00 * a11
    det = cross - a01 * a01
    singular = np.abs(det) < tol + tol * cross
    safe = np.where(singular, F32(1), det)
    d0 = (a11 * b0 - a01 * b1) / safe
    d1 = (a00 * b1 - a01 * b0) / safe
    big = np.maximum(np.abs(d0), np.abs(d1))
    clip = (np.abs(d0) > F32(1.5)) | (np.abs(d1) > F32(1.5))
    scale = F32(1.5) / np.where(clip, big, F32(1))
    d0, d1 = np.where(clip, d0 * scale, d0), np.where(clip, d1 * scale, d1)
    score = g[1][1] - b0 * d0 - b1 * d1 + ((a00 * d0 + a01 * d1) * d0 + (a01 * d0 + a11 * d1) * d1) / two
    zero = F32(0)
    return np.where(singular, zero, d0), np.where(singular, zero, d1), np.where(singular, g[1][1], score)


@register("HEATMAP_MAX_KEYPOINT")
def heatmap_max_keypoint(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Scores [num_boxes, num_keypoints] and keypoints [num_boxes, num_keypoints, 2] as (x, y)."""
    a: HeatmapMaxKeypointAttrs = node.attrs
    hm, boxes = to_float(node, 0, inputs[0]), to_float(node, 1, inputs[1])
    n, size, _, k = hm.shape
    bad = np.flatnonzero(invalid_boxes(boxes))
    if bad.size:
        raise node.invalid(f"box {bad[0]} {boxes[bad[0]].tolist()} has x1 > x2 or y1 > y2")
    best = np.argmax(hm.reshape(n, size * size, k), axis=1)  # (n, k): the first maximum
    row, col = best // size, best % size
    with np.errstate(all="ignore"):
        dx, dy, score = _fit(_grid(hm, row, col), F32(a.tolerance))
        x1, y1 = boxes[:, 0:1], boxes[:, 1:2]
        width, height = boxes[:, 2:3] - x1, boxes[:, 3:4] - y1
        kx = (col.astype(F32) + dx + F32(0.5)) / F32(size) * width + x1
        ky = (row.astype(F32) + dy + F32(0.5)) / F32(size) * height + y1
    return [from_float(node, 0, score), from_float(node, 1, np.stack([kx, ky], axis=-1))]
