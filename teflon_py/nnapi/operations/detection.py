"""The detection family: ROI_ALIGN, ROI_POOLING, AXIS_ALIGNED_BBOX_TRANSFORM,
BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS, HEATMAP_MAX_KEYPOINT, DETECTION_POSTPROCESSING.

TFLite has none of them, so each becomes the op-layer op of the same name
(``teflon_py.ops.detection``, NHWC; an NCHW operation computes between TRANSPOSEs), computed by
the NumPy kernels that follow Android's reference CPU implementation. Where the spec's text and
Android's validation disagree, what Android accepts is accepted, as a driver must accept what
the framework accepts: a TENSOR_FLOAT16 operation takes FLOAT16 scalars (and FLOAT32 ones where the spec's
text names FLOAT32, which Android refuses); quantized boxes are
TENSOR_QUANT16_ASYMM with scale 0.125 and zero point 0 (the spec's zero point -128 for the
signed variants cannot be a uint16 zero point); GENERATE_PROPOSALS' image sizes are
TENSOR_QUANT16_ASYMM (as its output boxes, "of the same type as input3").
"""
from __future__ import annotations

from teflon_py import ops
from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.detection import (
    NMS_KERNELS,
    BoxWithNmsLimitAttrs,
    DetectionPostprocessingAttrs,
    GenerateProposalsAttrs,
    HeatmapMaxKeypointAttrs,
    RoiAttrs,
)

FLOATS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)
#: feature map / score types -> the feature level that added them
LEVELS = {T.TENSOR_FLOAT32: 3, T.TENSOR_FLOAT16: 3, T.TENSOR_QUANT8_ASYMM: 3, T.TENSOR_QUANT8_ASYMM_SIGNED: 4}
BOX_SCALE = 0.125


def _float_scalar(t: T, spec_says_float32: bool = True) -> T | tuple[T, ...]:
    """The scalar type of an operation's float parameters: FLOAT32, and for float16 tensors
    FLOAT16 (Android's validation), or FLOAT32 too where the spec's text names FLOAT32."""
    if t != T.TENSOR_FLOAT16:
        return T.FLOAT32
    return (T.FLOAT16, T.FLOAT32) if spec_says_float32 else T.FLOAT16


def _boxes(t: T) -> T:
    """The box tensor type that goes with a feature map or score tensor type."""
    return t if t in FLOATS else T.TENSOR_QUANT16_ASYMM


# -- shared rules ---------------------------------------------------------------------------------

def _shape(c: Call, k: int, rank: int, what: str) -> tuple[int, ...]:
    shape = c.shape(k)
    if len(shape) != rank:
        raise c.error(f"{what} must be {rank}-D, got dimensions {list(shape)}", k)
    return shape


def _box_rows(c: Call, k: int, rows: int | None = None) -> int:
    """Input ``k`` is [rows, 4] boxes; returns the row count."""
    shape = _shape(c, k, 2, "the boxes")
    if shape[1] != 4 or (rows is not None and shape[0] != rows):
        raise c.error(f"the boxes must be [{'num_rois' if rows is None else rows}, 4], got {list(shape)}", k)
    return shape[0]


def _batch_indices(c: Call, k: int, rows: int) -> None:
    shape = _shape(c, k, 1, "the batch indices")
    if shape[0] != rows:
        raise c.error(f"the batch indices must be [{rows}] (one per box), got {list(shape)}", k)


def _box_quant(c: Call, k: int, what: str = "input", symmetric: bool = False) -> None:
    """A TENSOR_QUANT16 box operand must have scale 0.125 (and zero point 0)."""
    op = c.operand(k) if what == "input" else c.out_operand(k)
    if op.type not in (T.TENSOR_QUANT16_ASYMM, T.TENSOR_QUANT16_SYMM):
        return
    if op.scale != BOX_SCALE or (not symmetric and op.zero_point != 0):
        want = "scale 0.125" if symmetric else "scale 0.125 and zero point 0"
        raise c.error(f"quantized boxes take {want}, got scale {op.scale} and zero point {op.zero_point}", k, what)


