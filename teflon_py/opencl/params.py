"""Per-device kernel parameters: which kernel family a partition's lowerings pick, and the numbers
that family needs, chosen once per delegate from the device's ``Caps``.

Two families of float kernels:
- ``"cpu"``: register-blocked for PoCL's CPU device (``kernels.specs``: big per-work-item tiles,
  local size 1, a few dozen work-items per launch; PoCL vectorises each work-item's own loops).
- ``"gpu"``: one small register tile per work-item, real work-groups and enough work-items to
  fill compute units x SIMD lanes (``kernels.gpu_specs``), for GPUs and for CPU devices that
  run a work-group's work-items across SIMD lanes as a GPU does (Mesa's rusticl on llvmpipe,
  which reports device type CPU: ``Caps.simd_work_items``).

Override: the delegate option ``kernel_family`` ("cpu" | "gpu"), else ``TEFLON_CL_FAMILY``; the
cpu family's register tiles follow the device's float vector width (``TEFLON_CL_TILES`` overrides).
The choice changes only how an op is lowered, never whether it is supported: the registry's
checks stay one per op.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from teflon_py.opencl.caps import Caps
from teflon_py.opencl.kernels.cpu_tiles import AVX512, CpuTiles, tiles_for

ENV = "TEFLON_CL_FAMILY"
FAMILIES = ("cpu", "gpu")


@dataclass(frozen=True)
class KernelParams:
    """The kernel family of one device and the sizes its kernels are launched with."""

    family: str = "cpu"
    device: str = "unknown device"
    #: gpu family: work-group of the gemm / conv tile grid (column groups x row blocks); adjacent
    #: work-items along dim 0 read adjacent column groups of B and write adjacent outputs. On
    #: llvmpipe 4 x 16 (an 8-lane vector spans 4 column groups x 2 row blocks) measured 2-5x
    #: faster than 8 x 8 or 8 x 1 (BENCHMARKS.md, "Kernel families")
    gemm_wg: tuple[int, int] = (8, 8)
    #: gpu family: output rows (gemm) or pixels (conv) per work-item, each 4 channels wide
    gemm_rows: int = 4
    #: gpu family: work-group of the small element-wise and window kernels (1-D)
    small_wg: int = 64
    #: work-items a launch aims for at least: compute units x lanes x a few waves
    min_items: int = 256
    compute_units: int = 1
    #: cpu family: the register tiles for the device's SIMD width (``kernels.cpu_tiles``)
    tiles: CpuTiles = AVX512
    #: the device compiles qconv.cl's AVX2 vpmaddwd loop (AVX2, clang vectors, no VNNI): int8
    #: convolution weights are packed for it
    qconv_madd: bool = False

    @property
    def gpu(self) -> bool:
        return self.family == "gpu"

    def describe(self) -> dict[str, object]:
        """What ``inspect`` reports of the choice."""
        out: dict[str, object] = {"kernel_family": self.family, "device": self.device}
        if not self.gpu:
            out["tiles"] = self.tiles.name
        return out


#: the default for a bare ``Caps()`` (tests that build specs without a device)
CPU = KernelParams()


def check_family(family: object, where: str) -> str:
    """``family`` lower-cased, or ValueError naming ``where`` it came from."""
    f = str(family).strip().lower()
    if f not in FAMILIES:
        raise ValueError(f"{where}: kernel family {family!r} is not one of {', '.join(FAMILIES)}")
    return f


def default_family(caps: Caps) -> str:
    """GPU-style kernels where work-items map to SIMD lanes (GPUs, llvmpipe), else CPU-style."""
    return "gpu" if caps.device_type == "GPU" or caps.simd_work_items else "cpu"


def params_for(caps: Caps, family: str | None = None) -> KernelParams:
    """The parameters for ``caps``'s device: ``family`` if given, else ``TEFLON_CL_FAMILY``,
    else ``default_family``."""
    if family in (None, ""):
        env = os.environ.get(ENV, "").strip()
        family = check_family(env, ENV) if env else default_family(caps)
    else:
        family = check_family(family, "kernel_family")
    wg_max = max(1, caps.max_work_group_size)
    wide = 4 if caps.simd_work_items and caps.device_type != "GPU" else 8
    wg = (wide, 64 // wide) if wg_max >= 64 else (min(wide, wg_max), max(1, wg_max // wide))
    lanes = 8 if caps.simd_work_items or caps.device_type == "GPU" else 1
    return KernelParams(
        family=family, device=caps.name, gemm_wg=wg, small_wg=min(64, wg_max),
        min_items=max(64, 4 * caps.compute_units * lanes * 8), compute_units=caps.compute_units,
        tiles=tiles_for(caps.float_vector_width),
        qconv_madd=caps.avx2 and caps.clang_vectors and not caps.vnni,
    )
