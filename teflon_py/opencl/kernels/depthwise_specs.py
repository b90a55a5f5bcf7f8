"""Host side of the float32 DEPTHWISE_CONV_2D kernels of the cpu family (``cl_kernels/depthwise.cl``).

- 16+ channels, depth multiplier 1, dilation 1: a fast template per (filter width, stride) of the
  device's ``CpuTiles.depthwise`` (a few output pixels x rows per work-item, every 16-channel block
  of a pixel run: ``cbn`` of them), the last channel and pixel blocks shifted back to end at the
  tensor's edge;
- 1, 2, 4 or 8 channels, stride and dilation 1 along W: ``depthwise_rows``, an output row as flat
  16-float vectors;
- anything else (depth multipliers, dilations, other channel counts): ``depthwise_any``.
All of them are one program (``depthwise_files``); every size is an argument.
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
    Window,
    clamp_of,
    padded_windows,
    post_code,
    scalars,
)
from teflon_py.opencl.runtime.programs import FileEntry, template


def depthwise_files(tiles: CpuTiles) -> tuple[FileEntry, ...]:
    """The depthwise program: depthwise.cl instantiated once per fast geometry of ``tiles`` (two
    output rows per work-item share their middle input rows), and ``depthwise_any``."""
    return ("common.cl", *(
        template("depthwise.cl", DEPTHWISE_NAME=f"depthwise_{kw}x{sw}", KW=kw, SW=sw, PW=pw, RH=rh)
        for kw, sw, pw, rh in tiles.depthwise))


#: Work-items a depthwise launch aims for at least: fewer, longer items (every channel of a
#: pixel run: contiguous loads) measured faster than many short ones, down to ~4 per core.
DEPTHWISE_ITEMS = 8


def depthwise_spec(input_shape: tuple[int, int, int, int], filt: np.ndarray, bias: np.ndarray | None,
                   *, depth_multiplier: int = 1, stride: tuple[int, int] = (1, 1),
                   dilation: tuple[int, int] = (1, 1), padding: ir.Padding | int = ir.Padding.SAME,
                   activation: ir.Activation | int | Clamp = ir.Activation.NONE, pads: Pads = NO_PADS,
                   pw: int | None = None, rh: int | None = None, cbn: int | None = None,
                   tiles: CpuTiles = AVX512, post_act: str | None = None) -> KernelSpec:
    """NHWC DEPTHWISE_CONV_2D with TFLite's filter [1][KH][KW][C*depth_multiplier]; ``pw``, ``rh``
    and ``cbn`` force a fast kernel's blocking (pixels, rows, 16-channel blocks per work-item);
    ``post_act``: a HARD_SWISH or swish folded in after the clamp (``specs.post_code``)."""
    nb, ih, iw, c = input_shape
    _, kh, kw, oc = filt.shape
    if oc != c * depth_multiplier:
        raise ValueError(f"filter has {oc} channels, input {c} x depth multiplier {depth_multiplier}")
    wh, ww = padded_windows(ih, iw, kh, kw, stride, dilation, padding, pads)
    lo, hi = clamp_of(activation)
    post = post_code(None, post_act)
    flops = 2 * nb * wh.out * ww.out * oc * kh * kw
    if depth_multiplier == 1 and c < 16 and 16 % c == 0 and stride[1] == 1 and dilation[1] == 1:
        return _depthwise_rows(input_shape, filt, bias, stride[0], dilation[0], wh, ww, (lo, hi), tiles, post)
    fast = None
    if dilation == (1, 1) and depth_multiplier == 1 and c >= 16:
        fast = tiles.depthwise_blocking(kw, stride[1])
    if fast is None:
        return _depthwise_any(input_shape, filt, bias, depth_multiplier, stride, dilation, wh, ww, (lo, hi),
                              tiles, post)
    files, entry = depthwise_files(tiles), f"depthwise_{kw}x{stride[1]}"
    if (pw or fast[0], rh or fast[1]) != fast:  # a forced blocking: its own instantiation
        fast = (pw or fast[0], rh or fast[1])
        entry += f"_{fast[0]}x{fast[1]}"
        files = (*files, template("depthwise.cl", DEPTHWISE_NAME=entry, KW=kw, SW=stride[1], PW=fast[0],
                                  RH=fast[1]))
    blocks = -(-c // 16)
    n_tiles = -(-ww.out // fast[0]) * -(-wh.out // fast[1]) * nb
    cbn = cbn or max(1, min(blocks, blocks * n_tiles // DEPTHWISE_ITEMS))
    args = scalars(NB=nb, IH=ih, IW=iw, C=c, OH=wh.out, OW=ww.out, KH=kh, SH=stride[0], PT=wh.pad, PL=ww.pad,
                   lo=float(lo), hi=float(hi), cbn=cbn, post=post)
    return KernelSpec(
        files=files, name="depthwise", defines={},
        global_size=(-(-blocks // cbn), -(-ww.out // fast[0]), nb * -(-wh.out // fast[1])), local_size=(1, 1, 1),
        args=("input", "weights", "bias", "zeros", "output", *args),
        constants={"weights": np.ascontiguousarray(np.asarray(filt, np.float32)[0]),
                   "bias": packing.pad_vector(bias, oc, oc)},
        zeros=16, flops=flops, scalars=args, entry=entry, out_shape=(nb, wh.out, ww.out, oc),
    )


#: Work-items a ``depthwise_rows`` launch aims for (each takes whole rows in turn).
DEPTHWISE_ROWS_ITEMS = 16


def _depthwise_rows(input_shape: tuple[int, int, int, int], filt: np.ndarray, bias: np.ndarray | None, sh: int,
                    dh: int, wh: Window, ww: Window, clamp: Clamp, tiles: CpuTiles, post: int = 0) -> KernelSpec:
    """``depthwise_rows``: depth multiplier 1, C in (1, 2, 4, 8), stride and dilation 1 along W;
    an output row as flat vectors (lane l is channel l % C)."""
    nb, ih, iw, c = input_shape
    _, kh, kw, _ = filt.shape
    reps = 16 // c
    weights = np.tile(np.asarray(filt, np.float32)[0], (1, 1, reps))  # [KH][KW][16]
    bias16 = np.tile(packing.pad_vector(bias, c, c), reps)
    segments = -(-ww.out * c // (16 * 4))  # PV_ROWS vectors each
    rows = nb * wh.out
    rpi = max(1, rows * segments // DEPTHWISE_ROWS_ITEMS)
    args = scalars(NB=nb, IH=ih, IW=iw, C=c, OH=wh.out, OW=ww.out, KH=kh, fw=kw, SH=sh, DH=dh, PT=wh.pad,
                   PL=ww.pad, lo=float(clamp[0]), hi=float(clamp[1]), rpi=rpi, post=post)
    return KernelSpec(
        files=depthwise_files(tiles), name="depthwise", defines={},
        global_size=(segments, -(-rows // rpi)), local_size=(1, 1),
        args=("input", "weights", "bias", "output", *args),
        constants={"weights": np.ascontiguousarray(weights), "bias": bias16.astype(np.float32)},
        flops=2 * rows * ww.out * c * kh * kw, scalars=args, entry="depthwise_rows",
        out_shape=(nb, wh.out, ww.out, c),
    )


def _depthwise_any(input_shape: tuple[int, int, int, int], filt: np.ndarray, bias: np.ndarray | None, dm: int,
                   stride: tuple[int, int], dilation: tuple[int, int], wh: Window, ww: Window,
                   clamp: Clamp, tiles: CpuTiles = AVX512, post: int = 0) -> KernelSpec:
    """The general depthwise kernel: any filter, stride, dilation, depth multiplier, channels."""
    nb, ih, iw, c = input_shape
    _, kh, kw, oc = filt.shape
    ocp = packing.round_up(oc, 16)
    args = scalars(NB=nb, IH=ih, IW=iw, C=c, DM=dm, OC=oc, OCP=ocp, OH=wh.out, OW=ww.out, KH=kh, SH=stride[0],
                   DH=dilation[0], PT=wh.pad, PL=ww.pad, lo=float(clamp[0]), hi=float(clamp[1]), fw=kw,
                   sw=stride[1], dw=dilation[1], post=post)
    return KernelSpec(
        files=depthwise_files(tiles), name="depthwise", defines={},
        global_size=(ocp // 16, -(-ww.out // 8), nb * wh.out), local_size=(1, 1, 1),
        args=("input", "weights", "bias", "zeros", "output", *args),
        constants={"weights": packing.pack_depthwise_weights(np.asarray(filt, np.float32)),
                   "bias": packing.pad_vector(bias, oc, ocp)},
        zeros=ocp, flops=2 * nb * wh.out * ww.out * oc * kh * kw, scalars=args, entry="depthwise_any",
        out_shape=(nb, wh.out, ww.out, oc),
    )
