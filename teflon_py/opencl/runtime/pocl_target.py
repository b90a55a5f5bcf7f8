"""Make PyPI's PoCL 3.0 build kernels on CPUs its LLVM 14 does not know (Zen 5, new Intel cores).

PoCL asks LLVM for the host CPU's name; LLVM 14 answers ``generic`` for CPUs newer than itself,
PoCL passes ``-target-cpu generic`` to clang, and clang 14 rejects that name, so *every* program
build fails ("unknown target CPU 'generic'"). Before PoCL initialises its devices we replace
PoCL's exported ``pocl_get_llvm_cpu_name`` with a stub returning the richest LLVM 14 CPU name
whose instruction set this CPU has (read from /proc/cpuinfo), so kernels get AVX-512 and FMA.

Patching happens only when PoCL would otherwise say ``generic`` (builds cannot work then), only
on Linux x86-64, and only in this process. ``TEFLON_POCL_CPU=off`` disables it; any other value
forces that LLVM CPU name.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import glob
import os
import platform
import sys

ENV = "TEFLON_POCL_CPU"

# LLVM 14 CPU names, richest first, with the /proc/cpuinfo flags each one's code may use.
_BASE = {"avx2", "fma", "bmi1", "bmi2", "f16c", "movbe", "popcnt", "abm"}
_SKX = _BASE | {"avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}
_CPU_CHOICES: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "icelake-server",
        frozenset(
            _SKX
            | {"avx512ifma", "avx512vbmi", "avx512_vbmi2", "avx512_vnni", "avx512_bitalg",
               "avx512_vpopcntdq", "gfni", "vaes", "vpclmulqdq", "sha_ni", "rdpid"}
        ),
    ),
    ("cascadelake", frozenset(_SKX | {"avx512_vnni"})),
    ("skylake-avx512", frozenset(_SKX)),
    ("haswell", frozenset(_BASE)),
    ("x86-64", frozenset()),
)

_state: dict[str, str | None] = {}  # "cpu": the name patched in, once decided
_KEEP: list[object] = []  # the patched-in string must outlive the library


def applied() -> str | None:
    """The LLVM CPU name this process patched into PoCL, or None when it did not patch."""
    return _state.get("cpu")


def target_features() -> set[str]:
    """The /proc/cpuinfo flags PoCL's kernel compiler may use on this host: those of the LLVM CPU
    name this process patched in (``ensure``), else the host's own (PoCL targets the host CPU)."""
    host = _cpu_flags()
    name = applied()
    needs = dict(_CPU_CHOICES).get(name) if name is not None else None
    return set(needs) & host if needs is not None else host


def best_cpu_name(flags: set[str]) -> str:
    """The richest LLVM 14 CPU name whose instruction set is within ``flags``."""
    return next(name for name, needs in _CPU_CHOICES if needs <= flags)


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def pocl_path() -> str | None:
    """The libpocl that pyopencl's wheel ships (the one its ICD loader opens), else the system's."""
    try:
        import pyopencl

        libs = glob.glob(os.path.join(os.path.dirname(pyopencl.__file__), ".libs", "libpocl*.so*"))
    except ImportError:
        libs = []
    return libs[0] if libs else ctypes.util.find_library("pocl")


def _patch_return_string(lib: ctypes.CDLL, symbol: str, value: bytes) -> None:
    """Overwrite ``symbol``'s first bytes with ``return strdup(value)`` (x86-64 machine code)."""
    libc = ctypes.CDLL(None, use_errno=True)
    target = ctypes.cast(getattr(lib, symbol), ctypes.c_void_p).value
    strdup = ctypes.cast(libc.strdup, ctypes.c_void_p).value
    keep = ctypes.create_string_buffer(value)
    _KEEP.append(keep)
    code = (
        b"\x48\xbf" + ctypes.addressof(keep).to_bytes(8, "little")  # movabs rdi, value
        + b"\x48\xb8" + strdup.to_bytes(8, "little")  # movabs rax, strdup
        + b"\xff\xe0"  # jmp rax
    )
    page = os.sysconf("SC_PAGE_SIZE")
    start = target & ~(page - 1)
    length = target + len(code) - start
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    if libc.mprotect(start, length, 7) != 0:  # read | write | exec
        raise OSError(ctypes.get_errno(), "mprotect failed")
    ctypes.memmove(target, code, len(code))
    libc.mprotect(start, length, 5)  # read | exec


def ensure(path: str | None = None) -> str | None:
    """Patch PoCL's CPU name if it is needed and possible; return the name used, if any.
    ``path``: the libpocl to patch (the probe's child passes its parent's), else ``pocl_path()``."""
    if "cpu" in _state:
        return _state["cpu"]
    _state["cpu"] = None
    forced = os.environ.get(ENV, "").strip()
    if forced.lower() == "off" or sys.platform != "linux" or platform.machine() != "x86_64":
        return None
    path = path or pocl_path()
    if path is None:
        return None
    try:
        lib = ctypes.CDLL(path)
        getter = lib.pocl_get_llvm_cpu_name
    except (OSError, AttributeError):
        return None
    getter.restype = ctypes.c_void_p
    raw = getter()
    current = ctypes.string_at(raw) if raw else b""
    if raw:
        ctypes.CDLL(None).free(ctypes.c_void_p(raw))
    if not forced and current != b"generic":
        return None
    name = forced or best_cpu_name(_cpu_flags())
    try:
        _patch_return_string(lib, "pocl_get_llvm_cpu_name", name.encode())
    except OSError:
        return None  # e.g. W^X policy: builds will fail with ProgramCache's hint
    _state["cpu"] = name
    return name
