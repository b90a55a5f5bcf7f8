"""Box arithmetic and non-max suppression shared by the NNAPI-only detection kernels
(BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS, DETECTION_POSTPROCESSING, AXIS_ALIGNED_BBOX_TRANSFORM),
computed in float32 as Android's reference CPU implementation (GenerateProposals.cpp) computes
them. No kernels here.

``nms_single_class`` is Android's ``hardNmsSingleClass`` / ``softNmsSingleClass``: the candidates
live in one array; each round swaps the best remaining one (the first maximum,
``std::max_element``) to the front, rescores the others by their IoU with it, and swaps each one
it drops with the last live entry. Which of several equal scores wins later depends on that
swapping, so the order of the array is reproduced exactly (``_partition``).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: (IoU with the selected box, scores of the others) -> (their new scores, which stay candidates)
Suppress = Callable[[np.ndarray, np.ndarray], "tuple[np.ndarray, np.ndarray]"]


def iou_with(boxes: np.ndarray, box: np.ndarray) -> np.ndarray:
    """float32 IoU of each of ``boxes`` (n, 4) with ``box`` (corner boxes; 0/0 gives NaN, as
    Android's ``getIoUAxisAligned``)."""
    area1 = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    area2 = (box[2] - box[0]) * (box[3] - box[1])
    w = np.maximum(np.minimum(boxes[:, 2], box[2]) - np.maximum(boxes[:, 0], box[0]), np.float32(0))
    h = np.maximum(np.minimum(boxes[:, 3], box[3]) - np.maximum(boxes[:, 1], box[1]), np.float32(0))
    inter = w * h
    with np.errstate(divide="ignore", invalid="ignore"):
        return inter / (area1 + area2 - inter)


def hard(iou_threshold: float) -> Suppress:
    """Hard NMS: a candidate whose IoU reaches the threshold is dropped."""
    thr = np.float32(iou_threshold)
    return lambda iou, scores: (scores, ~(iou >= thr))


def soft(kernel: str, iou_threshold: float, sigma: float, nms_score_threshold: float) -> Suppress:
    """BOX_WITH_NMS_LIMIT's NMS: each score times the kernel of its IoU; a candidate whose new
    score falls below ``nms_score_threshold`` is dropped (the hard kernel too: its score 0 is
    dropped only when that threshold is positive)."""
    thr, sig, keep_at = np.float32(iou_threshold), np.float32(sigma), np.float32(nms_score_threshold)

    def factor(iou: np.ndarray) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            if kernel == "hard":
                return np.where(iou < thr, np.float32(1), np.float32(0))
            if kernel == "linear":
                return np.where(iou < thr, np.float32(1), np.float32(1) - iou)
            return np.exp(np.float32(-1) * iou * iou / sig)

    def suppress(iou: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        new = (scores * factor(iou)).astype(np.float32)
        return new, ~(new < keep_at)

    return suppress


def _partition(rest: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """``rest`` after Android's in-place removal loop (a dropped entry is swapped with the last
    live one, which is examined next): kept entries before the final end stay; the holes there
    take the kept entries from behind it, last first. Dropped entries follow, in any order."""
    k = int(np.count_nonzero(keep))
    front = rest[:k].copy()
    front[np.flatnonzero(~keep[:k])] = rest[k:][keep[k:]][::-1]
    return np.concatenate([front, rest[~keep]])


def nms_single_class(scores: np.ndarray, boxes: np.ndarray, limit: int, suppress: Suppress
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Greedy NMS over candidates with ``scores`` (n,) and ``boxes`` (n, 4): the positions of
    the selected ones in selection order (at most ``limit``; < 0: no limit) and every
    candidate's final score (soft NMS lowers them)."""
    scores = np.array(scores, np.float32)
    n = scores.size
    order = np.arange(n)
    limit = n if limit < 0 else limit
    start, end = 0, n
    while start < end and start < limit:
        best = start + int(np.argmax(scores[order[start:end]]))
        order[start], order[best] = order[best], order[start]
        rest = order[start + 1:end]
        if rest.size:
            iou = iou_with(boxes[rest], boxes[order[start]])
            new, keep = suppress(iou, scores[rest])
            scores[rest] = new
            order[start + 1:end] = _partition(rest, keep)
            end = start + 1 + int(np.count_nonzero(keep))
        start += 1
    return order[:start], scores


def bbox_transform(rois: np.ndarray, deltas: np.ndarray, image: np.ndarray) -> np.ndarray:
    """Android's ``bboxTransformFloat32``: corner boxes ``rois`` (n, 4) moved by ``deltas``
    (n, c, 4) as (dx, dy, dw, dh) relative to their size, clipped to [0, width] x [0, height]
    of ``image`` (n, 2) as (height, width): (n, c, 4) boxes in float32."""
    w = (rois[:, 2] - rois[:, 0])[:, None]
    h = (rois[:, 3] - rois[:, 1])[:, None]
    cx = ((rois[:, 0] + rois[:, 2]) / np.float32(2))[:, None]
    cy = ((rois[:, 1] + rois[:, 3]) / np.float32(2))[:, None]
    with np.errstate(over="ignore", invalid="ignore"):
        nw = np.exp(deltas[..., 2]) * w
        nh = np.exp(deltas[..., 3]) * h
        nx = cx + deltas[..., 0] * w
        ny = cy + deltas[..., 1] * h
        half_w, half_h = nw / np.float32(2), nh / np.float32(2)
        corners = np.stack([nx - half_w, ny - half_h, nx + half_w, ny + half_h], axis=-1)
    limit = np.stack([image[:, 1], image[:, 0], image[:, 1], image[:, 0]], axis=-1)[:, None, :]
    return np.minimum(np.maximum(corners, np.float32(0)), limit).astype(np.float32)


def invalid_boxes(boxes: np.ndarray) -> np.ndarray:
    """Rows of corner boxes (.., 4) with x1 > x2 or y1 > y2 (NaN-free rows only are judged)."""
    return (boxes[..., 0] > boxes[..., 2]) | (boxes[..., 1] > boxes[..., 3])
