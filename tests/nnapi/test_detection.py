"""The detection family from the spec's text: ROI_ALIGN, ROI_POOLING, AXIS_ALIGNED_BBOX_TRANSFORM,
BOX_WITH_NMS_LIMIT, GENERATE_PROPOSALS, HEATMAP_MAX_KEYPOINT, DETECTION_POSTPROCESSING.

TFLite has none of them: each is checked on a small hand-computed case and against a NumPy
derivation written here from the spec's formulas (plain loops in float64; the choices the spec
leaves open as Android's reference implementation makes them: background class 0 skipped,
scores strictly above the threshold, boxes dropped at IoU >= threshold, output order). Scores
are distinct so that no order among equal scores is at stake. Quantized cases use Android's
arithmetic (dequantize, compute, round(x / scale + zero point); ROI_ALIGN's integer path).
The ops run on NumPy; on opencl the ADD / TRANSPOSE / CAST around them run on the device.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from teflon_py.nnapi import NNAPIError, OperationType, ResultCode
from teflon_py.nnapi import OperandType as T
from tests.nnapi.harness import Spec, check_vs, run

Op = OperationType
#: mode -> (tensor type, scalar float type, box type)
MODES = {
    "float32": (T.TENSOR_FLOAT32, T.FLOAT32, T.TENSOR_FLOAT32),
    "float16": (T.TENSOR_FLOAT16, T.FLOAT16, T.TENSOR_FLOAT16),
    "uint8": (T.TENSOR_QUANT8_ASYMM, T.FLOAT32, T.TENSOR_QUANT16_ASYMM),
    "int8": (T.TENSOR_QUANT8_ASYMM_SIGNED, T.FLOAT32, T.TENSOR_QUANT16_ASYMM),
}
QDTYPE = {"uint8": np.uint8, "int8": np.int8}
#: quantization (scale, zero point) of feature maps / scores in the quantized modes
QIN = {"uint8": (0.05, 120), "int8": (0.05, -8)}
BOXQ = (0.125, 0)
DYNAMIC = "empty or unknown dimension"  # opencl refuses a CAST of a data-dependent size


def tol(mode: str) -> float:
    return 3e-3 if mode == "float16" else 1e-5


def rhaw(x: float) -> int:
    """C's round: halves away from zero."""
    return math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)


def quantize(x: np.ndarray, scale: float, zp: int, dtype: type) -> np.ndarray:
    """Android's convertFloat32ToQuant: round(x / scale + zero point) in float32, clamped."""
    v = (np.asarray(x, np.float32) / np.float32(scale) + np.float32(zp)).astype(np.float64)
    info = np.iinfo(dtype)
    return np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5), info.min, info.max).astype(dtype)


def dequantize(q: np.ndarray, scale: float, zp: int) -> np.ndarray:
    return (q.astype(np.float64) - zp) * scale


class Graph:
    """A Spec whose tensor inputs are values the test keeps (``feed``), in one of the modes."""

    def __init__(self, mode: str) -> None:
        self.s = Spec()
        self.mode = mode
        self.t, self.f, self.box = MODES[mode]
        self.values: list[np.ndarray] = []

    def feed(self, type: T, value: np.ndarray, scale: float = 0.0, zp: int = 0, add: bool = False) -> int:
        """A model input holding ``value``; ``add``: passed through ADD with zero first, so that
        a float32 graph has an op the opencl backend runs."""
        x = self.s.input(type, list(value.shape), scale, zp)
        self.values.append(value)
        if not (add and type == T.TENSOR_FLOAT32):
            return x
        y = self.s.temp(type, list(value.shape))
        self.s.op(Op.ADD, [x, self.s.const(type, np.zeros(value.shape, np.float32)), self.s.i32(0)], [y])
        return y

    def real(self, value: np.ndarray) -> int:
        return self.s.scalar(self.f, value)

    def check(self, backend: str, expected: list[np.ndarray], **kw: object) -> list[np.ndarray]:
        return check_vs(self.s.model(), self.values, expected, backend, float_tol=tol(self.mode), **kw)


def feature_input(g: Graph, x: np.ndarray, nchw: bool) -> tuple[int, np.ndarray]:
    """Feature map ``x`` (NHWC, real values) as the mode stores it, in the operation's layout;
    returns the operand and the real values the operation sees (after quantization)."""
    stored = x.transpose(0, 3, 1, 2) if nchw else x
    if g.mode in QDTYPE:
        q = quantize(stored, *QIN[g.mode], QDTYPE[g.mode])
        return g.feed(g.t, q, *QIN[g.mode]), dequantize(q, *QIN[g.mode])
    v = stored.astype(np.float16 if g.mode == "float16" else np.float32)
    return g.feed(g.t, v, add=True), v.astype(np.float64)


def box_input(g: Graph, boxes: np.ndarray) -> tuple[int, np.ndarray]:
    """Boxes (multiples of 1/8, exact in every mode) as the mode stores them."""
    if g.box == T.TENSOR_QUANT16_ASYMM:
        return g.feed(g.box, np.round(boxes / 0.125).astype(np.uint16), *BOXQ), boxes.astype(np.float64)
    return g.feed(g.box, boxes.astype(np.float16 if g.mode == "float16" else np.float32)), boxes.astype(np.float64)


def as_output(g: Graph, real: np.ndarray, quant: tuple[float, int] | None = None) -> np.ndarray:
    """Expected real values as the mode's output tensor stores them."""
    if g.mode in QDTYPE:
        return quantize(real, *(quant or QIN[g.mode]), QDTYPE[g.mode])
    return real.astype(np.float16 if g.mode == "float16" else np.float32)


def as_boxes(g: Graph, real: np.ndarray) -> np.ndarray:
    if g.box == T.TENSOR_QUANT16_ASYMM:
        return quantize(real, *BOXQ, np.uint16)
    return real.astype(np.float16 if g.mode == "float16" else np.float32)


def nchw_out(y: np.ndarray, nchw: bool) -> np.ndarray:
    return y.transpose(0, 3, 1, 2) if nchw else y


# -- ROI_ALIGN ------------------------------------------------------------------------------------

def bilinear(img: np.ndarray, y: float, x: float) -> np.ndarray:
    """The spec's bilinear sample; past the last row / column: that row / column (Android)."""
    h, w = img.shape[:2]
    y0, x0 = math.floor(y), math.floor(x)
    dy, dx = y - y0, x - x0
    if y0 >= h - 1:
        y0, dy = h - 1, 0.0
    if x0 >= w - 1:
        x0, dx = w - 1, 0.0
    y1, x1 = min(y0 + 1, h - 1), min(x0 + 1, w - 1)
    return ((1 - dy) * ((1 - dx) * img[y0, x0] + dx * img[y0, x1]) + dy * ((1 - dx) * img[y1, x0] + dx * img[y1, x1]))


