"""The float32 OpenCL kernels (gemm, conv2d, depthwise) against NumPy references, rel. L2 <= 1e-5."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.errors import BackendError
from teflon_py.opencl.kernels import depthwise_specs
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.cpu_tiles import TABLES

pytest.importorskip("pyopencl")
TOL = 1e-5
#: every SIMD width's register tiles (the device picks one; each must compute the same)
TILES = pytest.mark.parametrize("tiles", list(TABLES.values()), ids=list(TABLES))
ACTS = {ir.Activation.NONE: (-np.inf, np.inf), ir.Activation.RELU: (0.0, np.inf),
        ir.Activation.RELU6: (0.0, 6.0), ir.Activation.RELU_N1_TO_1: (-1.0, 1.0)}


@pytest.fixture(scope="module")
def cl_env():
    from teflon_py.opencl.runtime import device, programs

    try:
        dc = device.get_context()
    except BackendError as e:
        pytest.skip(f"no OpenCL device: {e}")
    cache = programs.program_cache(dc)
    return dc, cache


def run(cl_env, spec: kernels.KernelSpec, x: np.ndarray) -> np.ndarray:
    dc, cache = cl_env
    launches = kernels.single_launch_list(dc, cache, spec, x.shape)
    (y,), _ = launches.run([x])  # the first run also commits new binaries to the disk cache
    return y


def rel_err(y: np.ndarray, ref: np.ndarray) -> float:
    return float(np.linalg.norm(y - ref) / max(np.linalg.norm(ref), 1e-30))


def ref_conv(x, w, b, stride, dil, pad, out_hw, act):
    """NHWC conv in float64: TFLite's filter [OC][KH][KW][IC], top/left padding ``pad``."""
    nb, ih, iw, ic = x.shape
    oc, kh, kw, _ = w.shape
    (oh, ow), (sh, sw), (dh, dw) = out_hw, stride, dil
    xp = np.zeros((nb, pad[0] + (oh - 1) * sh + (kh - 1) * dh + 1 + ih, pad[1] + (ow - 1) * sw + (kw - 1) * dw + 1 + iw, ic))
    xp[:, pad[0]:pad[0] + ih, pad[1]:pad[1] + iw] = x
    out = np.zeros((nb, oh, ow, oc)) + (0 if b is None else b)
    for a in range(kh):
        for c in range(kw):
            taps = xp[:, a * dh:a * dh + (oh - 1) * sh + 1:sh, c * dw:c * dw + (ow - 1) * sw + 1:sw]
            out += taps @ w[:, a, c, :].T.astype(np.float64)
    return np.clip(out, *ACTS[act])


def ref_depthwise(x, w, b, dm, stride, dil, pad, out_hw, act):
    """NHWC depthwise conv in float64: filter [1][KH][KW][C*dm], output channel c*dm + m."""
    xr = np.repeat(x, dm, axis=3)  # input channel of each output channel
    nb, ih, iw, oc = xr.shape
    _, kh, kw, _ = w.shape
    (oh, ow), (sh, sw), (dh, dw) = out_hw, stride, dil
    xp = np.zeros((nb, pad[0] + (oh - 1) * sh + (kh - 1) * dh + 1 + ih, pad[1] + (ow - 1) * sw + (kw - 1) * dw + 1 + iw, oc))
    xp[:, pad[0]:pad[0] + ih, pad[1]:pad[1] + iw] = xr
    out = np.zeros((nb, oh, ow, oc)) + (0 if b is None else b)
    for a in range(kh):
        for c in range(kw):
            out += xp[:, a * dh:a * dh + (oh - 1) * sh + 1:sh, c * dw:c * dw + (ow - 1) * sw + 1:sw] * w[0, a, c]
    return np.clip(out, *ACTS[act])


