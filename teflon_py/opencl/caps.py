"""What a lowering's check may ask of the device: its capabilities, read once from the delegate's
chosen device (never from a global default), so that one model can be checked against two
devices and get two honest answers."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Caps:
    """One OpenCL device's capabilities, as the support checks see them."""

    name: str = "unknown device"
    device_type: str = "CPU"  # "GPU", "CPU", "ACCELERATOR" or "OTHER"
    fp64: bool = True
    fp16: bool = False
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
    #: float32 division correctly rounded under -cl-fp32-correctly-rounded-divide-sqrt
    fp32_correct_divide: bool = True
    #: float32 subnormals kept (not flushed to zero)
    fp32_denorms: bool = True

    @classmethod
    def of(cls, dev: Any) -> Caps:
        """The capabilities of a ``pyopencl.Device``."""
        import pyopencl as cl

        from teflon_py.opencl.runtime.device import device_kind, max_alloc

        ext = frozenset(dev.extensions.split())
        fp32 = int(dev.single_fp_config)
        return cls(
            name=dev.name.strip(),
            device_type=device_kind(dev),
            fp64="cl_khr_fp64" in ext and bool(dev.double_fp_config),
            fp16="cl_khr_fp16" in ext,
            max_work_group_size=int(dev.max_work_group_size),
            local_mem_size=int(dev.local_mem_size),
            image_support=bool(dev.image_support),
            max_alloc=max_alloc(dev),
            extensions=ext,
            vnni=_compiles_vnni(dev),
            fp32_correct_divide=bool(fp32 & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT),
            fp32_denorms=bool(fp32 & cl.device_fp_config.DENORM),
        )

    @property
    def is_cpu(self) -> bool:
        return self.device_type == "CPU"

    def fp64_reason(self) -> str | None:
        """Why a double-precision kernel cannot run here, or None."""
        if self.fp64:
            return None
        return f"the OpenCL device {self.name} has no cl_khr_fp64 (double requantization needs it)"

    def exact_fp32_reason(self, divide: bool = False) -> str | None:
        """Why a kernel that must match NumPy's float32 bit for bit (subnormals kept; with
        ``divide``, correctly rounded division) cannot run here, or None."""
        if not self.fp32_denorms:
            return f"the OpenCL device {self.name} flushes float32 subnormals (bit-exact results need them)"
        if divide and not self.fp32_correct_divide:
            return f"the OpenCL device {self.name} has no correctly rounded float32 division"
        return None


def _compiles_vnni(dev: Any) -> bool:
    """Whether ``dev``'s compiler defines ``__AVX512VNNI__``: a PoCL CPU device whose target CPU
    has the instructions (other platforms' compilers do not take clang's x86 builtins)."""
    from teflon_py.opencl.runtime import device, pocl_target

    pocl = "pocl" in dev.platform.vendor.lower() or "portable computing" in dev.platform.name.lower()
    return pocl and device.device_kind(dev) == "CPU" and "avx512_vnni" in pocl_target.target_features()