def roi_align_ref(x: np.ndarray, rois: np.ndarray, batches: np.ndarray, out: tuple[int, int],
                  strides: tuple[float, float], ratios: tuple[int, int]) -> np.ndarray:
    """Each bin: the mean of ratio_h x ratio_w bilinear samples at the centres of a regular grid
    (ratio 0: ceil(bin size)), the region at least 1x1 in feature-map units."""
    oh, ow = out
    y = np.zeros((len(rois), oh, ow, x.shape[3]))
    for r, (roi, b) in enumerate(zip(rois, batches)):
        x1, x2 = roi[0] / strides[1], roi[2] / strides[1]
        y1, y2 = roi[1] / strides[0], roi[3] / strides[0]
        bh, bw = max(y2 - y1, 1.0) / oh, max(x2 - x1, 1.0) / ow
        rh = ratios[0] or math.ceil(bh)
        rw = ratios[1] or math.ceil(bw)
        for i in range(oh):
            for j in range(ow):
                pts = [bilinear(x[b], y1 + i * bh + (sy + 0.5) * bh / rh, x1 + j * bw + (sx + 0.5) * bw / rw)
                       for sy in range(rh) for sx in range(rw)]
                y[r, i, j] = np.mean(pts, axis=0)
    return y


def qmul(acc: int, real: float) -> int:
    """QuantizeMultiplierSmallerThanOne + MultiplyByQuantizedMultiplier on one int32."""
    mant, exp = math.frexp(real)
    q = rhaw(mant * (1 << 31))
    if q == 1 << 31:
        q, exp = q // 2, exp + 1
    nudged = acc * q + ((1 << 30) if acc * q >= 0 else 1 - (1 << 30))
    high = abs(nudged) // (1 << 31) * (1 if nudged >= 0 else -1)  # C division truncates
    shift = -exp
    mask = (1 << shift) - 1
    return (high >> shift) + ((high & mask) > (mask >> 1) + (high < 0))


def roi_align_quant_ref(q: np.ndarray, rois: np.ndarray, batches: np.ndarray, out: tuple[int, int],
                        strides: tuple[float, float], ratios: tuple[int, int], qin: tuple[float, int],
                        qout: tuple[float, int], dtype: type) -> np.ndarray:
    """Android's integer ROI_ALIGN: weights quantized to 1/255, summed with (q - zero point),
    one fixed-point multiplier in_scale / 255 / out_scale / samples per region."""
    f32 = np.float32
    UNIT = f32(1) / f32(255)
    oh, ow = out
    info = np.iinfo(dtype)
    y = np.zeros((len(rois), oh, ow, q.shape[3]), dtype)
    h, w = q.shape[1:3]
    for r, (roi, b) in enumerate(zip(rois, batches)):
        x1, x2 = f32(roi[0]) / f32(strides[1]), f32(roi[2]) / f32(strides[1])
        y1, y2 = f32(roi[1]) / f32(strides[0]), f32(roi[3]) / f32(strides[0])
        bh, bw = max(f32(y2 - y1), f32(1)) / f32(oh), max(f32(x2 - x1), f32(1)) / f32(ow)
        rh, rw = ratios[0] or math.ceil(bh), ratios[1] or math.ceil(bw)
        real = float(f32(f32(f32(qin[0]) * UNIT) / f32(qout[0])) / f32(rh * rw))
        for i in range(oh):
            for j in range(ow):
                acc = np.zeros(q.shape[3], np.int64)
                for sy in range(rh):
                    for sx in range(rw):
                        py = f32(f32(bh * f32(i) + y1) + bh / f32(rh) / f32(2)) + bh / f32(rh) * f32(sy)
                        px = f32(f32(bw * f32(j) + x1) + bw / f32(rw) / f32(2)) + bw / f32(rw) * f32(sx)
                        ya, xa = math.floor(py), math.floor(px)
                        dy, dx = f32(py - f32(ya)), f32(px - f32(xa))
                        if ya >= h - 1:
                            ya, dy = h - 1, f32(0)
                        if xa >= w - 1:
                            xa, dx = w - 1, f32(0)
                        yb, xb = min(ya + 1, h - 1), min(xa + 1, w - 1)
                        for (cy, cx), wt in (((ya, xa), (1 - dx) * (1 - dy)), ((ya, xb), dx * (1 - dy)),
                                             ((yb, xa), (1 - dx) * dy), ((yb, xb), dx * dy)):
                            acc += rhaw(float(f32(f32(wt) / UNIT))) * (q[b, cy, cx].astype(np.int64) - qin[1])
                y[r, i, j] = np.clip([qmul(int(a), real) + qout[1] for a in acc], info.min, info.max)
    return y


ROIS = np.array([[0.0, 0.0, 8.0, 6.0], [1.5, 2.25, 6.0, 9.5], [2.0, 1.0, 2.5, 1.25], [4.0, 3.0, 11.75, 9.875]])
ROI_BATCHES = np.array([0, 0, 1, 1], np.int32)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_roi_align(backend: str, mode: str, layout: str) -> None:
    rng = np.random.default_rng(3)
    nchw = layout == "nchw"
    strides = (2.0, 1.0)  # height, width: the image is 10 x 6 * 2
    ratios = (2, 1) if nchw else (0, 0)  # explicit, and adaptive ceil(bin size)
    x = rng.uniform(-3, 3, (2, 5, 12, 3))
    g = Graph(mode)
    xi, xreal = feature_input(g, x, nchw)
    ri, rreal = box_input(g, ROIS)
    bi = g.feed(T.TENSOR_INT32, ROI_BATCHES)
    qout = {"uint8": (0.04, 128), "int8": (0.03, 5)}.get(mode)
    dims = [4, 3, 2, 2] if nchw else [4, 2, 2, 3]
    y = g.s.output(g.t, dims, *(qout or (0.0, 0)))
    g.s.op(Op.ROI_ALIGN, [xi, ri, bi, g.s.i32(2), g.s.i32(2), g.real(strides[0]), g.real(strides[1]),
                          g.s.i32(ratios[0]), g.s.i32(ratios[1]), g.s.boolean(nchw)], [y])
    xnhwc = xreal.transpose(0, 2, 3, 1) if nchw else xreal
    if mode in QDTYPE:
        qx = quantize(x, *QIN[mode], QDTYPE[mode])
        expected = roi_align_quant_ref(qx, rreal, ROI_BATCHES, (2, 2), strides, ratios, QIN[mode], qout, QDTYPE[mode])
    else:
        expected = as_output(g, roi_align_ref(xnhwc, rreal, ROI_BATCHES, (2, 2), strides, ratios))
    g.check(backend, [nchw_out(expected, nchw)])


