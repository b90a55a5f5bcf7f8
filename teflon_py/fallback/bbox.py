"""NumPy kernels of NNAPI's box operations: AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT,
GENERATE_PROPOSALS and DETECTION_POSTPROCESSING, as Android's reference CPU implementation
(GenerateProposals.cpp) computes them: in float32, quantized operands dequantized first and the
results requantized (``android_quant``). Where the spec leaves a choice, Android's is taken
(each is named where it is made); ``std::sort``'s unspecified order among equal scores is taken
as the stable order.
"""
from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np

from teflon_py.fallback.android_quant import from_float, to_float
from teflon_py.fallback.box_nms import bbox_transform, hard, invalid_boxes, nms_single_class, soft
from teflon_py.fallback.registry import Node, register
from teflon_py.ops.detection import BoxWithNmsLimitAttrs, DetectionPostprocessingAttrs, GenerateProposalsAttrs


def _check_batches(node: Node, batches: np.ndarray, count: int) -> None:
    bad = np.flatnonzero((batches < 0) | (batches >= count))
    if bad.size:
        raise node.invalid(f"box {bad[0]} has batch index {batches[bad[0]]}, outside [0, {count})")


def _check_boxes(node: Node, boxes: np.ndarray, what: str = "box") -> None:
    bad = np.flatnonzero(invalid_boxes(boxes.reshape(-1, 4)))
    if bad.size:
        raise node.invalid(f"{what} {bad[0]} {boxes.reshape(-1, 4)[bad[0]].tolist()} has x1 > x2 or y1 > y2")


