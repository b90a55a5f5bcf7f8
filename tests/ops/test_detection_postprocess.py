"""TFLite_Detection_PostProcess against LiteRT's reference kernels (its builtin resolver has it).

Regular (per-class) and fast (class-agnostic) NMS; float32 and uint8 box encodings / anchors /
scores; with and without a background column; scores with many ties (to pin the sort orders).
Fast NMS leaves output slots past the detections unwritten in LiteRT (stale arena memory), so
those tests compare only the slots the kernel writes.
"""
from __future__ import annotations

import numpy as np
import pytest
from flatbuffers import flexbuffers

from teflon_py import UnsupportedError, ir
from tests.harness import assert_close, check_model, quantization, run_litert, run_teflon, single_op

OP = "TFLite_Detection_PostProcess"
ANCHOR_Q = quantization(1 / 256, 0)
BOX_Q = quantization(0.05, 128)
SCORE_Q = quantization(1 / 255, 0)


def dp_options(**kw: object) -> dict:
    """Options with SSD-like defaults (scales 10, 10, 5, 5), overridden by ``kw``."""
    return {"max_detections": 6, "max_classes_per_detection": 1, "detections_per_class": 4, "use_regular_nms": False,
            "nms_score_threshold": 0.25, "nms_iou_threshold": 0.5, "num_classes": 4,
            "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0, **kw}


def dp_model(n: int, opts: dict, background: int, box_dtype: type, score_dtype: type, anchors: np.ndarray,
             coords: int = 4) -> bytes:
    slots = opts["max_detections"] * opts["max_classes_per_detection"]
    box_q = BOX_Q if box_dtype != np.float32 else None
    score_q = SCORE_Q if score_dtype != np.float32 else None
    anchor_q = ANCHOR_Q if anchors.dtype != np.float32 else None
    return single_op(
        "CUSTOM",
        [{"shape": (1, n, coords), "dtype": box_dtype, "quant": box_q},
         {"shape": (1, n, opts["num_classes"] + background), "dtype": score_dtype, "quant": score_q},
         {"shape": (n, 4), "dtype": anchors.dtype, "data": anchors, "quant": anchor_q}],
        [{"shape": (1, slots, 4), "dtype": np.float32}, {"shape": (1, slots), "dtype": np.float32},
         {"shape": (1, slots), "dtype": np.float32}, {"shape": (1,), "dtype": np.float32}],
        custom_code=OP, custom_options=bytes(flexbuffers.Dumps(opts)),
    )


def make_anchors(rng: np.random.Generator, n: int, dtype: type) -> np.ndarray:
    """Anchors (y, x, h, w): centres in [0, 1], sizes 0.1-0.45, so neighbouring boxes overlap."""
    a = np.concatenate([rng.uniform(0, 1, (n, 2)), rng.uniform(0.1, 0.45, (n, 2))], axis=1)
    return np.round(a * 256).clip(0, 255).astype(np.uint8) if dtype == np.uint8 else a.astype(np.float32)


def make_inputs(rng: np.random.Generator, n: int, classes: int, coords: int, box_dtype: type,
                score_dtype: type, ties: bool) -> list[np.ndarray]:
    if box_dtype == np.uint8:
        boxes = rng.integers(88, 168, (1, n, coords)).astype(np.uint8)
    else:
        boxes = (rng.standard_normal((1, n, coords)) * 2).astype(np.float32)
    if score_dtype == np.uint8:
        scores = rng.integers(0, 256, (1, n, classes))
        scores = (scores // 64 * 64 + 63 if ties else scores).astype(np.uint8)
    else:
        scores = rng.uniform(0, 1, (1, n, classes))
        scores = (np.round(scores * 4) / 4 if ties else scores).astype(np.float32)
    return [boxes, scores]


def check_detections(model: bytes, backend: str, inputs: list[np.ndarray], opts: dict) -> None:
    """Compare with LiteRT; for fast NMS only the written slots (the rest is stale memory there)."""
    expected = run_litert(model, inputs)
    actual, _ = run_teflon(model, inputs, backend)
    if not opts["use_regular_nms"]:
        per = opts["max_classes_per_detection"]
        count = int(expected[3][0])
        slots = (np.arange(count)[:, None] * per + np.arange(min(per, opts["num_classes"]))).ravel()
        expected = [e[:, slots] for e in expected[:3]] + [expected[3]]
        actual = [a[:, slots] for a in actual[:3]] + [actual[3]]
    for k, (a, e) in enumerate(zip(actual, expected)):
        assert_close(a, e, 1e-6, f"output {k}")


DTYPES = [(np.float32, np.float32), (np.uint8, np.uint8), (np.float32, np.uint8), (np.uint8, np.float32)]
NMS = {"regular": {"use_regular_nms": True}, "fast": {"max_classes_per_detection": 1},
       "fast3": {"max_classes_per_detection": 3}}


@pytest.mark.parametrize("ties", [False, True], ids=["distinct", "ties"])
@pytest.mark.parametrize("background", [0, 1], ids=["nobg", "bg"])
@pytest.mark.parametrize("nms", list(NMS))
@pytest.mark.parametrize("box_dtype,score_dtype", DTYPES, ids=["f32", "u8", "f32box_u8score", "u8box_f32score"])
def test_detection_postprocess(backend: str, box_dtype: type, score_dtype: type, nms: str, background: int,
                               ties: bool) -> None:
    rng = np.random.default_rng(len(nms) * 7 + background * 3 + ties + 11 * DTYPES.index((box_dtype, score_dtype)))
    n, coords = 40, 4 + 2 * background  # extra (keypoint) columns after y, x, h, w are ignored
    opts = dp_options(**NMS[nms])
    anchors = make_anchors(rng, n, box_dtype)
    model = dp_model(n, opts, background, box_dtype, score_dtype, anchors, coords)
    check_detections(model, backend, make_inputs(rng, n, 4 + background, coords, box_dtype, score_dtype, ties),
                     opts)


#: (num anchors, num classes, options): thresholds, limits and SSD-MobileNet-like settings
SETTINGS = [
    (30, 1, {"nms_score_threshold": 0.0, "nms_iou_threshold": 1.0, "max_detections": 10}),
    (30, 3, {"nms_score_threshold": 0.9, "nms_iou_threshold": 0.1}),
    (25, 5, {"use_regular_nms": True, "detections_per_class": 1, "max_detections": 3}),
    (25, 5, {"use_regular_nms": True, "detections_per_class": 20, "max_detections": 8, "nms_iou_threshold": 0.3}),
    (20, 3, {"max_classes_per_detection": 5, "max_detections": 4}),  # more classes asked than exist
    (300, 90, {"max_detections": 10, "nms_score_threshold": 1e-8, "nms_iou_threshold": 0.6}),
    (300, 90, {"use_regular_nms": True, "max_detections": 10, "detections_per_class": 100,
               "nms_score_threshold": 1e-8, "nms_iou_threshold": 0.6}),
]


@pytest.mark.parametrize("dtype", [np.float32, np.uint8], ids=["f32", "u8"])
@pytest.mark.parametrize("n,classes,kw", SETTINGS, ids=[f"n{s[0]}c{s[1]}-{i}" for i, s in enumerate(SETTINGS)])
def test_detection_postprocess_settings(backend: str, n: int, classes: int, kw: dict, dtype: type) -> None:
    rng = np.random.default_rng(n + classes)
    opts = dp_options(num_classes=classes, **kw)
    model = dp_model(n, opts, 1, dtype, dtype, make_anchors(rng, n, dtype))
    check_detections(model, backend, make_inputs(rng, n, classes + 1, 4, dtype, dtype, False), opts)


def test_detection_postprocess_all_slots_written(backend: str) -> None:
    """With every slot filled, the whole outputs match (check_model) in both NMS variants."""
    rng = np.random.default_rng(5)
    for nms in ({"use_regular_nms": True}, {"max_classes_per_detection": 2}):
        opts = dp_options(nms_score_threshold=0.0, nms_iou_threshold=1.0, max_detections=5, **nms)
        model = dp_model(50, opts, 1, np.float32, np.float32, make_anchors(rng, 50, np.float32))
        check_model(model, backend, inputs=make_inputs(rng, 50, 5, 4, np.float32, np.float32, False))


def shift(q: ir.Quantization) -> ir.Quantization:
    """The int8 twin of uint8 quantization: same scale, zero point - 128."""
    return quantization(q.scale, q.zero_point - 128)


def test_detection_postprocess_int8_matches_uint8(backend: str) -> None:
    """int8 inputs (LiteRT's kernel takes only uint8) dequantize the same way: q - 128 with zero
    point - 128 is the same real value, so the outputs equal the uint8 model's."""
    rng = np.random.default_rng(9)
    opts = dp_options(use_regular_nms=True)
    anchors = make_anchors(rng, 30, np.uint8)
    boxes, scores = make_inputs(rng, 30, 5, 4, np.uint8, np.uint8, True)
    u8_model = dp_model(30, opts, 1, np.uint8, np.uint8, anchors)
    i8_model = single_op(
        "CUSTOM",
        [{"shape": (1, 30, 4), "dtype": np.int8, "quant": shift(BOX_Q)},
         {"shape": (1, 30, 5), "dtype": np.int8, "quant": shift(SCORE_Q)},
         {"shape": (30, 4), "dtype": np.int8, "data": (anchors.astype(np.int16) - 128).astype(np.int8),
          "quant": shift(ANCHOR_Q)}],
        [{"shape": (1, 6, 4), "dtype": np.float32}, {"shape": (1, 6), "dtype": np.float32},
         {"shape": (1, 6), "dtype": np.float32}, {"shape": (1,), "dtype": np.float32}],
        custom_code=OP, custom_options=bytes(flexbuffers.Dumps(opts)),
    )
    expected, _ = run_teflon(u8_model, [boxes, scores], backend)
    actual, _ = run_teflon(i8_model, [(boxes.astype(np.int16) - 128).astype(np.int8),
                                      (scores.astype(np.int16) - 128).astype(np.int8)], backend)
    assert expected[3][0] > 0
    for a, e in zip(actual, expected):
        np.testing.assert_array_equal(a, e)


def test_detection_postprocess_rejects_bad_class_count(backend: str) -> None:
    """More than one background column is an error naming the node, as LiteRT refuses it."""
    rng = np.random.default_rng(1)
    opts = dp_options(num_classes=2)
    model = dp_model(10, opts, 2, np.float32, np.float32, make_anchors(rng, 10, np.float32))
    with pytest.raises(UnsupportedError, match=rf"node 0 \({OP}\): class predictions have 4 columns for 2 classes"):
        run_teflon(model, make_inputs(rng, 10, 4, 4, np.float32, np.float32, False), backend)