def test_roi_align_hand_computed(backend: str) -> None:
    """A linear ramp 4y + x is reproduced exactly by bilinear sampling: each bin's mean is the
    ramp at the mean sample position; samples past the last column read the last column."""
    g = Graph("float32")
    xi = g.feed(T.TENSOR_FLOAT32, np.arange(16, dtype=np.float32).reshape(1, 4, 4, 1), add=True)
    ri = g.feed(T.TENSOR_FLOAT32, np.array([[0, 0, 4, 4], [1, 1, 3, 3]], np.float32))
    bi = g.feed(T.TENSOR_INT32, np.array([0, 0], np.int32))
    y = g.s.output(T.TENSOR_FLOAT32, [2, 2, 2, 1])
    g.s.op(Op.ROI_ALIGN, [xi, ri, bi, g.s.i32(2), g.s.i32(2), g.s.f32(1.0), g.s.f32(1.0), g.s.i32(0), g.s.i32(0),
                          g.s.boolean(False)], [y])
    # region 0: bins of 2x2 cells, samples at .5 and 1.5 (x at 3.5 reads column 3): 4 * 1 + 1 = 5, ...
    # region 1: a 2x2 region, bins of one cell, one sample at the centre
    expected = np.array([[[5, 6.75], [12, 13.75]], [[7.5, 8.5], [11.5, 12.5]]], np.float32)[..., None]
    g.check(backend, [expected])


@pytest.mark.parametrize("op", ["ROI_ALIGN", "AXIS_ALIGNED_BBOX_TRANSFORM", "BOX_WITH_NMS_LIMIT"])
def test_no_regions(backend: str, op: str) -> None:
    """Zero num_rois is allowed (the spec says so for these three): the outputs have no rows."""
    g = Graph("float32")
    f32 = T.TENSOR_FLOAT32
    if op == "ROI_ALIGN":
        xi = g.feed(f32, np.ones((1, 2, 3, 4), np.float32), add=True)
        ri, bi = g.feed(f32, np.zeros((0, 4), np.float32)), g.feed(T.TENSOR_INT32, np.zeros(0, np.int32))
        y = g.s.output(f32, [0, 2, 2, 4])
        g.s.op(Op.ROI_ALIGN, [xi, ri, bi, g.s.i32(2), g.s.i32(2), g.s.f32(1.0), g.s.f32(1.0), g.s.i32(1),
                              g.s.i32(1), g.s.boolean(False)], [y])
        g.check(backend, [np.zeros((0, 2, 2, 4), np.float32)])
    elif op == "AXIS_ALIGNED_BBOX_TRANSFORM":
        ri = g.feed(f32, np.zeros((0, 4), np.float32))
        di = g.feed(f32, np.zeros((0, 8), np.float32))
        bi = g.feed(T.TENSOR_INT32, np.zeros(0, np.int32))
        ii = g.feed(f32, np.array([[4, 4]], np.float32), add=True)
        g.s.op(Op.AXIS_ALIGNED_BBOX_TRANSFORM, [ri, di, bi, ii], [g.s.output(f32, [0, 8])])
        g.check(backend, [np.zeros((0, 8), np.float32)])
    else:
        si = g.feed(f32, np.zeros((0, 3), np.float32))
        bx = g.feed(f32, np.zeros((0, 12), np.float32))
        bi = g.feed(T.TENSOR_INT32, np.zeros(0, np.int32))
        outs = [g.s.output(f32, [0]), g.s.output(f32, [0, 4]), g.s.output(T.TENSOR_INT32, [0]),
                g.s.output(T.TENSOR_INT32, [0])]
        g.s.op(Op.BOX_WITH_NMS_LIMIT, [si, bx, bi, g.s.f32(0), g.s.i32(-1), g.s.i32(0), g.s.f32(0.5), g.s.f32(1),
                                       g.s.f32(0)], outs)
        g.check(backend, [np.zeros(0, np.float32), np.zeros((0, 4), np.float32), np.zeros(0, np.int32),
                          np.zeros(0, np.int32)], refuses=DYNAMIC)


# -- ROI_POOLING ----------------------------------------------------------------------------------

def roi_pooling_ref(x: np.ndarray, rois: np.ndarray, batches: np.ndarray, out: tuple[int, int],
                    strides: tuple[float, float], empty: float) -> np.ndarray:
    """Corners rounded to cells (at least one cell); bin i spans [floor(i * step),
    ceil((i + 1) * step)) from the corner, clipped; its maximum, ``empty`` where it has no cell."""
    oh, ow = out
    h, w = x.shape[1:3]
    y = np.full((len(rois), oh, ow, x.shape[3]), empty, x.dtype)
    for r, (roi, b) in enumerate(zip(rois, batches)):
        x1, y1, x2, y2 = (rhaw(v) for v in (roi[0] / strides[1], roi[1] / strides[0], roi[2] / strides[1],
                                            roi[3] / strides[0]))
        sh, sw = max(y2 - y1 + 1, 1) / oh, max(x2 - x1 + 1, 1) / ow
        for i in range(oh):
            hs, he = min(math.floor(i * sh + y1), h), min(math.ceil((i + 1) * sh + y1), h)
            for j in range(ow):
                ws, we = min(math.floor(j * sw + x1), w), min(math.ceil((j + 1) * sw + x1), w)
                if hs < he and ws < we:
                    y[r, i, j] = x[b, hs:he, ws:we].max(axis=(0, 1))
    return y


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_roi_pooling(backend: str, mode: str, layout: str) -> None:
    rng = np.random.default_rng(5)
    nchw = layout == "nchw"
    strides = (2.0, 1.0)
    x = rng.uniform(-3, 3, (2, 5, 12, 3))
    g = Graph(mode)
    xi, _ = feature_input(g, x, nchw)
    ri, rreal = box_input(g, ROIS)
    bi = g.feed(T.TENSOR_INT32, ROI_BATCHES)
    dims = [4, 3, 2, 3] if nchw else [4, 2, 3, 3]
    y = g.s.output(g.t, dims, *(QIN.get(mode, (0.0, 0))))  # the spec: the input's scale and zero point
    g.s.op(Op.ROI_POOLING, [xi, ri, bi, g.s.i32(2), g.s.i32(3), g.real(strides[0]), g.real(strides[1]),
                            g.s.boolean(nchw)], [y])
    stored = g.values[0].transpose(0, 2, 3, 1) if nchw else g.values[0]  # pooled as stored
    empty = QIN[mode][1] if mode in QDTYPE else 0
    expected = roi_pooling_ref(stored, rreal, ROI_BATCHES, (2, 3), strides, empty)
    g.check(backend, [nchw_out(expected, nchw)])


# -- AXIS_ALIGNED_BBOX_TRANSFORM -------------------------------------------------------------------

