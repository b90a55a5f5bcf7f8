"""Run a partition: its kernels enqueued back to back on one in-order queue, one wait at the end.

``cl.Kernel`` objects are created and their arguments set once, at compile time (``prg.name(...)``
would re-create the kernel on every call, ~120 us on PoCL). Graph inputs and outputs are bound
per invoke, as the device's ``io_mode`` says: on a CPU device whose buffers are host memory
(PoCL) the caller's arrays are wrapped as ``USE_HOST_PTR`` buffers, so nothing is copied; on a
GPU sharing host memory they are written into (read from) mapped ``ALLOC_HOST_PTR`` buffers made
once; elsewhere copied to and from device buffers made once. Intermediates live in an ``Arena``:
sub-buffers at planned offsets of one buffer, or of several where one would pass the device's
``CL_DEVICE_MAX_MEM_ALLOC_SIZE``. No buffer is made larger than that, and no launch's work-group
larger than its kernel allows (``check_local_size``): both raise BackendError, never a crash.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from teflon_py.errors import BackendError
from teflon_py.opencl.memory import ArenaPlan, Lifetime, plan_arena
from teflon_py.opencl.runtime.device import DeviceContext


def _cl() -> Any:
    import pyopencl

    return pyopencl


@dataclass
class Launch:
    """One kernel with its arguments set, its geometry and the buffers it must keep alive.

    ``info`` describes it for profiles: the op it came from, FLOPs, bytes its arguments span.
    """

    kernel: Any
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None
    name: str = ""
    keep: tuple[Any, ...] = ()
    info: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class KernelTiming:
    """One launch of a profiled run: device timestamps in nanoseconds (queued, start, end)."""

    launch: Launch
    queued_ns: int
    start_ns: int
    end_ns: int

    @property
    def seconds(self) -> float:
        return (self.end_ns - self.start_ns) * 1e-9


@dataclass
class ArgUse:
    """Where one external tensor is passed: argument ``index`` of ``kernel``."""

    kernel: Any
    index: int


@dataclass
class ExternalTensor:
    """A partition input or output: its shape, dtype and every kernel argument it feeds."""

    shape: tuple[int, ...]
    dtype: np.dtype
    uses: list[ArgUse] = field(default_factory=list)
    device_buffer: Any = None  # made once unless the caller's array is wrapped ("host_ptr")


def check_alloc(dc: DeviceContext, nbytes: int, what: str) -> None:
    """BackendError when one buffer of ``nbytes`` would pass the device's largest allocation."""
    if nbytes > dc.max_alloc:
        raise BackendError(f"{what} needs a buffer of {nbytes} bytes, more than the largest the OpenCL "
                           f"device {dc.name} allocates ({dc.max_alloc} bytes, CL_DEVICE_MAX_MEM_ALLOC_SIZE)")


def _work_group_limit(dc: DeviceContext, kernel: Any) -> int:
    cl = _cl()
    return min(int(kernel.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, dc.device)),
               int(dc.device.max_work_group_size))


def fit_local_size(dc: DeviceContext, kernel: Any,
                   local_size: tuple[int, ...] | None) -> tuple[int, ...] | None:
    """``local_size`` halved (its largest even dimension first) until the compiled ``kernel``
    takes it: a driver may allow a register-heavy kernel fewer work-items than the device's
    maximum (llvmpipe: 32 for the GPU-style conv, 1024 for small kernels), which is only known
    once the kernel exists. No kernel in ``cl_kernels`` uses local memory or local ids, so any
    work-group that divides the global size computes the same; a halved one still divides it."""
    if local_size is None or all(n == 1 for n in local_size):
        return local_size
    limit = _work_group_limit(dc, kernel)
    sizes = list(local_size)
    while int(np.prod(sizes)) > limit:
        even = [d for d, n in enumerate(sizes) if n % 2 == 0]
        if not even:
            break  # check_local_size names what does not fit
        d = max(even, key=lambda k: sizes[k])
        sizes[d] //= 2
    return tuple(sizes)


def check_local_size(dc: DeviceContext, kernel: Any, global_size: Sequence[int],
                     local_size: Sequence[int] | None, name: str = "") -> None:
    """BackendError unless ``local_size`` fits ``kernel`` on the device: its product at most
    ``CL_KERNEL_WORK_GROUP_SIZE`` (itself at most the device's maximum), each dimension at most
    ``CL_DEVICE_MAX_WORK_ITEM_SIZES``, and dividing the global size (OpenCL 1.2's uniform groups)."""
    if local_size is None or all(n == 1 for n in local_size):
        return  # one work-item per group: every device and kernel takes it
    dev = dc.device
    limit = _work_group_limit(dc, kernel)
    items = list(dev.max_work_item_sizes)
    what = f"kernel {name or kernel.function_name} on {dc.name}"
    if len(local_size) != len(global_size):
        raise BackendError(f"{what}: local size {tuple(local_size)} and global size {tuple(global_size)} differ in rank")
    if int(np.prod(local_size)) > limit:
        raise BackendError(f"{what}: work-group {tuple(local_size)} of {int(np.prod(local_size))} items exceeds "
                           f"the kernel's limit of {limit} (CL_KERNEL_WORK_GROUP_SIZE)")
    for d, (n, g) in enumerate(zip(local_size, global_size)):
        if n > items[d]:
            raise BackendError(f"{what}: local size {n} in dimension {d} exceeds {items[d]} (CL_DEVICE_MAX_WORK_ITEM_SIZES)")
        if g % n:
            raise BackendError(f"{what}: global size {g} in dimension {d} is not a multiple of the local size {n}")


