"""The custom family: TFLite_Detection_PostProcess and MediaPipe's custom ops
(MaxPoolingWithArgmax2D, MaxUnpooling2D, Landmarks2TransformMatrix, TransformLandmarks,
TransformTensorBilinear, TransformTensor).

Their attributes are the parameters their custom options hold, decoded when the model is read
(``teflon_py.tflite.translate.custom``): the detection op's FlexBuffer map as typed fields (with
TFLite's defaults), MediaPipe's pooling ops' raw ``TfLitePoolParams`` struct, and the FlexBuffer
maps of the landmark / transform ops as plain values. The range rules are checked by the kernels,
as LiteRT's Prepare / Eval check them; inference returns the declared outputs.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from teflon_py.ops.registry import Inputs, Meta, declared, define

DEFAULT_DETECTIONS_PER_CLASS = 100  # kNumDetectionsPerClass
FLEX_OPS = ("Landmarks2TransformMatrix", "TransformLandmarks", "TransformTensorBilinear", "TransformTensor")
POOL_OPS = ("MaxPoolingWithArgmax2D", "MaxUnpooling2D")


@dataclass(frozen=True)
class DetectionPostProcessAttrs:
    """TFLite_Detection_PostProcess's options (a FlexBuffer null or absent key reads as 0)."""

    max_detections: int = 0
    max_classes_per_detection: int = 0
    detections_per_class: int = DEFAULT_DETECTIONS_PER_CLASS
    use_regular_nms: bool = False
    nms_score_threshold: float = 0.0
    nms_iou_threshold: float = 0.0
    num_classes: int = 0
    y_scale: float = 0.0
    x_scale: float = 0.0
    h_scale: float = 0.0
    w_scale: float = 0.0


@dataclass(frozen=True)
class PoolParamsAttrs:
    """The leading fields of ``TfLitePoolParams`` (padding: TfLitePadding, activation:
    TfLiteFusedActivation codes, as the struct holds them)."""

    padding: int = 0
    stride_w: int = 1
    stride_h: int = 1
    filter_w: int = 1
    filter_h: int = 1
    activation: int = 0


@dataclass(frozen=True)
class FlexMapAttrs:
    """A MediaPipe op's FlexBuffer options map as plain values (absent options: an empty map)."""

    options: dict[str, Any] = field(default_factory=dict)


def pool_params_reason(p: PoolParamsAttrs) -> str | None:
    """Why the pool parameters break the kernel's rules (non-positive filter or strides), or None."""
    if min(p.stride_w, p.stride_h, p.filter_w, p.filter_h) <= 0:
        return f"filter {p.filter_h}x{p.filter_w} and strides {p.stride_h}x{p.stride_w} must be positive"
    return None


@define("TFLite_Detection_PostProcess", attrs=DetectionPostProcessAttrs)
@define(*POOL_OPS, attrs=PoolParamsAttrs)
@define(*FLEX_OPS, attrs=FlexMapAttrs)
def infer(attrs: Any, ins: Inputs) -> list[Meta]:
    """The declared outputs (shapes the model fixes, as these kernels' Prepare takes them)."""
    return [declared(ins, k, tuple(ins.outputs[k].shape)) for k in range(len(ins.outputs))]