def bbox_transform_ref(rois: np.ndarray, deltas: np.ndarray, batches: np.ndarray, info: np.ndarray) -> np.ndarray:
    """The spec's transform: centre moved by (dx, dy) times the size, size scaled by exp(dw, dh),
    corners clipped to [0, width] x [0, height] of the box's image."""
    out = np.zeros((len(rois), deltas.shape[1]))
    for r, (x1, y1, x2, y2) in enumerate(rois):
        w, h, cx, cy = x2 - x1, y2 - y1, (x1 + x2) / 2, (y1 + y2) / 2
        ih, iw = info[batches[r]]
        for c in range(deltas.shape[1] // 4):
            dx, dy, dw, dh = deltas[r, 4 * c:4 * c + 4]
            nx, ny, nw, nh = cx + dx * w, cy + dy * h, math.exp(dw) * w, math.exp(dh) * h
            corners = [nx - nw / 2, ny - nh / 2, nx + nw / 2, ny + nh / 2]
            out[r, 4 * c:4 * c + 4] = [min(max(v, 0), lim) for v, lim in zip(corners, (iw, ih, iw, ih))]
    return out


@pytest.mark.parametrize("mode", ["float32", "float16", "uint8", "int8"])
def test_axis_aligned_bbox_transform(backend: str, mode: str) -> None:
    rng = np.random.default_rng(7)
    rois = np.array([[1, 2, 9, 12], [0, 0, 30, 20], [5, 5, 5.5, 9], [10, 3, 40, 4]])
    batches = np.array([0, 1, 1, 0], np.int32)
    info = np.array([[24.0, 32.0], [16.0, 40.0]])  # (height, width) per image
    deltas = rng.uniform(-0.6, 0.6, (4, 12))
    g = Graph(mode)
    ri, rreal = box_input(g, rois)
    if mode in QDTYPE:
        dq = (0.01, 3) if mode == "uint8" else (0.01, -2)
        dstored = quantize(deltas, *dq, QDTYPE[mode])
        di, dreal = g.feed(g.t, dstored, *dq), dequantize(dstored, *dq)
    else:
        dstored = deltas.astype(np.float16 if mode == "float16" else np.float32)
        di, dreal = g.feed(g.t, dstored, add=True), dstored.astype(np.float64)
    bi = g.feed(T.TENSOR_INT32, batches)
    ii, ireal = box_input(g, info)
    y = g.s.output(g.box, [4, 12], *(BOXQ if mode in QDTYPE else (0.0, 0)))
    g.s.op(Op.AXIS_ALIGNED_BBOX_TRANSFORM, [ri, di, bi, ii], [y])
    g.check(backend, [as_boxes(g, bbox_transform_ref(rreal, dreal, batches, ireal))])


def test_axis_aligned_bbox_transform_hand_computed(backend: str) -> None:
    """Box (2, 2, 6, 4): centre (4, 3), size 4 x 2; deltas (0.5, -1, ln 2, 0) give centre (6, 1),
    size 8 x 2: (2, 0, 10, 2), then clipped to the 9-wide image: (2, 0, 9, 2)."""
    g = Graph("float32")
    ri = g.feed(T.TENSOR_FLOAT32, np.array([[2, 2, 6, 4]], np.float32), add=True)
    di = g.feed(T.TENSOR_FLOAT32, np.array([[0, 0, 0, 0, 0.5, -1, math.log(2), 0]], np.float32))
    bi = g.feed(T.TENSOR_INT32, np.array([0], np.int32))
    ii = g.feed(T.TENSOR_FLOAT32, np.array([[5, 9]], np.float32))
    y = g.s.output(T.TENSOR_FLOAT32, [1, 8])
    g.s.op(Op.AXIS_ALIGNED_BBOX_TRANSFORM, [ri, di, bi, ii], [y])
    g.check(backend, [np.array([[2, 2, 6, 4, 2, 0, 9, 2]], np.float32)])


# -- BOX_WITH_NMS_LIMIT ---------------------------------------------------------------------------

def iou(a: np.ndarray, b: np.ndarray) -> float:
    w = max(min(a[2], b[2]) - max(a[0], b[0]), 0)
    h = max(min(a[3], b[3]) - max(a[1], b[1]), 0)
    inter = w * h
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter)


def box_with_nms_ref(scores: np.ndarray, boxes: np.ndarray, batches: np.ndarray, thr: float, limit: int,
                     kernel: str, iou_thr: float, sigma: float, nms_thr: float) -> list[tuple]:
    """Per batch and class >= 1: the best remaining box is kept, every other one rescored by the
    kernel of its IoU with it and dropped below ``nms_thr``; then the batch's best ``limit``,
    listed by class and decreasing score. Returns (score, box row, class, batch) tuples."""
    out = []
    for b in dict.fromkeys(batches.tolist()):
        rows = np.flatnonzero(batches == b)
        found = []
        for c in range(1, scores.shape[1]):
            live = {int(r): float(scores[r, c]) for r in rows if scores[r, c] > thr}
            kept = 0
            while live and (limit < 0 or kept < limit):
                best = max(live, key=live.get)
                found.append((live.pop(best), best, c))
                kept += 1
                for r in list(live):
                    o = iou(boxes[r, 4 * c:4 * c + 4], boxes[best, 4 * c:4 * c + 4])
                    factor = {"hard": 1.0 if o < iou_thr else 0.0, "linear": 1.0 if o < iou_thr else 1 - o,
                              "gaussian": math.exp(-o * o / sigma)}[kernel]
                    live[r] *= factor
                    if live[r] < nms_thr:
                        del live[r]
        found.sort(key=lambda f: -f[0])
        found = found[:limit] if limit >= 0 else found
        found.sort(key=lambda f: (f[2], -f[0]))
        out += [(s, r, c, b) for s, r, c in found]
    return out


def random_boxes(rng: np.random.Generator, n: int, extent: float = 16) -> np.ndarray:
    """``n`` corner boxes in multiples of 1/8 that overlap one another now and then."""
    xy = np.round(rng.uniform(0, extent, (n, 2)) * 8) / 8
    wh = np.round(rng.uniform(2, extent / 2, (n, 2)) * 8) / 8
    return np.concatenate([xy, xy + wh], axis=1)


BOX_CASES = [("float32", "hard"), ("float32", "linear"), ("float32", "gaussian"), ("float16", "linear"),
             ("uint8", "hard"), ("int8", "gaussian")]


