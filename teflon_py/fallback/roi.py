"""NumPy kernels of NNAPI's ROI_ALIGN and ROI_POOLING on NHWC feature maps, as Android's
reference CPU implementation (RoiAlign.cpp, RoiPooling.cpp) computes them.

Each region (x1, y1, x2, y2) is scaled into the feature map by 1 / stride and must lie inside it
(0 <= x * scale <= width, likewise y; x1 <= x2, y1 <= y2), with a batch index in range; a
violation fails the run as it does on Android.

ROI_ALIGN (no rounding): the region, at least 1x1, is cut into out_h x out_w bins; each bin
averages sampling_ratio_h x sampling_ratio_w bilinear samples at the centres of a regular grid
(a ratio of 0 is adaptive: ceil(bin size)); a sample past the last row or column takes that
row or column. Quantized feature maps use Android's integer path: the bilinear weights
quantized to 1/255, integer accumulation, one fixed-point multiplier per region
(QuantizeMultiplierSmallerThanOne of input scale / 255 / output scale / samples).

ROI_POOLING (rounding): the region's corners rounded to feature-map cells, at least one cell,
then bin i spans [floor(i * step), ceil((i + 1) * step)) cells from the corner, clipped to the
map; the bin's maximum, or zero (the zero point) for an empty bin. Quantized maps are pooled as
stored: the spec makes the output's scale and zero point the input's.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py.fallback.android_quant import is_quantized, to_float
from teflon_py.fallback.registry import Node, register
from teflon_py.ops.detection import RoiAttrs
from teflon_py.quant.core import multiply_by_quantized_multiplier, quantize_multiplier, round_half_away

F32 = np.float32


def _region(node: Node, rois: np.ndarray, batches: np.ndarray, r: int, shape: tuple[int, ...],
            a: RoiAttrs) -> tuple[int, np.ndarray]:
    """Region ``r``'s batch and its corners scaled into the feature map (float32), checked."""
    n, h, w = shape[:3]
    b = int(batches[r])
    if not 0 <= b < n:
        raise node.invalid(f"region {r} has batch index {b}, outside [0, {n})")
    scale = np.array([F32(1) / F32(a.width_stride), F32(1) / F32(a.height_stride)] * 2, F32)
    roi = rois[r]
    scaled = (roi * scale).astype(F32)
    limit = np.array([w, h, w, h], F32)
    if not (np.all(roi >= 0) and np.all(scaled <= limit) and roi[0] <= roi[2] and roi[1] <= roi[3]):
        raise node.invalid(f"region {r} {roi.tolist()} is not a box inside the {h}x{w} feature map "
                           f"(strides {a.height_stride}, {a.width_stride})")
    return b, scaled


def _samples(start: np.float32, end: np.float32, bins: int, ratio: int, size: int
             ) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """One axis of ROI_ALIGN's sampling grid: the sampling ratio, and per (bin, sample) the
    lower and upper neighbour cells and the fraction towards the upper one."""
    length = max(F32(end - start), F32(1))
    step = F32(length / F32(bins))
    ratio = ratio if ratio > 0 else int(np.ceil(step))
    sub = F32(step / F32(ratio))
    first = (step * np.arange(bins, dtype=F32) + start)[:, None] + sub / F32(2)
    pos = (first + sub * np.arange(ratio, dtype=F32)[None, :]).astype(F32)  # (bins, ratio)
    lo = np.floor(pos).astype(np.int64)
    frac = (pos - lo.astype(F32)).astype(F32)
    edge = lo >= size - 1
    lo = np.where(edge, size - 1, lo)
    hi = np.where(edge, size - 1, lo + 1)
    return ratio, lo.reshape(-1), hi.reshape(-1), np.where(edge, F32(0), frac).reshape(-1)