GEMM_CASES = [  # m, n, k, activation
    (1, 1, 1, ir.Activation.NONE),
    (1, 1000, 1024, ir.Activation.NONE),
    (7, 13, 5, ir.Activation.RELU),
    (64, 64, 64, ir.Activation.RELU6),
    (100, 130, 33, ir.Activation.RELU_N1_TO_1),
    (13, 48, 17, ir.Activation.NONE),
    (196, 256, 128, ir.Activation.RELU6),
    # N dividing 16: gemm_narrow (C as flat vectors), row counts that leave partial vectors
    (4099, 8, 8, ir.Activation.RELU6),
    (37, 4, 21, ir.Activation.NONE),
    (9, 2, 5, ir.Activation.RELU),
    (1, 1, 30, ir.Activation.NONE),
    (50, 1, 3, ir.Activation.RELU_N1_TO_1),
]


@TILES
@pytest.mark.parametrize("m,n,k,act", GEMM_CASES)
def test_gemm(cl_env, m, n, k, act, tiles):
    rng = np.random.default_rng(m * 1000 + n + k)
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    bias = rng.standard_normal(n).astype(np.float32)
    spec = kernels.gemm_spec(m, n, k, b, bias, act, tiles=tiles)
    assert spec.entry.startswith("gemm_narrow") == (n < 16 and 16 % n == 0)
    y = run(cl_env, spec, a)
    ref = np.clip(a.astype(np.float64) @ b + bias, *ACTS[act])
    assert rel_err(y, ref) <= TOL


def test_fully_connected_without_bias(cl_env):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 40)).astype(np.float32)
    w = rng.standard_normal((21, 40)).astype(np.float32)
    y = run(cl_env, kernels.fully_connected_spec(3, w, None), x)
    assert rel_err(y, x.astype(np.float64) @ w.T) <= TOL


CONV_CASES = [  # input NHWC, oc, kernel, stride, dilation, padding, activation
    ((1, 8, 8, 16), 32, (1, 1), (1, 1), (1, 1), ir.Padding.SAME, ir.Activation.NONE),  # -> gemm
    ((1, 9, 7, 5), 37, (1, 1), (2, 2), (1, 1), ir.Padding.VALID, ir.Activation.RELU),
    ((1, 17, 19, 5), 37, (3, 3), (2, 2), (1, 1), ir.Padding.SAME, ir.Activation.NONE),
    ((2, 10, 11, 16), 64, (3, 3), (1, 1), (1, 1), ir.Padding.SAME, ir.Activation.RELU6),
    ((1, 10, 11, 8), 20, (3, 3), (1, 1), (1, 1), ir.Padding.VALID, ir.Activation.RELU_N1_TO_1),
    ((1, 12, 12, 6), 24, (5, 5), (1, 1), (1, 1), ir.Padding.SAME, ir.Activation.NONE),
    ((1, 13, 12, 7), 16, (5, 5), (2, 2), (1, 1), ir.Padding.VALID, ir.Activation.NONE),
    ((1, 15, 14, 9), 33, (3, 3), (1, 1), (2, 2), ir.Padding.SAME, ir.Activation.RELU),
    ((1, 15, 14, 9), 17, (3, 2), (1, 2), (2, 1), ir.Padding.VALID, ir.Activation.NONE),
    ((1, 3, 3, 4), 8, (3, 3), (1, 1), (1, 1), ir.Padding.SAME, ir.Activation.NONE),  # tiny
    ((1, 1, 1, 3), 5, (1, 1), (1, 1), (1, 1), ir.Padding.VALID, ir.Activation.NONE),  # 1 pixel
    ((1, 112, 112, 3), 32, (3, 3), (2, 2), (1, 1), ir.Padding.SAME, ir.Activation.RELU6),  # MobileNet stem
    ((1, 28, 28, 64), 64, (3, 3), (1, 1), (1, 1), ir.Padding.SAME, ir.Activation.RELU),
    ((1, 14, 14, 256), 256, (1, 1), (1, 1), (1, 1), ir.Padding.VALID, ir.Activation.RELU6),  # -> gemm
    ((1, 7, 7, 64), 96, (3, 3), (1, 1), (1, 1), ir.Padding.SAME, ir.Activation.NONE),
]


