"""The few OpenCL calls the probe's child makes (``probe_worker``), through ctypes.

The child builds programs and runs warm-up launches; importing pyopencl for that (and NumPy with
it, whose BLAS threads start too) cost each child ~0.25 s of wall and ~0.35 s of CPU before its
first build, on a cold load's critical path; this module loads in ~0.01 s. Standard library
only: the child loads it by path, without the ``teflon_py`` package.

The child opens the ICD loader the parent process uses (``loaded``: the file mapped in the
parent, so the same platforms come back in the same order) and, first, the parent's libpocl: the
ICD file in pyopencl's wheel names its PoCL by file name only, which the loader finds through
pyopencl's extension's RPATH in the parent and, in the child, as the library already loaded
under that name (loaded locally, so its symbols never interpose on another PoCL's).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from collections.abc import Sequence

_P = ctypes.c_void_p
_U = ctypes.c_uint
_SIZE = ctypes.c_size_t
_INT = ctypes.c_int

CL_DEVICE_TYPE_ALL = 0xFFFFFFFF
CL_DEVICE_NAME = 0x102B
CL_MEM_READ_WRITE = 1
CL_PROGRAM_BUILD_LOG = 0x1183

#: (function, restype, argtypes): the entry points used, all OpenCL 1.2
_SIGNATURES: tuple[tuple[str, object, list[object]], ...] = (
    ("clGetPlatformIDs", _INT, [_U, _P, _P]),
    ("clGetDeviceIDs", _INT, [_P, ctypes.c_uint64, _U, _P, _P]),
    ("clGetDeviceInfo", _INT, [_P, _U, _SIZE, _P, _P]),
    ("clCreateContext", _P, [_P, _U, _P, _P, _P, _P]),
    ("clCreateCommandQueue", _P, [_P, _P, ctypes.c_uint64, _P]),
    ("clCreateProgramWithSource", _P, [_P, _U, _P, _P, _P]),
    ("clBuildProgram", _INT, [_P, _U, _P, ctypes.c_char_p, _P, _P]),
    ("clCreateKernelsInProgram", _INT, [_P, _U, _P, _P]),
    ("clCreateKernel", _P, [_P, ctypes.c_char_p, _P]),
    ("clSetKernelArg", _INT, [_P, _U, _SIZE, _P]),
    ("clCreateBuffer", _P, [_P, ctypes.c_uint64, _SIZE, _P, _P]),
    ("clEnqueueFillBuffer", _INT, [_P, _P, _P, _SIZE, _SIZE, _SIZE, _U, _P, _P]),
    ("clEnqueueNDRangeKernel", _INT, [_P, _P, _U, _P, _P, _P, _U, _P, _P]),
    ("clFinish", _INT, [_P]),
    ("clReleaseKernel", _INT, [_P]),
    ("clReleaseMemObject", _INT, [_P]),
    ("clReleaseProgram", _INT, [_P]),
)


class CLError(Exception):
    """An OpenCL call that returned an error code."""

    def __init__(self, call: str, code: int):
        super().__init__(f"{call} failed with OpenCL error {code}")
        self.code = code


def loaded(prefix: str) -> str | None:
    """The path of the shared library whose file name starts with ``prefix`` that this process
    has mapped (Linux: /proc/self/maps), or None."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                path = line.split(maxsplit=5)[-1].strip() if line.count(" ") >= 5 else ""
                if path.startswith("/") and os.path.basename(path).startswith(prefix):
                    return path
    except OSError:
        pass
    return None


def opencl_library() -> str | None:
    """The ICD loader (or OpenCL library) this process uses, for a child to open the same."""
    return loaded("libOpenCL") or ctypes.util.find_library("OpenCL")