def _same_quant(c: Call, k_in: int, k_out: int) -> None:
    """A quantized output's scale and zero point must be input ``k_in``'s."""
    i, o = c.operand(k_in), c.out_operand(k_out)
    if i.type in QUANT8 and (i.scale != o.scale or i.zero_point != o.zero_point):
        raise c.error(f"its scale and zero point ({o.scale}, {o.zero_point}) must be input {k_in}'s "
                      f"({i.scale}, {i.zero_point})", k_out, "output")


def _positive(c: Call, k: int, value: float, what: str, allow_zero: bool = False) -> None:
    if not (value >= 0 if allow_zero else value > 0):
        raise c.error(f"{what} must be {'>= 0' if allow_zero else 'positive'}, got {value}", k)


# -- ROI_ALIGN, ROI_POOLING -----------------------------------------------------------------------

@signature(Op.ROI_ALIGN, Op.ROI_POOLING)
def roi_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, LEVELS)
    f = _float_scalar(t)
    ratios = [T.INT32, T.INT32] if s.op == Op.ROI_ALIGN else []
    s.expect([t, _boxes(t), T.TENSOR_INT32, T.INT32, T.INT32, f, f, *ratios, T.BOOL], [t], level=LEVELS[t])


@lowering(Op.ROI_ALIGN, Op.ROI_POOLING)
def lower_roi(c: Call) -> None:
    align = c.op == Op.ROI_ALIGN
    nchw = c.nchw(9 if align else 7)
    shape = _shape(c, 0, 4, "the feature map")
    if min(shape) <= 0:
        raise c.error(f"the feature map's dimensions must be positive, got {list(shape)}", 0)
    rows = _box_rows(c, 1)
    _batch_indices(c, 2, rows)
    _box_quant(c, 1)
    for k in (3, 4):
        _positive(c, k, c.scalar(k), "the output height" if k == 3 else "the output width")
    for k in (5, 6):
        _positive(c, k, c.scalar(k), "the height stride" if k == 5 else "the width stride")
    ratios = (0, 0)
    if align:
        ratios = (c.scalar(7), c.scalar(8))
        for k, r in zip((7, 8), ratios):
            _positive(c, k, r, "the sampling ratio", allow_zero=True)
    else:
        _same_quant(c, 0, 0)  # ROI_POOLING: the spec makes the output's scale and zero point the input's
    attrs = RoiAttrs(c.scalar(3), c.scalar(4), float(c.scalar(5)), float(c.scalar(6)), *ratios)
    x = c.nhwc(c.input(0), nchw)
    c.emit("ROI_ALIGN" if align else "ROI_POOLING", attrs, [x, c.input(1), c.input(2)], [c.nhwc_output(0, nchw)])


# -- AXIS_ALIGNED_BBOX_TRANSFORM ------------------------------------------------------------------

@signature(Op.AXIS_ALIGNED_BBOX_TRANSFORM)
def bbox_transform_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, {T.TENSOR_FLOAT32: 3, T.TENSOR_FLOAT16: 3, T.TENSOR_QUANT16_ASYMM: 3})
    if t in FLOATS:
        s.expect([t, t, T.TENSOR_INT32, t], [t], level=3)
        return
    deltas = s.input_type(1)
    s.supported(deltas, LEVELS, "input 1 (the deltas of TENSOR_QUANT16_ASYMM boxes)")
    s.expect([t, QUANT8, T.TENSOR_INT32, t], [t], level=LEVELS[deltas])