@TILES
@pytest.mark.parametrize("shape,oc,ksize,stride,dil,padding,act", CONV_CASES)
def test_conv2d(cl_env, shape, oc, ksize, stride, dil, padding, act, tiles):
    rng = np.random.default_rng(sum(shape) * 31 + oc)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((oc, *ksize, shape[3])) / np.sqrt(ksize[0] * ksize[1] * shape[3])).astype(np.float32)
    b = rng.standard_normal(oc).astype(np.float32)
    spec = kernels.conv2d_spec(shape, w, b, stride=stride, dilation=dil, padding=padding, activation=act,
                               tiles=tiles)
    y = run(cl_env, spec, x).reshape(-1)
    wh = kernels.window(shape[1], ksize[0], stride[0], dil[0], padding)
    ww = kernels.window(shape[2], ksize[1], stride[1], dil[1], padding)
    ref = ref_conv(x, w, b, stride, dil, (wh.pad, ww.pad), (wh.out, ww.out), act)
    assert y.size == ref.size
    assert rel_err(y, ref.reshape(-1)) <= TOL


def test_conv2d_forced_blocking_tails(cl_env):
    """Every tile shape the host may pick gives the same answer, pixel and channel tails included."""
    rng = np.random.default_rng(7)
    shape = (1, 9, 10, 11)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((50, 3, 3, 11)).astype(np.float32)
    ref = ref_conv(x, w, None, (1, 1), (1, 1), (1, 1), (9, 10), ir.Activation.NONE)
    for nv, pw in ((1, 14), (2, 5), (3, 8), (4, 6)):
        y = run(cl_env, kernels.conv2d_spec(shape, w, None, nv=nv, pw=pw), x)
        assert rel_err(y, ref) <= TOL, (nv, pw)


DEPTHWISE_CASES = [  # input NHWC, depth multiplier, kernel, stride, dilation, padding, activation
    ((1, 10, 11, 16), 1, (3, 3), (1, 1), (1, 1), ir.Padding.SAME, ir.Activation.NONE),
    ((1, 10, 11, 5), 1, (3, 3), (2, 2), (1, 1), ir.Padding.SAME, ir.Activation.RELU6),
    ((2, 9, 9, 20), 1, (3, 3), (1, 1), (1, 1), ir.Padding.VALID, ir.Activation.RELU),
    ((1, 12, 13, 8), 2, (3, 3), (1, 1), (1, 1), ir.Padding.SAME, ir.Activation.NONE),
    ((1, 12, 13, 5), 3, (3, 3), (2, 2), (1, 1), ir.Padding.VALID, ir.Activation.NONE),
    ((1, 14, 14, 24), 1, (5, 5), (1, 1), (1, 1), ir.Padding.SAME, ir.Activation.RELU_N1_TO_1),
    ((1, 15, 16, 17), 1, (5, 5), (2, 2), (1, 1), ir.Padding.SAME, ir.Activation.NONE),
    ((1, 15, 16, 32), 1, (3, 3), (1, 1), (2, 2), ir.Padding.SAME, ir.Activation.NONE),
    ((1, 2, 2, 3), 1, (3, 3), (1, 1), (1, 1), ir.Padding.SAME, ir.Activation.NONE),  # tiny
    ((1, 112, 112, 32), 1, (3, 3), (1, 1), (1, 1), ir.Padding.SAME, ir.Activation.RELU6),  # MobileNet
    ((1, 14, 14, 512), 1, (3, 3), (2, 2), (1, 1), ir.Padding.SAME, ir.Activation.RELU6),
    # C dividing 16, stride and dilation 1 along W: depthwise_rows (flat row vectors)
    ((1, 17, 19, 8), 1, (3, 3), (1, 1), (1, 1), ir.Padding.SAME, ir.Activation.RELU6),
    ((2, 9, 10, 4), 1, (5, 5), (1, 1), (1, 1), ir.Padding.SAME, ir.Activation.NONE),
    ((1, 11, 30, 2), 1, (3, 3), (2, 1), (2, 1), ir.Padding.VALID, ir.Activation.RELU),
    ((1, 6, 70, 1), 1, (3, 5), (1, 1), (1, 1), ir.Padding.SAME, ir.Activation.NONE),
    ((1, 64, 64, 8), 1, (1, 1), (1, 1), (1, 1), ir.Padding.VALID, ir.Activation.NONE),
]