def constant_buffer(dc: DeviceContext, array: np.ndarray, what: str = "a constant") -> Any:
    """A read-only device buffer holding ``array`` (weights, bias, quantization tables)."""
    cl = _cl()
    data = np.ascontiguousarray(array)
    check_alloc(dc, data.nbytes, what)
    return cl.Buffer(dc.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=data)


_zeros: dict[int, Any] = {}  # context pointer -> largest zeros buffer made so far


def zeros_buffer(dc: DeviceContext, floats: int) -> Any:
    """A shared read-only buffer of at least ``floats`` zero floats (the kernels' padding source)."""
    key = dc.context.int_ptr
    floats = max(floats, 16)
    buf = _zeros.get(key)
    if buf is None or buf.size < floats * 4:
        buf = _zeros[key] = constant_buffer(dc, np.zeros(max(floats, 1024), np.float32))
    return buf


#: the bytes a sub-buffer spans at least (a 1-byte bool tensor still gets a word)
MIN_VIEW = 4


class Arena:
    """Device buffers for a partition's intermediates, each tensor a sub-buffer of one of them:
    one buffer, or several where one would exceed the device's largest allocation."""

    def __init__(self, dc: DeviceContext, lifetimes: Sequence[Lifetime], names: Sequence[str] = ()):
        cl = _cl()
        self.alignment = max(128, dc.base_align)
        limit = dc.max_alloc
        spans = [Lifetime(max(t.size, MIN_VIEW), t.first, t.last) for t in lifetimes]
        for k, t in enumerate(spans):
            check_alloc(dc, t.size, names[k] if k < len(names) else "an intermediate tensor")
        self.plan: ArenaPlan = plan_arena(spans, self.alignment, max_size=limit)
        sizes = self.plan.sizes or (min(self.alignment, limit),)
        self.buffers = [cl.Buffer(dc.context, cl.mem_flags.READ_WRITE, n) for n in sizes]
        self.buffer = self.buffers[0]
        self.views = [
            self.buffers[self.plan.chunk_of(k)].get_sub_region(off, t.size)
            for k, (off, t) in enumerate(zip(self.plan.offsets, spans))
        ]


