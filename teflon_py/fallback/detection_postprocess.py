"""TFLite_Detection_PostProcess: SSD box decoding and non-max suppression, as TFLite computes it.

Inputs: box encodings (1, N, >=4) as (y, x, h, w) offsets, class scores (1, N, C') and anchors
(N, 4) as (y, x, h, w); C' = num_classes or num_classes + 1 (a leading background column).
Outputs (float32): boxes (1, M, 4) as (ymin, xmin, ymax, xmax), classes (1, M), scores (1, M) and
num_detections (1,), with M = max_detections * max_classes_per_detection.

Decoding follows the kernel's arithmetic: centre and half-size in double from the float32
inputs, rounded to float32, then corners in float32. uint8 encodings and scores are dequantized
in float32 (anchors with their own parameters); int8 the same way, which TFLite's kernel rejects.
NMS: scores >= nms_score_threshold, sorted by decreasing score with a stable sort (ties keep
anchor order), greedy suppression of candidates whose float32 IoU with a kept box exceeds
nms_iou_threshold. ``use_regular_nms``: NMS per class, up to min(detections_per_class,
max_detections) each, then a stable merge by score in class order keeps max_detections. Otherwise
(fast NMS) one NMS over each anchor's best score; each kept anchor then reports its
max_classes_per_detection best classes in the order ``std::partial_sort`` (libstdc++) leaves
them, ties included. Slots past the detections hold zeros (the fast kernel leaves them unwritten).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from teflon_py.fallback.registry import Node, register
from teflon_py.ops.custom import DetectionPostProcessAttrs

QUANTIZED = (np.dtype(np.uint8), np.dtype(np.int8))


def _params(node: Node) -> dict[str, Any]:
    """The op's options with TFLite's defaults, checked as the kernel's Prepare/Eval check them."""
    a: DetectionPostProcessAttrs = node.attrs
    p = {
        "max_detections": a.max_detections,
        "max_classes_per_detection": a.max_classes_per_detection,
        "detections_per_class": a.detections_per_class,
        "use_regular_nms": a.use_regular_nms,
        "score_threshold": np.float32(a.nms_score_threshold),
        "iou_threshold": np.float32(a.nms_iou_threshold),
        "num_classes": a.num_classes,
        "scales": np.array([a.y_scale, a.x_scale, a.h_scale, a.w_scale], np.float32),
    }
    if p["max_detections"] < 0 or p["max_classes_per_detection"] < 0 or p["detections_per_class"] < 0:
        raise node.error("max_detections, max_classes_per_detection and detections_per_class must be >= 0")
    if p["num_classes"] <= 0:
        raise node.error(f"num_classes must be positive, got {p['num_classes']}")
    if not 0.0 < p["iou_threshold"] <= 1.0:
        raise node.error(f"nms_iou_threshold must be in (0, 1], got {p['iou_threshold']}")
    return p


def _dequantize(node: Node, index: int, x: np.ndarray) -> np.ndarray:
    """float32 values of input ``index``: (float(q) - zero_point) * scale in float32 when quantized."""
    t = node.inputs[index]
    if x.dtype == np.float32:
        return x
    if x.dtype not in QUANTIZED or t.quantization is None:
        raise node.error(f"{t.describe()} has type {x.dtype}; float32, or uint8/int8 with quantization, expected")
    return (x.astype(np.float32) - np.float32(t.zero_point)) * np.float32(t.scale)


