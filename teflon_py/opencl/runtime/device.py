"""Pick an OpenCL device and hold one context and queue per device.

Choice: the explicit ``device`` option, else ``TEFLON_CL_DEVICE``, else the first GPU, else the
first CPU device (PoCL). A spec is ``"P:D"`` (platform and device indices, as ``devices`` lists
them) or a case-insensitive substring of the device name, platform name or vendor ("pocl").

Device limits the runtime honours (``DeviceContext``): ``CL_DEVICE_MAX_MEM_ALLOC_SIZE`` (no buffer
larger; ``TEFLON_CL_MAX_ALLOC`` lowers it, to exercise the split arena and the refusals on a
roomy device), ``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` (sub-buffer offsets), and how graph inputs and
outputs reach the device (``io_mode``; ``TEFLON_CL_IO`` forces one of ``IO_MODES``).
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from teflon_py.errors import BackendError
from teflon_py.opencl.runtime import pocl_target

ENV = "TEFLON_CL_DEVICE"
MAX_ALLOC_ENV = "TEFLON_CL_MAX_ALLOC"
IO_ENV = "TEFLON_CL_IO"
#: how a launch list binds graph inputs and outputs: "host_ptr" wraps the caller's arrays as
#: USE_HOST_PTR buffers (zero copy where device buffers are host memory: PoCL's CPU device);
#: "map" maps ALLOC_HOST_PTR buffers made once (unified-memory GPUs: the host writes the memory
#: the kernels read, no transfer); "copy" enqueues copies to and from device buffers (discrete GPUs)
IO_MODES = ("host_ptr", "map", "copy")

_lock = threading.Lock()
_contexts: dict[Any, DeviceContext] = {}


def _cl() -> Any:
    try:
        import pyopencl
    except ImportError as e:  # pragma: no cover - pyopencl is a dependency
        raise BackendError("pyopencl is not installed (pip install 'pyopencl[pocl]')") from e
    return pyopencl


def platforms() -> list[Any]:
    """Every OpenCL platform; BackendError when there is none."""
    pocl_target.ensure()  # must run before PoCL initialises its devices
    cl = _cl()
    try:
        found = cl.get_platforms()
    except cl.Error as e:
        raise BackendError(f"no OpenCL platform found ({e}); install pyopencl[pocl] or a GPU driver") from e
    if not found:
        raise BackendError("no OpenCL platform found; install pyopencl[pocl] or a GPU driver")
    return found


def _all_devices() -> list[tuple[int, int, Any]]:
    out = []
    for p_i, plat in enumerate(platforms()):
        try:
            devs = plat.get_devices()
        except _cl().Error:
            continue  # a platform with no devices (e.g. a GPU ICD without a GPU)
        out.extend((p_i, d_i, dev) for d_i, dev in enumerate(devs))
    return out


def list_devices() -> list[dict[str, Any]]:
    """Every device as plain data, for ``teflon-py devices`` and error messages."""
    return [
        {
            "index": f"{p_i}:{d_i}",
            "platform": dev.platform.name.strip(),
            "name": dev.name.strip(),
            "type": device_kind(dev),
            "version": dev.version.strip(),
            "driver": dev.driver_version.strip(),
            "compute_units": dev.max_compute_units,
            "global_mem_bytes": dev.global_mem_size,
            "max_alloc_bytes": dev.max_mem_alloc_size,
            "base_align_bytes": max(1, dev.mem_base_addr_align // 8),
            "max_work_group_size": dev.max_work_group_size,
            "host_unified_memory": bool(dev.host_unified_memory),
            "llvm_cpu_patch": pocl_target.applied() if "pocl" in dev.platform.vendor.lower() else None,
        }
        for p_i, d_i, dev in _all_devices()
    ]


def index_of(dev: Any) -> str:
    """``dev``'s "P:D" spec (``select_device`` finds it again in another process with the same ICDs)."""
    for p_i, d_i, other in _all_devices():
        if other.int_ptr == dev.int_ptr:
            return f"{p_i}:{d_i}"
    raise BackendError(f"OpenCL device {dev.name.strip()!r} is not among the platforms' devices")


def max_alloc(dev: Any) -> int:
    """The largest buffer ``dev`` allocates: ``CL_DEVICE_MAX_MEM_ALLOC_SIZE``, or less where
    ``TEFLON_CL_MAX_ALLOC`` (bytes; a ``k``/``M``/``G`` suffix multiplies by 1024s) says so."""
    limit = int(dev.max_mem_alloc_size)
    text = os.environ.get(MAX_ALLOC_ENV, "").strip()
    if not text:
        return limit
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1].lower(), 1)
    try:
        forced = int(text[:-1] if scale > 1 else text) * scale
    except ValueError:
        raise BackendError(f"{MAX_ALLOC_ENV} must be a byte count (e.g. 65536 or 64k), got {text!r}") from None
    if forced <= 0:
        raise BackendError(f"{MAX_ALLOC_ENV} must be positive, got {text!r}")
    return min(limit, forced)


