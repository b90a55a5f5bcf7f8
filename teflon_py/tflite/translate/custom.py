"""TFLite custom options <-> op-layer attributes: the custom family (see ``teflon_py.ops.custom``).

Custom ops carry their parameters as raw bytes (``op.custom_options``): a FlexBuffer map for most,
MediaPipe's pooling ops a C ``TfLitePoolParams`` struct. They are decoded here when the model is
read; the bytes stay on the operation and are written back as they were (no options table).
"""
from __future__ import annotations

import struct
from typing import Any

from flatbuffers import flexbuffers

from teflon_py import ir
from teflon_py.ops import custom as C
from teflon_py.tflite.translate.registry import Source, parses, writes


def decode_flex_map(raw: bytes | None) -> dict[str, Any]:
    """Custom options as a FlexBuffer map of plain values; absent options are an empty map.
    ValueError where the bytes are not a FlexBuffer map."""
    if not raw:
        return {}
    try:
        value = flexbuffers.Loads(bytes(raw))
    except (IndexError, KeyError, TypeError, ValueError, struct.error) as e:  # what the FlexBuffer reader raises
        raise ValueError(f"custom options are not a valid FlexBuffer ({type(e).__name__}: {e})") from e
    if not isinstance(value, dict):
        raise ValueError(f"custom options must be a FlexBuffer map, got {type(value).__name__}")  # noqa: TRY004
    return value


def _flex(src: Source) -> dict[str, Any]:
    try:
        return decode_flex_map(src.custom_options)
    except ValueError as e:
        raise src.fail(str(e)) from None


def _int(value: Any) -> int:
    """FlexBuffer AsInt32: null reads 0, floats truncate toward zero."""
    return 0 if value is None else int(value)


def _float(value: Any) -> float:
    """FlexBuffer AsFloat: null reads 0."""
    return 0.0 if value is None else float(value)


@parses("TFLite_Detection_PostProcess")
def parse_detection(src: Source) -> C.DetectionPostProcessAttrs:
    m = _flex(src)
    return C.DetectionPostProcessAttrs(
        max_detections=_int(m.get("max_detections")),
        max_classes_per_detection=_int(m.get("max_classes_per_detection")),
        detections_per_class=(C.DEFAULT_DETECTIONS_PER_CLASS if m.get("detections_per_class") is None
                              else _int(m["detections_per_class"])),
        use_regular_nms=bool(m.get("use_regular_nms") or False),
        nms_score_threshold=_float(m.get("nms_score_threshold")),
        nms_iou_threshold=_float(m.get("nms_iou_threshold")),
        num_classes=_int(m.get("num_classes")),
        y_scale=_float(m.get("y_scale")), x_scale=_float(m.get("x_scale")),
        h_scale=_float(m.get("h_scale")), w_scale=_float(m.get("w_scale")),
    )


@parses(*C.POOL_OPS)
def parse_pool_params(src: Source) -> C.PoolParamsAttrs:
    raw = src.custom_options or b""
    if len(raw) < 24:
        raise src.fail(f"custom options must hold a TfLitePoolParams struct (>= 24 bytes), got {len(raw)}")
    return C.PoolParamsAttrs(*struct.unpack_from("<6i", raw))


@parses(*C.FLEX_OPS)
def parse_flex(src: Source) -> C.FlexMapAttrs:
    return C.FlexMapAttrs(_flex(src))


@writes("TFLite_Detection_PostProcess", *C.POOL_OPS, *C.FLEX_OPS)
def write(attrs: Any, op: ir.Operation, graph: ir.Graph) -> None:
    return None  # the custom options bytes are written back from ``op.custom_options``