@pytest.mark.parametrize(("mode", "kernel"), BOX_CASES)
def test_box_with_nms_limit(backend: str, mode: str, kernel: str) -> None:
    rng = np.random.default_rng(11)
    rows, classes = 8, 3
    batches = np.array([0, 0, 0, 0, 0, 2, 2, 2], np.int32)
    boxes = np.concatenate([random_boxes(rng, rows) for _ in range(classes)], axis=1)
    g = Graph(mode)
    if mode in QDTYPE:  # distinct representable scores
        q = rng.permutation(np.arange(rows * classes)).reshape(rows, classes) * 7 + QIN[mode][1] - 80
        sstored = q.astype(QDTYPE[mode])
        si, sreal = g.feed(g.t, sstored, *QIN[mode]), dequantize(sstored, *QIN[mode])
    else:
        sstored = (rng.permutation(rows * classes).reshape(rows, classes) / 24 + 0.01).astype(
            np.float16 if mode == "float16" else np.float32)
        si, sreal = g.feed(g.t, sstored, add=True), sstored.astype(np.float64)
    bi_, breal = box_input(g, boxes)
    bti = g.feed(T.TENSOR_INT32, batches)
    thr, limit, iou_thr, sigma, nms_thr = 0.2, 4, 0.3, 0.5, 0.25
    params = [g.real(thr), g.s.i32(limit), g.s.i32(["hard", "linear", "gaussian"].index(kernel)), g.real(iou_thr),
              g.real(sigma), g.real(nms_thr)]
    outs = [g.s.output(g.t, [0], *QIN.get(mode, (0.0, 0))), g.s.output(g.box, [0, 4], *(BOXQ if mode in QDTYPE
                                                                                           else (0.0, 0))),
            g.s.output(T.TENSOR_INT32, [0]), g.s.output(T.TENSOR_INT32, [0])]
    g.s.op(Op.BOX_WITH_NMS_LIMIT, [si, bi_, bti, *params], outs)
    if mode == "float16":
        thr, iou_thr, sigma, nms_thr = (float(np.float16(v)) for v in (thr, iou_thr, sigma, nms_thr))
    found = box_with_nms_ref(sreal, breal, batches, thr, limit, kernel, iou_thr, sigma, nms_thr)
    assert len(found) > 4, "the case should keep boxes of both batches"
    scores = np.array([f[0] for f in found])
    stored_boxes = np.array([g.values[1][r, 4 * c:4 * c + 4] for _, r, c, _ in found])
    expected = [as_output(g, scores), stored_boxes, np.array([f[2] for f in found], np.int32),
                np.array([f[3] for f in found], np.int32)]
    g.check(backend, expected, refuses=DYNAMIC)


def test_box_with_nms_limit_hand_computed(backend: str) -> None:
    """Class 1 of batch 0: boxes 0 and 1 overlap with IoU 81/119 >= 0.5, so hard NMS zeroes box
    1's score (it stays: 0 is not below nms_score_threshold 0); batch 1 keeps box 2, not box 3,
    whose score only equals the threshold."""
    g = Graph("float32")
    si = g.feed(T.TENSOR_FLOAT32, np.array([[0.1, 0.9], [0.2, 0.8], [0.3, 0.7], [0.9, 0.5]], np.float32), add=True)
    boxes = np.array([[0, 0, 10, 10] * 2, [1, 1, 11, 11] * 2, [20, 20, 30, 30] * 2, [0, 0, 1, 1] * 2], np.float32)
    bi = g.feed(T.TENSOR_FLOAT32, boxes)
    bti = g.feed(T.TENSOR_INT32, np.array([0, 0, 1, 1], np.int32))
    outs = [g.s.output(T.TENSOR_FLOAT32, [0]), g.s.output(T.TENSOR_FLOAT32, [0, 4]),
            g.s.output(T.TENSOR_INT32, [0]), g.s.output(T.TENSOR_INT32, [0])]
    g.s.op(Op.BOX_WITH_NMS_LIMIT, [si, bi, bti, g.s.f32(0.5), g.s.i32(-1), g.s.i32(0), g.s.f32(0.5), g.s.f32(1.0),
                                   g.s.f32(0.0)], outs)
    g.check(backend, [np.array([0.9, 0.0, 0.7], np.float32), boxes[:3, :4], np.array([1, 1, 1], np.int32),
                      np.array([0, 0, 1], np.int32)])


# -- GENERATE_PROPOSALS ---------------------------------------------------------------------------

def generate_proposals_ref(scores: np.ndarray, deltas: np.ndarray, anchors: np.ndarray, info: np.ndarray,
                           strides: tuple[float, float], pre: int, post: int, iou_thr: float,
                           min_size: float) -> list[tuple]:
    """Per batch: anchor a at cell (h, w) shifted by (w * stride_w, h * stride_h), moved by its
    deltas and clipped; the best ``pre`` by score; boxes wider and taller than ``min_size`` with
    their centre inside the image; hard NMS, best first, at most ``post``.
    Returns (score, box, batch) tuples."""
    n, h, w, a = scores.shape
    out = []
    for b in range(n):
        cands = []
        for i in range(h):
            for j in range(w):
                for k in range(a):
                    shift = np.array([j * strides[1], i * strides[0]] * 2)
                    box = bbox_transform_ref((anchors[k] + shift)[None], deltas[b, i, j, 4 * k:4 * k + 4][None],
                                             np.array([0]), info[b:b + 1])[0]
                    cands.append((scores[b, i, j, k], box))
        cands.sort(key=lambda c: -c[0])
        cands = cands[:pre] if pre > 0 else cands
        ih, iw = info[b]
        cands = [(s, bx) for s, bx in cands if bx[2] - bx[0] > min_size and bx[3] - bx[1] > min_size
                 and (bx[0] + bx[2]) / 2 < iw and (bx[1] + bx[3]) / 2 < ih]
        kept = []
        for s, bx in cands:
            if (post <= 0 or len(kept) < post) and all(iou(bx, k[1]) < iou_thr for k in kept):
                kept.append((s, bx))
        out += [(s, bx, b) for s, bx in kept]
    return out


@pytest.mark.parametrize(("mode", "layout"), [(m, "nhwc") for m in MODES] + [("float32", "nchw"), ("uint8", "nchw")])
def test_generate_proposals(backend: str, mode: str, layout: str) -> None:
    rng = np.random.default_rng(13)
    nchw = layout == "nchw"
    n, h, w, a = 2, 3, 4, 2
    strides = (4.0, 4.0)
    anchors = np.array([[0, 0, 8, 8], [-2, 1, 6, 5]], np.float64)
    info = np.array([[12.0, 16.0], [10.0, 14.0]])
    deltas = rng.uniform(-0.4, 0.4, (n, h, w, a * 4))
    g = Graph(mode)
    if mode in QDTYPE:
        q = (rng.permutation(n * h * w * a).reshape(n, h, w, a) * 5 + QIN[mode][1] - 100).astype(QDTYPE[mode])
        sreal = dequantize(q, *QIN[mode])
        sstored = q
    else:
        sstored = (rng.permutation(n * h * w * a).reshape(n, h, w, a) / 48 + 0.01).astype(
            np.float16 if mode == "float16" else np.float32)
        sreal = sstored.astype(np.float64)
    to_layout = (lambda v: v.transpose(0, 3, 1, 2)) if nchw else (lambda v: v)
    if mode in QDTYPE:
        dq = (0.005, QIN[mode][1])
        dstored = quantize(deltas, *dq, QDTYPE[mode])
        dreal = dequantize(dstored, *dq)
        si = g.feed(g.t, to_layout(sstored), *QIN[mode])
        di = g.feed(g.t, to_layout(dstored), *dq)
        ai = g.feed(T.TENSOR_QUANT16_SYMM, np.round(anchors / 0.125).astype(np.int16), 0.125)
        ii = g.feed(T.TENSOR_QUANT16_ASYMM, np.round(info / 0.125).astype(np.uint16), *BOXQ)
    else:
        dstored = deltas.astype(np.float16 if mode == "float16" else np.float32)
        dreal = dstored.astype(np.float64)
        si = g.feed(g.t, to_layout(sstored), add=True)
        di = g.feed(g.t, to_layout(dstored))
        ai = g.feed(g.t, anchors.astype(dstored.dtype))
        ii = g.feed(g.t, info.astype(dstored.dtype))
    pre, post, iou_thr, min_size = 16, 5, 0.4, 2.0
    outs = [g.s.output(g.t, [0], *QIN.get(mode, (0.0, 0))),
            g.s.output(g.box, [0, 4], *(BOXQ if mode in QDTYPE else (0.0, 0))), g.s.output(T.TENSOR_INT32, [0])]
    g.s.op(Op.GENERATE_PROPOSALS, [si, di, ai, ii, g.real(strides[0]), g.real(strides[1]), g.s.i32(pre),
                                   g.s.i32(post), g.real(iou_thr), g.real(min_size), g.s.boolean(nchw)], outs)
    found = generate_proposals_ref(sreal, dreal, anchors, info, strides, pre, post, iou_thr, min_size)
    assert len(found) > 5
    expected = [as_output(g, np.array([f[0] for f in found])), as_boxes(g, np.array([f[1] for f in found])),
                np.array([f[2] for f in found], np.int32)]
    g.check(backend, expected, refuses=DYNAMIC)


