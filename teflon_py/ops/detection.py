"""The detection family (Android NNAPI's, which TFLite lacks): ROI_ALIGN, ROI_POOLING,
AXIS_ALIGNED_BBOX_TRANSFORM, BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS, HEATMAP_MAX_KEYPOINT and
DETECTION_POSTPROCESSING: attributes, shape rules and inference.

Feature maps are NHWC (a frontend with NCHW transposes around the op). Boxes are corner boxes
(x1, y1, x2, y2), or (y1, x1, y2, x2) for DETECTION_POSTPROCESSING. Quantized operands keep
their storage type here; the NumPy kernels (``teflon_py.fallback.roi``, ``.bbox``, ``.heatmap``)
dequantize, compute in float32 and requantize as Android's reference CPU implementation does.
BOX_WITH_NMS_LIMIT's and GENERATE_PROPOSALS' outputs have data-dependent sizes (``Meta(None)``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teflon_py.ops.common import NoAttrs
from teflon_py.ops.registry import Inputs, Meta, declared, define

#: NMS kernels of BOX_WITH_NMS_LIMIT, by the spec's code
NMS_KERNELS = ("hard", "linear", "gaussian")


@dataclass(frozen=True)
class RoiAttrs:
    """ROI_ALIGN / ROI_POOLING: output size, the ratios of the image size to the feature map's
    (``*_stride``), and ROI_ALIGN's sampling points per bin (0: adaptive, ceil(bin size))."""

    out_height: int = 1
    out_width: int = 1
    height_stride: float = 1.0
    width_stride: float = 1.0
    height_sampling_ratio: int = 0
    width_sampling_ratio: int = 0


@dataclass(frozen=True)
class BoxWithNmsLimitAttrs:
    """BOX_WITH_NMS_LIMIT's scalars (``max_detections`` < 0: unlimited; ``kernel``: one of
    ``NMS_KERNELS``)."""

    score_threshold: float = 0.0
    max_detections: int = -1
    kernel: str = "hard"
    iou_threshold: float = 0.5
    sigma: float = 1.0
    nms_score_threshold: float = 0.0


@dataclass(frozen=True)
class GenerateProposalsAttrs:
    """GENERATE_PROPOSALS' scalars (``pre_nms_top_n`` / ``post_nms_top_n`` <= 0: unlimited)."""

    height_stride: float = 1.0
    width_stride: float = 1.0
    pre_nms_top_n: int = 0
    post_nms_top_n: int = 0
    iou_threshold: float = 0.5
    min_size: float = 0.0


@dataclass(frozen=True)
class HeatmapMaxKeypointAttrs:
    """HEATMAP_MAX_KEYPOINT: the absolute and relative tolerance under which the quadratic fit's
    Hessian counts as singular (Android: 1e-5, and 1e-3 for float16 operands)."""

    tolerance: float = 1e-5


@dataclass(frozen=True)
class DetectionPostprocessingAttrs:
    """DETECTION_POSTPROCESSING's scalars (NNAPI's operation, not TFLite's custom op)."""

    scale_y: float = 1.0
    scale_x: float = 1.0
    scale_h: float = 1.0
    scale_w: float = 1.0
    use_regular_nms: bool = False
    max_detections: int = 1
    max_classes_per_detection: int = 1
    detections_per_class: int = 1
    score_threshold: float = 0.0
    iou_threshold: float = 0.5
    background_in_label: bool = False

    @property
    def slots(self) -> int:
        """Detections per batch in the outputs: max_detections, times max_classes_per_detection
        for the fast (not regular) NMS, as Android's reference implementation sizes them."""
        return self.max_detections * (1 if self.use_regular_nms else self.max_classes_per_detection)


def _rank(ins: Inputs, k: int, rank: int, what: str) -> tuple[int, ...]:
    shape = tuple(ins[k].shape)
    if len(shape) != rank:
        raise ins.error(f"{what} must be {rank}-D, got shape {list(shape)}")
    return shape


def _rois(ins: Inputs, k: int, n: int | None = None) -> int:
    """Input ``k`` holds (num_rois, 4) boxes (``n`` rows where given); returns num_rois."""
    shape = _rank(ins, k, 2, "the boxes")
    if shape[1] != 4 or (n is not None and shape[0] != n):
        want = f"[{n if n is not None else 'num_rois'}, 4]"
        raise ins.error(f"the boxes must have shape {want}, got {list(shape)}")
    return shape[0]


def _batch_indices(ins: Inputs, k: int, n: int) -> None:
    shape = _rank(ins, k, 1, "the batch indices")
    if shape[0] != n or np.dtype(ins[k].dtype) != np.int32:
        raise ins.error(f"the batch indices must be int32 of shape [{n}], got {ins[k].dtype} {list(shape)}")


@define("ROI_ALIGN", "ROI_POOLING", attrs=RoiAttrs)
def infer_roi(attrs: RoiAttrs, ins: Inputs) -> list[Meta]:
    """[num_rois, out_height, out_width, depth] from an NHWC feature map."""
    x = _rank(ins, 0, 4, "the feature map")
    n = _rois(ins, 1)
    _batch_indices(ins, 2, n)
    if attrs.out_height <= 0 or attrs.out_width <= 0:
        raise ins.error(f"the output size {attrs.out_height}x{attrs.out_width} must be positive")
    if not (attrs.height_stride > 0 and attrs.width_stride > 0):
        raise ins.error(f"the strides {attrs.height_stride}, {attrs.width_stride} must be positive")
    if attrs.height_sampling_ratio < 0 or attrs.width_sampling_ratio < 0:
        raise ins.error("the sampling ratios must be >= 0 (0: adaptive)")
    return [declared(ins, 0, (n, attrs.out_height, attrs.out_width, x[3]))]


