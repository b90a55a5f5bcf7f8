"""Host side of the int8 / uint8 kernels: requantization constants, folded zero points, packed
weights and launch geometry (``KernelSpec``s for ``qconv.cl`` and ``qdepthwise.cl``).

Every constant is derived with ``teflon_py.quant`` exactly as the NumPy fallback derives it, so
the device computes the fallback's integers: int32 accumulators of ``x' * w`` (x' the input byte
read as unsigned, w the zero-point-free weight), a bias that already holds the zero-point terms,
and TFLite's requantization in the kernel's epilogue. Sizes are kernel arguments; only the types
and the register blocking are ``-D`` macros, so a handful of programs serves every shape.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teflon_py import ir, quant
from teflon_py.opencl.kernels import packing
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.cpu_tiles import AVX512, CpuTiles
from teflon_py.opencl.kernels.specs import KernelSpec, Pads
from teflon_py.opencl.runtime.programs import template
from teflon_py.ops.common import FusedActivation, Padding, Requantization

#: OpenCL C element type of each 8-bit tensor type.
CL_TYPES = {np.dtype(np.int8): "char", np.dtype(np.uint8): "uchar"}


@dataclass(frozen=True)
class Requant:
    """int32 accumulator -> 8-bit output of one op: per-channel fixed-point ``multiplier`` and
    ``shift`` (convolutions), or FULLY_CONNECTED's float64 ``scale`` (which the kernels apply in
    integers, from ``quant.exact_scale_parts``); zero point; clamp [lo, hi]."""

    zero_point: int
    lo: int
    hi: int
    multiplier: np.ndarray | None = None
    shift: np.ndarray | None = None
    scale: np.ndarray | None = None
    scale32: np.ndarray | None = None  # XNNPACK's float32 rule (``ops.common.Requantization``)

    def constants(self, channels: int, padded: int) -> dict[str, np.ndarray]:
        """The per-channel arrays the epilogue reads, zero-padded to ``padded`` channels."""
        if self.scale32 is not None:
            scale32 = np.zeros(padded, np.float32)
            scale32[:channels] = np.broadcast_to(np.asarray(self.scale32, np.float32).reshape(-1), (channels,))
            return {"scale32": scale32}
        if self.scale is not None:
            scale = np.zeros(padded, np.float64)  # padding channels: scale 0, outputs never stored
            scale[:channels] = np.broadcast_to(np.asarray(self.scale, np.float64).reshape(-1), (channels,))
            parts = quant.exact_scale_parts(scale)
            return {name: part.astype(np.uint32).view(np.int32) for name, part in zip(("smh", "sml", "ssk"), parts)}
        out = {}
        shift = np.broadcast_to(np.asarray(self.shift, np.int64).reshape(-1), (channels,))
        for name, values in (("mult", self.multiplier), ("lshift", np.maximum(shift, 0)),
                             ("rshift", np.maximum(-shift, 0))):
            arr = np.zeros(padded, np.int32)
            arr[:channels] = np.broadcast_to(np.asarray(values, np.int64).reshape(-1), (channels,))
            out[name] = arr
        return out

    @property
    def args(self) -> tuple[str, ...]:
        if self.scale32 is not None:
            return ("scale32",)
        return ("smh", "sml", "ssk") if self.scale is not None else ("mult", "lshift", "rshift")

    @property
    def defines(self) -> dict[str, bool]:
        """The kernels' macro for XNNPACK's float32 rule (the integer epilogues need none: qconv.cl
        picks fixed point or exact by its ``epi`` argument)."""
        return {"REQ_FLOAT": True} if self.scale32 is not None else {}

    def channels(self, start: int, stop: int) -> Requant:
        """The requantization of output channels [start, stop) (one group of a grouped conv)."""
        def part(a: np.ndarray | None) -> np.ndarray | None:
            return a if a is None or np.size(a) == 1 else np.asarray(a).reshape(-1)[start:stop]

        return Requant(self.zero_point, self.lo, self.hi, part(self.multiplier), part(self.shift),
                       part(self.scale), part(self.scale32))


def flip(dtype: np.dtype) -> int:
    """XOR that turns a stored byte into its code (value order): 0x80 for int8, 0 for uint8."""
    return 0x80 if np.dtype(dtype) == np.int8 else 0


def codes(dtype: np.dtype) -> np.ndarray:
    """Every value of an 8-bit type, in code order (the index of the kernels' 256-entry tables)."""
    lo, hi = quant.QRANGE[np.dtype(dtype)]
    return np.arange(lo, hi + 1).astype(dtype)


def clamp_range(act: ir.Activation | int | FusedActivation, t: ir.Tensor) -> tuple[int, int]:
    """TFLite's CalculateActivationRangeQuantized for output ``t``."""
    if isinstance(act, FusedActivation):
        lo, hi = act.range(t.dtype, t.scale, t.zero_point)
        return int(lo), int(hi)
    lo, hi = quant.activation_range(act, t.dtype, t.scale, t.zero_point)
    return int(lo), int(hi)


def conv_requant(graph: ir.Graph, op: ir.Operation, act: ir.Activation | int | FusedActivation) -> Requant:
    """The epilogue of a CONV_2D / DEPTHWISE_CONV_2D (fixed point) or FULLY_CONNECTED (LiteRT's
    double rounding, computed in integers), or
    of any of them under XNNPACK's float32 rule."""
    x, w, y = (graph.tensors[i] for i in (op.inputs[0], op.inputs[1], op.outputs[0]))
    lo, hi = clamp_range(act, y)
    if getattr(op.attrs, "requantization", Requantization.TFLITE) == Requantization.FLOAT32:
        return Requant(y.zero_point, lo, hi, scale32=quant.float32_output_scales(x, w, y))
    if op.name == "FULLY_CONNECTED":
        return Requant(y.zero_point, lo, hi, scale=quant.fully_connected_output_scales(x, w, y))
    multiplier, shift = quant.conv_output_multipliers(op.name, x, w, y)
    return Requant(y.zero_point, lo, hi, multiplier=multiplier, shift=shift)


def flip_offset(dtype: np.dtype) -> int:
    """What reading the input byte as unsigned adds: 128 for int8 (x ^ 0x80 = x + 128), 0 for uint8."""
    return flip(dtype)


def folded_bias(bias: np.ndarray | None, weight_sums: np.ndarray, input_offset: int) -> np.ndarray:
    """bias - input_offset * sum of weights, per output channel, wrapped to int32 as C's adds wrap."""
    offset = np.asarray(weight_sums, np.int64) * -int(input_offset)
    if bias is not None:
        offset = offset + np.asarray(bias, np.int64).reshape(-1)
    return quant.wrap_int(offset).astype(np.int32)


def pad_channels(values: np.ndarray, padded: int, dtype: type = np.int32) -> np.ndarray:
    """``values`` zero-padded to ``padded`` entries (kernels read whole 16-channel vectors)."""
    out = np.zeros(padded, dtype)
    out[:values.size] = values
    return out


@dataclass(frozen=True)
class ConvGeometry:
    """One convolution launch: input [NB, IH, IW, *] read at channel stride ``xs`` from ``xoff``,
    output [NB, OH, OW, *] written at stride ``ys`` from ``yoff``; windows as ``kernels.window``."""

    nb: int
    ih: int
    iw: int
    xs: int
    xoff: int
    ys: int
    yoff: int
    kh: int
    kw: int
    stride: tuple[int, int]
    dilation: tuple[int, int]
    padding: ir.Padding | int | Padding
    pads: Pads = kernels.NO_PADS


@dataclass(frozen=True)
class ResidualAdd:
    """A quantized ADD folded into ``qconv``'s epilogue: (offset, multiplier, right shift) of the
    conv's operand, then of the other operand (add.cc's input rescale), then its requantization."""

    conv_input: tuple[int, int, int]
    other_input: tuple[int, int, int]
    multiplier: int
    shift: int
    zero_point: int
    lo: int
    hi: int


#: ``qconv.cl``'s inner loops, as its ``qconv_variant`` kernel numbers them
QCONV_VARIANTS = ("int16 weights", "portable", "vnni", "standard", "avx2 madd")


def qconv_spec(g: ConvGeometry, dtype: np.dtype, input_zero_point: int, w_ohwi: np.ndarray,
               bias: np.ndarray | None, requant: Requant, residual: ResidualAdd | None = None,
               tiles: CpuTiles = AVX512, madd: bool = False, table: np.ndarray | None = None) -> KernelSpec:
    """``qconv.cl`` for zero-point-free integer weights ``w_ohwi`` [OC][KH][KW][IC] (int64); with
    ``residual``, the kernel also reads the ADD's other operand (binding ``res``); ``table``: 8-bit
    ops folded in last (``lowerings.qelementwise.epilogue_table``'s 256 entries); pixels x
    16-channel vectors per work-item from ``tiles.qconv``; ``madd``: the device compiles the
    AVX2 vpmaddwd loop (``KernelParams.qconv_madd``), so int8 weights go in its layout."""
    oc, kh, kw, ic = w_ohwi.shape
    wh, ww = kernels.padded_windows(g.ih, g.iw, kh, kw, g.stride, g.dilation, g.padding, g.pads)
    npix = g.nb * wh.out * ww.out
    nv = min(kernels.vectors_for(oc), tiles.qconv_max_vectors)
    pw = tiles.qconv_pixels(nv)  # a one-pixel layer too (its PW - 1 copies cost little): one program
    ocb = 16 * nv
    ocp = packing.round_up(oc, ocb)
    w8 = bool(w_ohwi.size == 0 or (w_ohwi.min() >= -128 and w_ohwi.max() <= 127))
    weights = pack_qconv_weights(w_ohwi, ocb, w8, madd and w8)
    dtype = np.dtype(dtype)
    defines: dict[str, object] = {"XT": CL_TYPES[dtype], "XT_IS_SIGNED": int(dtype == np.int8),
                                  "WT": "char" if w8 else "short", "NV": nv, "PW": pw}
    if w8:
        defines["W8"] = True
        if madd:
            defines["QCONV_MADD_LAYOUT"] = True
    defines.update(requant.defines)
    args = kernels.scalars(IH=g.ih, IW=g.iw, IC=ic, XS=g.xs, xoff=g.xoff, OH=wh.out, OW=ww.out, OC=oc,
                           YS=g.ys, yoff=g.yoff, KH=kh, KW=kw, SH=g.stride[0], SW=g.stride[1],
                           DH=g.dilation[0], DW=g.dilation[1], PT=wh.pad, PL=ww.pad, NPIX=npix,
                           out_zp=requant.zero_point,
                           lo=requant.lo, hi=requant.hi)
    constants = {"weights": weights,
                 "bias": pad_channels(folded_bias(bias, w_ohwi.reshape(oc, -1).sum(axis=1),
                                                  input_zero_point + flip_offset(dtype)), ocp),
                 "zpad": np.full(packing.round_up(max(ic, 16), 4), input_zero_point, dtype),
                 **requant.constants(oc, ocp)}
    epi = 2 if requant.scale is not None else 0  # qconv.cl's epilogue switches: 1 residual, 2 exact, 4 table
    radd = np.zeros(11, np.int32)
    if residual is not None:
        if not w8 or requant.scale is not None or requant.scale32 is not None:
            raise ValueError("a residual ADD folds only into a fixed-point conv with int8 weights")
        (off1, m1, s1), (off2, m2, s2) = residual.conv_input, residual.other_input
        radd = np.array([off1, m1, s1, off2, m2, s2, residual.multiplier, residual.shift,
                         residual.zero_point, residual.lo, residual.hi], np.int32)
        epi |= 1
    if table is not None:
        radd = np.concatenate([radd, np.asarray(table, np.int32)])
        epi |= 4
    if epi & 5:
        constants["radd"] = radd
    args = {**kernels.scalars(epi=epi), **args}
    return KernelSpec(
        files=("quant.cl", "qconv.cl"), name="qconv", defines=defines,
        global_size=(ocp // ocb, -(-npix // pw)), local_size=(1, 1),
        args=("input", "weights", "bias", *requant.args, "zpad", "output", "res" if residual else "zeros",
              "radd" if epi & 5 else "zeros", *args),
        constants=constants, scalars=args, flops=2 * npix * oc * kh * kw * ic,
        variants=QCONV_VARIANTS, zeros=16,
    )


def pack_qconv_weights(w_ohwi: np.ndarray, ocb: int, w8: bool, madd: bool = False) -> np.ndarray:
    """[OC][KH][KW][IC] -> [OCP/OCB][KH*KW][ICQ][OCB][4] int8 (``w8``) or [OCP/OCB][KH*KW][IC][OCB] int16;
    ``madd``: each 16-channel block of quads [16][4] as [2 halves][2 pairs][8][2] (qconv.cl's
    QCONV_MADD_LAYOUT: a weight vector of vpmaddwd is one 16-byte load)."""
    oc, kh, kw, ic = w_ohwi.shape
    ocp = packing.round_up(oc, ocb)
    icp = packing.round_up(ic, 4) if w8 else ic
    padded = np.zeros((ocp, kh * kw, icp), np.int8 if w8 else np.int16)
    padded[:oc, :, :ic] = w_ohwi.reshape(oc, kh * kw, ic)
    if w8:
        blocks = padded.reshape(ocp // ocb, ocb, kh * kw, icp // 4, 4).transpose(0, 2, 3, 1, 4)
        if madd:
            lead = blocks.shape[:3]
            blocks = blocks.reshape(*lead, ocb // 16, 2, 8, 2, 2).transpose(0, 1, 2, 3, 4, 6, 5, 7)
    else:
        blocks = padded.reshape(ocp // ocb, ocb, kh * kw, icp).transpose(0, 2, 3, 1)
    return np.ascontiguousarray(blocks)


def qdepthwise_spec(input_shape: tuple[int, int, int, int], dtype: np.dtype, input_zero_point: int,
                    w_hwo: np.ndarray, bias: np.ndarray | None, requant: Requant, *, depth_multiplier: int,
                    stride: tuple[int, int], dilation: tuple[int, int], padding: ir.Padding | int | Padding,
                    pads: Pads = kernels.NO_PADS, pw: int | None = None, tiles: CpuTiles = AVX512,
                    table: np.ndarray | None = None) -> KernelSpec:
    """``qdepthwise.cl`` for zero-point-free integer weights ``w_hwo`` [KH][KW][OC] (int64).

    The kernel subtracts the input zero point from each loaded vector (taps in the padding are
    skipped), as the fallback does; ``pw`` output pixels of a row (by default
    ``tiles.qdepthwise``: the CPU's registers) x 16 channels per work-item; ``table``: 8-bit ops
    folded in last (``lowerings.qelementwise.epilogue_table``'s 256 entries).
    """
    nb, ih, iw, c = input_shape
    kh, kw, oc = w_hwo.shape
    wh, ww = kernels.padded_windows(ih, iw, kh, kw, stride, dilation, padding, pads)
    ocp = packing.round_up(oc, 16)
    weights = np.zeros((kh, kw, ocp), np.int32)
    weights[:, :, :oc] = w_hwo
    pw = pw or tiles.qdepthwise_pixels(stride[1] > 1)
    if requant.scale is not None:
        raise ValueError("qdepthwise requantizes by fixed point or XNNPACK's float32 rule")
    xt, dm1 = CL_TYPES[np.dtype(dtype)], depth_multiplier == 1
    entry = f"qdepthwise_{xt}_{pw}x{kw}s{stride[1]}d{dilation[1]}" + ("_dm1" if dm1 else "") + (
        "_f" if requant.scale32 is not None else "") + ("_t" if table is not None else "")
    macros = {"QDEPTHWISE_NAME": entry, "XT": xt, "PW": pw, "KW": kw, "SW": stride[1], "DW": dilation[1],
              **({"DM1": 1} if dm1 else {}), **{k: 1 for k in requant.defines},
              **({"TABLE": 1} if table is not None else {})}
    args = kernels.scalars(IH=ih, IW=iw, C=c, DM=depth_multiplier, OC=oc, OH=wh.out, OW=ww.out, KH=kh,
                           SH=stride[0], DH=dilation[0], PT=wh.pad, PL=ww.pad,
                           in_zp=input_zero_point, out_zp=requant.zero_point, lo=requant.lo, hi=requant.hi)
    constants = {"weights": weights, "bias": pad_channels(folded_bias(bias, np.zeros(oc), 0), ocp),
                 **requant.constants(oc, ocp)}
    if table is not None:
        constants["table"] = np.asarray(table, np.int32)
    return KernelSpec(
        files=("quant.cl", template("qdepthwise.cl", **macros)), name="qdepthwise", entry=entry, defines={},
        global_size=(ocp // 16, -(-ww.out // pw), nb * wh.out), local_size=(1, 1, 1),
        args=("input", "weights", "bias", *requant.args, "output", "table" if table is not None else "zeros",
              *args),
        constants=constants, scalars=args, flops=2 * nb * wh.out * ww.out * oc * kh * kw,
    )


def launch(ctx: object, spec: KernelSpec, **bindings: object) -> None:
    """``ctx.launch`` with graph constants among ``bindings`` uploaded as the spec's own constants,
    in their own dtype (the partition would otherwise upload constants as float32)."""
    import dataclasses

    constants = {}
    for name, ref in list(bindings.items()):
        if isinstance(ref, int) and not name.startswith("output"):
            data = ctx.constant(ref)
            if data is not None:
                constants[name] = np.ascontiguousarray(data)
                del bindings[name]
    if constants:
        spec = dataclasses.replace(spec, constants={**spec.constants, **constants})
    ctx.launch(spec, **bindings)
