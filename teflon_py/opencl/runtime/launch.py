"""Run a partition: its kernels enqueued back to back on one in-order queue, one wait at the end.

``cl.Kernel`` objects are created and their arguments set once, at compile time (``prg.name(...)``
would re-create the kernel on every call, ~120 us on PoCL). Graph inputs and outputs are bound
per invoke: on a CPU device whose buffers are host memory (PoCL) the caller's arrays are wrapped
as ``USE_HOST_PTR`` buffers, so nothing is copied; elsewhere they are copied to and from device
buffers made once. Intermediates live in one ``Arena`` buffer, as sub-buffers at planned offsets.
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
    device_buffer: Any = None  # made once when the device is not zero-copy


def constant_buffer(dc: DeviceContext, array: np.ndarray) -> Any:
    """A read-only device buffer holding ``array`` (weights, bias, quantization tables)."""
    cl = _cl()
    data = np.ascontiguousarray(array)
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


class Arena:
    """One device buffer for a partition's intermediates; each tensor is a sub-buffer of it."""

    def __init__(self, dc: DeviceContext, lifetimes: Sequence[Lifetime]):
        cl = _cl()
        self.alignment = max(128, dc.base_align)
        self.plan: ArenaPlan = plan_arena(lifetimes, self.alignment)
        self.buffer = cl.Buffer(dc.context, cl.mem_flags.READ_WRITE, max(self.plan.size, self.alignment))
        self.views = [
            self.buffer.get_sub_region(off, max(t.size, 4)) for off, t in zip(self.plan.offsets, lifetimes)
        ]


class LaunchList:
    """A partition's launches and external tensors; ``run`` binds arrays, enqueues all, waits once."""

    def __init__(self, dc: DeviceContext, launches: Sequence[Launch],
                 inputs: Sequence[ExternalTensor] = (), outputs: Sequence[ExternalTensor] = (),
                 keep: Sequence[Any] = (), zero_copy: bool | None = None,
                 after_first_run: Callable[[], object] | None = None):
        self.dc = dc
        self.after_first_run = after_first_run  # e.g. ProgramCache.commit, once kernels are JIT-compiled
        self.launches = list(launches)
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.keep = list(keep)  # arena, constants: alive as long as the list
        self.zero_copy = dc.zero_copy if zero_copy is None else zero_copy
        if not self.zero_copy:
            cl = _cl()
            for t in self.inputs + self.outputs:
                nbytes = max(int(np.prod(t.shape)) * np.dtype(t.dtype).itemsize, 4)
                t.device_buffer = cl.Buffer(dc.context, cl.mem_flags.READ_WRITE, nbytes)
                for use in t.uses:
                    use.kernel.set_arg(use.index, t.device_buffer)

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
        arrays = [self._input_array(t, x) for t, x in zip(self.inputs, inputs)]
        outs = [np.empty(t.shape, t.dtype) for t in self.outputs]
        if self.zero_copy:
            for t, arr, flags in [(t, a, cl.mem_flags.READ_ONLY) for t, a in zip(self.inputs, arrays)] + [
                (t, a, cl.mem_flags.WRITE_ONLY) for t, a in zip(self.outputs, outs)
            ]:
                buf = cl.Buffer(self.dc.context, flags | cl.mem_flags.USE_HOST_PTR, hostbuf=arr) if arr.size else None
                hold.append(buf)
                for use in t.uses:
                    use.kernel.set_arg(use.index, buf)
        else:
            for t, arr in zip(self.inputs, arrays):
                if arr.size:
                    cl.enqueue_copy(queue, t.device_buffer, arr, is_blocking=False)
        events = [
            cl.enqueue_nd_range_kernel(queue, la.kernel, la.global_size, la.local_size) for la in self.launches
        ]
        if not self.zero_copy:
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
    def _input_array(t: ExternalTensor, x: np.ndarray) -> np.ndarray:
        arr = np.ascontiguousarray(x, dtype=t.dtype)
        if arr.shape != tuple(t.shape) and arr.size == int(np.prod(t.shape)):
            arr = arr.reshape(t.shape)
        if arr.shape != tuple(t.shape):
            raise BackendError(f"input of shape {x.shape} where {t.shape} was compiled")
        if not arr.flags.writeable:  # USE_HOST_PTR wants a writable host buffer
            arr = arr.copy()
        return arr
