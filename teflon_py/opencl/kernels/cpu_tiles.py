"""Register tiles of the CPU-style float kernels, per SIMD width: how many rows (pixels) x 16-float
vectors a gemm / conv2d work-item holds, and which depthwise blockings exist.

PoCL vectorises a work-item's own loops, so a tile's accumulators must fit the CPU's vector
registers: a 16-float vector is one AVX-512 register, two AVX2 registers, four NEON/SSE ones.
Tiles sized for AVX-512 (up to 24 accumulator vectors) spill on AVX2 and ran 2-3x slower there;
the table is chosen per device from ``CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT`` (``Caps``), which
PoCL sets from the target CPU (16 with AVX-512, 8 with AVX2, 4 on NEON/SSE).
Override: ``TEFLON_CL_TILES`` (a table's name). Measurements: BENCHMARKS.md, "Tiles per CPU";
``benchmarks/cl_kernels.py --sweep`` re-measures a machine.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

ENV = "TEFLON_CL_TILES"


@dataclass(frozen=True)
class CpuTiles:
    """One SIMD width's register tiles for gemm.cl, conv2d.cl and depthwise.cl."""

    name: str
    #: floats per vector register these tiles were sized for
    width: int
    #: (rows or pixels per work-item, 16-float vectors across N): each a kernel of the one gemm
    #: (conv2d) program; ``choose_nv`` picks per layer among them
    blockings: tuple[tuple[int, int], ...]
    #: (KW, SW, pixels per row, rows) per work-item of the depthwise kernels that keep a row of
    #: inputs in registers (dilation 1, depth multiplier 1, 16+ channels); any other geometry
    #: runs ``depthwise_any``
    depthwise: tuple[tuple[int, int, int, int], ...]
    #: (pixels per work-item, 16-channel int32 vectors across output channels) of the int8
    #: convolution (qconv.cl); a layer takes as many vectors as its channels fill, up to the most
    #: here (each is its own program: fewer shapes, fewer programs to build and JIT)
    qconv: tuple[tuple[int, int], ...] = ((14, 1), (12, 2), (8, 3), (6, 4))
    #: pixels per block of conv2d_narrow.cl (8 output channels per vector: layers with fewer
    #: than 16, ``specs.conv2d_spec``). On the Zen 3 (noisy, shared): hand_recrop's 3x3 stem as
    #: fast with 8 as with 10 or 12, its 2x2 8 -> 8 layer 5-20% faster with 8, both 10-30% slower
    #: with 6 or 14; 8 also divides MediaPipe's row widths (no shifted, recomputed blocks). Not
    #: measured on the other tables (8 accumulators: 8 AVX2 registers, 16 NEON/SSE ones)
    narrow_pixels: int = 8
    #: output pixels of a row per work-item of the int8 depthwise kernel (qdepthwise.cl), at
    #: column stride 1 and strided: its accumulators and the row of inputs they read stay in
    #: registers (16 int32 lanes each: one AVX-512 register, two AVX2 ones)
    qdepthwise: tuple[int, int] = (14, 7)

    @property
    def tile_rows(self) -> dict[int, int]:
        """Rows (gemm) or pixels (conv2d) per work-item for each number of vectors across N."""
        return {nv: mr for mr, nv in self.blockings}

    def rows_for(self, nv: int) -> int:
        """Rows per work-item for ``nv`` vectors across N: the table's own, else as many as keep
        the accumulators within the table's largest tile."""
        return _rows(self.blockings, nv)

    @property
    def qconv_max_vectors(self) -> int:
        return max(nv for _, nv in self.qconv)

    def qconv_pixels(self, nv: int) -> int:
        """Pixels per work-item of the int8 convolution with ``nv`` vectors across channels."""
        return _rows(self.qconv, nv)

    def qdepthwise_pixels(self, strided: bool) -> int:
        """Pixels per work-item of the int8 depthwise kernel (``strided``: column stride > 1)."""
        return self.qdepthwise[1 if strided else 0]

    def depthwise_blocking(self, kw: int, sw: int) -> tuple[int, int] | None:
        """(pixels, rows) per work-item of the fast depthwise kernel for filter width ``kw`` and
        column stride ``sw``, or None when there is none."""
        return {(k, s): (p, r) for k, s, p, r in self.depthwise}.get((kw, sw))


def _rows(blockings: tuple[tuple[int, int], ...], nv: int) -> int:
    """The rows ``blockings`` give ``nv`` vectors, else as many as its largest tile holds."""
    rows = {v: r for r, v in blockings}.get(nv)
    return rows if rows is not None else max(1, max(r * v for r, v in blockings) // nv)


#: AVX-512 (32 registers of 16 floats): ~24 accumulators; measured on a Zen 5 and a Rocket Lake
AVX512 = CpuTiles("avx512", 16, ((14, 1), (12, 2), (8, 3), (6, 4)),
                  ((3, 1, 7, 2), (3, 2, 4, 2), (5, 1, 6, 2), (5, 2, 4, 2)))
#: AVX2 (16 registers of 8 floats): 6 rows x 16 columns, 12 registers of accumulators (XNNPACK's
#: AVX2 shape too); on a Zen 3, 6x1 ran 100-150 GFLOP/s on MobileNet's 1x1 layers where the
#: AVX-512 tiles ran 40-60, and 2- or 3-vector tiles 40-90. Depthwise: one output row of 4 pixels
#: (stride 1) or 2 (stride 2) per work-item, 10-40% faster than the AVX-512 blockings there.
#: int8 convolutions: 8 pixels x 16 channels only (qconv.cl's vpmaddwd loop): MobileNetV2 int8 ran
#: 17 -> 10 ms an invoke, and its first load 12.5 -> 5.4 s (6 programs instead of 9, each smaller);
#: 8 pixels measured 2-20% faster than 6, and 2 or 4 channel vectors within 10% of 1. int8
#: depthwise: 8 pixels (4 strided) ran within 3% of 14 (7) on MobileNetV1/V2 int8's layers (2 of
#: 6 would have been 25% slower) and compile in 0.38 + 0.29 s at the first launch, not 0.6 + 0.37
AVX2 = CpuTiles("avx2", 8, ((6, 1),), ((3, 1, 4, 1), (3, 2, 2, 1), (5, 1, 4, 1), (5, 2, 2, 1)), ((8, 1),),
                qdepthwise=(8, 4))
#: 4-float registers (NEON: 32 of them, SSE: 16): not measured here; the AVX2 depthwise shapes
#: and 4 x 16 tiles (16 registers of accumulators)
NARROW = CpuTiles("narrow", 4, ((4, 1),), AVX2.depthwise, ((4, 1),), qdepthwise=AVX2.qdepthwise)

TABLES = {t.name: t for t in (AVX512, AVX2, NARROW)}


def tiles_for(vector_width: int) -> CpuTiles:
    """The table for a device whose preferred float vector width is ``vector_width`` (``ENV``
    overrides)."""
    forced = os.environ.get(ENV, "").strip().lower()
    if forced:
        if forced not in TABLES:
            raise ValueError(f"{ENV}={forced!r}: expected one of {', '.join(TABLES)}")
        return TABLES[forced]
    if vector_width >= 16:
        return AVX512
    return AVX2 if vector_width >= 8 else NARROW