@TILES
@pytest.mark.parametrize("shape,dm,ksize,stride,dil,padding,act", DEPTHWISE_CASES)
def test_depthwise(cl_env, shape, dm, ksize, stride, dil, padding, act, tiles):
    """Every depthwise path of the CPU family: the fast templates (16+ channels), depthwise_rows
    (C dividing 16, stride and dilation 1 along W) and depthwise_any (the rest)."""
    rng = np.random.default_rng(sum(shape) * 17 + dm)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((1, *ksize, shape[3] * dm)).astype(np.float32)
    b = rng.standard_normal(shape[3] * dm).astype(np.float32)
    spec = depthwise_specs.depthwise_spec(shape, w, b, depth_multiplier=dm, stride=stride, dilation=dil,
                                  padding=padding, activation=act, tiles=tiles)
    c = shape[3]
    assert (spec.entry == "depthwise_rows") == (dm == 1 and 16 % c == 0 and c < 16 and stride[1] == dil[1] == 1)
    y = run(cl_env, spec, x)
    wh = kernels.window(shape[1], ksize[0], stride[0], dil[0], padding)
    ww = kernels.window(shape[2], ksize[1], stride[1], dil[1], padding)
    ref = ref_depthwise(x, w, b, dm, stride, dil, (wh.pad, ww.pad), (wh.out, ww.out), act)
    assert rel_err(y, ref) <= TOL


@pytest.mark.parametrize("v,fast,tile", [(1, True, None), (1, False, None), (4, True, None), (2, False, None),
                                         (1, True, (2, 2)), (1, True, (2, 1)), (1, True, (1, 1))])
@pytest.mark.parametrize("shape,dm,ksize,stride,dil,padding,act", DEPTHWISE_CASES)
def test_depthwise_gpu(cl_env, shape, dm, ksize, stride, dil, padding, act, v, fast, tile):
    """The GPU family's depthwise kernels (gpu_depthwise.cl), fast and any-geometry, 1 or V
    channels per work-item where V divides the channels (depth multiplier 1), each patch size."""
    from teflon_py.opencl.kernels import gpu_small

    if v > 1 and (dm != 1 or shape[3] % v):
        v = 1
    rng = np.random.default_rng(sum(shape) * 17 + dm)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal((1, *ksize, shape[3] * dm)).astype(np.float32)
    b = rng.standard_normal(shape[3] * dm).astype(np.float32)
    spec = gpu_small.depthwise_gpu_spec(shape, w, b, depth_multiplier=dm, stride=stride, dilation=dil,
                                        padding=padding, activation=act, v=v, fast=fast,
                                        px=tile and tile[0], rh=tile and tile[1])
    y = run(cl_env, spec, x)
    wh = kernels.window(shape[1], ksize[0], stride[0], dil[0], padding)
    ww = kernels.window(shape[2], ksize[1], stride[1], dil[1], padding)
    ref = ref_depthwise(x, w, b, dm, stride, dil, (wh.pad, ww.pad), (wh.out, ww.out), act)
    assert rel_err(y, ref) <= TOL


def test_window_matches_tflite():
    assert kernels.window(224, 3, 2, 1, ir.Padding.SAME) == kernels.Window(112, 0)
    assert kernels.window(7, 3, 1, 1, ir.Padding.SAME) == kernels.Window(7, 1)
    assert kernels.window(10, 3, 1, 2, ir.Padding.SAME) == kernels.Window(10, 2)
    assert kernels.window(10, 3, 2, 1, ir.Padding.VALID) == kernels.Window(4, 0)