@lowering(Op.AXIS_ALIGNED_BBOX_TRANSFORM)
def lower_bbox_transform(c: Call) -> None:
    rows = _box_rows(c, 0)
    deltas = _shape(c, 1, 2, "the box deltas")
    if deltas[0] != rows or deltas[1] % 4 or deltas[1] == 0:
        raise c.error(f"the box deltas must be [{rows}, num_classes * 4] with num_classes > 0, got {list(deltas)}", 1)
    _batch_indices(c, 2, rows)
    info = _shape(c, 3, 2, "the image info")
    if info[1] != 2 or info[0] == 0:
        raise c.error(f"the image info must be [batches, 2] with batches > 0, got {list(info)}", 3)
    for k in (0, 3):  # Android also takes the image sizes at scale 0.125, zero point 0
        _box_quant(c, k)
    _box_quant(c, 0, "output")
    c.emit("AXIS_ALIGNED_BBOX_TRANSFORM", ops.NoAttrs(), [c.input(k) for k in range(4)], [c.output(0)])


# -- BOX_WITH_NMS_LIMIT ---------------------------------------------------------------------------

@signature(Op.BOX_WITH_NMS_LIMIT)
def box_with_nms_limit_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, LEVELS)
    f, boxes = _float_scalar(t), _boxes(t)
    s.expect([t, boxes, T.TENSOR_INT32, f, T.INT32, T.INT32, f, f, f],
             [t, boxes, T.TENSOR_INT32, T.TENSOR_INT32], level=LEVELS[t])


@lowering(Op.BOX_WITH_NMS_LIMIT)
def lower_box_with_nms_limit(c: Call) -> None:
    rows, classes = _shape(c, 0, 2, "the scores")
    boxes = _shape(c, 1, 2, "the boxes")
    if boxes != (rows, classes * 4):
        raise c.error(f"the boxes must be [{rows}, {classes * 4}] (4 per class), got {list(boxes)}", 1)
    if classes < 2:
        raise c.error(f"needs at least 2 classes (class 0 is the background), got {classes}", 0)
    _batch_indices(c, 2, rows)
    _box_quant(c, 1)
    _box_quant(c, 1, "output")
    _same_quant(c, 0, 0)
    code = c.scalar(5)
    if code not in range(len(NMS_KERNELS)):
        raise c.error(f"the NMS kernel must be 0 (hard), 1 (linear) or 2 (gaussian), got {code}", 5)
    attrs = BoxWithNmsLimitAttrs(float(c.scalar(3)), c.scalar(4), NMS_KERNELS[code], float(c.scalar(6)),
                                 float(c.scalar(7)), float(c.scalar(8)))
    c.emit("BOX_WITH_NMS_LIMIT", attrs, [c.input(k) for k in range(3)], [c.output(k) for k in range(4)])


# -- GENERATE_PROPOSALS ---------------------------------------------------------------------------

@signature(Op.GENERATE_PROPOSALS)
def generate_proposals_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, LEVELS)
    f = _float_scalar(t)
    anchors, info = (t, t) if t in FLOATS else (T.TENSOR_QUANT16_SYMM, T.TENSOR_QUANT16_ASYMM)
    s.expect([t, t, anchors, info, f, f, T.INT32, T.INT32, f, f, T.BOOL], [t, info, T.TENSOR_INT32],
             level=LEVELS[t])


@lowering(Op.GENERATE_PROPOSALS)
def lower_generate_proposals(c: Call) -> None:
    nchw = c.nchw(10)
    scores = _shape(c, 0, 4, "the scores")
    n, h, w, a = (scores[0], scores[2], scores[3], scores[1]) if nchw else scores
    deltas = _shape(c, 1, 4, "the box deltas")
    want = (n, a * 4, h, w) if nchw else (n, h, w, a * 4)
    if deltas != want:
        raise c.error(f"the box deltas must be {list(want)} (4 per anchor), got {list(deltas)}", 1)
    _box_rows(c, 2, a)
    info = _shape(c, 3, 2, "the image info")
    if info != (n, 2):
        raise c.error(f"the image info must be [{n}, 2], got {list(info)}", 3)
    _box_quant(c, 2, symmetric=True)
    _box_quant(c, 3)
    _box_quant(c, 1, "output")
    _same_quant(c, 0, 0)
    attrs = GenerateProposalsAttrs(float(c.scalar(4)), float(c.scalar(5)), c.scalar(6), c.scalar(7),
                                   float(c.scalar(8)), float(c.scalar(9)))
    inputs = [c.nhwc(c.input(0), nchw), c.nhwc(c.input(1), nchw), c.input(2), c.input(3)]
    c.emit("GENERATE_PROPOSALS", attrs, inputs, [c.output(k) for k in range(3)])


