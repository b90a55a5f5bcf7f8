"""Host side of ``qmatmul.cl``: int8 BATCH_MATMUL's launch geometry, its right operand's int16
panels (packed here for a constant operand, by ``qmatmul_pack_b`` for a runtime one) and the
per-tensor requantization constants.

Sizes, strides and zero points are kernel arguments; only the element type and the register
blocking are ``-D`` macros, so one program per blocking serves every matmul of a model.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teflon_py.opencl.kernels import packing
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.cpu_tiles import AVX512, CpuTiles
from teflon_py.opencl.kernels.qspecs import CL_TYPES
from teflon_py.opencl.kernels.specs import Batching, KernelSpec

FILES = ("quant.cl", "qmatmul.cl")


@dataclass(frozen=True)
class QMatmul:
    """One int8 batched matmul: C[z] (M x N) = A[z] (M x K) . B[z] (K x N), A's element (m, k) at
    ``m * lda + k * ask`` within its batch; zero points; the output's fixed-point multiplier and
    shift (``quant.batch_matmul_output_multiplier``), zero point and clamp."""

    m: int
    n: int
    k: int
    lda: int
    ask: int
    x_zp: int
    y_zp: int
    multiplier: int
    shift: int
    out_zp: int
    lo: int
    hi: int


def blocking(g: QMatmul, tiles: CpuTiles) -> tuple[int, int]:
    """(rows, 16-column vectors) per work-item: the int8 conv's register tiles (``tiles.qconv``),
    as many vectors as the columns fill."""
    nv = min(kernels.vectors_for(g.n), tiles.qconv_max_vectors)
    return min(tiles.qconv_pixels(nv), g.m), nv


def padded_columns(g: QMatmul, tiles: CpuTiles = AVX512) -> int:
    """NP: the panels' row length, N rounded up to whole work-item blocks."""
    return packing.round_up(g.n, 16 * blocking(g, tiles)[1])


def pack_b(g: QMatmul, b_kn: np.ndarray, tiles: CpuTiles = AVX512) -> np.ndarray:
    """Constant right operands [BB][K][N] (adj_y already applied) -> int16 panels [BB][K][NP] of
    y - y_zp, zero past N."""
    np_ = padded_columns(g, tiles)
    panels = np.zeros((b_kn.shape[0], g.k, np_), np.int16)
    panels[:, :, :g.n] = np.asarray(b_kn, np.int64) - g.y_zp
    return panels


def qmatmul_spec(g: QMatmul, batching: Batching, tiles: CpuTiles = AVX512,
                 b_panels: np.ndarray | None = None) -> KernelSpec:
    """``qmatmul`` over ``batching``'s batches (B strides in int16 elements of the panels); with
    ``b_panels`` (``pack_b``) the right operand is a constant of the spec, else bound as ``weights``."""
    pm, nv = blocking(g, tiles)
    np_ = padded_columns(g, tiles)
    left, right = max(g.shift, 0), max(-g.shift, 0)
    args = kernels.scalars(M=g.m, N=g.n, K=g.k, NP=np_, LDA=g.lda, ASK=g.ask, D1=batching.dims[1],
                           D2=batching.dims[2], AS0=batching.a_strides[0], AS1=batching.a_strides[1],
                           AS2=batching.a_strides[2], BS0=batching.b_strides[0], BS1=batching.b_strides[1],
                           BS2=batching.b_strides[2], x_zp=g.x_zp, mult=g.multiplier, lshift=left,
                           rshift=right, out_zp=g.out_zp, lo=g.lo, hi=g.hi)
    constants = {} if b_panels is None else {"weights": np.ascontiguousarray(b_panels, np.int16)}
    return KernelSpec(
        files=FILES, name="qmatmul", defines={"XT": CL_TYPES[np.dtype(np.int8)], "NV": nv, "PM": pm},
        global_size=(np_ // (16 * nv), -(-g.m // pm), batching.count), local_size=(1, 1, 1),
        args=("input", "weights", "output", *args), constants=constants, scalars=args,
        flops=2 * batching.count * g.m * g.n * g.k, meta={"NP": np_},
    )


def pack_b_spec(gemm: KernelSpec, g: QMatmul, batches: int, adj_y: bool) -> KernelSpec:
    """``qmatmul_pack_b`` of ``batches`` runtime right operands ("input", [BB] x [K][N], or [N][K]
    with ``adj_y``) into ``gemm``'s panels ("output"); the same program as ``gemm``."""
    np_ = int(gemm.meta["NP"])
    sk, sn = (1, g.k) if adj_y else (g.n, 1)
    args = kernels.scalars(N=g.n, K=g.k, NP=np_, SK=sk, SN=sn, y_zp=g.y_zp)
    return KernelSpec(
        files=gemm.files, name="qmatmul_pack_b", defines=gemm.defines,
        global_size=(g.k, batches), local_size=(1, 1),
        args=("input", "output", *args), scalars=args,
    )


def panel_elements(gemm: KernelSpec, g: QMatmul) -> int:
    """int16 elements of one right operand's panels: K * NP."""
    return g.k * int(gemm.meta["NP"])