@register("AXIS_ALIGNED_BBOX_TRANSFORM")
def axis_aligned_bbox_transform(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Each box moved by its per-class deltas and clipped to its image: [num_rois, classes * 4]."""
    rois, deltas, batches, info = (to_float(node, 0, inputs[0]), to_float(node, 1, inputs[1]), inputs[2],
                                   to_float(node, 3, inputs[3]))
    n = rois.shape[0]
    _check_batches(node, batches, info.shape[0])
    _check_boxes(node, rois)
    out = bbox_transform(rois, deltas.reshape(n, deltas.shape[1] // 4, 4), info[batches])
    return from_float(node, 0, out.reshape(deltas.shape))


def _runs(batches: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) of each run of equal batch indices (Android groups boxes so, in order)."""
    cuts = [0, *(np.flatnonzero(batches[1:] != batches[:-1]) + 1).tolist(), batches.size]
    return list(pairwise(cuts))


@register("BOX_WITH_NMS_LIMIT")
def box_with_nms_limit(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Per batch and per class (class 0, the background, skipped as Android skips it): scores
    above ``score_threshold``, NMS with the chosen kernel keeping at most ``max_detections``
    per class, then the best ``max_detections`` of the batch, ordered by class and then by
    decreasing score (Android's order). Outputs: scores (after soft NMS), boxes (the input's
    values), classes, batch indices."""
    a: BoxWithNmsLimitAttrs = node.attrs
    scores = to_float(node, 0, inputs[0])
    raw_boxes, batches = inputs[1], inputs[2]
    rois, classes = scores.shape
    if rois == 0:
        return [from_float(node, 0, np.zeros(0, np.float32)), raw_boxes.reshape(0, 4).astype(node.outputs[1].dtype),
                np.zeros(0, np.int32), np.zeros(0, np.int32)]
    boxes = to_float(node, 1, raw_boxes).reshape(rois * classes, 4)
    _check_boxes(node, boxes)
    flat = scores.reshape(-1).copy()
    suppress = soft(a.kernel, a.iou_threshold, a.sigma, a.nms_score_threshold)
    threshold = np.float32(a.score_threshold)
    chosen, batch_of = [], []
    for start, end in _runs(batches):
        base = start * classes
        run = flat[base:end * classes]  # a view: soft NMS rescoring writes through
        picked = []
        for c in range(1, classes):
            cand = np.flatnonzero(run.reshape(-1, classes)[:, c] > threshold) * classes + c  # Android: > threshold
            order, rescored = nms_single_class(run[cand], boxes[base + cand], a.max_detections, suppress)
            run[cand] = rescored
            picked.append(cand[order])
        sel = np.concatenate(picked)
        sel = sel[np.argsort(-run[sel], kind="stable")]
        if a.max_detections >= 0:
            sel = sel[:a.max_detections]
        sel = sel[np.lexsort((-run[sel], sel % classes))]  # by class, then by decreasing score
        chosen.append(base + sel)
        batch_of.append(np.full(sel.size, batches[start], np.int32))
    idx = np.concatenate(chosen)
    return [from_float(node, 0, flat[idx]), raw_boxes.reshape(-1, 4)[idx].astype(node.outputs[1].dtype),
            (idx % classes).astype(np.int32), np.concatenate(batch_of)]


@register("GENERATE_PROPOSALS")
def generate_proposals(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Anchors shifted over the NHWC score map, moved by the deltas and clipped to the image;
    the best ``pre_nms_top_n``, minus boxes not wider and taller than ``min_size`` or centred
    outside the image, then hard NMS keeping ``post_nms_top_n``, per batch, best first."""
    a: GenerateProposalsAttrs = node.attrs
    scores, deltas, anchors, info = (to_float(node, k, inputs[k]) for k in range(4))
    n, h, w, _ = scores.shape
    _check_boxes(node, anchors, "anchor")
    hs = np.arange(h, dtype=np.float32) * np.float32(a.height_stride)
    ws = np.arange(w, dtype=np.float32) * np.float32(a.width_stride)
    shift = np.stack(np.broadcast_arrays(ws[None, :], hs[:, None], ws[None, :], hs[:, None]), axis=-1)
    rois = (anchors[None, None, :, :] + shift[:, :, None, :]).reshape(-1, 4)
    size = rois.shape[0]
    min_size = np.float32(a.min_size)
    out_scores, out_boxes, out_batches = [], [], []
    for b in range(n):
        boxes = bbox_transform(rois, deltas[b].reshape(size, 1, 4), np.broadcast_to(info[b], (size, 2)))[:, 0]
        score = scores[b].reshape(-1)
        sel = np.arange(size)
        if 0 < a.pre_nms_top_n < size:
            sel = np.argsort(-score, kind="stable")[:a.pre_nms_top_n]
        bx = boxes[sel]
        bw, bh = bx[:, 2] - bx[:, 0], bx[:, 3] - bx[:, 1]
        cx, cy = bx[:, 0] + bw / np.float32(2), bx[:, 1] + bh / np.float32(2)
        sel = sel[(bw > min_size) & (bh > min_size) & (cx < info[b, 1]) & (cy < info[b, 0])]
        # The spec: post_nms_top_n <= 0 is unlimited (Android's code keeps nothing for 0).
        limit = a.post_nms_top_n if a.post_nms_top_n > 0 else -1
        order, _ = nms_single_class(score[sel], boxes[sel], limit, hard(a.iou_threshold))
        sel = sel[order]
        out_scores.append(score[sel])
        out_boxes.append(boxes[sel])
        out_batches.append(np.full(sel.size, b, np.int32))
    return [from_float(node, 0, np.concatenate(out_scores)), from_float(node, 1, np.concatenate(out_boxes)),
            np.concatenate(out_batches)]


def _decode(anchors: np.ndarray, deltas: np.ndarray, a: DetectionPostprocessingAttrs) -> np.ndarray:
    """(y1, x1, y2, x2) boxes from (ctr_y, ctr_x, h, w) anchors and (dy, dx, dh, dw) deltas."""
    sy, sx, sh, sw = (np.float32(v) for v in (a.scale_y, a.scale_x, a.scale_h, a.scale_w))
    with np.errstate(over="ignore", invalid="ignore"):
        yc = anchors[:, 0] + anchors[:, 2] * deltas[:, 0] / sy
        xc = anchors[:, 1] + anchors[:, 3] * deltas[:, 1] / sx
        hh = anchors[:, 2] * np.exp(deltas[:, 2] / sh) * np.float32(0.5)
        wh = anchors[:, 3] * np.exp(deltas[:, 3] / sw) * np.float32(0.5)
        return np.stack([yc - hh, xc - wh, yc + hh, xc + wh], axis=-1).astype(np.float32)


@register("DETECTION_POSTPROCESSING")
def detection_postprocessing(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """NNAPI's SSD post-processing, per batch: boxes decoded from the anchors; regular NMS (per
    class, class 0 skipped, then the best ``max_detections`` by score) or fast NMS (one NMS over
    each anchor's best non-background score, each kept anchor reporting its best
    ``max_classes_per_detection`` classes). Scores above ``score_threshold`` take part (Android:
    >), a box whose IoU reaches ``iou_threshold`` is dropped (>=). Unused slots hold zeros."""
    a: DetectionPostprocessingAttrs = node.attrs
    scores, deltas, anchors = (to_float(node, k, inputs[k]) for k in range(3))
    batches, _, classes = scores.shape
    m = a.slots
    out_scores = np.zeros((batches, m), np.float32)
    out_boxes = np.zeros((batches, m, 4), np.float32)
    out_classes = np.zeros((batches, m), np.int32)
    counts = np.zeros(batches, np.int32)
    threshold = np.float32(a.score_threshold)
    label_shift = 0 if a.background_in_label else 1
    for b in range(batches):
        boxes = _decode(anchors, deltas[b, :, :4], a)
        sc = scores[b]
        if a.use_regular_nms:
            anchor_of, class_of = [], []
            for c in range(1, classes):
                cand = np.flatnonzero(sc[:, c] > threshold)
                order, _ = nms_single_class(sc[cand, c], boxes[cand], a.detections_per_class, hard(a.iou_threshold))
                anchor_of.append(cand[order])
                class_of.append(np.full(order.size, c))
            anchor, cls = np.concatenate(anchor_of), np.concatenate(class_of)
            best = np.argsort(-sc[anchor, cls], kind="stable")[:a.max_detections]
            anchor, cls = anchor[best], cls[best]
        else:
            per_anchor = min(classes - 1, a.max_classes_per_detection)
            best_score = sc[:, 1:].max(axis=1)
            cand = np.flatnonzero(best_score > threshold)
            order, _ = nms_single_class(best_score[cand], boxes[cand], a.max_detections, hard(a.iou_threshold))
            kept = cand[order]
            # each kept anchor's classes by decreasing score, written one after another (Android)
            top = np.argsort(-sc[kept, 1:], axis=1, kind="stable")[:, :per_anchor] + 1
            anchor, cls = np.repeat(kept, per_anchor), top.reshape(-1)
        k = anchor.size
        out_scores[b, :k] = sc[anchor, cls]
        out_boxes[b, :k] = boxes[anchor]
        out_classes[b, :k] = cls - label_shift
        counts[b] = k
    return [out_scores, out_boxes, out_classes, counts]