# -- HEATMAP_MAX_KEYPOINT -------------------------------------------------------------------------

@signature(Op.HEATMAP_MAX_KEYPOINT)
def heatmap_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, LEVELS)
    s.expect([t, _boxes(t), T.BOOL], [t, _boxes(t)], level=LEVELS[t])


@lowering(Op.HEATMAP_MAX_KEYPOINT)
def lower_heatmap(c: Call) -> None:
    nchw = c.nchw(2)
    shape = _shape(c, 0, 4, "the heatmaps")
    n, h, w = shape[0], shape[2 if nchw else 1], shape[3 if nchw else 2]
    if h != w or h < 2:
        raise c.error(f"the heatmaps must be square and at least 2x2, got {h}x{w}", 0)
    _box_rows(c, 1, n)
    _box_quant(c, 1)
    _box_quant(c, 1, "output")
    # Android's float16 kernel calls the fit singular below 1e-3 (float32 and quantized: 1e-5)
    attrs = HeatmapMaxKeypointAttrs(1e-3 if c.type(0) == T.TENSOR_FLOAT16 else 1e-5)
    c.emit("HEATMAP_MAX_KEYPOINT", attrs, [c.nhwc(c.input(0), nchw), c.input(1)], [c.output(0), c.output(1)])


# -- DETECTION_POSTPROCESSING ---------------------------------------------------------------------

@signature(Op.DETECTION_POSTPROCESSING)
def detection_postprocessing_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, {T.TENSOR_FLOAT32: 3, T.TENSOR_FLOAT16: 3})
    f, f16 = _float_scalar(t), _float_scalar(t, spec_says_float32=False)  # the spec: 11, 12 as input 0
    s.expect([t, t, t, f, f, f, f, T.BOOL, T.INT32, T.INT32, T.INT32, f16, f16, T.BOOL],
             [t, t, T.TENSOR_INT32, T.TENSOR_INT32], level=3)


@lowering(Op.DETECTION_POSTPROCESSING)
def lower_detection_postprocessing(c: Call) -> None:
    b, a, classes = _shape(c, 0, 3, "the scores")
    deltas = _shape(c, 1, 3, "the box deltas")
    if deltas[:2] != (b, a) or deltas[2] < 4:
        raise c.error(f"the box deltas must be [{b}, {a}, >= 4], got {list(deltas)}", 1)
    _box_rows(c, 2, a)
    if classes < 2:
        raise c.error(f"needs at least 2 classes (class 0 is the background), got {classes}", 0)
    for k, what in ((3, "the y scale"), (4, "the x scale"), (5, "the height scale"), (6, "the width scale"),
                    (8, "max_num_detections")):
        _positive(c, k, c.scalar(k), what)
    regular = bool(c.scalar(7))
    if regular:
        _positive(c, 10, c.scalar(10), "the maximum number of detections per class")
    else:
        _positive(c, 9, c.scalar(9), "the maximum number of classes per detection")
    _positive(c, 11, c.scalar(11), "the score threshold", allow_zero=True)
    _positive(c, 12, c.scalar(12), "the IoU threshold", allow_zero=True)
    attrs = DetectionPostprocessingAttrs(
        scale_y=float(c.scalar(3)), scale_x=float(c.scalar(4)), scale_h=float(c.scalar(5)),
        scale_w=float(c.scalar(6)), use_regular_nms=regular, max_detections=c.scalar(8),
        max_classes_per_detection=c.scalar(9), detections_per_class=c.scalar(10),
        score_threshold=float(c.scalar(11)), iou_threshold=float(c.scalar(12)),
        background_in_label=bool(c.scalar(13)))
    c.emit("DETECTION_POSTPROCESSING", attrs, [c.input(k) for k in range(3)], [c.output(k) for k in range(4)])