def device_kind(dev: Any) -> str:
    """"GPU", "CPU", "ACCELERATOR" or "OTHER" (PoCL also sets the DEFAULT bit; ignore it)."""
    t = _cl().device_type
    for kind in ("GPU", "CPU", "ACCELERATOR"):
        if dev.type & getattr(t, kind):
            return kind
    return "OTHER"


def select_device(spec: str | None = None) -> Any:
    """The device named by ``spec``, else by ``TEFLON_CL_DEVICE``, else the first GPU, else CPU."""
    cl = _cl()
    spec = spec if spec is not None else os.environ.get(ENV) or None
    found = _all_devices()
    if not found:
        raise BackendError("OpenCL platforms exist but none has a device")
    if spec is not None:
        return _match(spec.strip(), found)
    for kind in (cl.device_type.GPU, cl.device_type.CPU):
        for _, _, dev in found:
            if dev.type & kind:
                return dev
    return found[0][2]


def _match(spec: str, found: list[tuple[int, int, Any]]) -> Any:
    if ":" in spec and all(part.strip().isdigit() for part in spec.split(":", 1)):
        p_i, d_i = (int(part) for part in spec.split(":", 1))
        for fp, fd, dev in found:
            if (fp, fd) == (p_i, d_i):
                return dev
    else:
        needle = spec.lower()
        for _, _, dev in found:
            names = (dev.name, dev.platform.name, dev.platform.vendor)
            if any(needle in n.lower() for n in names):
                return dev
    known = "; ".join(f"{p}:{d} {dev.name.strip()} ({dev.platform.name.strip()})" for p, d, dev in found)
    raise BackendError(f"no OpenCL device matches {spec!r}; available: {known}")


@dataclass
class DeviceContext:
    """One device with its context and lazily created in-order queues (plain and profiling)."""

    device: Any
    context: Any
    _queues: dict[bool, Any] = field(default_factory=dict)

    def queue(self, profiling: bool = False) -> Any:
        """The context's in-order queue; ``profiling`` gives one that records event times."""
        with _lock:
            if profiling not in self._queues:
                cl = _cl()
                props = cl.command_queue_properties.PROFILING_ENABLE if profiling else 0
                self._queues[profiling] = cl.CommandQueue(self.context, self.device, properties=props)
            return self._queues[profiling]

    @property
    def name(self) -> str:
        return self.device.name.strip()

    @property
    def is_cpu(self) -> bool:
        return bool(self.device.type & _cl().device_type.CPU)

    @property
    def zero_copy(self) -> bool:
        """Whether ``USE_HOST_PTR`` buffers are the host memory itself (PoCL's CPU device)."""
        return self.is_cpu and self.host_unified

    @property
    def is_gpu(self) -> bool:
        return bool(self.device.type & _cl().device_type.GPU)

    @property
    def host_unified(self) -> bool:
        """``CL_DEVICE_HOST_UNIFIED_MEMORY``: the device and the host share one memory."""
        return bool(self.device.host_unified_memory)

    @property
    def io_mode(self) -> str:
        """How graph inputs and outputs are bound (one of ``IO_MODES``): ``TEFLON_CL_IO`` if set,
        else "host_ptr" where buffers are host memory, "map" on a GPU that shares host memory
        (``CL_DEVICE_HOST_UNIFIED_MEMORY``), else "copy"."""
        forced = os.environ.get(IO_ENV, "").strip().lower()
        if forced:
            if forced not in IO_MODES:
                raise BackendError(f"{IO_ENV} must be one of {', '.join(IO_MODES)}, got {forced!r}")
            return forced
        if self.zero_copy:
            return "host_ptr"
        if self.is_gpu and self.host_unified:
            return "map"
        return "copy"

    @property
    def max_alloc(self) -> int:
        """The largest buffer this device allocates (``max_alloc``: the device's limit, or
        ``TEFLON_CL_MAX_ALLOC``'s lower one)."""
        return max_alloc(self.device)

    @property
    def base_align(self) -> int:
        """Byte alignment a sub-buffer's offset needs: ``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` is in
        BITS (1024 on PoCL: 128 bytes; 4096 bits on many GPUs), rounded up to a power of two."""
        nbytes = max(1, -(-int(self.device.mem_base_addr_align) // 8))
        return 1 << (nbytes - 1).bit_length()

    def identity(self) -> str:
        """What a compiled binary depends on: device name, platform and driver versions."""
        dev = self.device
        return "|".join((dev.name.strip(), dev.platform.version.strip(), dev.driver_version.strip(),
                         pocl_target.applied() or ""))


def get_context(device: Any | None = None, *, spec: str | None = None) -> DeviceContext:
    """The shared DeviceContext of ``device`` (default: ``select_device(spec)``)."""
    dev = device if device is not None else select_device(spec)
    with _lock:
        dc = _contexts.get(dev.int_ptr)
        if dc is None:
            try:
                ctx = _cl().Context([dev])
            except _cl().Error as e:
                raise BackendError(f"cannot create an OpenCL context on {dev.name.strip()}: {e}") from e
            dc = _contexts[dev.int_ptr] = DeviceContext(dev, ctx)
        return dc
