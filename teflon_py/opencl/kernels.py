"""Host side of each float32 kernel in ``cl_kernels``: choose its blocking, pack its constants,
name its macros and launch geometry (a ``KernelSpec``), and turn a spec into a ready ``Launch``.

Blocking (measured on PoCL, AVX-512, 2 cores; see benchmarks/cl_kernels.py):
- gemm: an MR x 16*NV tile per work-item, 6 x 64 when N allows, 12 x 32 or 14 x 16 for narrow N.
- conv2d: PW output pixels x 16*NV channels, same register budget as gemm.
- depthwise: up to 14 output pixels of a row (7 when strided) x 16 channels.
The small generic kernels (elementwise.cl, pool.cl, reduce.cl) take their sizes as scalar
arguments instead, so one program serves every shape; ``row_blocks`` splits their work.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from teflon_py import ir, quant
from teflon_py.opencl import packing
from teflon_py.opencl.device import DeviceContext
from teflon_py.opencl.programs import ProgramCache
from teflon_py.opencl.runtime import ArgUse, ExternalTensor, Launch, LaunchList, constant_buffer, zeros_buffer

#: Rows (gemm) or pixels (conv2d) per work-item for each number of 16-float vectors across N.
TILE_ROWS = {4: 6, 3: 8, 2: 12, 1: 14}


@dataclass(frozen=True)
class KernelSpec:
    """Everything needed to build and launch one kernel, before any device is involved.

    ``args`` names the kernel's arguments in order: ``"input"``/``"output"`` are bound by the
    caller, ``"zeros"`` is the shared zero buffer, any other name is a key of ``constants``.
    """

    files: tuple[str, ...]
    name: str
    defines: Mapping[str, object]
    global_size: tuple[int, ...]
    local_size: tuple[int, ...]
    args: tuple[str, ...]
    constants: Mapping[str, np.ndarray] = field(default_factory=dict)
    zeros: int = 0  # floats of zeros the kernel may read
    flops: int = 0
    scalars: Mapping[str, np.int32 | np.float32] = field(default_factory=dict)  # by-value arguments

    def launch(self, dc: DeviceContext, cache: ProgramCache, buffers: Mapping[str, Any]) -> Launch:
        """Build (or fetch) the program, create the kernel once and set every argument."""
        import pyopencl as cl

        program = cache.build(self.files, self.defines)
        kernel = cl.Kernel(program, self.name)
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
        return Launch(kernel, self.global_size, self.local_size, self.name, tuple(keep))


#: A clamp (lo, hi): what a fused activation, or several folded into one another, leaves.
Clamp = tuple[float, float]
UNBOUNDED: Clamp = (-math.inf, math.inf)


def clamp_of(activation: ir.Activation | int | Clamp) -> Clamp:
    """The (lo, hi) bounds of a fused activation (a range passes through)."""
    if isinstance(activation, tuple):
        return (float(activation[0]), float(activation[1]))
    lo, hi = quant.activation_range(activation, np.dtype(np.float32))
    return (float(lo), float(hi))


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


def gemm_spec(m: int, n: int, k: int, b_kn: np.ndarray | None, bias: np.ndarray | None = None,
              activation: ir.Activation | int | Clamp = ir.Activation.NONE, *, lda: int | None = None,
              ldc: int | None = None, ask: int = 1, batching: Batching | None = None,
              pack_strides: tuple[int, int] | None = None, mr: int | None = None,
              nv: int | None = None) -> KernelSpec:
    """C[m][n] = act(A[m][k] . B + bias) with A rows ``lda`` apart and C rows ``ldc`` apart.

    ``b_kn`` is B as [K][N] (or [batches][K][N]), packed here; None when B is packed on the device
    by ``pack_b_spec`` (then ``pack_strides`` = B's (k, n) strides, and the caller binds "weights").
    """
    nv = nv or vectors_for(n)
    mr = min(mr or TILE_ROWS[nv], m)
    nr = 16 * nv
    np_ = packing.round_up(n, nr)
    defines: dict[str, object] = {"M": m, "N": n, "K": k, "NP": np_, "MR": mr, "NV": nv, "LDA": lda or k,
                                  "LDC": ldc or n, **activation_defines(activation)}
    if ask != 1:
        defines["ASK"] = ask
    global_size: tuple[int, ...] = (np_ // nr, -(-m // mr))
    batches = 1
    if batching is not None and batching.count > 1:
        batches = batching.count
        defines.update({"BD1": batching.dims[1], "BD2": batching.dims[2],
                        **{f"ABS{i}": s for i, s in enumerate(batching.a_strides)},
                        **{f"BBS{i}": s for i, s in enumerate(batching.b_strides)}})
        global_size = (*global_size, batches)
    if pack_strides is not None:
        defines.update({"PSK": pack_strides[0], "PSN": pack_strides[1]})
    constants = {"bias": packing.pad_vector(bias, n, np_)}
    if b_kn is not None:
        b = np.asarray(b_kn, np.float32)
        constants["weights"] = (packing.pack_gemm_weights(b, nr) if b.ndim == 2 else
                                np.stack([packing.pack_gemm_weights(x, nr) for x in b]))
    return KernelSpec(
        files=("common.cl", "gemm.cl"), name="gemm", defines=defines,
        global_size=global_size, local_size=(1,) * len(global_size),
        args=("input", "weights", "bias", "output"), constants=constants,
        flops=2 * m * n * k * batches,
    )


def pack_b_spec(gemm: KernelSpec, batches: int) -> KernelSpec:
    """Pack ``batches`` runtime B matrices ("input") into ``gemm``'s panels ("output"); same program."""
    d = gemm.defines
    nr = 16 * int(d["NV"])
    return KernelSpec(
        files=gemm.files, name="gemm_pack_b", defines=d,
        global_size=(int(d["NP"]) // nr, int(d["K"]), batches), local_size=(1, 1, 1),
        args=("input", "output"),
    )


def packed_b_floats(gemm: KernelSpec) -> int:
    """Floats of one packed B of ``gemm``: NP * K."""
    return int(gemm.defines["NP"]) * int(gemm.defines["K"])


def fully_connected_spec(batch: int, weights_nk: np.ndarray, bias: np.ndarray | None = None,
                         activation: ir.Activation | int | Clamp = ir.Activation.NONE) -> KernelSpec:
    """TFLite FULLY_CONNECTED: weights [out][in]."""
    n, k = weights_nk.shape
    return gemm_spec(batch, n, k, np.asarray(weights_nk, np.float32).T, bias, activation)


@dataclass(frozen=True)
class Window:
    """A sliding window along one axis: output size and padding before the first tap."""

    out: int
    pad: int


def window(size: int, filt: int, stride: int, dilation: int, padding: ir.Padding | int) -> Window:
    """TFLite's ComputeOutSize and ComputePaddingWithOffset (the before-side) for one axis."""
    eff = (filt - 1) * dilation + 1
    if ir.Padding(int(padding)) == ir.Padding.SAME:
        out = -(-size // stride)
    else:
        out = (size - eff + stride) // stride
    pad = max(((out - 1) * stride + eff - size) // 2, 0)
    return Window(out, pad)


#: Explicit zero padding ((top, bottom), (left, right)) folded in from a PAD op.
Pads = tuple[tuple[int, int], tuple[int, int]]
NO_PADS: Pads = ((0, 0), (0, 0))


def padded_windows(ih: int, iw: int, kh: int, kw: int, stride: tuple[int, int], dilation: tuple[int, int],
                   padding: ir.Padding | int, pads: Pads) -> tuple[Window, Window]:
    """The windows over an input padded by ``pads`` first, with pads counted in the before-side."""
    (pt, pb), (pl, pr) = pads
    wh = window(ih + pt + pb, kh, stride[0], dilation[0], padding)
    ww = window(iw + pl + pr, kw, stride[1], dilation[1], padding)
    return Window(wh.out, wh.pad + pt), Window(ww.out, ww.pad + pl)


def conv2d_spec(input_shape: tuple[int, int, int, int], filt: np.ndarray, bias: np.ndarray | None,
                *, stride: tuple[int, int] = (1, 1), dilation: tuple[int, int] = (1, 1),
                padding: ir.Padding | int = ir.Padding.SAME,
                activation: ir.Activation | int | Clamp = ir.Activation.NONE,
                pads: Pads = NO_PADS, pw: int | None = None, nv: int | None = None) -> KernelSpec:
    """NHWC CONV_2D with TFLite's filter [OC][KH][KW][IC]; 1x1 unpadded stride-1 becomes a GEMM.

    ``pads``: a zero PAD folded in; the kernel reads zeros for taps outside the input anyway.
    """
    nb, ih, iw, ic = input_shape
    oc, kh, kw, fic = filt.shape
    if fic != ic:
        raise ValueError(f"filter has {fic} input channels, input has {ic}")
    wh, ww = padded_windows(ih, iw, kh, kw, stride, dilation, padding, pads)
    if (kh, kw) == (1, 1) and stride == (1, 1) and pads == NO_PADS and pw is None:
        return gemm_spec(nb * ih * iw, oc, ic, np.asarray(filt, np.float32).reshape(oc, ic).T, bias,
                         activation, nv=nv)
    nv = nv or vectors_for(oc)
    pw = pw or TILE_ROWS[nv]
    ocb = 16 * nv
    ocp = packing.round_up(oc, ocb)
    npix = nb * wh.out * ww.out
    pw = min(pw, npix)
    defines = {"NB": nb, "IH": ih, "IW": iw, "IC": ic, "OH": wh.out, "OW": ww.out, "OC": oc, "OCP": ocp,
               "KH": kh, "KW": kw, "SH": stride[0], "SW": stride[1], "DH": dilation[0], "DW": dilation[1],
               "PT": wh.pad, "PL": ww.pad, "PW": pw, "NV": nv, **activation_defines(activation)}
    return KernelSpec(
        files=("common.cl", "conv2d.cl"), name="conv2d", defines=defines,
        global_size=(ocp // ocb, -(-npix // pw)), local_size=(1, 1),
        args=("input", "weights", "bias", "zeros", "output"),
        constants={"weights": packing.pack_conv_weights(np.asarray(filt, np.float32), ocb),
                   "bias": packing.pad_vector(bias, oc, ocp)},
        zeros=ic, flops=2 * npix * oc * kh * kw * ic,
    )


def depthwise_pixels(out_w: int, stride_w: int) -> int:
    """Pixels per depthwise work-item: up to 14 (7 when strided, whose input span is twice as
    wide), spread evenly so the last block of a row is not mostly empty."""
    most = 14 if stride_w == 1 else 7
    blocks = -(-out_w // most)
    return -(-out_w // blocks)


def depthwise_spec(input_shape: tuple[int, int, int, int], filt: np.ndarray, bias: np.ndarray | None,
                   *, depth_multiplier: int = 1, stride: tuple[int, int] = (1, 1),
                   dilation: tuple[int, int] = (1, 1), padding: ir.Padding | int = ir.Padding.SAME,
                   activation: ir.Activation | int | Clamp = ir.Activation.NONE, pads: Pads = NO_PADS,
                   pw: int | None = None) -> KernelSpec:
    """NHWC DEPTHWISE_CONV_2D with TFLite's filter [1][KH][KW][C*depth_multiplier]."""
    nb, ih, iw, c = input_shape
    _, kh, kw, oc = filt.shape
    if oc != c * depth_multiplier:
        raise ValueError(f"filter has {oc} channels, input {c} x depth multiplier {depth_multiplier}")
    wh, ww = padded_windows(ih, iw, kh, kw, stride, dilation, padding, pads)
    pw = min(pw or depthwise_pixels(ww.out, stride[1]), ww.out)
    ocp = packing.round_up(oc, 16)
    defines = {"NB": nb, "IH": ih, "IW": iw, "C": c, "DM": depth_multiplier, "OC": oc, "OCP": ocp,
               "OH": wh.out, "OW": ww.out, "KH": kh, "KW": kw, "SH": stride[0], "SW": stride[1],
               "DH": dilation[0], "DW": dilation[1], "PT": wh.pad, "PL": ww.pad, "PW": pw,
               **activation_defines(activation)}
    return KernelSpec(
        files=("common.cl", "depthwise.cl"), name="depthwise", defines=defines,
        global_size=(ocp // 16, -(-ww.out // pw), nb * wh.out), local_size=(1, 1, 1),
        args=("input", "weights", "bias", "zeros", "output"),
        constants={"weights": packing.pack_depthwise_weights(np.asarray(filt, np.float32)),
                   "bias": packing.pad_vector(bias, oc, ocp)},
        zeros=ocp, flops=2 * nb * wh.out * ww.out * oc * kh * kw,
    )


def output_shape(spec: KernelSpec) -> tuple[int, ...]:
    """The NHWC (conv) or [M][N] (gemm) shape a spec writes."""
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