class OpenCL:
    """One OpenCL library opened through ctypes, with the calls ``probe_worker`` makes."""

    def __init__(self, library: str, preload: str | None = None):
        if preload:
            ctypes.CDLL(preload)
        self.lib = ctypes.CDLL(library)
        for name, restype, argtypes in _SIGNATURES:
            fn = getattr(self.lib, name)
            fn.restype, fn.argtypes = restype, argtypes

    def _check(self, call: str, code: int) -> None:
        if code != 0:
            raise CLError(call, code)

    def _made(self, call: str, handle: int | None, err: ctypes.c_int) -> int:
        if err.value != 0 or not handle:
            raise CLError(call, err.value or -1)
        return handle

    def device(self, platform_index: int, device_index: int) -> int:
        """The device numbered as pyopencl numbers them: platforms in the loader's order, each
        platform's devices of every type."""
        count = _U()
        self._check("clGetPlatformIDs", self.lib.clGetPlatformIDs(0, None, ctypes.byref(count)))
        platforms = (_P * count.value)()
        self._check("clGetPlatformIDs", self.lib.clGetPlatformIDs(count.value, platforms, None))
        if not 0 <= platform_index < count.value:
            raise LookupError(f"no OpenCL platform {platform_index} (there are {count.value})")
        plat = platforms[platform_index]
        self._check("clGetDeviceIDs", self.lib.clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 0, None, ctypes.byref(count)))
        devices = (_P * count.value)()
        self._check("clGetDeviceIDs", self.lib.clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, count.value, devices, None))
        if not 0 <= device_index < count.value:
            raise LookupError(f"no device {device_index} on OpenCL platform {platform_index}")
        return int(devices[device_index])

    def device_name(self, dev: int) -> str:
        size = _SIZE()
        self._check("clGetDeviceInfo", self.lib.clGetDeviceInfo(dev, CL_DEVICE_NAME, 0, None, ctypes.byref(size)))
        text = ctypes.create_string_buffer(size.value)
        self._check("clGetDeviceInfo", self.lib.clGetDeviceInfo(dev, CL_DEVICE_NAME, size.value, text, None))
        return text.value.decode("utf-8", "replace").strip()

    def context(self, dev: int) -> int:
        err, devices = _INT(), (_P * 1)(dev)
        return self._made("clCreateContext", self.lib.clCreateContext(None, 1, devices, None, None, ctypes.byref(err)), err)

    def queue(self, ctx: int, dev: int) -> int:
        err = _INT()
        return self._made("clCreateCommandQueue", self.lib.clCreateCommandQueue(ctx, dev, 0, ctypes.byref(err)), err)

    def build(self, ctx: int, dev: int, source: str, options: str) -> int:
        """A program built from ``source``; CLError when the driver reports a build error."""
        err = _INT()
        text = ctypes.c_char_p(source.encode("utf-8"))
        program = self._made("clCreateProgramWithSource",
                             self.lib.clCreateProgramWithSource(ctx, 1, ctypes.byref(text), None, ctypes.byref(err)), err)
        devices = (_P * 1)(dev)
        code = self.lib.clBuildProgram(program, 1, devices, options.encode("utf-8"), None, None)
        if code != 0:
            self.lib.clReleaseProgram(program)
            raise CLError("clBuildProgram", code)
        return program

    def create_kernels(self, program: int) -> int:
        """Create (and release) every kernel of ``program``, as pyopencl's ``all_kernels`` does;
        how many there are."""
        count = _U()
        self._check("clCreateKernelsInProgram", self.lib.clCreateKernelsInProgram(program, 0, None, ctypes.byref(count)))
        kernels = (_P * count.value)()
        self._check("clCreateKernelsInProgram", self.lib.clCreateKernelsInProgram(program, count.value, kernels, None))
        for k in kernels:
            self.lib.clReleaseKernel(k)
        return count.value

    def launch(self, ctx: int, queue: int, program: int, kernel: str, global_size: Sequence[int],
               local_size: Sequence[int] | None, args: Sequence[tuple[str, object]]) -> None:
        """Run ``kernel`` once and wait for it: each argument ``("buf", nbytes)`` (a fresh
        zero-filled buffer of at least 64 bytes) or ``("raw", hex of its bytes)``."""
        err = _INT()
        k = self._made("clCreateKernel", self.lib.clCreateKernel(program, kernel.encode("utf-8"), ctypes.byref(err)), err)
        buffers: list[int] = []
        try:
            for i, (kind, value) in enumerate(args):
                if kind == "buf":
                    size = max(int(str(value)), 64)
                    buf = self._made("clCreateBuffer",
                                     self.lib.clCreateBuffer(ctx, CL_MEM_READ_WRITE, size, None, ctypes.byref(err)), err)
                    buffers.append(buf)
                    zero = ctypes.c_uint8(0)
                    self._check("clEnqueueFillBuffer", self.lib.clEnqueueFillBuffer(
                        queue, buf, ctypes.byref(zero), 1, 0, size, 0, None, None))
                    handle = _P(buf)
                    self._check("clSetKernelArg", self.lib.clSetKernelArg(k, i, ctypes.sizeof(handle), ctypes.byref(handle)))
                else:
                    raw = bytes.fromhex(str(value))
                    data = ctypes.create_string_buffer(raw, len(raw))
                    self._check("clSetKernelArg", self.lib.clSetKernelArg(k, i, len(raw), data))
            dims = len(global_size)
            gsize = (_SIZE * dims)(*global_size)
            lsize = (_SIZE * dims)(*local_size) if local_size is not None else None
            self._check("clEnqueueNDRangeKernel",
                        self.lib.clEnqueueNDRangeKernel(queue, k, dims, None, gsize, lsize, 0, None, None))
            self._check("clFinish", self.lib.clFinish(queue))
        finally:
            for buf in buffers:
                self.lib.clReleaseMemObject(buf)
            self.lib.clReleaseKernel(k)
