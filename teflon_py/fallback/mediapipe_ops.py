"""MediaPipe's TFLite custom ops (mediapipe/util/tflite/operations), as its CPU kernels compute them.

- ``MaxPoolingWithArgmax2D`` / ``MaxUnpooling2D`` (segmentation models): options are the raw bytes
  of TFLite's C struct ``TfLitePoolParams`` (little-endian int32: padding 1=SAME 2=VALID, stride_w,
  stride_h, filter_w, filter_h, activation, then the computed padding, unused here), not a
  FlexBuffer. The argmax output is the float32 index ``fy * filter_w + fx`` of the window's
  first maximum *within the window*, plus 0.1; unpooling scatters each value back to that place
  of an output ``filter`` times larger, later elements overwriting earlier ones.
- ``TransformTensorBilinear`` (v2, align-corners correction) and ``TransformTensor`` (v1): output
  pixel (x, y) samples the input bilinearly at the first two rows of a 4x4 matrix applied to
  (x, y, 0, 1); samples outside [0, W-1] x [0, H-1] are 0. FlexBuffer options only repeat the
  output size, which the output tensor already has.
- ``TransformLandmarks``: the same matrix applied to (x, y) of each landmark, z passed through;
  version 1 takes (1, H, W, C) with FlexBuffer ``dimensions`` / ``scale`` (the translation is
  multiplied by ``scale``), version 2 takes (1, N, 2 or 3).
- ``Landmarks2TransformMatrix``: the 4x4 crop matrix from landmarks (v1: face-mesh style, v2:
  rotation from two landmarks, bounding box of a subset, scale, shift), FlexBuffer options.

Arithmetic follows the C++ in float32, with double where the C++ mixes in double constants.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.fallback.pooling import PoolGeometry, out_size, window_taps
from teflon_py.fallback.registry import Node, register
from teflon_py.ops.custom import PoolParamsAttrs, pool_params_reason

F32 = np.float32
FLOAT_LOWEST = float(np.finfo(np.float32).min)
FLOAT_MAX = float(np.finfo(np.float32).max)
#: TfLitePadding -> schema padding
_PADDING = {1: ir.Padding.SAME, 2: ir.Padding.VALID}
#: TfLiteFusedActivation -> float clamp range (others: none), as CalculateActivationRange
_ACTIVATION_RANGE = {1: (0.0, FLOAT_MAX), 2: (-1.0, 1.0), 3: (0.0, 6.0)}


def pool_params(node: Node) -> PoolParamsAttrs:
    """The ``TfLitePoolParams`` MediaPipe's pooling ops keep in custom options, checked."""
    reason = pool_params_reason(node.attrs)
    if reason:
        raise node.error(reason)
    return node.attrs


def _float_input(node: Node, x: np.ndarray, index: int, ndim: int) -> np.ndarray:
    if x.dtype != np.float32:
        raise node.error(f"input {index} must be float32, got {x.dtype}")
    if x.ndim != ndim:
        raise node.error(f"input {index} must be {ndim}-D, got shape {x.shape}")
    return x


