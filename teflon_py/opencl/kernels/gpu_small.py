"""GPU-style ("gpu" kernel family, ``params.py``) specs for depthwise convolution and the launch
geometry of the small generic kernels.

GPU-style: a few outputs per work-item, work-groups of ``KernelParams.small_wg`` items, global sizes
padded to whole work-groups (kernels return early past the edge) and large enough to fill
compute units x SIMD lanes. Adjacent work-items along dimension 0 touch adjacent memory.
Loads are scalar floats: llvmpipe (Mesa 22) runs each component of a vector load as its own loop
over the lanes, so a float4 costs about four times four floats there (BENCHMARKS.md, "GPU kernel
family on Mesa rusticl"); a GPU compiler merges neighbouring scalar loads itself.

The small generic kernels keep their CPU-style source: ``regrid`` relaunches their work split
(``specs.row_blocks`` and its relatives) on a GPU-style grid, applied by the partition builder to
every launch of the gpu family (``compiled.Builder.launch``).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from teflon_py import ir
from teflon_py.opencl.kernels import packing
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.packing import round_up
from teflon_py.opencl.kernels.specs import NO_PADS, Clamp, KernelSpec, Pads
from teflon_py.opencl.params import KernelParams
from teflon_py.opencl.runtime.programs import template

#: the gpu family's default parameters where no device chose them (specs built in tests)
GPU = KernelParams(family="gpu")

#: (K, S) of the depthwise kernels for a square K x K filter at stride S, dilation 1, that load
#: each input row once for RH output rows; any other geometry runs the ``_any`` instantiation.
DEPTHWISE_GPU_FAST: tuple[tuple[int, int], ...] = ((3, 1), (3, 2), (5, 1), (5, 2))
#: (pixels along W, output rows) per work-item of the fast depthwise kernels, by stride, largest
#: first: the largest that still gives ``params.min_items // DEPTHWISE_GPU_SPREAD`` work-items is
#: taken (bigger patches load fewer inputs and weights per output: on llvmpipe, where every load is
#: a loop over the lanes, 4x4 measured ~2x faster than 2x2 on a 112x112x32 layer; small layers
#: need the smaller patches to fill a GPU).
DEPTHWISE_GPU_TILES = {1: ((4, 4), (2, 2), (1, 1)), 2: ((4, 2), (2, 1), (1, 1))}
DEPTHWISE_GPU_SPREAD = 4
#: pixels along W per work-item of the any-geometry kernel
DEPTHWISE_GPU_ANY_PX = 2


def group_2d(nx: int, ny: int, wg: int) -> tuple[int, int]:
    """A work-group of about ``wg`` items over an ``nx`` x ``ny`` grid: as wide along x (the
    contiguous axis) as x allows, in powers of two, the rest along y."""
    lx = 1
    while lx * 2 <= min(nx, wg):
        lx *= 2
    if lx < nx and lx * 2 <= wg:  # round nx up rather than waste most of a group on y
        lx *= 2
    ly = max(1, wg // lx)
    while ly > 1 and ly // 2 >= ny:
        ly //= 2
    return lx, ly


def choose_tile(stride: int, items_c: int, nb: int, oh: int, ow: int, params: KernelParams) -> tuple[int, int]:
    """The largest patch of ``DEPTHWISE_GPU_TILES`` that gives enough work-items (the last, else)."""
    tiles = DEPTHWISE_GPU_TILES[1 if stride == 1 else 2]
    for px, rh in tiles:
        if items_c * nb * -(-oh // rh) * -(-ow // px) >= params.min_items // DEPTHWISE_GPU_SPREAD:
            return px, rh
    return tiles[-1]


def depthwise_gpu_entry(v: int, k: int | None = None, s: int | None = None, px: int | None = None,
                        rh: int | None = None) -> tuple[str, tuple]:
    """(kernel name, file entry) of one gpu depthwise instantiation: fast (``k``, ``s``) or any."""
    if k is None:
        px = px or DEPTHWISE_GPU_ANY_PX
        name = f"depthwise_gpu_any_v{v}p{px}"
        return name, template("gpu_depthwise.cl", DW_NAME=name, V=v, PX=px)
    dpx, drh = DEPTHWISE_GPU_TILES[1 if s == 1 else 2][0]
    px, rh = px or dpx, rh or drh
    name = f"depthwise_gpu_{k}x{s}_v{v}p{px}r{rh}"
    return name, template("gpu_depthwise.cl", DW_NAME=name, V=v, PX=px, RH=rh, K=k, S=s)


def depthwise_gpu_spec(input_shape: tuple[int, int, int, int], filt: np.ndarray, bias: np.ndarray | None,
                       *, depth_multiplier: int = 1, stride: tuple[int, int] = (1, 1),
                       dilation: tuple[int, int] = (1, 1), padding: ir.Padding | int = ir.Padding.SAME,
                       activation: ir.Activation | int | Clamp = ir.Activation.NONE, pads: Pads = NO_PADS,
                       params: KernelParams = GPU, v: int | None = None, px: int | None = None,
                       rh: int | None = None, fast: bool = True) -> KernelSpec:
    """``depthwise_specs.depthwise_spec``'s op on the gpu family (``gpu_depthwise.cl``): ``v`` channels x
    ``px`` x ``rh`` output pixels per work-item (default: ``choose_tile``); ``fast=False``
    forces the any-geometry kernel."""
    nb, ih, iw, c = input_shape
    _, kh, kw, oc = filt.shape
    if oc != c * depth_multiplier:
        raise ValueError(f"filter has {oc} channels, input {c} x depth multiplier {depth_multiplier}")
    wh, ww = kernels.padded_windows(ih, iw, kh, kw, stride, dilation, padding, pads)
    lo, hi = kernels.clamp_of(activation)
    if v is None:
        v = 1
    if v > 1 and (depth_multiplier != 1 or c % v):
        raise ValueError(f"{v} channels per work-item need depth multiplier 1 and channels a multiple of {v}")
    args = kernels.scalars(NB=nb, IH=ih, IW=iw, C=c, DM=depth_multiplier, OC=oc, OH=wh.out, OW=ww.out,
                           PT=wh.pad, PL=ww.pad, lo=float(lo), hi=float(hi))
    square = kh == kw and stride[0] == stride[1] and dilation == (1, 1)
    if fast and square and (kw, stride[1]) in DEPTHWISE_GPU_FAST:
        if px is None and rh is None:
            px, rh = choose_tile(stride[1], oc // v, nb, wh.out, ww.out, params)
        entry, file = depthwise_gpu_entry(v, kw, stride[1], px, rh)
        tile = dict(file[1])
        px, rows = int(tile["PX"]), int(tile["RH"])
    else:
        entry, file = depthwise_gpu_entry(v, px=px)
        px, rows = int(dict(file[1])["PX"]), 1
        args.update(kernels.scalars(KH=kh, KW=kw, SH=stride[0], SW=stride[1], DH=dilation[0], DW=dilation[1]))
    nx, ny = oc // v, -(-ww.out // px)
    lx, ly = group_2d(nx, ny, params.small_wg)
    return KernelSpec(
        files=("common.cl", file), name="depthwise", defines={},
        global_size=(round_up(nx, lx), round_up(ny, ly), nb * -(-wh.out // rows)), local_size=(lx, ly, 1),
        args=("input", "weights", "bias", "zeros", "output", *args),
        constants={"weights": np.ascontiguousarray(np.asarray(filt, np.float32).reshape(kh * kw, oc)),
                   "bias": packing.pad_vector(bias, oc, oc)},
        zeros=v, flops=2 * nb * wh.out * ww.out * oc * kh * kw, scalars=args, entry=entry,
        out_shape=(nb, wh.out, ww.out, oc),
    )


# -- the small generic kernels ------------------------------------------------------------------

#: work-items a small kernel's launch aims for, in units of ``KernelParams.min_items``
SMALL_WAVES = 4
#: elements one work-item of a small kernel takes at most (amortises its index arithmetic)
SMALL_CHUNK = 16


def gpu_rows(rows: int, inner: int, params: KernelParams) -> tuple[int, int]:
    """(rows per item, chunk) for ``rows`` x ``inner`` elements on the gpu family: about
    ``SMALL_WAVES * params.min_items`` work-items, each at most ``SMALL_CHUNK`` consecutive
    elements of one row (or whole short rows, ``rpi`` of them, when rows alone give enough)."""
    rows, inner = max(rows, 1), max(inner, 1)
    per_item = max(1, min(SMALL_CHUNK, rows * inner // (SMALL_WAVES * params.min_items)))
    if per_item >= inner:
        return max(1, per_item // inner), inner
    return 1, per_item


def regrid(spec: KernelSpec, params: KernelParams) -> KernelSpec:
    """``spec`` relaunched GPU-style when it follows one of the small kernels' work splits, else
    unchanged: ``row_blocks``' (scalars rows, rpi, inner or n4, chunk; global (pieces, row
    blocks)), its flat form (n, chunk; global (pieces,)), PAD's rows of whole rows (rows, rpi; global
    (1, row blocks)) or the reductions' (n_out, opi; global (items,)). Every such kernel clips its
    ranges to the tensor, so work-items past the end of the padded grid do nothing."""
    s = spec.scalars
    g = tuple(spec.global_size)
    wg = params.small_wg
    if "rows" in s and "rpi" in s and len(g) == 2:
        rows, rpi = int(s["rows"]), int(s["rpi"])
        inner_key = "inner" if "inner" in s else "n4" if "n4" in s else None
        if inner_key is not None and "chunk" in s:
            inner, chunk = int(s[inner_key]), int(s["chunk"])
            if g != (-(-inner // chunk), -(-rows // rpi)):
                return spec
            rpi, chunk = gpu_rows(rows, inner, params)
            nx, ny = -(-inner // chunk), -(-rows // rpi)
            lx, ly = group_2d(nx, ny, wg)
            new = {**s, **kernels.scalars(rpi=rpi, chunk=chunk)}
            return dataclasses.replace(spec, scalars=new, global_size=(round_up(nx, lx), round_up(ny, ly)),
                                       local_size=(lx, ly))
        if "chunk" not in s and g == (1, -(-rows // rpi)):
            ly = group_2d(rows, 1, wg)[0]  # rows along dimension 1 here
            return dataclasses.replace(spec, scalars={**s, **kernels.scalars(rpi=1)},
                                       global_size=(1, round_up(rows, ly)), local_size=(1, ly))
        return spec
    if "n" in s and "chunk" in s and "rows" not in s and len(g) == 1:
        n, chunk = int(s["n"]), int(s["chunk"])
        if g != (-(-n // chunk),):
            return spec
        _, chunk = gpu_rows(1, n, params)
        nx = -(-n // chunk)
        lx = group_2d(nx, 1, wg)[0]
        return dataclasses.replace(spec, scalars={**s, **kernels.scalars(chunk=chunk)},
                                   global_size=(round_up(nx, lx),), local_size=(lx,))
    if "n_out" in s and "opi" in s and len(g) == 1:
        n_out, opi = int(s["n_out"]), int(s["opi"])
        if g != (-(-n_out // opi),):
            return spec
        lx = group_2d(n_out, 1, wg)[0]
        return dataclasses.replace(spec, scalars={**s, **kernels.scalars(opi=1)},
                                   global_size=(round_up(n_out, lx),), local_size=(lx,))
    return spec


def pool_gpu_spec(kernel: str, nb: int, c: int, ih: int, iw: int, wh: kernels.Window, ww: kernels.Window,
                  filt: tuple[int, int], strides: tuple[int, int], pads: Pads, clamp: Clamp,
                  params: KernelParams = GPU) -> KernelSpec:
    """``avg_pool`` / ``max_pool`` on the gpu family (``gpu_pool.cl``): one output float per
    work-item; ``wh``, ``ww``: the windows over the input padded by ``pads`` (pool.py's)."""
    (ept, epb), (epl, epr) = pads
    (fh, fw), (sh, sw) = filt, strides
    args = kernels.scalars(NB=nb, C=c, IH=ih, IW=iw, OH=wh.out, OW=ww.out, FH=fh, FW=fw, SH=sh, SW=sw,
                           PT=wh.pad, PL=ww.pad, EPT=ept, EPB=epb, EPL=epl, EPR=epr, lo=float(clamp[0]),
                           hi=float(clamp[1]))
    lx, ly = group_2d(c, ww.out, params.small_wg)
    return KernelSpec(files=("gpu_pool.cl",), name=kernel, defines={}, entry=f"{kernel}_gpu",
                      global_size=(round_up(c, lx), round_up(ww.out, ly), nb * wh.out), local_size=(lx, ly, 1),
                      args=("input", "output", *args), scalars=args)
