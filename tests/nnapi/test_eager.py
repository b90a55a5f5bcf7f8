"""A model whose operation needs the shape of a data-dependent result (BOX_WITH_NMS_LIMIT's
detections feeding ROI_ALIGN, as Android's zero-sized tests chain them) runs operation by
operation: the chained model gives what the two operations give run one after the other, with
no detections (a zero-sized batch) and with some."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py.nnapi import OperandType as T
from teflon_py.nnapi import OperationType
from tests.nnapi.harness import Spec, check_vs, run

F32, I32 = T.TENSOR_FLOAT32, T.TENSOR_INT32
NMS_PARAMS = (0.3, -1, 0, 0.4, 1.0, 0.1)  # score threshold, max, kernel (hard), iou, sigma, nms threshold


def _nms(s: Spec, scores: int, boxes: int, batches: int, outs: list[int]) -> None:
    thr, limit, kernel, iou, sigma, nms_thr = NMS_PARAMS
    s.op(OperationType.BOX_WITH_NMS_LIMIT, [scores, boxes, batches, s.f32(thr), s.i32(limit), s.i32(kernel),
                                            s.f32(iou), s.f32(sigma), s.f32(nms_thr)], outs)


def _roi_align(s: Spec, x: int, rois: int, batches: int, y: int) -> None:
    s.op(OperationType.ROI_ALIGN, [x, rois, batches, s.i32(2), s.i32(2), s.f32(1.0), s.f32(1.0), s.i32(2),
                                   s.i32(2), s.boolean(False)], [y])


def _chained() -> object:
    s = Spec()
    scores, boxes, batches = s.input(F32, [3, 2]), s.input(F32, [3, 8]), s.input(I32, [3])
    x = s.input(F32, [1, 4, 4, 1])
    sc, bx, cls, split = s.temp(F32, [0]), s.temp(F32, [0, 4]), s.temp(I32, [0]), s.temp(I32, [0])
    _nms(s, scores, boxes, batches, [sc, bx, cls, split])
    y = s.output(F32, [0, 2, 2, 1])
    _roi_align(s, x, bx, split, y)
    return s.model()


def _separately(inputs: list[np.ndarray]) -> np.ndarray:
    s = Spec()
    scores, boxes, batches = s.input(F32, [3, 2]), s.input(F32, [3, 8]), s.input(I32, [3])
    outs = [s.output(F32, [0]), s.output(F32, [0, 4]), s.output(I32, [0]), s.output(I32, [0])]
    _nms(s, scores, boxes, batches, outs)
    _, bx, _, split = run(s.model(), inputs[:3])[0]
    s = Spec()
    x, rois, b = s.input(F32, [1, 4, 4, 1]), s.input(F32, [0, 4]), s.input(I32, [0])
    y = s.output(F32, [0, 2, 2, 1])
    _roi_align(s, x, rois, b, y)
    return run(s.model(), [inputs[3], bx, split])[0][0]


@pytest.mark.parametrize("detections", [False, True])
def test_detections_feeding_roi_align(backend: str, detections: bool) -> None:
    scores = np.array([[0.0, 0.9 if detections else 0.1], [0.0, 0.2], [0.0, 0.8 if detections else 0.05]],
                      np.float32)
    boxes = np.tile(np.array([[0, 0, 1, 1, 0, 0, 2, 2]], np.float32), (3, 1))
    boxes[2, 4:] = [1, 1, 3, 3]
    inputs = [scores, boxes, np.zeros(3, np.int32), np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1)]
    expected = _separately(inputs)
    assert expected.shape[0] == (2 if detections else 0)
    check_vs(_chained(), inputs, [expected], backend, refuses="empty or unknown dimension")
