"""Host side of ``dwpw.cl``: a float32 depthwise conv and the 1x1 conv reading it, as one launch.

MediaPipe's float models are chains of x -> DEPTHWISE_CONV_2D -> CONV_2D 1x1 [-> ADD -> PRELU]
over small maps: as two launches, PoCL pays its gap between dependent launches and the depthwise
output goes through memory. ``fusion.plan_depthwise_pointwise`` folds such a depthwise into its
1x1 conv where ``fold_reason`` allows; ``dwpw_spec`` builds the one launch.
"""
from __future__ import annotations

import numpy as np

from teflon_py import ir
from teflon_py.opencl.kernels import packing
from teflon_py.opencl.kernels.cpu_tiles import AVX512, CpuTiles
from teflon_py.opencl.kernels.specs import (
    NO_PADS,
    Clamp,
    KernelSpec,
    Pads,
    clamp_of,
    epilogue_scalars,
    padded_windows,
    post_code,
    scalars,
)
from teflon_py.opencl.runtime.programs import template

#: The most depthwise channels a work-item keeps in private memory (``CMAX``: PW x 256 floats).
MAX_CHANNELS = 256
#: The fewest: whole 16-channel vectors (narrower layers keep depthwise.cl's flat-vector kernel:
#: reading 8 channels lane by lane here ran hand_recrop's 64x64x8 block 7x longer than two launches).
MIN_CHANNELS = 16
#: The largest input map (H x W) folded: on MobileNetV2's 112x112 layers the fused kernel ran
#: 15-30% longer than the two launches, on 96x96 and smaller maps as fast or faster
MAX_INPUT_PIXELS = 96 * 96
#: The widest filter side (the kernel keeps each pixel's inside rows and columns as bit masks).
MAX_FILTER = 16
#: Work-items a launch aims for at least; pixel blocks beyond that go ``pbn`` to an item.
DWPW_ITEMS = 32
#: Work-items below which panels are split between items too (each group recomputes the depthwise):
#: 2, one per core; on iris_landmark's 2x2 and 4x4 maps 8 measured 1-3% slower a whole invoke
DWPW_MIN_ITEMS = 2


def fold_reason(input_hw: tuple[int, int], channels: int, filt_hw: tuple[int, int],
                dilation: tuple[int, int]) -> str | None:
    """Why a depthwise over an ``input_hw`` map of ``channels`` (filter ``filt_hw``) cannot fold
    into the 1x1 conv after it, or None when it can: what the kernel takes, and where it pays."""
    if input_hw[0] * input_hw[1] > MAX_INPUT_PIXELS:
        return f"a {input_hw[0]}x{input_hw[1]} map is larger than the fused kernel pays for"
    return kernel_reason(channels, filt_hw, dilation)


def kernel_reason(channels: int, filt_hw: tuple[int, int], dilation: tuple[int, int]) -> str | None:
    """Why ``dwpw.cl`` cannot compute a depthwise of ``channels`` with filter ``filt_hw``, or None."""
    if not MIN_CHANNELS <= channels <= MAX_CHANNELS:
        return f"{channels} channels are outside the fused kernel's {MIN_CHANNELS}..{MAX_CHANNELS}"
    if max(filt_hw) > MAX_FILTER:
        return f"a {filt_hw[0]}x{filt_hw[1]} filter is wider than the fused kernel's {MAX_FILTER}"
    if tuple(dilation) != (1, 1):
        return "a dilated depthwise is not fused"
    return None


def dwpw_pixels(tiles: CpuTiles) -> int:
    """Pixels per work-item: the rows of the device's 1-vector gemm tile (6 on AVX2)."""
    return tiles.rows_for(1)


def dwpw_spec(input_shape: tuple[int, int, int, int], dw_filter: np.ndarray, dw_bias: np.ndarray | None,
              pw_filter: np.ndarray, pw_bias: np.ndarray | None, *, stride: tuple[int, int] = (1, 1),
              padding: ir.Padding | int = ir.Padding.SAME, pads: Pads = NO_PADS,
              dw_clamp: Clamp | ir.Activation = ir.Activation.NONE,
              activation: Clamp | ir.Activation = ir.Activation.NONE, residual: Clamp | None = None,
              alpha: np.ndarray | None = None, post_act: str | None = None,
              tiles: CpuTiles = AVX512) -> KernelSpec:
    """NHWC depthwise (filter [1][KH][KW][C], depth multiplier 1, dilation 1) clamped by ``dw_clamp``,
    then a 1x1 conv (TFLite filter [OC][1][1][C]) with ``activation``, ``residual`` (an ADD's clamp;
    the caller binds "residual"), ``alpha`` (a PRELU's slopes) and ``post_act`` (a HARD_SWISH or
    swish) as ``gemm_spec`` takes them."""
    nb, ih, iw, c = input_shape
    _, kh, kw, dc = dw_filter.shape
    oc = pw_filter.shape[0]
    if dc != c or tuple(pw_filter.shape[1:]) != (1, 1, c):
        raise ValueError(f"depthwise filter {list(dw_filter.shape)} and 1x1 filter {list(pw_filter.shape)} "
                         f"do not fit {c} input channels")
    reason = kernel_reason(c, (kh, kw), (1, 1))
    if reason:
        raise ValueError(reason)
    wh, ww = padded_windows(ih, iw, kh, kw, stride, (1, 1), padding, pads)
    pw = dwpw_pixels(tiles)
    npix = nb * wh.out * ww.out
    blocks, panels = -(-npix // pw), -(-oc // 16)
    pbn = max(1, blocks // DWPW_ITEMS)
    groups = min(panels, -(-DWPW_MIN_ITEMS // blocks)) if blocks < DWPW_MIN_ITEMS else 1
    pgn = -(-panels // groups)
    dlo, dhi = clamp_of(dw_clamp)
    args = scalars(NB=nb, IH=ih, IW=iw, C=c, OH=wh.out, OW=ww.out, KH=kh, KW=kw, SH=stride[0], SW=stride[1],
                   PT=wh.pad, PL=ww.pad, dlo=dlo, dhi=dhi, OC=oc)
    args.update(epilogue_scalars(activation, residual))
    args.update(scalars(post=post_code(alpha, post_act), pbn=pbn, pgn=pgn))
    constants = {"dw_weights": np.ascontiguousarray(np.asarray(dw_filter, np.float32)[0]),
                 "dw_bias": packing.pad_vector(dw_bias, c, c),
                 "weights": packing.pack_gemm_weights(np.asarray(pw_filter, np.float32).reshape(oc, c).T, 16),
                 "bias": packing.panel_bias(pw_bias, oc, 16)}
    if alpha is not None:
        constants["alpha"] = packing.panel_bias(alpha, oc, 16)
    entry = f"dwpw_{pw}"
    return KernelSpec(
        files=("common.cl", template("dwpw.cl", DWPW_NAME=entry, PW=pw, CMAX=MAX_CHANNELS)), name="dwpw",
        defines={}, global_size=(-(-blocks // pbn), -(-panels // pgn)), local_size=(1, 1),
        args=("input", "dw_weights", "dw_bias", "zeros", "weights", "bias", "output",
              "residual" if residual is not None else "zeros", "alpha" if alpha is not None else "zeros", *args),
        constants=constants, zeros=16, flops=2 * npix * c * (kh * kw + oc), scalars=args, entry=entry,
        out_shape=(nb, wh.out, ww.out, oc),
    )