def decode_boxes(encodings: np.ndarray, anchors: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """(N, 4) corner boxes (ymin, xmin, ymax, xmax) from centre-size encodings and anchors."""
    e = encodings[:, :4].astype(np.float64)
    a = anchors.astype(np.float64)
    s = scales.astype(np.float64)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # inf/NaN propagate as in C
        centre = (e[:, 0:2] / s[0:2] * a[:, 2:4] + a[:, 0:2]).astype(np.float32)  # (ycenter, xcenter)
        half = (0.5 * np.exp(e[:, 2:4] / s[2:4]) * a[:, 2:4]).astype(np.float32)  # (half_h, half_w)
        return np.concatenate([centre - half, centre + half], axis=1)


def iou_one_to_many(boxes: np.ndarray, i: int, others: np.ndarray) -> np.ndarray:
    """float32 IoU of box ``i`` with each box in ``others`` (0 when either area is <= 0)."""
    b, o = boxes[i], boxes[others]
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # inf/NaN propagate as in C
        area_i = (b[2] - b[0]) * (b[3] - b[1])
        area_o = (o[:, 2] - o[:, 0]) * (o[:, 3] - o[:, 1])
        inter_h = np.maximum(np.minimum(b[2], o[:, 2]) - np.maximum(b[0], o[:, 0]), np.float32(0))
        inter_w = np.maximum(np.minimum(b[3], o[:, 3]) - np.maximum(b[1], o[:, 1]), np.float32(0))
        inter = inter_h * inter_w
        iou = inter / (area_i + area_o - inter)
    return np.where((area_i <= 0) | (area_o <= 0), np.float32(0), iou)


def non_max_suppression(boxes: np.ndarray, scores: np.ndarray, max_detections: int,
                        score_threshold: np.float32, iou_threshold: np.float32) -> np.ndarray:
    """Indices of the kept boxes, best first: TFLite's NonMaxSuppressionSingleClassHelper."""
    keep = np.flatnonzero(scores >= score_threshold)
    order = keep[np.argsort(-scores[keep], kind="stable")]
    limit = min(order.size, max_detections)
    active = np.ones(order.size, bool)
    selected: list[int] = []
    for i in range(order.size):  # one pass per kept box; the suppression itself is vectorised
        if len(selected) >= limit:
            break
        if not active[i]:
            continue
        selected.append(int(order[i]))
        rest = i + 1 + np.flatnonzero(active[i + 1:])
        if rest.size:
            active[rest[iou_one_to_many(boxes, order[i], order[rest]) > iou_threshold]] = False
    return np.array(selected, np.int64)


def _adjust_heap(a: list[int], hole: int, length: int, value: int, less: Any) -> None:
    """libstdc++'s std::__adjust_heap: sift the hole to a leaf, then push ``value`` up."""
    top, child = hole, hole
    while child < (length - 1) // 2:
        child = 2 * (child + 1)
        if less(a[child], a[child - 1]):
            child -= 1
        a[hole] = a[child]
        hole = child
    if length % 2 == 0 and child == (length - 2) // 2:
        child = 2 * (child + 1)
        a[hole] = a[child - 1]
        hole = child - 1
    parent = (hole - 1) // 2
    while hole > top and less(a[parent], value):
        a[hole] = a[parent]
        hole = parent
        parent = (hole - 1) // 2
    a[hole] = value


def partial_sort_order(values: np.ndarray, k: int) -> list[int]:
    """The first ``k`` indices of ``values`` by decreasing value, tie order as libstdc++'s
    ``std::partial_sort`` (heap select, then heap sort) leaves it."""
    v = values.tolist()
    n = len(v)
    if len(set(v)) == n:  # no ties: every correct sort agrees
        return [int(i) for i in np.argsort(-values, kind="stable")[:k]]
    a = list(range(n))

    def less(i: int, j: int) -> bool:
        return v[i] > v[j]

    for parent in range((k - 2) // 2, -1, -1):  # make_heap(first, middle)
        _adjust_heap(a, parent, k, a[parent], less)
    for i in range(k, n):  # heap_select: a better element replaces the heap's worst
        if less(a[i], a[0]):
            value, a[i] = a[i], a[0]
            _adjust_heap(a, 0, k, value, less)
    for last in range(k - 1, 0, -1):  # sort_heap(first, middle)
        value, a[last] = a[last], a[0]
        _adjust_heap(a, 0, last, value, less)
    return a[:k]


def _regular_nms(p: dict[str, Any], boxes: np.ndarray, scores: np.ndarray, offset: int, node: Node
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-class NMS, then the best max_detections over all classes: (anchors, classes, scores)."""
    per_class = min(p["detections_per_class"], p["max_detections"])
    if per_class <= 0:
        raise node.error("regular NMS needs detections_per_class and max_detections > 0")
    anchors, classes = [], []
    for c in range(p["num_classes"]):  # one NMS per class, as the kernel does
        kept = non_max_suppression(boxes, scores[:, c + offset], per_class, p["score_threshold"], p["iou_threshold"])
        anchors.append(kept)
        classes.append(np.full(kept.size, c, np.int64))
    anchor, cls = np.concatenate(anchors), np.concatenate(classes)
    score = scores[anchor, cls + offset]
    best = np.argsort(-score, kind="stable")[:p["max_detections"]]  # std::inplace_merge is stable
    return anchor[best], cls[best], score[best]


def _fast_nms(p: dict[str, Any], boxes: np.ndarray, scores: np.ndarray, offset: int, node: Node
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NMS over each anchor's best class score: (kept anchors, (K, per anchor) classes, scores)."""
    if p["max_classes_per_detection"] <= 0:
        raise node.error("fast NMS needs max_classes_per_detection > 0")
    per_anchor = min(p["max_classes_per_detection"], p["num_classes"])
    class_scores = scores[:, offset:offset + p["num_classes"]]
    best_scores = class_scores[np.arange(class_scores.shape[0]), np.argmax(class_scores, axis=1)]
    kept = non_max_suppression(boxes, best_scores, p["max_detections"], p["score_threshold"], p["iou_threshold"])
    if per_anchor == 1:  # ArgMaxVector: the first maximum
        cls = np.argmax(class_scores[kept], axis=1)[:, None] if kept.size else np.zeros((0, 1), np.int64)
    else:
        cls = np.array([partial_sort_order(class_scores[a], per_anchor) for a in kept], np.int64)
        cls = cls.reshape(kept.size, per_anchor)
    return kept, cls, class_scores[kept[:, None], cls]


@register("TFLite_Detection_PostProcess")
def tflite_detection_postprocess(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Decoded, non-max-suppressed detections: boxes, classes, scores, count (all float32)."""
    p = _params(node)
    if len(inputs) != 3 or len(node.outputs) != 4:
        raise node.error(f"takes 3 inputs and 4 outputs, got {len(inputs)} and {len(node.outputs)}")
    enc, cls_pred, anchors = inputs
    if enc.ndim != 3 or cls_pred.ndim != 3 or anchors.ndim != 2:
        raise node.error(f"box encodings and class predictions must be 3-D and anchors 2-D, "
                         f"got {enc.shape}, {cls_pred.shape}, {anchors.shape}")
    n = enc.shape[1]
    if enc.shape[0] != 1 or cls_pred.shape[0] != 1 or enc.shape[2] < 4:
        raise node.error(f"box encodings must be (1, N, >=4) and class predictions (1, N, C), "
                         f"got {enc.shape} and {cls_pred.shape}")
    if cls_pred.shape[1] != n or anchors.shape[0] < n or anchors.shape[1] < 4:
        raise node.error(f"{n} boxes need {n} class rows and (N, 4) anchors, "
                         f"got {cls_pred.shape} and {anchors.shape}")
    offset = cls_pred.shape[2] - p["num_classes"]
    if offset not in (0, 1):
        raise node.error(f"class predictions have {cls_pred.shape[2]} columns for {p['num_classes']} classes "
                         "(at most one background column)")
    if enc.dtype == np.float32 and anchors.dtype != np.float32:
        raise node.error("float box encodings need float32 anchors")
    if enc.dtype in QUANTIZED and anchors.dtype != enc.dtype:
        raise node.error(f"{enc.dtype} box encodings need {enc.dtype} anchors")
    boxes = decode_boxes(_dequantize(node, 0, enc[0]), _dequantize(node, 2, anchors[:n, :4]), p["scales"])
    if np.any((boxes[:, 0] > boxes[:, 2]) | (boxes[:, 1] > boxes[:, 3])):
        raise node.error("a decoded box has ymin > ymax or xmin > xmax (negative anchor height or width?)")
    scores = _dequantize(node, 1, cls_pred[0])

    width = p["max_detections"] * p["max_classes_per_detection"]
    out_boxes = np.zeros((1, width, 4), np.float32)
    out_classes = np.zeros((1, width), np.float32)
    out_scores = np.zeros((1, width), np.float32)
    if p["use_regular_nms"]:
        anchor, cls, score = _regular_nms(p, boxes, scores, offset, node)
        slots = np.arange(anchor.size)
        count = anchor.size
    else:
        anchor, cls, score = _fast_nms(p, boxes, scores, offset, node)
        count = anchor.size
        slots = (np.arange(count)[:, None] * p["max_classes_per_detection"] + np.arange(cls.shape[1])).ravel()
        anchor = np.repeat(anchor, cls.shape[1])
        cls, score = cls.ravel(), score.ravel()
    out_boxes[0, slots] = boxes[anchor]
    out_classes[0, slots] = cls.astype(np.float32)
    out_scores[0, slots] = score
    return [out_boxes, out_classes, out_scores, np.array([count], np.float32)]