def test_generate_proposals_hand_computed(backend: str) -> None:
    """One anchor (0, 0, 4, 4) at two cells 8 apart in x over a 4 x 20 image: cell 0 keeps its
    box; cell 1's box, moved down by its height, is clipped to (8, 4, 12, 4): with
    min_size -1 its zero height passes, but its centre (y 4) is not inside the image. Pre and
    post NMS limits 0 are unlimited (the spec)."""
    g = Graph("float32")
    si = g.feed(T.TENSOR_FLOAT32, np.array([0.9, 0.8], np.float32).reshape(1, 1, 2, 1), add=True)
    di = g.feed(T.TENSOR_FLOAT32, np.array([0, 0, 0, 0, 0, 1, 0, 0], np.float32).reshape(1, 1, 2, 4))
    ai = g.feed(T.TENSOR_FLOAT32, np.array([[0, 0, 4, 4]], np.float32))
    ii = g.feed(T.TENSOR_FLOAT32, np.array([[4, 20]], np.float32))
    outs = [g.s.output(T.TENSOR_FLOAT32, [0]), g.s.output(T.TENSOR_FLOAT32, [0, 4]), g.s.output(T.TENSOR_INT32, [0])]
    g.s.op(Op.GENERATE_PROPOSALS, [si, di, ai, ii, g.s.f32(8), g.s.f32(8), g.s.i32(0), g.s.i32(0), g.s.f32(0.5),
                                   g.s.f32(-1), g.s.boolean(False)], outs)
    g.check(backend, [np.array([0.9], np.float32), np.array([[0, 0, 4, 4]], np.float32), np.array([0], np.int32)],
            refuses=DYNAMIC)


# -- HEATMAP_MAX_KEYPOINT -------------------------------------------------------------------------

def mirrored(m: np.ndarray, y0: int, x0: int) -> callable:
    """m[y0 + dy, x0 + dx], an index -1 reading 1 and an index size reading size - 2."""
    size = m.shape[0]

    def at(dy: int, dx: int) -> float:
        yy, xx = y0 + dy, x0 + dx
        yy = 1 if yy < 0 else size - 2 if yy >= size else yy
        xx = 1 if xx < 0 else size - 2 if xx >= size else xx
        return m[yy, xx]

    return at


def heatmap_ref(hm: np.ndarray, boxes: np.ndarray, tolerance: float) -> tuple[np.ndarray, np.ndarray]:
    """The spec's quadratic (Taylor) refinement around each heatmap maximum: the offset solves
    H d = -g from central differences on the 3x3 grid (mirrored at the border), limited to 1.5
    cells; singular H: no refinement. Keypoint: (index + offset + 0.5) / size over the box."""
    n, size, _, k = hm.shape
    scores, points = np.zeros((n, k)), np.zeros((n, k, 2))
    for b in range(n):
        for j in range(k):
            m = hm[b, :, :, j]
            y0, x0 = divmod(int(np.argmax(m)), size)
            at = mirrored(m, y0, x0)

            grad = np.array([(at(0, 1) - at(0, -1)) / 2, (at(1, 0) - at(-1, 0)) / 2])
            hess = np.array([[at(0, -1) - 2 * at(0, 0) + at(0, 1),
                              (at(1, 1) - at(1, -1) - at(-1, 1) + at(-1, -1)) / 4], [0, 0]])
            hess[1] = [hess[0, 1], at(-1, 0) - 2 * at(0, 0) + at(1, 0)]
            d, score = np.zeros(2), at(0, 0)
            if abs(np.linalg.det(hess)) >= tolerance + tolerance * hess[0, 0] * hess[1, 1]:
                d = np.linalg.solve(hess, -grad)
                if np.abs(d).max() > 1.5:
                    d *= 1.5 / np.abs(d).max()
                score = at(0, 0) + grad @ d + d @ hess @ d / 2
            x1, y1, x2, y2 = boxes[b]
            scores[b, j] = score
            points[b, j] = [(x0 + d[0] + 0.5) / size * (x2 - x1) + x1, (y0 + d[1] + 0.5) / size * (y2 - y1) + y1]
    return scores, points


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("layout", ["nhwc", "nchw"])
def test_heatmap_max_keypoint(backend: str, mode: str, layout: str) -> None:
    rng = np.random.default_rng(17)
    nchw = layout == "nchw"
    n, size, k = 3, 6, 4
    yy, xx = np.mgrid[0:size, 0:size]
    hm = np.zeros((n, size, size, k))
    for b in range(n):  # smooth bumps with one clear maximum each, some at the border
        for j in range(k):
            cy, cx = rng.uniform(-0.5, size - 0.5, 2)
            hm[b, :, :, j] = 2.0 * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / rng.uniform(2, 6))
    boxes = np.array([[1, 2, 17, 10], [0, 0, 6, 6], [3.5, 1.25, 9.75, 20]])
    g = Graph(mode)
    hi, hreal = feature_input(g, hm, nchw)
    bi, breal = box_input(g, boxes)
    qscore = {"uint8": (0.01, 10), "int8": (0.01, -100)}.get(mode)
    ys = g.s.output(g.t, [n, k], *(qscore or (0.0, 0)))
    yk = g.s.output(g.box, [n, k, 2], *(BOXQ if mode in QDTYPE else (0.0, 0)))
    g.s.op(Op.HEATMAP_MAX_KEYPOINT, [hi, bi, g.s.boolean(nchw)], [ys, yk])
    hnhwc = hreal.transpose(0, 2, 3, 1) if nchw else hreal
    scores, points = heatmap_ref(hnhwc, breal, 1e-3 if mode == "float16" else 1e-5)
    g.check(backend, [as_output(g, scores, qscore), as_boxes(g, points)])


