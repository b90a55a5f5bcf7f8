"""MediaPipe's custom ops. LiteRT does not ship them, so each test checks a derivation stated in
its docstring: against a LiteRT builtin that computes the same thing, an independent small
reference, or a closed form worked out by hand from MediaPipe's definition.

Options as MediaPipe's models carry them: the pooling ops hold the raw ``TfLitePoolParams`` C
struct; the others a FlexBuffer map (written here with ``flexbuffers.Dumps``).
"""
from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from flatbuffers import flexbuffers

from teflon_py import ir
from teflon_py.tflite import options
from tests.harness import ModelBuilder, assert_close, run_litert, run_teflon, single_op

F32 = np.float32
TFLITE_PADDING = {ir.Padding.SAME: 1, ir.Padding.VALID: 2}


def pool_params(padding: ir.Padding, strides: tuple[int, int], window: tuple[int, int],
                act: ir.Activation = ir.Activation.NONE) -> bytes:
    """``TfLitePoolParams``: padding, stride_w, stride_h, filter_w, filter_h, activation, computed padding."""
    (sh, sw), (fh, fw) = strides, window
    return struct.pack("<10i", TFLITE_PADDING[padding], sw, sh, fw, fh, int(act), 0, 0, 0, 0)


def out_size(padding: ir.Padding, size: int, f: int, s: int) -> int:
    return (size + s - 1) // s if padding == ir.Padding.SAME else (size + s - f) // s


def flex(**kw: object) -> bytes:
    return bytes(flexbuffers.Dumps(kw))


# -- MaxPoolingWithArgmax2D / MaxUnpooling2D -------------------------------------------------

def argmax_reference(x: np.ndarray, window: tuple, strides: tuple, pads: tuple, out_hw: tuple) -> np.ndarray:
    """Per output: the in-window (fy * filter_w + fx) of the first maximum of the in-bounds part, + 0.1."""
    (fh, fw), (sh, sw), (ph, pw) = window, strides, pads
    n, h, w, c = x.shape
    idx = np.zeros((n, *out_hw, c), np.float32)
    for b, oy, ox, ch in np.ndindex(idx.shape):
        y0, x0 = oy * sh - ph, ox * sw - pw
        ys, xs = max(y0, 0), max(x0, 0)
        win = x[b, ys:min(y0 + fh, h), xs:min(x0 + fw, w), ch]
        r, col = np.unravel_index(np.argmax(win), win.shape)  # first maximum in row-major order
        idx[b, oy, ox, ch] = F32((ys + r - y0) * fw + (xs + col - x0)) + F32(0.1)
    return idx


POOLS = [
    ((1, 6, 7, 3), (2, 2), (2, 2)),
    ((1, 7, 6, 2), (3, 3), (1, 1)),
    ((2, 9, 8, 3), (3, 3), (2, 2)),
    ((1, 8, 9, 2), (2, 3), (3, 2)),
    ((1, 5, 5, 4), (5, 5), (1, 1)),
]


