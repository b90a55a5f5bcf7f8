"""Host side of the GPU-style float kernels (``cl_kernels/gpu_gemm.cl``; kernel family "gpu",
see ``opencl.params``): one small register tile per work-item, real work-groups, and a global
size of one work-item per tile, for devices that run work-items across SIMD lanes.

The CPU family (``specs``) gives each work-item hundreds of accumulators and a few dozen
work-items a launch; a GPU (or llvmpipe, which vectorises a work-group's items across its lanes)
wants the opposite: thousands of short work-items, adjacent ones reading adjacent addresses.
Here a work-item computes TM rows (pixels) x 4*TN columns (channels) as TM * TN float4s; work-items
along dim 0 take adjacent column groups. Every size is an argument, so one program serves every
shape; each (TM, TN) tile (``tile_for``: TM 1 or 4, TN 1) is a template instantiation,
merged into the partition's one program.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from teflon_py import ir
from teflon_py.opencl.kernels import packing
from teflon_py.opencl.kernels.specs import (
    NO_PADS,
    Batching,
    Clamp,
    KernelSpec,
    Pads,
    epilogue_scalars,
    padded_windows,
    scalars,
)
from teflon_py.opencl.params import KernelParams
from teflon_py.opencl.runtime.programs import FileEntry, template


def tile_for(m: int, n: int, params: KernelParams) -> tuple[int, int]:
    """(TM, TN): one row for a single-row GEMM (FULLY_CONNECTED on one input), else
    ``params.gemm_rows``; one float4 across (on llvmpipe, MobileNetV2 96/0.5 ran ~10% faster
    than with two float4s per row from 32 columns, and the smaller kernel also launches
    faster: rusticl's per-launch cost grows with the kernel's code)."""
    return (1 if m == 1 else params.gemm_rows, 1)


def files_for(kind: str, tm: int, tn: int) -> tuple[FileEntry, ...]:
    """common.cl and the instantiation of ``gpu_gemm.cl`` named ``gpu_<kind>_<tm>x<tn>``."""
    macro = "GPU_GEMM_NAME" if kind == "gemm" else "GPU_CONV_NAME"
    return ("common.cl", template("gpu_gemm.cl", **{macro: f"gpu_{kind}_{tm}x{tn}", "TM": tm, "TN": tn}))


def _pow2_at_most(n: int, cap: int) -> int:
    p = 1
    while p * 2 <= min(n, cap):
        p *= 2
    return p


def work_groups(params: KernelParams, gx: int, gy: int, gz: int = 1) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(global, local) for a gx x gy x gz grid of work-items: a work-group of up to
    ``params.gemm_wg`` (narrower where the grid is), global rounded up to whole work-groups."""
    wx, wy = params.gemm_wg
    lx = _pow2_at_most(max(gx, 1), wx)
    ly = _pow2_at_most(max(gy, 1), max(1, (wx * wy) // lx))
    return (packing.round_up(gx, lx), packing.round_up(gy, ly), gz), (lx, ly, 1)


def gemm_spec(params: KernelParams, m: int, n: int, k: int, b_kn: np.ndarray | None,
              bias: np.ndarray | None = None, activation: ir.Activation | int | Clamp = ir.Activation.NONE, *,
              lda: int | None = None, ldc: int | None = None, ask: int = 1, batching: Batching | None = None,
              pack_strides: tuple[int, int] | None = None, residual: Clamp | None = None,
              tile: tuple[int, int] | None = None) -> KernelSpec:
    """``specs.gemm_spec``'s contract on the GPU-style kernel: B ``b_kn`` as [K][N] (or
    [batches][K][N]) is padded to ``ldb`` columns here; None when it is packed on the device by
    ``pack_b_spec`` (``pack_strides`` = B's (k, n) strides; the caller binds "weights")."""
    tm, tn = tile or tile_for(m, n, params)
    ldb = packing.round_up(n, 4 * tn)
    dims, a_strides, b_strides, batches = (1, 1, 1), (0, 0, 0), (0, 0, 0), 1
    if batching is not None and batching.count > 1:
        batches = batching.count
        dims, a_strides, b_strides = batching.dims, batching.a_strides, batching.b_strides
    args = scalars(M=m, N=n, K=k, lda=lda or k, ask=ask, ldb=ldb, ldc=ldc or n)
    args.update(epilogue_scalars(activation, residual))
    args.update(scalars(bd1=dims[1], bd2=dims[2], **{f"as{i}": v for i, v in enumerate(a_strides)},
                        **{f"bs{i}": v for i, v in enumerate(b_strides)}))
    global_size, local_size = work_groups(params, -(-n // (4 * tn)), -(-m // tm), batches)
    constants = {"bias": packing.pad_vector(bias, n, ldb)}
    if b_kn is not None:
        b = np.asarray(b_kn, np.float32)
        pad = [(0, 0)] * (b.ndim - 1) + [(0, ldb - n)]
        constants["weights"] = np.ascontiguousarray(np.pad(b, pad))
    meta = {"M": m, "N": n, "K": k, "LDB": ldb}
    if pack_strides is not None:
        meta.update({"PSK": pack_strides[0], "PSN": pack_strides[1]})
    return KernelSpec(
        files=files_for("gemm", tm, tn), name="gpu_gemm", defines={},
        global_size=global_size, local_size=local_size,
        args=("input", "weights", "bias", "output", "residual" if residual is not None else "zeros", *args),
        constants=constants, flops=2 * m * n * k * batches, scalars=args, entry=f"gpu_gemm_{tm}x{tn}",
        out_shape=(m, n), meta=meta, zeros=4,
    )


def packed_b_floats(gemm: KernelSpec) -> int:
    """Floats of one B in ``gemm``'s layout: K * ldb."""
    return int(gemm.meta["K"]) * int(gemm.meta["LDB"])


def pack_b_spec(params: KernelParams, gemm: KernelSpec, batches: int) -> KernelSpec:
    """Lay ``batches`` runtime B matrices ("input") out as ``gemm`` reads them ("output")."""
    d = gemm.meta
    args = scalars(K=d["K"], N=d["N"], ldb=d["LDB"], psk=d["PSK"], psn=d["PSN"])
    global_size, local_size = work_groups(params, d["LDB"], d["K"], batches)
    return KernelSpec(
        files=gemm.files, name="gpu_pack_b", defines={}, global_size=global_size, local_size=local_size,
        args=("input", "output", *args), scalars=args, meta=d,
    )


def fully_connected_spec(params: KernelParams, batch: int, weights_nk: np.ndarray, bias: np.ndarray | None = None,
                         activation: ir.Activation | int | Clamp = ir.Activation.NONE) -> KernelSpec:
    """TFLite FULLY_CONNECTED: weights [out][in]."""
    n, k = weights_nk.shape
    return gemm_spec(params, batch, n, k, np.asarray(weights_nk, np.float32).T, bias, activation)


def conv2d_spec(params: KernelParams, input_shape: tuple[int, int, int, int], filt: np.ndarray,
                bias: np.ndarray | None, *, stride: tuple[int, int] = (1, 1), dilation: tuple[int, int] = (1, 1),
                padding: ir.Padding | int = ir.Padding.SAME,
                activation: ir.Activation | int | Clamp = ir.Activation.NONE, pads: Pads = NO_PADS,
                residual: Clamp | None = None, tile: tuple[int, int] | None = None) -> KernelSpec:
    """``specs.conv2d_spec``'s contract on the GPU-style kernels: 1x1 unpadded stride-1 as the
    GEMM over pixels, anything else as the implicit-GEMM convolution."""
    nb, ih, iw, ic = input_shape
    oc, kh, kw, fic = filt.shape
    if fic != ic:
        raise ValueError(f"filter has {fic} input channels, input has {ic}")
    wh, ww = padded_windows(ih, iw, kh, kw, stride, dilation, padding, pads)
    if (kh, kw) == (1, 1) and stride == (1, 1) and pads == NO_PADS:
        spec = gemm_spec(params, nb * ih * iw, oc, ic, np.asarray(filt, np.float32).reshape(oc, ic).T, bias,
                         activation, residual=residual, tile=tile)
        return replace(spec, out_shape=(nb, ih, iw, oc))
    npix = nb * wh.out * ww.out
    tm, tn = tile or tile_for(npix, oc, params)
    ldw = packing.round_up(oc, 4 * tn)
    args = scalars(NB=nb, IH=ih, IW=iw, IC=ic, OH=wh.out, OW=ww.out, OC=oc, KH=kh, KW=kw, SH=stride[0],
                   SW=stride[1], DH=dilation[0], DW=dilation[1], PT=wh.pad, PL=ww.pad)
    args.update(epilogue_scalars(activation, residual))
    args.update(scalars(ldw=ldw))
    w = np.asarray(filt, np.float32).transpose(1, 2, 3, 0)  # [KH][KW][IC][OC]
    w = np.ascontiguousarray(np.pad(w, ((0, 0), (0, 0), (0, 0), (0, ldw - oc))))
    global_size, local_size = work_groups(params, -(-oc // (4 * tn)), -(-npix // tm))
    return KernelSpec(
        files=files_for("conv", tm, tn), name="gpu_conv2d", defines={},
        global_size=global_size[:2], local_size=local_size[:2],
        args=("input", "weights", "bias", "zeros", "output", "residual" if residual is not None else "zeros",
              *args),
        constants={"weights": w, "bias": packing.pad_vector(bias, oc, ldw)},
        zeros=max(ic, 4), flops=2 * npix * oc * kh * kw * ic, scalars=args, entry=f"gpu_conv_{tm}x{tn}",
        out_shape=(nb, wh.out, ww.out, oc),
    )