def test_heatmap_max_keypoint_hand_computed(backend: str) -> None:
    """Box (0, 0, 8, 4), 4x4 heatmaps. Keypoint 0: a quadratic peak 5 - (x - 2.3)^2 - (y - 0.8)^2,
    fitted exactly: cell position (2.8, 1.3) / 4 of the box, (5.6, 1.3), score 5. Keypoint 1: a
    diagonal ridge around the maximum at (1, 1) whose fitted offset (4.08, 4.08) is cut to
    (1.5, 1.5): (3 / 4 * 8, 3 / 4 * 4) = (6, 3), score 1 + 0.735 - 0.135 = 1.6. Keypoint 2: flat,
    a singular fit: the first cell's centre (1, 0.5) and its value."""
    yy, xx = np.mgrid[0:4, 0:4].astype(np.float32)
    hm = np.zeros((1, 4, 4, 3), np.float32)
    hm[0, :, :, 0] = 5 - (xx - 2.3) ** 2 - (yy - 0.8) ** 2
    hm[0, :3, :3, 1] = [[0.95, 0.5, 0.07], [0.5, 1.0, 0.99], [0.07, 0.99, 0.99]]
    hm[0, :, :, 2] = 0.25
    g = Graph("float32")
    hi = g.feed(T.TENSOR_FLOAT32, hm, add=True)
    bi = g.feed(T.TENSOR_FLOAT32, np.array([[0, 0, 8, 4]], np.float32))
    ys, yk = g.s.output(T.TENSOR_FLOAT32, [1, 3]), g.s.output(T.TENSOR_FLOAT32, [1, 3, 2])
    g.s.op(Op.HEATMAP_MAX_KEYPOINT, [hi, bi, g.s.boolean(False)], [ys, yk])
    g.check(backend, [np.array([[5.0, 1.6, 0.25]], np.float32), np.array([[[5.6, 1.3], [6, 3], [1, 0.5]]], np.float32)])


# -- DETECTION_POSTPROCESSING ---------------------------------------------------------------------

def hard_nms(boxes: np.ndarray, score: np.ndarray, limit: int, thr: float, iou_thr: float) -> list[int]:
    """Greedy NMS by decreasing score over scores above ``thr``: a box is kept unless its IoU
    with a kept one reaches ``iou_thr``; at most ``limit``."""
    kept: list[int] = []
    for i in np.argsort(-score):
        if score[i] > thr and len(kept) < limit and all(iou(boxes[i], boxes[j]) < iou_thr for j in kept):
            kept.append(int(i))
    return kept


def detection_ref(scores: np.ndarray, deltas: np.ndarray, anchors: np.ndarray, scales: tuple[float, ...],
                  regular: bool, max_det: int, max_cls: int, per_class: int, thr: float, iou_thr: float,
                  bg_in_label: bool) -> tuple[np.ndarray, ...]:
    """Boxes decoded from (ctr_y, ctr_x, h, w) anchors; regular: hard NMS per class >= 1 (at most
    ``per_class``), the best ``max_det`` by score; fast: one hard NMS over each anchor's best
    class score (at most ``max_det``), each kept anchor listing its best ``max_cls`` classes."""
    b_count, _, classes = scores.shape
    slots = max_det if regular else max_det * max_cls
    out = (np.zeros((b_count, slots)), np.zeros((b_count, slots, 4)), np.zeros((b_count, slots), np.int32),
           np.zeros(b_count, np.int32))
    sy, sx, sh, sw = scales
    for b in range(b_count):
        d = deltas[b]
        yc, xc = anchors[:, 0] + d[:, 0] / sy * anchors[:, 2], anchors[:, 1] + d[:, 1] / sx * anchors[:, 3]
        hh, hw = np.exp(d[:, 2] / sh) * anchors[:, 2] / 2, np.exp(d[:, 3] / sw) * anchors[:, 3] / 2
        boxes = np.stack([yc - hh, xc - hw, yc + hh, xc + hw], axis=1)
        if regular:
            dets = [(scores[b, i, c], i, c) for c in range(1, classes)
                    for i in hard_nms(boxes, scores[b, :, c], per_class, thr, iou_thr)]
            dets = sorted(dets, key=lambda t: -t[0])[:max_det]
        else:
            dets = [(scores[b, i, c], i, c) for i in hard_nms(boxes, scores[b, :, 1:].max(axis=1), max_det, thr, iou_thr)
                    for c in (np.argsort(-scores[b, i, 1:])[:min(max_cls, classes - 1)] + 1)]
        for s, (score, i, c) in enumerate(dets):
            out[0][b, s], out[1][b, s], out[2][b, s] = score, boxes[i], c - (0 if bg_in_label else 1)
        out[3][b] = len(dets)
    return out


@pytest.mark.parametrize("mode", ["float32", "float16"])
@pytest.mark.parametrize("regular", [True, False])
def test_detection_postprocessing(backend: str, mode: str, regular: bool) -> None:
    rng = np.random.default_rng(19 + regular)
    b, a, classes, length = 2, 10, 4, 6
    dtype = np.float16 if mode == "float16" else np.float32
    scores = (rng.permutation(b * a * classes).reshape(b, a, classes) / (b * a * classes)).astype(dtype)
    deltas = rng.uniform(-1, 1, (b, a, length)).astype(dtype)
    centres = np.round(rng.uniform(0.2, 0.8, (a, 2)) * 16) / 16
    sizes = np.round(rng.uniform(0.2, 0.5, (a, 2)) * 16) / 16
    anchors = np.concatenate([centres, sizes], axis=1).astype(dtype)
    scales = (10.0, 10.0, 5.0, 5.0)
    max_det, max_cls, per_class, thr, iou_thr, bg = 4, 2, 3, 0.3, 0.5, not regular
    g = Graph(mode)
    si = g.feed(g.t, scores, add=True)
    di = g.feed(g.t, deltas)
    ai = g.feed(g.t, anchors)
    slots = max_det if regular else max_det * max_cls
    outs = [g.s.output(g.t, [b, slots]), g.s.output(g.t, [b, slots, 4]), g.s.output(T.TENSOR_INT32, [b, slots]),
            g.s.output(T.TENSOR_INT32, [b])]
    g.s.op(Op.DETECTION_POSTPROCESSING, [si, di, ai, *(g.real(v) for v in scales), g.s.boolean(regular),
                                         g.s.i32(max_det), g.s.i32(max_cls), g.s.i32(per_class), g.real(thr),
                                         g.real(iou_thr), g.s.boolean(bg)], outs)
    if mode == "float16":
        thr, iou_thr = float(np.float16(thr)), float(np.float16(iou_thr))
    ref = detection_ref(scores.astype(np.float64), deltas.astype(np.float64), anchors.astype(np.float64), scales,
                        regular, max_det, max_cls, per_class, thr, iou_thr, bg)
    assert ref[3].min() > 0
    g.check(backend, [ref[0].astype(dtype), ref[1].astype(dtype), ref[2], ref[3]])


# -- rules ------------------------------------------------------------------------------------------