@pytest.mark.parametrize("act", [ir.Activation.NONE, ir.Activation.RELU6], ids=["none", "relu6"])
@pytest.mark.parametrize("padding", [ir.Padding.SAME, ir.Padding.VALID], ids=["same", "valid"])
@pytest.mark.parametrize("shape,window,strides", POOLS, ids=[f"f{p[1][0]}x{p[1][1]}s{p[2][0]}x{p[2][1]}" for p in POOLS])
def test_max_pooling_with_argmax(backend: str, shape: tuple, window: tuple, strides: tuple, padding: ir.Padding,
                                 act: ir.Activation) -> None:
    """Values == LiteRT's MAX_POOL_2D with the same window, strides, padding and activation
    (MediaPipe's kernel is TFLite's reference max pool plus the index); indices == a per-window
    np.argmax of the in-bounds elements (first maximum, row-major), as in-window offsets + 0.1."""
    (fh, fw), (sh, sw) = window, strides
    oh, ow = out_size(padding, shape[1], fh, sh), out_size(padding, shape[2], fw, sw)
    out = (shape[0], oh, ow, shape[3])
    x = np.random.default_rng(sum(shape)).standard_normal(shape).astype(np.float32)
    x[..., 0] = np.round(x[..., 0])  # ties in channel 0: the first maximum must win
    model = single_op("CUSTOM", [{"shape": shape, "dtype": np.float32}],
                      [{"shape": out, "dtype": np.float32}, {"shape": out, "dtype": np.float32}],
                      custom_code="MaxPoolingWithArgmax2D", custom_options=pool_params(padding, strides, window, act))
    (values, indices), _ = run_teflon(model, [x], backend)
    pool = single_op("MAX_POOL_2D", [{"shape": shape, "dtype": np.float32}], [{"shape": out, "dtype": np.float32}],
                     options.Pool2DOptions(padding=padding, stride_w=sw, stride_h=sh, filter_width=fw,
                                           filter_height=fh, fused_activation_function=act))
    np.testing.assert_array_equal(values, run_litert(pool, [x])[0])
    pads = (max(((oh - 1) * sh + fh - shape[1]) // 2, 0), max(((ow - 1) * sw + fw - shape[2]) // 2, 0))
    np.testing.assert_array_equal(indices, argmax_reference(x, window, strides, pads, (oh, ow)))


def pool_unpool_model(shape: tuple, k: int) -> bytes:
    """x -> MaxPoolingWithArgmax2D (k x k, stride k, VALID) -> MaxUnpooling2D (same params)."""
    mb = ModelBuilder()
    g = mb.main
    pooled = (shape[0], shape[1] // k, shape[2] // k, shape[3])
    x = g.add_input("x", shape, np.float32)
    values, indices = g.add_tensor("values", pooled, np.float32), g.add_tensor("indices", pooled, np.float32)
    y = g.add_tensor("y", shape, np.float32)
    params = pool_params(ir.Padding.VALID, (k, k), (k, k))
    g.add_op("CUSTOM", [x], [values, indices], custom_code="MaxPoolingWithArgmax2D", custom_options=params)
    g.add_op("CUSTOM", [values, indices], [y], custom_code="MaxUnpooling2D", custom_options=params)
    g.mark_outputs(y)
    return mb.build()


@pytest.mark.parametrize("shape,k", [((1, 8, 6, 3), 2), ((2, 4, 10, 2), 2), ((1, 9, 6, 2), 3)])
def test_max_unpooling_inverts_argmax_pool(backend: str, shape: tuple, k: int) -> None:
    """Unpool(pool_with_argmax(x)) with non-overlapping k x k windows keeps each block's first
    maximum in place and zeroes the rest: x where x is its block's np.argmax, else 0."""
    x = np.random.default_rng(k + shape[2]).standard_normal(shape).astype(np.float32)
    (y,), _ = run_teflon(pool_unpool_model(shape, k), [x], backend)
    n, h, w, c = shape
    blocks = x.reshape(n, h // k, k, w // k, k, c).transpose(0, 1, 3, 5, 2, 4).reshape(n, h // k, w // k, c, k * k)
    first_max = np.arange(k * k) == np.argmax(blocks, axis=-1)[..., None]
    keep = first_max.reshape(n, h // k, w // k, c, k, k).transpose(0, 1, 4, 2, 5, 3).reshape(shape)
    np.testing.assert_array_equal(y, np.where(keep, x, F32(0)))


def unpool_reference(x: np.ndarray, idx: np.ndarray, window: tuple, strides: tuple) -> np.ndarray:
    """MediaPipe's loop: index -> (idx / fw, idx % fw) truncating as C does, output filter times
    larger, out-of-bounds targets skipped, later inputs (NHWC order) overwrite earlier ones."""
    (fh, fw), (sh, sw) = window, strides
    n, h, w, c = x.shape
    oh, ow = h * fh, w * fw
    ph, pw = max(((h - 1) * sh + fh - oh) // 2, 0), max(((w - 1) * sw + fw - ow) // 2, 0)
    out = np.zeros((n, oh, ow, c), np.float32)
    for b, y, xx, ch in np.ndindex(x.shape):
        k = int(idx[b, y, xx, ch])
        oy, ox = y * sh - ph + int(k / fw), xx * sw - pw + int(math.fmod(k, fw))
        if 0 <= oy < oh and 0 <= ox < ow:
            out[b, oy, ox, ch] = x[b, y, xx, ch]
    return out


@pytest.mark.parametrize("window,strides", [((2, 2), (1, 1)), ((2, 3), (2, 1)), ((3, 3), (3, 3))])
def test_max_unpooling_scatter(backend: str, window: tuple, strides: tuple) -> None:
    """Arbitrary (overlapping, negative, out-of-window, out-of-bounds) indices against the loop in
    ``unpool_reference``, which restates MediaPipe's MaxUnpooling kernel."""
    rng = np.random.default_rng(window[0] * 10 + strides[1])
    shape = (2, 3, 4, 3)
    x = rng.standard_normal(shape).astype(np.float32)
    idx = (rng.integers(-3, window[0] * window[1] + 4, shape) + 0.1).astype(np.float32)
    out = (2, 3 * window[0], 4 * window[1], 3)
    params = pool_params(ir.Padding.VALID, strides, window)
    model = single_op("CUSTOM", [{"shape": shape, "dtype": np.float32}, {"shape": shape, "dtype": np.float32}],
                      [{"shape": out, "dtype": np.float32}], custom_code="MaxUnpooling2D", custom_options=params)
    (y,), _ = run_teflon(model, [x, idx], backend)
    np.testing.assert_array_equal(y, unpool_reference(x, idx, window, strides))


# -- TransformTensorBilinear -----------------------------------------------------------------

def transform_tensor_model(shape: tuple, out_hw: tuple, version: int) -> bytes:
    """Version 2 ("TransformTensorBilinear", align-corners correction) or 1 ("TransformTensor")."""
    if version == 2:
        name, opts = "TransformTensorBilinear", flex(output_height=out_hw[0], output_width=out_hw[1])
    else:
        name, opts = "TransformTensor", flex(mode="bilinear", output_size=list(out_hw))
    return single_op("CUSTOM", [{"shape": shape, "dtype": np.float32}, {"shape": (1, 4, 4), "dtype": np.float32}],
                     [{"shape": (1, *out_hw, shape[3]), "dtype": np.float32}],
                     custom_code=name, custom_options=opts, version=version)


def affine(a: float, b: float, tx: float, c: float, d: float, ty: float) -> np.ndarray:
    m = np.eye(4, dtype=np.float32)
    m[0, [0, 1, 3]] = a, b, tx
    m[1, [0, 1, 3]] = c, d, ty
    return m[None]


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("shape", [(1, 5, 7, 3), (1, 8, 4, 1)])
def test_transform_tensor_identity(backend: str, shape: tuple, version: int) -> None:
    """Identity matrix, output size = input size: pixel (x, y) samples (x, y) exactly (v2's
    correction adds 1 * 0.5 + 0 * 0.5 - 0.5 = 0), bilinear weights (1, 0): output == input."""
    x = np.random.default_rng(shape[1]).standard_normal(shape).astype(np.float32)
    (y,), _ = run_teflon(transform_tensor_model(shape, shape[1:3], version), [x, affine(1, 0, 0, 0, 1, 0)], backend)
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize("tx,ty", [(2, -1), (-3, 2), (0, 4)])
def test_transform_tensor_translation(backend: str, tx: int, ty: int, version: int) -> None:
    """Integer translation (tx, ty): output (x, y) = input (x + tx, y + ty) where that lies in
    [0, W-1] x [0, H-1], else 0 (MediaPipe zeroes samples outside the image)."""
    shape = (1, 6, 8, 2)
    x = np.random.default_rng(abs(tx * 7 + ty)).standard_normal(shape).astype(np.float32)
    (y,), _ = run_teflon(transform_tensor_model(shape, shape[1:3], version), [x, affine(1, 0, tx, 0, 1, ty)], backend)
    expected = np.zeros(shape, np.float32)
    ys, xs = np.arange(6)[:, None] + ty, np.arange(8)[None, :] + tx
    ok = (ys >= 0) & (ys < 6) & (xs >= 0) & (xs < 8)
    expected[0][ok] = x[0, ys.clip(0, 5), xs.clip(0, 7)][ok]
    np.testing.assert_array_equal(y, expected)


@pytest.mark.parametrize("version", [1, 2])
def test_transform_tensor_halving_is_average_pool(backend: str, version: int) -> None:
    """Scale 2 sampling at pixel centres: v2 with diag(2, 2) (correction 2 * 0.5 - 0.5 = 0.5), v1
    with diag(2, 2) and offset 0.5, samples (2x + 0.5, 2y + 0.5): weights 1/2, 1/2 in x and y, the
    mean of each 2x2 block == LiteRT's AVERAGE_POOL_2D 2x2 stride 2."""
    shape, out_hw = (1, 8, 10, 3), (4, 5)
    x = np.random.default_rng(version).standard_normal(shape).astype(np.float32)
    m = affine(2, 0, 0, 0, 2, 0) if version == 2 else affine(2, 0, 0.5, 0, 2, 0.5)
    (y,), _ = run_teflon(transform_tensor_model(shape, out_hw, version), [x, m], backend)
    pool = single_op("AVERAGE_POOL_2D", [{"shape": shape, "dtype": np.float32}],
                     [{"shape": (1, *out_hw, 3), "dtype": np.float32}],
                     options.Pool2DOptions(padding=ir.Padding.VALID, stride_w=2, stride_h=2, filter_width=2,
                                           filter_height=2))
    assert_close(y, run_litert(pool, [x])[0], 1e-6)


def test_transform_tensor_quarter_pixel(backend: str) -> None:
    """v1, translation (0.25, 0): output (x, y) = 0.75 * in(x, y) + 0.25 * in(x + 1, y) for
    x + 0.25 <= W - 1, and 0 in the last column (the sample lies past the image)."""
    shape = (1, 4, 6, 2)
    x = np.random.default_rng(3).standard_normal(shape).astype(np.float32)
    (y,), _ = run_teflon(transform_tensor_model(shape, shape[1:3], 1), [x, affine(1, 0, 0.25, 0, 1, 0)], backend)
    expected = np.zeros(shape, np.float32)
    expected[:, :, :-1] = 0.75 * x[:, :, :-1] + 0.25 * x[:, :, 1:]
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-6)


# -- TransformLandmarks ----------------------------------------------------------------------

def landmarks_model(shape: tuple, version: int, opts: bytes | None = None) -> bytes:
    return single_op("CUSTOM", [{"shape": shape, "dtype": np.float32}, {"shape": (1, 4, 4), "dtype": np.float32}],
                     [{"shape": shape, "dtype": np.float32}], custom_code="TransformLandmarks",
                     custom_options=opts, version=version)


@pytest.mark.parametrize("dims", [2, 3])
def test_transform_landmarks_identity(backend: str, dims: int) -> None:
    """v2, identity matrix: (x, y) -> (1*x + 0*y + 0 + 0, ...) = (x, y), z unchanged: output == input."""
    x = np.random.default_rng(dims).uniform(0, 256, (1, 21, dims)).astype(np.float32)
    (y,), _ = run_teflon(landmarks_model(x.shape, 2), [x, affine(1, 0, 0, 0, 1, 0)], backend)
    np.testing.assert_array_equal(y, x)


@pytest.mark.parametrize("dims", [2, 3])
def test_transform_landmarks_affine(backend: str, dims: int) -> None:
    """v2, matrix rows (a, b, 0, tx), (c, d, 0, ty): x' = a x + b y + tx, y' = c x + d y + ty, z kept."""
    x = np.random.default_rng(10 + dims).uniform(-1, 1, (1, 33, dims)).astype(np.float32)
    a, b, tx, c, d, ty = 0.8, -0.6, 12.5, 0.6, 0.8, -3.25
    (y,), _ = run_teflon(landmarks_model(x.shape, 2), [x, affine(a, b, tx, c, d, ty)], backend)
    expected = x.astype(np.float64)
    expected[..., 0] = a * x[..., 0] + b * x[..., 1] + tx
    expected[..., 1] = c * x[..., 0] + d * x[..., 1] + ty
    np.testing.assert_allclose(y, expected, rtol=1e-6, atol=1e-5)
    if dims == 3:
        np.testing.assert_array_equal(y[..., 2], x[..., 2])


@pytest.mark.parametrize("dims,shape", [(3, (1, 1, 1, 60)), (2, (1, 2, 5, 6))])
def test_transform_landmarks_v1_scale(backend: str, dims: int, shape: tuple) -> None:
    """v1 (4-D input, options ``dimensions``, ``scale``): the translation column is multiplied by
    ``scale``: x' = a x + b y + scale * tx, y' = c x + d y + scale * ty, per group of ``dims`` channels."""
    x = np.random.default_rng(dims).uniform(0, 1, shape).astype(np.float32)
    a, b, tx, c, d, ty = 1.5, 0.25, 4.0, -0.5, 2.0, -8.0
    model = landmarks_model(shape, 1, flex(dimensions=dims, scale=0.5))
    (y,), _ = run_teflon(model, [x, affine(a, b, tx, c, d, ty)], backend)
    g = x.reshape(-1, dims).astype(np.float64)
    expected = g.copy()
    expected[:, 0] = a * g[:, 0] + b * g[:, 1] + 0.5 * tx
    expected[:, 1] = c * g[:, 0] + d * g[:, 1] + 0.5 * ty
    np.testing.assert_allclose(y.reshape(-1, dims), expected, rtol=1e-6, atol=1e-5)


# -- Landmarks2TransformMatrix ---------------------------------------------------------------

def matrix_model(shape: tuple, version: int, opts: bytes) -> bytes:
    return single_op("CUSTOM", [{"shape": shape, "dtype": np.float32}], [{"shape": (1, 4, 4), "dtype": np.float32}],
                     custom_code="Landmarks2TransformMatrix", custom_options=opts, version=version)


def box_landmarks(rng: np.random.Generator, left: tuple, right: tuple, x_range: tuple, y_range: tuple,
                  n: int = 12) -> np.ndarray:
    """(1, n, 3): 0 = left, 1 = right, 2-5 = the corners of the box x_range x y_range, the rest inside it."""
    pts = np.zeros((n, 3), np.float32)
    pts[:, 2] = rng.uniform(-5, 5, n)
    pts[0, :2], pts[1, :2] = left, right
    pts[2:6, :2] = [(x, y) for x in x_range for y in y_range]
    pts[6:, 0], pts[6:, 1] = rng.uniform(*x_range, n - 6), rng.uniform(*y_range, n - 6)
    return pts[None]


V2_OPTS = {"subset_idxs": list(range(2, 12)), "left_rotation_idx": 0, "right_rotation_idx": 1,
           "output_height": 192, "output_width": 256, "scale_x": 1.5, "scale_y": 1.25}


def test_landmarks2_transform_matrix_v2_upright(backend: str) -> None:
    """Left/right landmarks level (rotation atan2(0, dx) = 0, target 0): the crop is the subset's
    box, centre (cx, cy), size (w, h); with sx = scale_x w / out_w, sy = scale_y h / out_h the matrix
    is shift(cx, cy) . scale(sx, sy) . shift(-out_w / 2, -out_h / 2) =
    [[sx, 0, 0, cx - sx out_w / 2], [0, sy, 0, cy - sy out_h / 2], [0, 0, 1, 0], [0, 0, 0, 1]]."""
    x = box_landmarks(np.random.default_rng(0), (40, 100), (90, 100), (30, 130), (60, 180))
    (m,), _ = run_teflon(matrix_model(x.shape, 2, flex(target_rotation_radians=0.0, **V2_OPTS)), [x], backend)
    sx, sy = 1.5 * 100 / 256, 1.25 * 120 / 192
    expected = [[sx, 0, 0, 80 - sx * 128], [0, sy, 0, 120 - sy * 96], [0, 0, 1, 0], [0, 0, 0, 1]]
    np.testing.assert_allclose(m[0], expected, rtol=1e-5, atol=1e-4)


def test_landmarks2_transform_matrix_v2_rotated(backend: str) -> None:
    """Left -> right pointing +y: rotation atan2(dy, 0) = pi/2, r = 0 - pi/2. Rotating the box
    [x0, x1] x [y0, y1] by r maps (x, y) -> (y, -x): crop size (y1 - y0, x1 - x0), centre rotated
    back to ((x0 + x1) / 2, (y0 + y1) / 2). Matrix = shift(c) . rot(pi/2) . scale(sx, sy) .
    shift(-out_w / 2, -out_h / 2) = [[0, -sy, 0, cx + sy out_h / 2], [sx, 0, 0, cy - sx out_w / 2], ...]."""
    x = box_landmarks(np.random.default_rng(1), (100, 40), (100, 90), (30, 130), (60, 180))
    (m,), _ = run_teflon(matrix_model(x.shape, 2, flex(target_rotation_radians=0.0, **V2_OPTS)), [x], backend)
    sx, sy = 1.5 * 120 / 256, 1.25 * 100 / 192
    expected = [[0, -sy, 0, 80 + sy * 96], [sx, 0, 0, 120 - sx * 128], [0, 0, 1, 0], [0, 0, 0, 1]]
    np.testing.assert_allclose(m[0], expected, rtol=1e-5, atol=1e-4)


def test_landmarks2_transform_matrix_v2_target_rotation(backend: str) -> None:
    """Target rotation pi/2 with left -> right pointing +y gives r = 0: the upright closed form."""
    x = box_landmarks(np.random.default_rng(2), (100, 40), (100, 90), (30, 130), (60, 180))
    opts = flex(target_rotation_radians=math.pi / 2, **V2_OPTS)
    (m,), _ = run_teflon(matrix_model(x.shape, 2, opts), [x], backend)
    sx, sy = 1.5 * 100 / 256, 1.25 * 120 / 192
    expected = [[sx, 0, 0, 80 - sx * 128], [0, sy, 0, 120 - sy * 96], [0, 0, 1, 0], [0, 0, 0, 1]]
    np.testing.assert_allclose(m[0], expected, rtol=1e-5, atol=1e-4)


def test_landmarks2_transform_matrix_v1(backend: str) -> None:
    """v1, level left/right (alpha = -atan(0) = 0): box [x0, x1] x [y0, y1], b = size * multiplier,
    c = centre, R = landmarks_range. The chain to_absolute . rotation . scale . to_relative maps
    output pixel u to (in_w - 1) / 2 * (b_x / R * (2u / (out_w - 1) - 1) + 2 c_x / R), so
    row 0 = [(in_w - 1) b_x / (R (out_w - 1)), 0, 0, (in_w - 1) (2 c_x - b_x) / (2R)] (y alike),
    row 2 = [0, 0, 1, 0], row 3 = [0, 0, 0, 1]."""
    pts = box_landmarks(np.random.default_rng(3), (40, 100), (90, 100), (30, 130), (60, 180))
    x = pts.reshape(1, 1, 1, -1)
    rng_, mult, in_hw, out_hw = 256, 1.5, (480, 640), (192, 192)
    opts = flex(input_hw=list(in_hw), output_hw=list(out_hw), dimensions=3, landmarks_range=rng_,
                bbox_size_multiplier=mult, left_rotation_idx=0, right_rotation_idx=1, subset=list(range(2, 12)))
    (m,), _ = run_teflon(matrix_model(x.shape, 1, opts), [x], backend)
    bx, by, cx, cy = 100 * mult, 120 * mult, 80, 120
    expected = [[(in_hw[1] - 1) * bx / (rng_ * (out_hw[1] - 1)), 0, 0, (in_hw[1] - 1) * (2 * cx - bx) / (2 * rng_)],
                [0, (in_hw[0] - 1) * by / (rng_ * (out_hw[0] - 1)), 0, (in_hw[0] - 1) * (2 * cy - by) / (2 * rng_)],
                [0, 0, 1, 0], [0, 0, 0, 1]]
    np.testing.assert_allclose(m[0], expected, rtol=1e-5, atol=1e-4)