@register("ROI_ALIGN")
def roi_align(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """[num_rois, out_h, out_w, depth]: each bin the mean of its bilinear samples."""
    a: RoiAttrs = node.attrs
    x, batches = inputs[0], inputs[2]
    rois = to_float(node, 1, inputs[1])
    quantized = is_quantized(node.inputs[0])
    oh, ow, depth = a.out_height, a.out_width, x.shape[3]
    out = np.zeros((rois.shape[0], oh, ow, depth), node.outputs[0].dtype)
    for r in range(rois.shape[0]):
        b, (x1, y1, x2, y2) = _region(node, rois, batches, r, x.shape, a)
        ry, ylo, yhi, fy = _samples(y1, y2, oh, a.height_sampling_ratio, x.shape[1])
        rx, xlo, xhi, fx = _samples(x1, x2, ow, a.width_sampling_ratio, x.shape[2])
        gy, gx = (F32(1) - fy)[:, None], (F32(1) - fx)[None, :]
        weights = [gx * gy, fx[None, :] * gy, gx * fy[:, None], fx[None, :] * fy[:, None]]  # (Y, X) each
        img = x[b]
        corners = [img[ylo][:, xlo], img[ylo][:, xhi], img[yhi][:, xlo], img[yhi][:, xhi]]  # (Y, X, depth)
        shape = (oh, ry, ow, rx, depth)
        if quantized:
            out[r] = _align_quantized(node, weights, corners, shape, ry * rx)
        else:
            total = sum(wt[..., None] * v for wt, v in zip(weights, corners))
            out[r] = total.reshape(shape).sum(axis=(1, 3), dtype=F32) / F32(ry * rx)
    return out


def _align_quantized(node: Node, weights: list[np.ndarray], corners: list[np.ndarray], shape: tuple[int, ...],
                     samples: int) -> np.ndarray:
    """Android's integer ROI_ALIGN of one region: sum of round(weight * 255) * (q - zero point),
    requantized by one fixed-point multiplier."""
    tin, tout = node.inputs[0], node.outputs[0]
    unit = F32(1) / F32(255)
    acc = np.zeros(corners[0].shape, np.int64)
    for wt, v in zip(weights, corners):
        wq = round_half_away((wt / unit).astype(F32)).astype(np.int64)
        acc += wq[..., None] * (v.astype(np.int64) - int(tin.zero_point))
    acc = acc.reshape(shape).sum(axis=(1, 3))
    real = F32(F32(F32(tin.scale) * unit) / F32(tout.scale)) / F32(samples)
    if not 0 <= real < 1:
        raise node.invalid(f"the requantization multiplier {float(real)} (input scale / 255 / output scale / "
                         f"{samples} samples) must be below 1")
    multiplier, shift = quantize_multiplier(float(real))
    q = multiply_by_quantized_multiplier(acc, multiplier, shift) + int(tout.zero_point)
    info = np.iinfo(np.dtype(tout.dtype))
    return np.clip(q, info.min, info.max)


@register("ROI_POOLING")
def roi_pooling(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """[num_rois, out_h, out_w, depth]: each bin the maximum of its cells."""
    a: RoiAttrs = node.attrs
    x, batches = inputs[0], inputs[2]
    rois = to_float(node, 1, inputs[1])
    _, h, w, depth = x.shape
    oh, ow = a.out_height, a.out_width
    empty = node.inputs[0].zero_point if is_quantized(node.inputs[0]) else 0
    out = np.full((rois.shape[0], oh, ow, depth), empty, node.outputs[0].dtype)
    for r in range(rois.shape[0]):
        b, scaled = _region(node, rois, batches, r, x.shape, a)
        x1, y1, x2, y2 = (int(v) for v in round_half_away(scaled))
        wstart, wend = _cells(x1, x2, ow, w)
        hstart, hend = _cells(y1, y2, oh, h)
        for i in range(oh):
            if hstart[i] >= hend[i]:
                continue
            rows = x[b, hstart[i]:hend[i]].max(axis=0)
            for j in range(ow):
                if wstart[j] < wend[j]:
                    out[r, i, j] = rows[wstart[j]:wend[j]].max(axis=0)
    return out


def _cells(start: int, end: int, bins: int, size: int) -> tuple[list[int], list[int]]:
    """ROI_POOLING's bins along one axis: [floor(step * i + start), ceil(step * (i + 1) + start))."""
    step = F32(F32(max(end - start + 1, 1)) / F32(bins))
    edges = step * np.arange(bins + 1, dtype=F32) + F32(start)
    lo = np.minimum(np.floor(edges[:-1]), size).astype(int)
    hi = np.minimum(np.ceil(edges[1:]), size).astype(int)
    return lo.tolist(), hi.tolist()