def bad_data(build: callable, *parts: str) -> None:
    """``build`` (adding the operation to a Spec and finishing it) fails with BAD_DATA naming
    the operation and each of ``parts``."""
    with pytest.raises(NNAPIError) as e:
        build()
    assert e.value.code == ResultCode.BAD_DATA
    for part in parts:
        assert part in str(e.value), str(e.value)


def test_roi_align_boxes_take_scale_one_eighth() -> None:
    def build() -> None:
        s = Spec()
        x = s.input(T.TENSOR_QUANT8_ASYMM, [1, 4, 4, 1], 0.1, 0)
        r = s.input(T.TENSOR_QUANT16_ASYMM, [1, 4], 0.25, 0)
        bi = s.input(T.TENSOR_INT32, [1])
        y = s.output(T.TENSOR_QUANT8_ASYMM, [1, 2, 2, 1], 0.1, 0)
        s.op(Op.ROI_ALIGN, [x, r, bi, s.i32(2), s.i32(2), s.f32(1), s.f32(1), s.i32(0), s.i32(0), s.boolean(False)],
             [y])
        s.model()
    bad_data(build, "operation 0 (ROI_ALIGN): input 1: quantized boxes take scale 0.125 and zero point 0")


def test_roi_pooling_output_keeps_input_quantization() -> None:
    def build() -> None:
        s = Spec()
        x = s.input(T.TENSOR_QUANT8_ASYMM_SIGNED, [1, 4, 4, 1], 0.1, 0)
        r = s.input(T.TENSOR_QUANT16_ASYMM, [1, 4], 0.125, 0)
        bi = s.input(T.TENSOR_INT32, [1])
        y = s.output(T.TENSOR_QUANT8_ASYMM_SIGNED, [1, 2, 2, 1], 0.2, 0)
        s.op(Op.ROI_POOLING, [x, r, bi, s.i32(2), s.i32(2), s.f32(1), s.f32(1), s.boolean(False)], [y])
        s.model()
    bad_data(build, "operation 0 (ROI_POOLING): output 0: its scale and zero point (0.2, 0) must be input 0's")


def test_box_with_nms_limit_kernel_code() -> None:
    def build() -> None:
        s = Spec()
        sc = s.input(T.TENSOR_FLOAT32, [2, 2])
        bx = s.input(T.TENSOR_FLOAT32, [2, 8])
        bi = s.input(T.TENSOR_INT32, [2])
        outs = [s.output(T.TENSOR_FLOAT32, [0]), s.output(T.TENSOR_FLOAT32, [0, 4]), s.output(T.TENSOR_INT32, [0]),
                s.output(T.TENSOR_INT32, [0])]
        s.op(Op.BOX_WITH_NMS_LIMIT, [sc, bx, bi, s.f32(0), s.i32(-1), s.i32(3), s.f32(0.5), s.f32(1), s.f32(0)],
             outs)
        s.model()
    bad_data(build, "operation 0 (BOX_WITH_NMS_LIMIT): input 5: the NMS kernel must be 0 (hard), 1 (linear) or 2")


def test_float16_operation_takes_float16_thresholds() -> None:
    """DETECTION_POSTPROCESSING's thresholds take input 0's float type (the spec and Android)."""
    def build() -> None:
        s = Spec()
        sc = s.input(T.TENSOR_FLOAT16, [1, 4, 2])
        bx = s.input(T.TENSOR_FLOAT16, [1, 4, 4])
        an = s.input(T.TENSOR_FLOAT16, [4, 4])
        outs = [s.output(T.TENSOR_FLOAT16, [1, 2]), s.output(T.TENSOR_FLOAT16, [1, 2, 4]),
                s.output(T.TENSOR_INT32, [1, 2]), s.output(T.TENSOR_INT32, [1])]
        s.op(Op.DETECTION_POSTPROCESSING, [sc, bx, an, *(s.scalar(T.FLOAT16, 1) for _ in range(4)), s.boolean(True),
                                           s.i32(2), s.i32(1), s.i32(1), s.f32(0), s.f32(0.5), s.boolean(False)], outs)
    bad_data(build, "operation 0 (DETECTION_POSTPROCESSING): input 11 has type FLOAT32", "FLOAT16")


@pytest.mark.parametrize("scalar", [T.FLOAT16, T.FLOAT32])
def test_float16_roi_pooling_takes_either_scalar_type(backend: str, scalar: T) -> None:
    """Android takes FLOAT16 strides for a float16 ROI_POOLING, the spec's text FLOAT32: both run."""
    g = Graph("float16")
    xi = g.feed(T.TENSOR_FLOAT16, np.arange(16, dtype=np.float16).reshape(1, 4, 4, 1))
    ri = g.feed(T.TENSOR_FLOAT16, np.array([[0, 0, 6, 2]], np.float16))
    bi = g.feed(T.TENSOR_INT32, np.array([0], np.int32))
    y = g.s.output(T.TENSOR_FLOAT16, [1, 1, 2, 1])
    g.s.op(Op.ROI_POOLING, [xi, ri, bi, g.s.i32(1), g.s.i32(2), g.s.scalar(scalar, 1.0), g.s.scalar(scalar, 2.0),
                            g.s.boolean(False)], [y])
    # the region: columns 0..3 (x / width stride 2), rows 0..2, both ends included; two bins of
    # columns [0, 2) and [2, 4) over all three rows: maxima 4 * 2 + 1 and 4 * 2 + 3
    g.check(backend, [np.array([[[[9], [11]]]], np.float16)])


def test_heatmap_must_be_square() -> None:
    def build() -> None:
        s = Spec()
        hm = s.input(T.TENSOR_FLOAT32, [2, 4, 5, 3])
        bx = s.input(T.TENSOR_FLOAT32, [2, 4])
        s.op(Op.HEATMAP_MAX_KEYPOINT, [hm, bx, s.boolean(False)],
             [s.output(T.TENSOR_FLOAT32, [2, 3]), s.output(T.TENSOR_FLOAT32, [2, 3, 2])])
        s.model()
    bad_data(build, "operation 0 (HEATMAP_MAX_KEYPOINT): input 0: the heatmaps must be square and at least 2x2")


def test_region_outside_the_feature_map_fails_the_run() -> None:
    """Android checks each region against the feature map when it runs: OP_FAILED."""
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [1, 4, 4, 1])
    r = s.input(T.TENSOR_FLOAT32, [1, 4])
    bi = s.input(T.TENSOR_INT32, [1])
    y = s.output(T.TENSOR_FLOAT32, [1, 2, 2, 1])
    s.op(Op.ROI_POOLING, [x, r, bi, s.i32(2), s.i32(2), s.f32(1), s.f32(1), s.boolean(False)], [y])
    with pytest.raises(NNAPIError) as e:
        run(s.model(), [np.zeros((1, 4, 4, 1), np.float32), np.array([[0, 0, 5, 3]], np.float32),
                        np.zeros(1, np.int32)])
    assert e.value.code == ResultCode.OP_FAILED
    assert "ROI_POOLING" in str(e.value) and "is not a box inside the 4x4 feature map" in str(e.value)
