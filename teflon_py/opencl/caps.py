"""What a lowering's check may ask of the device: its capabilities, read once from the delegate's
chosen device (never from a global default), so that one model can be checked against two
devices and get two honest answers."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Caps:
    """One OpenCL device's capabilities, as the support checks see them."""

    name: str = "unknown device"
    device_type: str = "CPU"  # "GPU", "CPU", "ACCELERATOR" or "OTHER"
    platform: str = "unknown platform"
    compute_units: int = 1
    #: the device runs a work-group's work-items across SIMD lanes, as a GPU does (Mesa's
    #: rusticl on llvmpipe reports type CPU yet does: ``simd_lanes``); PoCL's CPU device instead
    #: vectorises each work-item's own loops, so one work-item is one lane
    simd_work_items: bool = False
    fp64: bool = True  # cl_khr_fp64 (no kernel needs it: integer ops are exact in integers)
    fp16: bool = False
    #: CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT: PoCL's CPU devices say 16 with AVX-512, 8 with
    #: AVX2, 4 on NEON/SSE (the cpu kernel family's register tiles follow it)
    float_vector_width: int = 16
    max_work_group_size: int = 4096
    local_mem_size: int = 32768
    image_support: bool = False
    #: the largest buffer the device allocates (``CL_DEVICE_MAX_MEM_ALLOC_SIZE``, or the lower
    #: ``TEFLON_CL_MAX_ALLOC``): a tensor bigger than this stays on NumPy
    max_alloc: int = 1 << 31
    extensions: frozenset[str] = frozenset()
    #: the kernel compiler targets AVX-512 VNNI (PoCL on such a CPU): int8 convolutions compile
    #: ``qconv.cl``'s vpdpbusd path, else its portable one (partition stats report which compiled)
    vnni: bool = False
    #: the kernel compiler targets AVX2 (PoCL on such a CPU): without VNNI, int8 convolutions
    #: compile ``qconv.cl``'s vpmaddwd path
    avx2: bool = False
    #: float32 division correctly rounded under -cl-fp32-correctly-rounded-divide-sqrt
    fp32_correct_divide: bool = True
    #: float32 subnormals kept (not flushed to zero)
    fp32_denorms: bool = True
    #: the kernel compiler takes clang's vector extensions and x86 builtins (PoCL's CPU devices):
    #: programs get ``TEFLON_CLANG_VECTORS`` and ``cl_kernels/vectors.cl``'s clang rendering,
    #: which PyPI's PoCL 3.0 needs to be fast; else standard OpenCL C (``TEFLON_CL_VECTORS``
    #: = ``standard`` or ``clang`` overrides the choice, e.g. to test the standard one on PoCL)
    clang_vectors: bool = False

    @classmethod
    def of(cls, dev: Any) -> Caps:
        """The capabilities of a ``pyopencl.Device``."""
        import pyopencl as cl

        from teflon_py.opencl.runtime.device import device_kind, max_alloc

        ext = frozenset(dev.extensions.split())
        fp32 = int(dev.single_fp_config)
        kind = device_kind(dev)
        clang = _takes_clang_vectors(dev)
        return cls(
            name=dev.name.strip(),
            device_type=kind,
            platform=dev.platform.name.strip(),
            compute_units=int(dev.max_compute_units),
            simd_work_items=kind == "GPU" or _lanes_across_work_items(dev),
            fp64="cl_khr_fp64" in ext and bool(dev.double_fp_config),
            fp16="cl_khr_fp16" in ext,
            float_vector_width=max(1, int(dev.preferred_vector_width_float)),
            max_work_group_size=int(dev.max_work_group_size),
            local_mem_size=int(dev.local_mem_size),
            image_support=bool(dev.image_support),
            max_alloc=max_alloc(dev),
            extensions=ext,
            vnni=clang and _compiles_vnni(dev),
            avx2=clang and _pocl_cpu(dev) and "avx2" in _target_features(),
            fp32_correct_divide=bool(fp32 & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT),
            fp32_denorms=bool(fp32 & cl.device_fp_config.DENORM),
            clang_vectors=clang,
        )

    @property
    def program_defines(self) -> dict[str, object]:
        """The macros every program built for this device gets (see ``clang_vectors``)."""
        return {"TEFLON_CLANG_VECTORS": True} if self.clang_vectors else {}

    @property
    def is_cpu(self) -> bool:
        return self.device_type == "CPU"

    def exact_fp32_reason(self, divide: bool = False) -> str | None:
        """Why a kernel that must match NumPy's float32 bit for bit (subnormals kept; with
        ``divide``, correctly rounded division) cannot run here, or None."""
        if not self.fp32_denorms:
            return f"the OpenCL device {self.name} flushes float32 subnormals (bit-exact results need them)"
        if divide and not self.fp32_correct_divide:
            return f"the OpenCL device {self.name} has no correctly rounded float32 division"
        return None


def _lanes_across_work_items(dev: Any) -> bool:
    """Whether a CPU device maps work-items onto SIMD lanes: Mesa's llvmpipe (under rusticl or
    clover) does, one work-group's items at a time across its vector width."""
    names = f"{dev.platform.name} {dev.platform.vendor} {dev.name}".lower()
    return "llvmpipe" in names or "rusticl" in names or "lavapipe" in names


VECTORS_ENV = "TEFLON_CL_VECTORS"


def _pocl_cpu(dev: Any) -> bool:
    from teflon_py.opencl.runtime import device

    pocl = "pocl" in dev.platform.vendor.lower() or "portable computing" in dev.platform.name.lower()
    return pocl and device.device_kind(dev) == "CPU"


def _takes_clang_vectors(dev: Any) -> bool:
    """PoCL's CPU devices (PyPI's 3.0 and Debian's 3.1) take clang's vector extensions; Mesa
    rusticl's SPIR-V path and other vendors' compilers get standard OpenCL C. ``TEFLON_CL_VECTORS``
    (``standard`` or ``clang``) overrides."""
    forced = os.environ.get(VECTORS_ENV, "").strip().lower()
    if forced in ("standard", "clang"):
        return forced == "clang"
    if forced:
        raise ValueError(f"{VECTORS_ENV}={forced!r}: expected 'standard' or 'clang'")
    return _pocl_cpu(dev)


def _target_features() -> set[str]:
    from teflon_py.opencl.runtime import pocl_target

    return pocl_target.target_features()


def _compiles_vnni(dev: Any) -> bool:
    """Whether ``dev``'s compiler defines ``__AVX512VNNI__``: a PoCL CPU device whose target CPU
    has the instructions (other platforms' compilers do not take clang's x86 builtins)."""
    return _pocl_cpu(dev) and "avx512_vnni" in _target_features()