@define("AXIS_ALIGNED_BBOX_TRANSFORM", attrs=NoAttrs)
def infer_bbox_transform(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    """[num_rois, num_classes * 4], the deltas' shape."""
    n = _rois(ins, 0)
    deltas = _rank(ins, 1, 2, "the box deltas")
    if deltas[0] != n or deltas[1] % 4 or deltas[1] == 0:
        raise ins.error(f"the box deltas must have shape [{n}, num_classes * 4], got {list(deltas)}")
    _batch_indices(ins, 2, n)
    info = _rank(ins, 3, 2, "the image info")
    if info[1] != 2 or info[0] == 0:
        raise ins.error(f"the image info must have shape [batches, 2], got {list(info)}")
    return [declared(ins, 0, deltas)]


@define("BOX_WITH_NMS_LIMIT", attrs=BoxWithNmsLimitAttrs)
def infer_box_with_nms_limit(attrs: BoxWithNmsLimitAttrs, ins: Inputs) -> list[Meta]:
    """Scores [k], boxes [k, 4], classes [k], batch indices [k]: k is known when the op runs."""
    scores = _rank(ins, 0, 2, "the scores")
    boxes = _rank(ins, 1, 2, "the boxes")
    if boxes != (scores[0], scores[1] * 4):
        raise ins.error(f"the boxes must have shape [{scores[0]}, {scores[1] * 4}], got {list(boxes)}")
    if scores[1] < 2:
        raise ins.error(f"needs at least 2 classes (class 0 is the background), got {scores[1]}")
    _batch_indices(ins, 2, scores[0])
    if attrs.kernel not in NMS_KERNELS:
        raise ins.error(f"NMS kernel {attrs.kernel!r} is not one of {', '.join(NMS_KERNELS)}")
    return [declared(ins, k, None) for k in range(4)]


@define("GENERATE_PROPOSALS", attrs=GenerateProposalsAttrs)
def infer_generate_proposals(attrs: GenerateProposalsAttrs, ins: Inputs) -> list[Meta]:
    """Scores [k], boxes [k, 4], batch indices [k]: k is known when the op runs."""
    n, h, w, a = _rank(ins, 0, 4, "the scores")
    deltas = _rank(ins, 1, 4, "the box deltas")
    if deltas != (n, h, w, a * 4):
        raise ins.error(f"the box deltas must have shape {[n, h, w, a * 4]} (NHWC), got {list(deltas)}")
    _rois(ins, 2, a)
    info = _rank(ins, 3, 2, "the image info")
    if info != (n, 2):
        raise ins.error(f"the image info must have shape [{n}, 2], got {list(info)}")
    return [declared(ins, k, None) for k in range(3)]


@define("HEATMAP_MAX_KEYPOINT", attrs=HeatmapMaxKeypointAttrs)
def infer_heatmap_max_keypoint(attrs: HeatmapMaxKeypointAttrs, ins: Inputs) -> list[Meta]:
    """Scores [num_boxes, num_keypoints], keypoints [num_boxes, num_keypoints, 2]."""
    n, h, w, k = _rank(ins, 0, 4, "the heatmaps")
    if h != w or h < 2:
        raise ins.error(f"the heatmaps must be square and at least 2x2, got {h}x{w}")
    _rois(ins, 1, n)
    return [declared(ins, 0, (n, k)), declared(ins, 1, (n, k, 2))]


@define("DETECTION_POSTPROCESSING", attrs=DetectionPostprocessingAttrs)
def infer_detection_postprocessing(attrs: DetectionPostprocessingAttrs, ins: Inputs) -> list[Meta]:
    """Scores [b, m], boxes [b, m, 4], classes [b, m], counts [b]; m = ``attrs.slots``."""
    b, a, c = _rank(ins, 0, 3, "the scores")
    deltas = _rank(ins, 1, 3, "the box deltas")
    if deltas[:2] != (b, a) or deltas[2] < 4:
        raise ins.error(f"the box deltas must have shape [{b}, {a}, >= 4], got {list(deltas)}")
    _rois(ins, 2, a)
    if c < 2:
        raise ins.error(f"needs at least 2 classes (class 0 is the background), got {c}")
    if attrs.max_detections <= 0:
        raise ins.error(f"max_detections must be positive, got {attrs.max_detections}")
    if attrs.use_regular_nms and attrs.detections_per_class <= 0:
        raise ins.error(f"detections_per_class must be positive, got {attrs.detections_per_class}")
    if not attrs.use_regular_nms and attrs.max_classes_per_detection <= 0:
        raise ins.error(f"max_classes_per_detection must be positive, got {attrs.max_classes_per_detection}")
    m = attrs.slots
    return [declared(ins, 0, (b, m)), declared(ins, 1, (b, m, 4)), declared(ins, 2, (b, m)), declared(ins, 3, (b,))]