class LaunchList:
    """A partition's launches and external tensors; ``run`` binds arrays, enqueues all, waits once."""

    def __init__(self, dc: DeviceContext, launches: Sequence[Launch],
                 inputs: Sequence[ExternalTensor] = (), outputs: Sequence[ExternalTensor] = (),
                 keep: Sequence[Any] = (), zero_copy: bool | None = None,
                 after_first_run: Callable[[], object] | None = None, io: str | None = None):
        """``io`` is one of ``device.IO_MODES`` (default the device's ``io_mode``);
        ``zero_copy`` True or False is the older spelling of "host_ptr" or "copy"."""
        from teflon_py.opencl.runtime.device import IO_MODES

        self.dc = dc
        self.after_first_run = after_first_run  # e.g. ProgramCache.commit, once kernels are JIT-compiled
        self.launches = list(launches)
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.keep = list(keep)  # arena, constants: alive as long as the list
        if io is None:
            io = dc.io_mode if zero_copy is None else ("host_ptr" if zero_copy else "copy")
        if io not in IO_MODES:
            raise ValueError(f"io must be one of {IO_MODES}, got {io!r}")
        self.io = io
        for la in self.launches:
            la.local_size = fit_local_size(dc, la.kernel, la.local_size)
            check_local_size(dc, la.kernel, la.global_size, la.local_size, la.name)
        cl = _cl()
        for k, t in enumerate(self.inputs + self.outputs):
            nbytes = max(int(np.prod(t.shape)) * np.dtype(t.dtype).itemsize, MIN_VIEW)
            check_alloc(dc, nbytes, f"graph {'input' if k < len(self.inputs) else 'output'} of shape {list(t.shape)}")
            if io == "host_ptr":
                continue
            flags = cl.mem_flags.READ_WRITE | (cl.mem_flags.ALLOC_HOST_PTR if io == "map" else 0)
            t.device_buffer = cl.Buffer(dc.context, flags, nbytes)
            for use in t.uses:
                use.kernel.set_arg(use.index, t.device_buffer)

    @property
    def zero_copy(self) -> bool:
        """Whether the caller's arrays are wrapped as the kernels' buffers ("host_ptr")."""
        return self.io == "host_ptr"

    def run(self, inputs: Sequence[np.ndarray] = (),
            profile: bool = False) -> tuple[list[np.ndarray], list[tuple[str, float]]]:
        """Run once on ``inputs``; return the outputs and, if ``profile``, (name, seconds) per launch."""
        outs, timings = self.run_timed(inputs, profile)
        return outs, [(t.launch.name, t.seconds) for t in timings]

    def run_timed(self, inputs: Sequence[np.ndarray] = (),
                  profile: bool = True) -> tuple[list[np.ndarray], list[KernelTiming]]:
        """Run once on ``inputs``; with ``profile``, on a profiling queue, with each launch's times."""
        cl = _cl()
        if len(inputs) != len(self.inputs):
            raise BackendError(f"expected {len(self.inputs)} inputs, got {len(inputs)}")
        queue = self.dc.queue(profiling=profile)
        hold: list[Any] = []
        arrays = [self._input_array(t, x, self.zero_copy) for t, x in zip(self.inputs, inputs)]
        outs = [np.empty(t.shape, t.dtype) for t in self.outputs]
        if self.zero_copy:
            for t, arr, flags in [(t, a, cl.mem_flags.READ_ONLY) for t, a in zip(self.inputs, arrays)] + [
                (t, a, cl.mem_flags.WRITE_ONLY) for t, a in zip(self.outputs, outs)
            ]:
                buf = cl.Buffer(self.dc.context, flags | cl.mem_flags.USE_HOST_PTR, hostbuf=arr) if arr.size else None
                hold.append(buf)
                for use in t.uses:
                    use.kernel.set_arg(use.index, buf)
        elif self.io == "map":
            for t, arr in zip(self.inputs, arrays):
                if arr.size:
                    _write_mapped(queue, t.device_buffer, arr)
        else:
            for t, arr in zip(self.inputs, arrays):
                if arr.size:
                    cl.enqueue_copy(queue, t.device_buffer, arr, is_blocking=False)
        events = [
            cl.enqueue_nd_range_kernel(queue, la.kernel, la.global_size, la.local_size) for la in self.launches
        ]
        if self.io == "map":
            for t, arr in zip(self.outputs, outs):
                if arr.size:
                    _read_mapped(queue, t.device_buffer, arr)
        elif self.io == "copy":
            for t, arr in zip(self.outputs, outs):
                if arr.size:
                    cl.enqueue_copy(queue, arr, t.device_buffer, is_blocking=False)
        queue.finish()
        times = []
        if profile:
            times = [KernelTiming(la, ev.profile.queued, ev.profile.start, ev.profile.end)
                     for la, ev in zip(self.launches, events)]
            if times and all(t.end_ns - t.start_ns <= 1 for t in times):
                times = self._host_timed(queue)
        del hold  # the wrapped arrays are free to change again
        if self.after_first_run is not None:
            hook, self.after_first_run = self.after_first_run, None
            hook()
        return outs, times

    def _host_timed(self, queue: Any) -> list[KernelTiming]:
        """Each launch again, alone, timed on the host (enqueue to finish): for devices whose
        profiling queue records no real timestamps (rusticl on llvmpipe counts 0, 1, 2, ...)."""
        cl = _cl()
        times = []
        for la in self.launches:
            t0 = time.perf_counter_ns()
            cl.enqueue_nd_range_kernel(queue, la.kernel, la.global_size, la.local_size)
            queue.finish()
            times.append(KernelTiming(la, t0, t0, time.perf_counter_ns()))
        return times

    @staticmethod
    def _input_array(t: ExternalTensor, x: np.ndarray, wrapped: bool) -> np.ndarray:
        arr = np.ascontiguousarray(x, dtype=t.dtype)
        if arr.shape != tuple(t.shape) and arr.size == int(np.prod(t.shape)):
            arr = arr.reshape(t.shape)
        if arr.shape != tuple(t.shape):
            raise BackendError(f"input of shape {x.shape} where {t.shape} was compiled")
        if wrapped and not arr.flags.writeable:  # USE_HOST_PTR wants a writable host buffer
            arr = arr.copy()
        return arr


def _write_mapped(queue: Any, buf: Any, arr: np.ndarray) -> None:
    """Write ``arr`` into ``buf`` through a map (host-visible memory: no transfer is enqueued)."""
    cl = _cl()
    host, _ = cl.enqueue_map_buffer(queue, buf, cl.map_flags.WRITE_INVALIDATE_REGION, 0, arr.shape, arr.dtype,
                                    is_blocking=True)
    try:
        host[...] = arr
    finally:
        host.base.release(queue)


def _read_mapped(queue: Any, buf: Any, out: np.ndarray) -> None:
    """Read ``buf`` into ``out`` through a map; blocking, so after every launch queued before it."""
    cl = _cl()
    host, _ = cl.enqueue_map_buffer(queue, buf, cl.map_flags.READ, 0, out.shape, out.dtype, is_blocking=True)
    try:
        out[...] = host
    finally:
        host.base.release(queue)