@register("MaxPoolingWithArgmax2D")
def max_pooling_with_argmax_2d(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """MAX_POOL_2D plus, per output, the in-window index of the first maximum (+0.1) as float32."""
    x = _float_input(node, inputs[0], 0, 4)
    p = pool_params(node)
    if p.padding not in _PADDING:
        raise node.error(f"padding {p.padding} is neither SAME (1) nor VALID (2)")
    padding = _PADDING[p.padding]
    _, h, w, _ = x.shape
    oh, ow = out_size(padding, h, p.filter_h, p.stride_h), out_size(padding, w, p.filter_w, p.stride_w)
    if oh <= 0 or ow <= 0:
        raise node.error(f"filter {p.filter_h}x{p.filter_w} does not fit the {h}x{w} input")
    g = PoolGeometry(oh, ow, max(((oh - 1) * p.stride_h + p.filter_h - h) // 2, 0),
                     max(((ow - 1) * p.stride_w + p.filter_w - w) // 2, 0),
                     p.filter_h, p.filter_w, p.stride_h, p.stride_w)
    best = np.full((x.shape[0], oh, ow, x.shape[3]), FLOAT_LOWEST, np.float32)
    index = np.zeros(best.shape, np.int32)
    for k, tap in enumerate(window_taps(x, g, -np.inf)):  # taps in (fy, fx) order: k = fy * filter_w + fx
        better = tap > best
        best = np.where(better, tap, best)
        index = np.where(better, np.int32(k), index)
    lo, hi = _ACTIVATION_RANGE.get(p.activation, (FLOAT_LOWEST, FLOAT_MAX))
    values = np.minimum(np.maximum(best, F32(lo)), F32(hi))
    return [values, index.astype(np.float32) + F32(0.1)]


@register("MaxUnpooling2D")
def max_unpooling_2d(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Scatter each value to the window place its argmax index names, in an output filter times larger."""
    x = _float_input(node, inputs[0], 0, 4)
    idx = _float_input(node, inputs[1], 1, 4)
    if idx.shape != x.shape:
        raise node.error(f"indices shape {idx.shape} differs from values shape {x.shape}")
    p = pool_params(node)
    n, h, w, c = x.shape
    oh, ow = h * p.filter_h, w * p.filter_w
    pad_h = max(((h - 1) * p.stride_h + p.filter_h - oh) // 2, 0)
    pad_w = max(((w - 1) * p.stride_w + p.filter_w - ow) // 2, 0)
    finite = np.isfinite(idx) & (np.abs(idx) < 2.0 ** 31)
    k = np.where(finite, idx, 0).astype(np.int64)  # C's float -> int truncates toward zero
    dx = np.fmod(k, p.filter_w)  # C's % and / truncate toward zero
    dy = (k - dx) // p.filter_w
    ys = np.arange(h).reshape(1, h, 1, 1) * p.stride_h - pad_h + dy
    xs = np.arange(w).reshape(1, 1, w, 1) * p.stride_w - pad_w + dx
    ok = finite & (ys >= 0) & (ys < oh) & (xs >= 0) & (xs < ow)
    b = np.broadcast_to(np.arange(n).reshape(n, 1, 1, 1), x.shape)
    ch = np.broadcast_to(np.arange(c).reshape(1, 1, 1, c), x.shape)
    target = (((b * oh + ys) * ow + xs) * c + ch)[ok]
    values = x[ok]
    # inputs run in NHWC order and a later write wins: keep each target's last writer
    last = target.size - 1 - np.unique(target[::-1], return_index=True)[1]
    out = np.zeros(n * oh * ow * c, np.float32)
    out[target[last]] = values[last]
    return out.reshape(n, oh, ow, c)


def _matrix_rows(node: Node, m: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first two rows of a (…, 4, 4) float32 matrix input."""
    if m.dtype != np.float32 or m.size < 8:
        raise node.error(f"the matrix input must be float32 with at least 8 values, got {m.dtype} {m.shape}")
    flat = m.reshape(-1)
    return flat[0:4].copy(), flat[4:8].copy()


def _dot4(row: np.ndarray, x: np.ndarray | np.float32, y: np.ndarray | np.float32) -> np.ndarray:
    """float32 ``row . (x, y, 0, 1)`` summed left to right, as MediaPipe's DotProduct."""
    return ((row[0] * x + row[1] * y) + row[2] * F32(0)) + row[3] * F32(1)


def bilinear_sample(data: np.ndarray, tx: np.ndarray, ty: np.ndarray) -> np.ndarray:
    """(oh, ow, C) bilinear samples of ``data`` (H, W, C) at (tx, ty); out-of-image positions are 0."""
    h, w, _ = data.shape
    fx, fy = np.floor(tx), np.floor(ty)
    outside = (tx < 0) | (tx > w - 1) | (ty < 0) | (ty > h - 1)
    x0 = np.nan_to_num(fx, nan=-1, posinf=-1, neginf=-1).astype(np.int64)
    y0 = np.nan_to_num(fy, nan=-1, posinf=-1, neginf=-1).astype(np.int64)

    def read(yy: np.ndarray, xx: np.ndarray) -> np.ndarray:
        ok = (yy >= 0) & (xx >= 0) & (yy < h) & (xx < w)
        v = data[np.clip(yy, 0, h - 1), np.clip(xx, 0, w - 1)]
        return np.where(ok[..., None], v, F32(0))

    q11, q21, q12, q22 = read(y0, x0), read(y0, x0 + 1), read(y0 + 1, x0), read(y0 + 1, x0 + 1)
    rc = (tx - fx)[..., None]  # float32 right / lower contributions
    lc = (ty - fy)[..., None]
    rc64 = 1.0 - rc.astype(np.float64)
    upper = (rc64 * q11 + (rc * q21).astype(np.float64)).astype(np.float32)
    lower = (rc64 * q12 + (rc * q22).astype(np.float64)).astype(np.float32)
    result = ((lc * lower).astype(np.float64) + (1.0 - lc.astype(np.float64)) * upper).astype(np.float32)
    return np.where(outside[..., None], F32(0), result)


@register("TransformTensorBilinear", "TransformTensor")
def transform_tensor_bilinear(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Bilinear resampling of batch 0 through an affine matrix (v2: align-corners correction)."""
    x = _float_input(node, inputs[0], 0, 4)
    xt, yt = _matrix_rows(node, inputs[1])
    v1 = node.op.name == "TransformTensor" or node.op.version < 2
    if v1 and node.attrs.options.get("mode", "bilinear") != "bilinear":
        raise node.error("TransformTensor supports only bilinear interpolation")
    shape = node.outputs[0].shape
    if len(shape) != 4 or shape[0] != 1 or shape[3] != x.shape[3]:
        raise node.error(f"output must be (1, H, W, {x.shape[3]}), got {shape}")
    if not v1:  # T -> S * (T * A): sample pixel centres, MediaPipe's align-corners correction
        xt[3] = F32(np.float64(xt[3]) + (np.float64(xt[0]) * 0.5 + np.float64(xt[1]) * 0.5 - 0.5))
        yt[3] = F32(np.float64(yt[3]) + (np.float64(yt[0]) * 0.5 + np.float64(yt[1]) * 0.5 - 0.5))
    ox = np.arange(shape[2], dtype=np.float32)[None, :]
    oy = np.arange(shape[1], dtype=np.float32)[:, None]
    return bilinear_sample(x[0], _dot4(xt, ox, oy), _dot4(yt, ox, oy))[None]


def _transform_xy(xt: np.ndarray, yt: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``groups`` (..., D) with x, y transformed and the rest passed through."""
    out = groups.copy()
    out[..., 0] = _dot4(xt, groups[..., 0], groups[..., 1])
    out[..., 1] = _dot4(yt, groups[..., 0], groups[..., 1])
    return out


@register("TransformLandmarks")
def transform_landmarks(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """Landmarks' (x, y) through the matrix's first two rows; z unchanged."""
    x = inputs[0]
    xt, yt = _matrix_rows(node, inputs[1])
    if node.op.version < 2:  # v1: (1, H, W, C), C a multiple of ``dimensions``
        _float_input(node, x, 0, 4)
        opts = node.attrs.options
        dims = int(opts.get("dimensions", 3))
        scale = F32(opts.get("scale", 1.0))
        if scale == 0:
            raise node.error("scale must not be 0")
        xt[3], yt[3] = xt[3] * scale, yt[3] * scale
    else:  # v2: (1, N, D)
        _float_input(node, x, 0, 3)
        dims = x.shape[2]
        if x.shape[0] != 1:
            raise node.error(f"version 2 takes (1, N, D) landmarks, got {x.shape}")
    if dims not in (2, 3) or x.shape[-1] % dims:
        raise node.error(f"landmarks have 2 or 3 dimensions dividing the last axis; got {dims} for {x.shape}")
    groups = x.reshape(*x.shape[:-1], x.shape[-1] // dims, dims)
    return _transform_xy(xt, yt, groups).reshape(x.shape)


def matmul_f32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """float32 matrix product summed over k in order from 0, as MediaPipe's Mat3/Mat4 ``*``."""
    out = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for k in range(a.shape[1]):  # k is 3 or 4: the accumulation order, not a loop over elements
        out = out + a[:, k:k + 1] * b[k:k + 1, :]
    return out


def _mat(*rows: Sequence[Any]) -> np.ndarray:
    """A float32 matrix; each entry rounded from its (possibly double) C++ expression."""
    return np.array(rows, np.float64).astype(np.float32)


def _subset(node: Node, value: Any, what: str) -> list[int]:
    """A subset index list (pairs in MediaPipe; an odd tail is paired with itself)."""
    subset = [int(v) for v in (value or [])]
    if not subset:
        raise node.error(f"{what} is empty")
    if min(subset) < 0:
        raise node.error(f"{what} has a negative index: {subset}")
    return subset


def _landmarks_xyz(node: Node, x: np.ndarray, indices: Sequence[int]) -> np.ndarray:
    """(len(indices), 3) landmarks read as MediaPipe's Read3DLandmarkXYZ (stride 3)."""
    flat = x.reshape(-1)
    idx = np.asarray(indices, np.int64)
    if idx.size and (idx.min() < 0 or 3 * idx.max() + 2 >= flat.size):
        raise node.error(f"landmark indices {list(indices)} out of range for {flat.size // 3} landmarks")
    return flat[(3 * idx)[:, None] + np.arange(3)]


def _landmarks_to_matrix_v1(node: Node, x: np.ndarray) -> np.ndarray:
    """Face-mesh crop matrix: de-rotate by the left-right landmarks, box the subset, map to the input."""
    o = node.attrs.options
    in_h, in_w = (int(v) for v in (o.get("input_hw") or (0, 0)))
    out_h, out_w = (int(v) for v in (o.get("output_hw") or (0, 0)))
    rng, mult = int(o.get("landmarks_range") or 0), F32(o.get("bbox_size_multiplier") or 0)
    left, right = int(o.get("left_rotation_idx") or 0), int(o.get("right_rotation_idx") or 0)
    if int(o.get("dimensions") or 0) != 3 or mult == 0 or min(in_h, in_w, out_h, out_w, rng) <= 0 or min(left, right) < 0:
        raise node.error("needs dimensions 3, a non-zero bbox_size_multiplier, positive input_hw, "
                         "output_hw and landmarks_range, non-negative rotation indices")
    if x.ndim != 4 or x.shape[:3] != (1, 1, 1):
        raise node.error(f"version 1 takes (1, 1, 1, 3N) landmarks, got {x.shape}")
    pts = _landmarks_xyz(node, x, _subset(node, o.get("subset"), "subset"))
    lr = _landmarks_xyz(node, x, [left, right])
    with np.errstate(divide="ignore", invalid="ignore"):  # a vertical left-right pair gives atan(+-inf)
        alpha = -np.arctan((lr[1, 1] - lr[0, 1]) / (lr[1, 0] - lr[0, 0]))
    ca, sa = np.cos(alpha), np.sin(alpha)
    rx, ry = pts[:, 0] * ca - pts[:, 1] * sa, pts[:, 0] * sa + pts[:, 1] * ca
    max_x, max_y = max(F32(-100000), rx.max()), max(F32(-100000), ry.max())
    min_x, min_y = min(F32(100000), rx.min()), min(F32(100000), ry.min())
    bbox_x, bbox_y = (max_x - min_x) * mult, (max_y - min_y) * mult
    mid_x, mid_y = F32(np.float64(max_x + min_x) / 2.0), F32(np.float64(max_y + min_y) / 2.0)
    cn, sn = np.cos(-alpha), np.sin(-alpha)
    rmid_x, rmid_y = mid_x * cn - mid_y * sn, mid_x * sn + mid_y * cn
    scale = _mat((bbox_x / F32(rng), 0, 0), (0, bbox_y / F32(rng), 0), (0, 0, 1))
    rotation = _mat((cn, -sn, np.float64(rmid_x / F32(rng)) * 2.0 - 1.0),
                    (sn, cn, np.float64(rmid_y / F32(rng)) * 2.0 - 1.0), (0, 0, 1))
    to_relative = _mat((2.0 / (out_w - 1.0), 0, -1), (0, 2.0 / (out_h - 1.0), -1), (0, 0, 1))
    to_absolute = _mat(((in_w - 1.0) / 2.0, 0, (in_w - 1.0) / 2.0), (0, (in_h - 1.0) / 2.0, (in_h - 1.0) / 2.0),
                       (0, 0, 1))
    itm = matmul_f32(matmul_f32(matmul_f32(to_absolute, rotation), scale), to_relative)
    out = np.zeros((4, 4), np.float32)
    out[0:2, [0, 1, 3]] = itm[0:2]
    out[2, 0:3] = itm[2]
    out[3, 3] = 1
    return out


def _landmarks_to_matrix_v2(node: Node, x: np.ndarray) -> np.ndarray:
    """Crop matrix: rotation from two landmarks, rotated bounding box of a subset, scale and shift."""
    o = node.attrs.options
    left, right = int(o.get("left_rotation_idx") or 0), int(o.get("right_rotation_idx") or 0)
    out_h, out_w = int(o.get("output_height") or 0), int(o.get("output_width") or 0)
    scale_x, scale_y = F32(o.get("scale_x") or 0), F32(o.get("scale_y") or 0)
    if min(left, right) < 0 or min(out_h, out_w) <= 0 or scale_x <= 0 or scale_y <= 0:
        raise node.error("needs non-negative rotation indices, positive output_height/output_width and scales")
    if x.ndim != 3 or x.shape[2] != 3:
        raise node.error(f"version 2 takes (1, N, 3) landmarks, got {x.shape}")
    lr = _landmarks_xyz(node, x, [left, right])
    r = F32(o.get("target_rotation_radians") or 0) - np.arctan2(lr[1, 1] - lr[0, 1], lr[1, 0] - lr[0, 0])
    c, s = np.cos(r), np.sin(r)
    pts = _landmarks_xyz(node, x, _subset(node, o.get("subset_idxs"), "subset_idxs"))
    px, py = (F32(0) + c * pts[:, 0]) + (-s) * pts[:, 1], (F32(0) + s * pts[:, 0]) + c * pts[:, 1]
    crop_w, crop_h = px.max() - px.min(), py.max() - py.min()
    mx, my = (px.min() + px.max()) / F32(2), (py.min() + py.max()) / F32(2)
    ci, si = np.cos(-r), np.sin(-r)
    crop_x = ((F32(0) + ci * mx) + (-si) * my) + F32(0) * F32(1)
    crop_y = ((F32(0) + si * mx) + ci * my) + F32(0) * F32(1)
    sx, sy = scale_x * crop_w / F32(out_w), scale_y * crop_h / F32(out_h)
    shift_x, shift_y = -1.0 * (out_w / 2.0), -1.0 * (out_h / 2.0)
    t = np.eye(4, dtype=np.float32)
    for step in (_mat((1, 0, 0, crop_x), (0, 1, 0, crop_y), (0, 0, 1, 0), (0, 0, 0, 1)),
                 _mat((ci, -si, 0, 0), (si, ci, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)),
                 _mat((sx, 0, 0, 0), (0, sy, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1)),
                 _mat((1, 0, 0, shift_x), (0, 1, 0, shift_y), (0, 0, 1, 0), (0, 0, 0, 1))):
        t = matmul_f32(t, step)
    return t


@register("Landmarks2TransformMatrix")
def landmarks2_transform_matrix(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """The (1, 4, 4) crop transform MediaPipe derives from landmarks (version 1 or 2)."""
    x = inputs[0]
    if x.dtype != np.float32:
        raise node.error(f"landmarks must be float32, got {x.dtype}")
    matrix = _landmarks_to_matrix_v1(node, x) if node.op.version < 2 else _landmarks_to_matrix_v2(node, x)
    return matrix[None]
