"""Host side of each float32 kernel in ``cl_kernels``: choose its blocking, pack its constants,
name its arguments and launch geometry (a ``KernelSpec``), and turn a spec into a ready ``Launch``.

Every size, stride and clamp bound is a kernel ARGUMENT, so one program serves every shape: a
program costs ~0.1-0.4 s to build and each kernel ~0.15 s to JIT on PoCL, which a model pays
once per distinct kernel, not per layer. What stays compile-time is what the register blocking
needs: gemm.cl and conv2d.cl are templates instantiated once per blocking of the device's
``CpuTiles`` (``cpu_tiles``: tiles per SIMD width) inside one program (depthwise.cl, once per
fast filter geometry of the same table: ``depthwise_specs``).

Blocking (measured on PoCL, AVX-512, 2 cores; see benchmarks/cl_kernels.py and BENCHMARKS.md):
- gemm / conv2d: an MR x 16*NV tile (rows or pixels x output channels), from ``tiles.blockings``; NV
  chosen per layer for the least padded work (``choose_nv``); the last panel and the last row
  block shifted back to end at the tensor's edge (``packing.panel_starts``), so tiles are whole;
  each work-item runs ``tpi`` tiles (``pbn`` pixel blocks) in turn. A conv with fewer than 16
  output channels takes ``conv2d_narrow.cl`` instead: 8-channel panels x ``tiles.narrow_pixels``
  pixels of one output row (MediaPipe's 8-channel layers ran 2x faster than on 16-wide tiles).
- gemm with one row (FULLY_CONNECTED on one input, a squeeze-excite 1x1 conv): the same tiles,
  rows past the last repeating it (the FMAs of a row tile for one row, hidden behind the weights'
  stream: MobileNetV2's 1280x1000 classifier 171-184 us on a gemv kernel of its own, 181-245 us
  here, on a Zen 3; that kernel cost 0.14-0.2 s of work-group compile in every cold load);
  panel-major gemms prefetch the next panel while rereading the current one from L2 (gemm.cl).
The small generic kernels (elementwise.cl, pool.cl, reduce.cl) take their sizes as scalar
arguments too; ``row_blocks`` splits their work.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from teflon_py import ir, quant
from teflon_py.opencl.kernels import packing
from teflon_py.opencl.kernels.cpu_tiles import AVX512, CpuTiles
from teflon_py.opencl.runtime.device import DeviceContext
from teflon_py.opencl.runtime.launch import (
    ArgUse,
    ExternalTensor,
    Launch,
    LaunchList,
    constant_buffer,
    zeros_buffer,
)
from teflon_py.opencl.runtime.programs import FileEntry, ProgramCache, template
from teflon_py.ops.common import FusedActivation, Padding
from teflon_py.ops.common import window as common_window

#: Work-items a gemm (conv2d) launch aims for at least; each takes ``tpi`` tiles (``pbn`` pixel
#: blocks) in turn: fewer, longer items measured faster, down to ~32 per core.
GEMM_ITEMS = 64
#: Work-items a weight-bound gemm launch keeps at least (each streams its panels once).
GEMM_MIN_ITEMS = 8
#: Relative speed of each NV at equal padded work (fewer vectors: more broadcasts per FMA).
NV_EFFICIENCY = {4: 1.0, 3: 0.98, 2: 0.94, 1: 0.8}


@dataclass(frozen=True)
class KernelSpec:
    """Everything needed to build and launch one kernel, before any device is involved.

    ``args`` names the kernel's arguments in order: ``"input"``/``"output"`` are bound by the
    caller, ``"zeros"`` is the shared zero buffer, names in ``constants`` are packed arrays and
    names in ``scalars`` by-value arguments. ``entry`` is the OpenCL function when it differs
    from ``name`` (a template's instantiation, e.g. ``gemm_6x4``); ``name`` is the family.
    """

    files: tuple[FileEntry, ...]
    name: str
    defines: Mapping[str, object]
    global_size: tuple[int, ...]
    local_size: tuple[int, ...]
    args: tuple[str, ...]
    constants: Mapping[str, np.ndarray] = field(default_factory=dict)
    zeros: int = 0  # floats of zeros the kernel may read
    flops: int = 0
    scalars: Mapping[str, np.int32 | np.float32] = field(default_factory=dict)  # by-value arguments
    entry: str = ""
    out_shape: tuple[int, ...] = ()
    meta: Mapping[str, int] = field(default_factory=dict)  # sizes other specs derive from this one
    #: a machine-dependent kernel's variants: the program's ``<name>_variant`` kernel writes the
    #: index of the one that compiled, which the partition's stats report (``compiled.py``)
    variants: tuple[str, ...] = ()
    options: tuple[str, ...] = ()  # build options beyond the -D macros (e.g. exact float32 division)

    @property
    def function(self) -> str:
        """The OpenCL kernel function to create."""
        return self.entry or self.name

    def launch(self, dc: DeviceContext, cache: ProgramCache, buffers: Mapping[str, Any]) -> Launch:
        """Build (or fetch) the program, create the kernel once and set every argument."""
        import pyopencl as cl

        program = cache.build(self.files, self.defines, self.options)
        kernel = cl.Kernel(program, self.function)
        keep = []
        for i, arg in enumerate(self.args):
            if arg == "zeros":
                buf = zeros_buffer(dc, self.zeros)
            elif arg in self.constants:
                buf = constant_buffer(dc, self.constants[arg])
            elif arg in self.scalars:
                buf = self.scalars[arg]
            else:
                buf = buffers.get(arg)
            kernel.set_arg(i, buf)
            keep.append(buf)
        return Launch(kernel, self.global_size, self.local_size, self.name, tuple(keep),
                      info={"kernel": self.function, "flops": self.flops})


#: A clamp (lo, hi): what a fused activation, or several folded into one another, leaves.
Clamp = tuple[float, float]
UNBOUNDED: Clamp = (-math.inf, math.inf)


def clamp_of(activation: ir.Activation | int | Clamp) -> Clamp:
    """The (lo, hi) bounds of a fused activation (a range passes through)."""
    if isinstance(activation, tuple):
        return (float(activation[0]), float(activation[1]))
    if isinstance(activation, FusedActivation):
        lo, hi = activation.range(np.float32)
        return (float(lo), float(hi))
    lo, hi = quant.activation_range(activation, np.dtype(np.float32))
    return (float(lo), float(hi))


#: float32's largest finite value: TFLite's CalculateActivationRange bound for an unbounded side
FLT_MAX = float(np.finfo(np.float32).max)


def fused_clamp(activation: ir.Activation | int | FusedActivation) -> Clamp:
    """The clamp LiteRT's float kernels apply for an op's fused activation: its bounds, with an
    unbounded side at -FLT_MAX / FLT_MAX (CalculateActivationRange), so such an op turns
    infinities into the largest finite floats even with no activation; NaN passes the compares."""
    lo, hi = clamp_of(activation)
    return (max(lo, -FLT_MAX), min(hi, FLT_MAX))


#: The op an epilogue applies last, after its clamp and any residual (the kernels' ``post``
#: argument, common.cl's ``post16``; 0: none): a folded PRELU (its slopes bound as "alpha"), or a
#: folded activation (``fusion.EPILOGUE_ACTIVATIONS``): HARD_SWISH, or swish x * LOGISTIC(x).
POST_CODES = {"PRELU": 1, "HARD_SWISH": 2, "SWISH": 3}


def post_code(alpha: np.ndarray | None = None, activation: str | None = None) -> int:
    """The ``post`` argument for a folded PRELU's slopes ``alpha`` or a folded ``activation``
    (a key of ``POST_CODES``; an epilogue applies one of them at most)."""
    if alpha is not None and activation is not None:
        raise ValueError(f"an epilogue applies a PRELU or {activation}, not both")
    if activation is not None and activation not in POST_CODES or activation == "PRELU":
        raise ValueError(f"no epilogue activation {activation!r}")
    return POST_CODES["PRELU"] if alpha is not None else POST_CODES[activation] if activation else 0


def scalars(**values: float) -> dict[str, np.int32 | np.float32]:
    """Kernel by-value arguments: ints as int32, floats as float32 (infinities allowed)."""
    return {k: np.float32(v) if isinstance(v, float) else np.int32(v) for k, v in values.items()}


def row_blocks(rows: int, inner: int, target: int = 4096) -> tuple[tuple[int, int], int, int]:
    """Split ``rows`` x ``inner`` elements into work-items of about ``target`` elements.

    Returns (global size, rows per item, chunk): long rows are cut into ``chunk``-long pieces
    (one row per item); short rows are grouped ``rows per item`` at a time.
    """
    rows, inner = max(rows, 1), max(inner, 1)
    if inner >= target:
        return (-(-inner // target), rows), 1, target
    rpi = max(1, target // inner)
    return (1, -(-rows // rpi)), rpi, inner


def activation_defines(activation: ir.Activation | int | Clamp) -> dict[str, float]:
    """ACT_MIN / ACT_MAX for a fused activation or clamp (unbounded sides are left out)."""
    lo, hi = clamp_of(activation)
    out = {}
    if math.isfinite(lo):
        out["ACT_MIN"] = float(lo)
    if math.isfinite(hi):
        out["ACT_MAX"] = float(hi)
    return out


def vectors_for(channels: int) -> int:
    """16-float vectors per work-item across the channel axis: 4 when there are 64 or more."""
    return min(4, -(-channels // 16))


def choose_nv(n: int, tiles: CpuTiles = AVX512) -> int:
    """The NV of ``tiles.blockings`` that covers ``n`` columns fastest: least work (whole panels, the
    last one overlapping) over its relative speed (96 columns: 2 x 48, not 2 x 64 with a third
    wasted), among those whose panel fits in ``n`` (narrower layers take the kernels' slow edge
    path); 1 below 16 columns."""
    rows = tiles.tile_rows
    fitting = [nv for nv in rows if 16 * nv <= n] or [min(rows)]
    return min(fitting, key=lambda nv: (packing.round_up(n, 16 * nv) / NV_EFFICIENCY[nv], -nv))


def template_files(kernel_file: str, family: str, blockings: tuple[tuple[int, int], ...],
                   extra: tuple[int, int] | None = None) -> tuple[FileEntry, ...]:
    """common.cl, then ``kernel_file`` instantiated once per (rows, nv) blocking, named
    ``<family>_<rows>x<nv>``; a blocking outside the standard set is one more instantiation."""
    wanted = blockings if extra is None or extra in blockings else (*blockings, extra)
    rows_macro = "MR" if family == "gemm" else "PW"
    return ("common.cl", *(template(kernel_file, **{f"{family.upper()}_NAME": f"{family}_{r}x{v}",
                                                    rows_macro: r, "NV": v}) for r, v in wanted))


@dataclass(frozen=True)
class Batching:
    """Batches of a batched GEMM: up to three batch dims, each operand's stride along each (floats;
    0 broadcasts). B strides count floats of the *packed* B."""

    dims: tuple[int, int, int]
    a_strides: tuple[int, int, int]
    b_strides: tuple[int, int, int]

    @property
    def count(self) -> int:
        return self.dims[0] * self.dims[1] * self.dims[2]


def epilogue_scalars(activation: ir.Activation | int | Clamp, residual: Clamp | None) -> dict[str, Any]:
    """The clamp and residual arguments shared by gemm and conv2d: lo, hi, res, rlo, rhi."""
    lo, hi = clamp_of(activation)
    rlo, rhi = residual if residual is not None else UNBOUNDED
    return scalars(lo=float(lo), hi=float(hi), res=int(residual is not None), rlo=float(rlo), rhi=float(rhi))


def gemm_spec(m: int, n: int, k: int, b_kn: np.ndarray | None, bias: np.ndarray | None = None,
              activation: ir.Activation | int | Clamp = ir.Activation.NONE, *, lda: int | None = None,
              ldc: int | None = None, ask: int = 1, batching: Batching | None = None,
              pack_strides: tuple[int, int] | None = None, mr: int | None = None,
              nv: int | None = None, residual: Clamp | None = None, tpi: int | None = None,
              panel_major: bool | None = None, tiles: CpuTiles = AVX512,
              alpha: np.ndarray | None = None, post_act: str | None = None,
              gate: bool = False) -> KernelSpec:
    """C[m][n] = act(A[m][k] . B + bias) with A rows ``lda`` apart and C rows ``ldc`` apart.

    ``b_kn`` is B as [K][N] (or [batches][K][N]), packed here; None when B is packed on the device
    by ``pack_b_spec`` (then ``pack_strides`` = B's (k, n) strides, and the caller binds "weights").
    ``residual``: the clamp of an ADD folded into the epilogue; the caller binds "residual", a
    tensor shaped like C. ``alpha``: the per-column slopes of a PRELU folded in after it;
    ``post_act``: instead a HARD_SWISH or swish folded in after it (``post_code``).
    ``gate``: A's columns scaled by a runtime vector G[K] the caller binds as "gate" (a
    squeeze-excite MUL folded in): the template's ``_gated`` instantiation, never narrow.
    """
    if gate and (ask != 1 or (batching is not None and batching.count > 1)):
        raise ValueError("a gated gemm reads A unstrided and unbatched")
    if (not gate and n < 16 and 16 % n == 0 and ask == 1 and b_kn is not None and np.ndim(b_kn) == 2
            and (batching is None or batching.count == 1) and not (mr or nv or tpi)):
        return _gemm_narrow_spec(m, n, k, b_kn, bias, activation, lda or k, ldc or n, residual, alpha,
                                 post_act)
    nv = nv or choose_nv(n, tiles)
    mr = mr or tiles.rows_for(nv)  # fewer rows than mr take the edge path (no new variant)
    nr = 16 * nv
    np_ = packing.round_up(n, nr)
    global_size: tuple[int, ...] = (1, 1, 1)
    dims, a_strides, b_strides = (1, 1, 1), (0, 0, 0), (0, 0, 0)
    batches = 1
    if batching is not None and batching.count > 1:
        batches = batching.count
        dims, a_strides, b_strides = batching.dims, batching.a_strides, batching.b_strides
        global_size = (1, 1, batches)
    args = scalars(M=m, N=n, K=k, lda=lda or k, ask=ask, ldc=ldc or n)
    args.update(epilogue_scalars(activation, residual))
    args.update(scalars(bd1=dims[1], bd2=dims[2], **{f"as{i}": v for i, v in enumerate(a_strides)},
                        **{f"bs{i}": v for i, v in enumerate(b_strides)}))
    row_blocks, panels = -(-m // mr), np_ // nr
    n_tiles = row_blocks * panels
    panel_major = np_ > m if panel_major is None else panel_major  # weights outweigh activations
    if not tpi:
        tpi = max(1, n_tiles // GEMM_ITEMS)
        if panel_major:  # weight-bound: few items, each streaming its panels once
            tpi = max(tpi, -(-n_tiles // GEMM_MIN_ITEMS))
        elif tpi >= panels:  # whole rows per item: each C row written by one work-item
            tpi = -(-tpi // panels) * panels
    args.update(scalars(tpi=tpi, panel_major=int(panel_major), post=post_code(alpha, post_act)))
    global_size = (-(-n_tiles // tpi), 1, global_size[2])
    constants = {"bias": packing.panel_bias(bias, n, nr)}
    if alpha is not None:
        constants["alpha"] = packing.panel_bias(alpha, n, nr)
    if b_kn is not None:
        b = np.asarray(b_kn, np.float32)
        constants["weights"] = (packing.pack_gemm_weights(b, nr) if b.ndim == 2 else
                                np.stack([packing.pack_gemm_weights(x, nr) for x in b]))
    meta = {"M": m, "N": n, "K": k, "NP": np_, "NR": nr}
    if pack_strides is not None:
        meta.update({"PSK": pack_strides[0], "PSN": pack_strides[1]})
    files = template_files("gemm.cl", "gemm", tiles.blockings, (mr, nv))
    entry = f"gemm_{mr}x{nv}"
    if ask != 1:  # A read along k with a stride: its own instantiation (and program)
        entry += "_strided"
        files = (*files, template("gemm.cl", GEMM_NAME=entry, MR=mr, NV=nv, STRIDED_A=1))
    if gate:  # G scales A's columns: its own instantiation in the one template program
        entry += "_gated"
        files = (*files, template("gemm.cl", GEMM_NAME=entry, MR=mr, NV=nv, GATED=1))
    return KernelSpec(
        files=files, name="gemm", defines={},
        global_size=global_size, local_size=(1, 1, 1),
        args=("input", "weights", "bias", "output", "residual" if residual is not None else "zeros",
              "alpha" if alpha is not None else "zeros", *args, *(("gate",) if gate else ())),
        constants=constants, flops=2 * m * n * k * batches, scalars=args, entry=entry,
        out_shape=(m, n), meta=meta, zeros=16,
    )


#: A gate folded into a gemm (``gemm_spec(gate=True)``) against the MUL it replaces, measured on a
#: Zen 3 (AVX2, 6x1 tiles, PoCL, 2 cores) over EfficientNet-B0's and MobileNetV3's projections: the
#: gated loads cost ~2.2 ps per m * k * (n rounded up to 16) (each row block rescales its panels),
#: the MUL ~0.24 ns per m * k element plus ~5 us for its launch. So early blocks (large maps, few
#: columns: 3136x96x24 62 -> 16 us) gain, late ones with wide panels (49x1152x320) lose.
GATE_PS_PER_MKN = 2.2
MUL_PS_PER_MK = 240.0
MUL_LAUNCH_PS = 5.0e6
#: Fewer rows than this: the gated gemm would rescale the weights for a row tile mostly repeating
#: its last row (a one-pixel conv: the MUL before it is one launch over a few hundred values).
GATE_MIN_ROWS = 16


def gate_fold_reason(m: int, k: int, n: int) -> str | None:
    """Why a channel-wise MUL of a gemm's A (m x k) should stay its own launch rather than fold into
    the gemm (n columns) as a gate, or None when folding pays (the constants above)."""
    if m < GATE_MIN_ROWS:
        return f"{m} rows: fewer than a gated gemm's {GATE_MIN_ROWS}"
    if GATE_PS_PER_MKN * m * k * packing.round_up(n, 16) >= MUL_PS_PER_MK * m * k + MUL_LAUNCH_PS:
        return f"{m}x{k}x{n}: rescaling the weights per row block costs more than the MUL"
    return None


#: Work-items a ``gemm_narrow`` launch aims for.
GEMM_NARROW_ITEMS = 16


def _gemm_narrow_spec(m: int, n: int, k: int, b_kn: np.ndarray, bias: np.ndarray | None,
                      activation: ir.Activation | int | Clamp, lda: int, ldc: int,
                      residual: Clamp | None, alpha: np.ndarray | None = None,
                      post_act: str | None = None) -> KernelSpec:
    """``gemm_narrow.cl`` for N in (1, 2, 4, 8) constant columns (C as flat 16-float vectors)."""
    if ldc != n:
        raise ValueError(f"gemm_narrow writes C rows {n} apart, not {ldc}")
    reps = 16 // n
    b16 = np.tile(np.asarray(b_kn, np.float32).reshape(k, n), (1, reps))  # [K][16]: lane l is column l % n
    bias16 = np.tile(packing.pad_vector(bias, n, n), reps)
    vectors = -(-m * n // 16)
    vpi = max(4, -(-vectors // GEMM_NARROW_ITEMS))
    vpi = -(-vpi // 4) * 4  # whole groups of the kernel's 4 vectors
    args = scalars(M=m, K=k, lda=lda)
    args.update(epilogue_scalars(activation, residual))
    args.update(scalars(vpi=vpi, post=post_code(alpha, post_act)))  # the kernel's order
    constants = {"weights": np.ascontiguousarray(b16), "bias": bias16.astype(np.float32)}
    if alpha is not None:
        constants["alpha"] = np.tile(packing.pad_vector(alpha, n, n), reps)
    name = f"gemm_narrow_{n}"
    return KernelSpec(
        files=("common.cl", template("gemm_narrow.cl", GEMM_NARROW_NAME=name, NN=n)), name="gemm", defines={},
        global_size=(-(-vectors // vpi),), local_size=(1,),
        args=("input", "weights", "bias", "output", "residual" if residual is not None else "zeros",
              "alpha" if alpha is not None else "zeros", *args),
        constants=constants, flops=2 * m * n * k, scalars=args, entry=name, out_shape=(m, n), zeros=16,
    )


def pack_b_spec(gemm: KernelSpec, batches: int) -> KernelSpec:
    """Pack ``batches`` runtime B matrices ("input") into ``gemm``'s panels ("output"); same program."""
    d = gemm.meta
    args = scalars(K=d["K"], N=d["N"], NP=d["NP"], nr=d["NR"], psk=d["PSK"], psn=d["PSN"])
    return KernelSpec(
        files=gemm.files, name="gemm_pack_b", defines={},
        global_size=(d["NP"] // d["NR"], d["K"], batches), local_size=(1, 1, 1),
        args=("input", "output", *args), scalars=args, meta=d,
    )


def packed_b_floats(gemm: KernelSpec) -> int:
    """Floats of one packed B of ``gemm``: NP * K."""
    return int(gemm.meta["NP"]) * int(gemm.meta["K"])


def fully_connected_spec(batch: int, weights_nk: np.ndarray, bias: np.ndarray | None = None,
                         activation: ir.Activation | int | Clamp = ir.Activation.NONE,
                         tiles: CpuTiles = AVX512) -> KernelSpec:
    """TFLite FULLY_CONNECTED: weights [out][in]."""
    n, k = weights_nk.shape
    return gemm_spec(batch, n, k, np.asarray(weights_nk, np.float32).T, bias, activation, tiles=tiles)


@dataclass(frozen=True)
class Window:
    """A sliding window along one axis: output size and padding before the first tap."""

    out: int
    pad: int


def window(size: int, filt: int, stride: int, dilation: int, padding: ir.Padding | int | Padding,
           axis: int = 0) -> Window:
    """TFLite's ComputeOutSize and ComputePaddingWithOffset (the before-side) for one axis; an
    op-layer ``Padding`` goes through ``ops.common.window`` (``axis`` picks its explicit side)."""
    if not isinstance(padding, Padding):  # a TFLite SAME/VALID code (callers building specs directly)
        padding = Padding.tf_same() if ir.Padding(int(padding)) == ir.Padding.SAME else Padding.valid()
    w = common_window(size, filt, stride, dilation, padding, axis)
    return Window(w.out, w.before)


#: Explicit zero padding ((top, bottom), (left, right)) folded in from a PAD op.
Pads = tuple[tuple[int, int], tuple[int, int]]
NO_PADS: Pads = ((0, 0), (0, 0))


def padded_windows(ih: int, iw: int, kh: int, kw: int, stride: tuple[int, int], dilation: tuple[int, int],
                   padding: ir.Padding | int | Padding, pads: Pads) -> tuple[Window, Window]:
    """The windows over an input padded by ``pads`` first, with pads counted in the before-side."""
    (pt, pb), (pl, pr) = pads
    wh = window(ih + pt + pb, kh, stride[0], dilation[0], padding, 0)
    ww = window(iw + pl + pr, kw, stride[1], dilation[1], padding, 1)
    return Window(wh.out, wh.pad + pt), Window(ww.out, ww.pad + pl)


#: Output channels below which a convolution takes ``conv2d_narrow.cl`` (8 channels per vector,
#: ``CpuTiles.narrow_pixels`` pixels per block): a 16-wide tile would be half empty or worse.
NARROW_CHANNELS = 16


def conv2d_spec(input_shape: tuple[int, int, int, int], filt: np.ndarray, bias: np.ndarray | None,
                *, stride: tuple[int, int] = (1, 1), dilation: tuple[int, int] = (1, 1),
                padding: ir.Padding | int = ir.Padding.SAME,
                activation: ir.Activation | int | Clamp = ir.Activation.NONE,
                pads: Pads = NO_PADS, pw: int | None = None, nv: int | None = None,
                residual: Clamp | None = None, tiles: CpuTiles = AVX512,
                alpha: np.ndarray | None = None, post_act: str | None = None,
                gate: bool = False) -> KernelSpec:
    """NHWC CONV_2D with TFLite's filter [OC][KH][KW][IC]; 1x1 unpadded stride-1 becomes a GEMM,
    and so does a window that covers the whole unpadded input (one output pixel: a GEMV).

    ``pads``: a zero PAD folded in; the kernel reads zeros for taps outside the input anyway.
    ``residual``: an ADD folded into the epilogue, ``alpha``: a PRELU's per-channel slopes after
    it, ``post_act``: instead a HARD_SWISH or swish after it (see ``gemm_spec``).
    ``gate``: the input's channels scaled by a runtime vector bound as "gate" (``gemm_spec``; 1x1
    unpadded stride 1 only).
    """
    nb, ih, iw, ic = input_shape
    oc, kh, kw, fic = filt.shape
    if fic != ic:
        raise ValueError(f"filter has {fic} input channels, input has {ic}")
    wh, ww = padded_windows(ih, iw, kh, kw, stride, dilation, padding, pads)
    if (kh, kw) == (1, 1) and stride == (1, 1) and pads == NO_PADS and pw is None:
        spec = gemm_spec(nb * ih * iw, oc, ic, np.asarray(filt, np.float32).reshape(oc, ic).T, bias,
                         activation, nv=nv, residual=residual, tiles=tiles, alpha=alpha, post_act=post_act,
                         gate=gate)
        return _replace(spec, out_shape=(nb, ih, iw, oc))
    if gate:
        raise ValueError("a gated convolution must be 1x1, unpadded, stride 1")
    if ((wh.out, ww.out, wh.pad, ww.pad) == (1, 1, 0, 0) and (kh, kw) == (ih, iw) and pads == NO_PADS
            and pw is None):  # one window over the whole input: a fully connected layer (face landmarks' head)
        spec = gemm_spec(nb, oc, kh * kw * ic, np.asarray(filt, np.float32).reshape(oc, -1).T, bias,
                         activation, nv=nv, residual=residual, tiles=tiles, alpha=alpha, post_act=post_act)
        return _replace(spec, out_shape=(nb, 1, 1, oc))
    if oc < NARROW_CHANNELS and nv is None and post_act is None:  # its epilogue has PRELU, not these
        return _conv2d_narrow_spec(nb, ih, iw, ic, wh, ww, filt, bias, stride, dilation, activation,
                                   residual, alpha, pw or tiles.narrow_pixels)
    nv = nv or choose_nv(oc, tiles)
    pw = pw or tiles.rows_for(nv)  # fewer pixels than pw take the kernel's edge path (no new variant)
    ocb = 16 * nv
    ocp = packing.round_up(oc, ocb)
    npix = nb * wh.out * ww.out
    args = scalars(NB=nb, IH=ih, IW=iw, IC=ic, OH=wh.out, OW=ww.out, OC=oc, KH=kh, KW=kw, SH=stride[0],
                   SW=stride[1], DH=dilation[0], DW=dilation[1], PT=wh.pad, PL=ww.pad)
    args.update(epilogue_scalars(activation, residual))
    pixel_blocks = -(-npix // pw)
    pbn = max(1, min(pixel_blocks, pixel_blocks * (ocp // ocb) // GEMM_ITEMS))
    args.update(scalars(pbn=pbn, post=post_code(alpha, post_act)))
    constants = {"weights": packing.pack_conv_weights_shifted(np.asarray(filt, np.float32), ocb),
                 "bias": packing.panel_bias(bias, oc, ocb)}
    if alpha is not None:
        constants["alpha"] = packing.panel_bias(alpha, oc, ocb)
    return KernelSpec(
        files=template_files("conv2d.cl", "conv2d", tiles.blockings, (pw, nv)), name="conv2d", defines={},
        global_size=(ocp // ocb, -(-pixel_blocks // pbn)), local_size=(1, 1),
        args=("input", "weights", "bias", "zeros", "output", "residual" if residual is not None else "zeros",
              "alpha" if alpha is not None else "zeros", *args),
        constants=constants,
        zeros=ic * kw, flops=2 * npix * oc * kh * kw * ic, scalars=args, entry=f"conv2d_{pw}x{nv}",
        out_shape=(nb, wh.out, ww.out, oc),
    )


def _conv2d_narrow_spec(nb: int, ih: int, iw: int, ic: int, wh: Window, ww: Window, filt: np.ndarray,
                        bias: np.ndarray | None, stride: tuple[int, int], dilation: tuple[int, int],
                        activation: ir.Activation | int | Clamp, residual: Clamp | None,
                        alpha: np.ndarray | None, pw: int) -> KernelSpec:
    """``conv2d_narrow.cl``: 8-channel panels x ``pw`` pixels of one output row per block."""
    oc, kh, kw, _ = filt.shape
    panels = -(-oc // 8)
    blocks = nb * wh.out * -(-ww.out // pw)
    args = scalars(NB=nb, IH=ih, IW=iw, IC=ic, OH=wh.out, OW=ww.out, OC=oc, KH=kh, KW=kw, SH=stride[0],
                   SW=stride[1], DH=dilation[0], DW=dilation[1], PT=wh.pad, PL=ww.pad)
    args.update(epilogue_scalars(activation, residual))
    pbn = max(1, min(blocks, blocks * panels // GEMM_ITEMS))
    args.update(scalars(pbn=pbn, prelu=int(alpha is not None)))  # the kernel's order
    constants = {"weights": packing.pack_conv_weights_shifted(np.asarray(filt, np.float32), 8),
                 "bias": packing.panel_bias(bias, oc, 8)}
    if alpha is not None:
        constants["alpha"] = packing.panel_bias(alpha, oc, 8)
    entry = f"conv2d_narrow_{pw}"
    return KernelSpec(
        files=("common.cl", template("conv2d_narrow.cl", CONV2D_NARROW_NAME=entry, PW=pw)), name="conv2d",
        defines={}, global_size=(panels, -(-blocks // pbn)), local_size=(1, 1),
        args=("input", "weights", "bias", "zeros", "output", "residual" if residual is not None else "zeros",
              "alpha" if alpha is not None else "zeros", *args),
        constants=constants, zeros=ic * kw, flops=2 * nb * wh.out * ww.out * oc * kh * kw * ic, scalars=args,
        entry=entry, out_shape=(nb, wh.out, ww.out, oc),
    )


def _replace(spec: KernelSpec, **changes: Any) -> KernelSpec:
    import dataclasses

    return dataclasses.replace(spec, **changes)


def output_shape(spec: KernelSpec) -> tuple[int, ...]:
    """The NHWC (conv) or [M][N] (gemm) shape a spec writes."""
    if spec.out_shape:
        return tuple(spec.out_shape)
    d = spec.defines
    if spec.name == "gemm":
        return (int(d["M"]), int(d["N"]))
    return (int(d["NB"]), int(d["OH"]), int(d["OW"]), int(d["OC"]))


def single_launch_list(dc: DeviceContext, cache: ProgramCache, spec: KernelSpec,
                       input_shape: tuple[int, ...]) -> LaunchList:
    """A LaunchList running just ``spec`` from one input to one output (tests, benchmarks)."""
    launch = spec.launch(dc, cache, {})
    uses = {name: ArgUse(launch.kernel, i) for i, name in enumerate(spec.args) if name in ("input", "output")}
    x = ExternalTensor(tuple(input_shape), np.dtype(np.float32), [uses["input"]])
    y = ExternalTensor(output_shape(spec), np.dtype(np.float32), [uses["output"]])
    return LaunchList(dc, [launch], [x], [y], after_first_run=cache.commit)


#: strides, dilations and filter sizes the kernels take: they index in 32-bit ints, and anything
#: past a real input's extent gives one window anyway (a corrupt model's 2147483647 would not build)
MAX_WINDOW_PARAMETER = 1 << 16


def index_range_reason(values: tuple[int, ...]) -> str | None:
    """Why window parameters are beyond what the kernels index, or None."""
    if max(values) > MAX_WINDOW_PARAMETER:
        return f"window parameters {list(values)} above {MAX_WINDOW_PARAMETER} are not lowered"
    return None
