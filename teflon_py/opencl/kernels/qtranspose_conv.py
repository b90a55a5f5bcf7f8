"""Host side of ``qtranspose_conv.cl`` (the int8 / uint8 gather-form TRANSPOSE_CONV): packed
zero-point-free weights, padded bias, per-channel requantization constants, launch geometry.

Sizes are kernel arguments; only the types and the register blocking (``tiles.qconv``, as the
int8 convolution) are ``-D`` macros.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from teflon_py.opencl.kernels import packing
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.cpu_tiles import AVX512, CpuTiles
from teflon_py.opencl.kernels.qspecs import CL_TYPES, Requant, pad_channels
from teflon_py.opencl.kernels.specs import KernelSpec

if TYPE_CHECKING:  # the float lowering's geometry record (input shape, output H/W, strides, crop)
    from teflon_py.opencl.lowerings.transpose_conv import Geometry


def pack_weights(w_ohwi: np.ndarray, ocb: int, dtype: type) -> np.ndarray:
    """[OC][KH][KW][IC] -> [OCP/OCB][KH][KW][IC][OCB] of ``dtype``, output channels zero-padded."""
    oc, kh, kw, ic = w_ohwi.shape
    ocp = packing.round_up(oc, ocb)
    padded = np.zeros((ocp, kh, kw, ic), dtype)
    padded[:oc] = w_ohwi
    return np.ascontiguousarray(padded.reshape(ocp // ocb, ocb, kh, kw, ic).transpose(0, 2, 3, 4, 1))


def qtranspose_conv_spec(g: Geometry, dtype: np.dtype, input_zero_point: int, w_ohwi: np.ndarray,
                         bias: np.ndarray | None, requant: Requant, tiles: CpuTiles = AVX512) -> KernelSpec:
    """The gather kernel for zero-point-free integer weights ``w_ohwi`` [OC][KH][KW][IC] (int64)
    and an int32 ``bias`` (or None); ``requant``: per-channel fixed point."""
    if requant.multiplier is None:
        raise ValueError("qtranspose_conv requantizes by fixed point only")
    nb, ih, iw, ic = g.input_shape
    oc, kh, kw, fic = w_ohwi.shape
    if fic != ic:
        raise ValueError(f"filter has {fic} input channels, input has {ic}")
    (oh, ow), (sh, sw), (pt, pl) = g.out_hw, g.stride, g.pad
    nv = min(kernels.vectors_for(oc), tiles.qconv_max_vectors)
    ocb = 16 * nv
    ocp = packing.round_up(oc, ocb)
    nj = -(-ow // sw)  # output columns of the widest phase
    pw = min(tiles.qconv_pixels(nv), nj)
    jb = -(-nj // pw)
    w8 = bool(w_ohwi.min() >= -128 and w_ohwi.max() <= 127)
    dtype = np.dtype(dtype)
    defines = {"XT": CL_TYPES[dtype], "WT": "char" if w8 else "short", "NV": nv, "PW": pw}
    args = kernels.scalars(IH=ih, IW=iw, IC=ic, OH=oh, OW=ow, OC=oc, KH=kh, KW=kw, SH=sh, SW=sw, PT=pt, PL=pl,
                           NJ=nj, JB=jb, x_zp=input_zero_point, out_zp=requant.zero_point, lo=requant.lo,
                           hi=requant.hi)
    b = np.zeros(oc, np.int64) if bias is None else np.asarray(bias, np.int64).reshape(-1)
    constants = {"weights": pack_weights(w_ohwi, ocb, np.int8 if w8 else np.int16),
                 "bias": pad_channels(b.astype(np.int32), ocp),
                 "zpad": np.full(ic, input_zero_point, dtype),
                 **requant.constants(oc, ocp)}
    return KernelSpec(
        files=("quant.cl", "qtranspose_conv.cl"), name="qtranspose_conv", defines=defines,
        global_size=(ocp // ocb, sw * jb, nb * oh), local_size=(1, 1, 1),
        args=("input", "weights", "bias", *requant.args, "zpad", "output", *args),
        constants=constants, scalars=args, flops=2 * nb * ih * iw * ic * kh * kw * oc,
    )
