"""Build OpenCL programs from ``cl_kernels`` sources with ``-D`` macros, cached on disk as binaries.

A program's source is ``vectors.cl`` (the kernels' vector vocabulary) and its files, concatenated,
under the device's own macros (``Caps.program_defines``: which rendering of ``vectors.cl``) and
the program's; a file entry ``(name, defines)`` instantiates a
*template* file (one whose kernel names are macros, e.g. ``GEMM_NAME``) under those macros,
wrapped in ``#define``/``#undef``, so several blockings of one kernel live in one program.

Costs on PoCL (2-core EPYC): ~0.1-0.4 s to build a program from source, then ~0.15 s of JIT per
kernel at its first launch (PoCL compiles a work-group function per kernel and local size).
Two disk caches can skip both: PoCL's own kernel cache (``POCL_CACHE_DIR``, on unless
``POCL_KERNEL_CACHE=0``), which keeps the compiled bitcode and work-group functions and brings a
program back in ~25 ms; and ours, program binaries in ``TEFLON_CACHE_DIR`` (default
``~/.cache/teflon-py/cl``), which load in ~3 ms. Ours costs ~0.2 s per kernel to *write* on
PoCL (asking for a binary makes PoCL compile a generic work-group function of every kernel), so
on PoCL with its kernel cache on, the shared caches (``program_cache``) only read ours; elsewhere
``build`` keeps freshly built programs pending and ``commit`` (called by the runtime after a
partition's first run, so binaries carry the JIT-compiled kernels) writes them.

Entries are one file per key: the sha256 of (source, options, device name, platform version,
driver version). A file holds a magic, the payload's sha256 and the payload; a damaged or
unloadable one is rebuilt from source. A program with no binary is first built in a child
process (``probe``: some drivers abort the process instead of reporting a build error), whose
outcome is kept beside the binaries as ``<key>.ok`` or ``<key>.crash``.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.resources
import math
import os
import tempfile
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from teflon_py.errors import BackendError
from teflon_py.opencl.caps import Caps
from teflon_py.opencl.runtime import ahead, probe
from teflon_py.opencl.runtime.compiler_output import captured
from teflon_py.opencl.runtime.device import DeviceContext

ENV = "TEFLON_CACHE_DIR"
_MAGIC = b"TFCLBIN1"
_memo: dict[tuple[int, str], Any] = {}  # (context pointer, key) -> built cl.Program
_lock = threading.Lock()
#: Programs obtained in this process, by where they came from ("memo", "disk", "source", "corrupt").
TOTALS: Counter[str] = Counter()
#: A program's file: a plain ``cl_kernels`` file name, or a template file and its macros.
FileEntry = str | tuple[str, tuple[tuple[str, object], ...]]
#: The file every program starts with: its 16-wide loads, stores and conversions in clang's
#: vector extensions or in standard OpenCL C, as the device's ``TEFLON_CLANG_VECTORS`` says.
PRELUDE = "vectors.cl"


def default_cache_dir() -> Path:
    """``TEFLON_CACHE_DIR``, else ``~/.cache/teflon-py/cl``."""
    env = os.environ.get(ENV)
    return Path(env) if env else Path.home() / ".cache" / "teflon-py" / "cl"


@functools.cache
def load_source(name: str) -> str:
    """The text of ``cl_kernels/<name>`` (works from a wheel or a checkout), read once per process:
    a cold MobileNetV2 asks for its files ~700 times (each program's source is put together for
    its key, then again to build it; 34 ms of reads before the first probe could start)."""
    try:
        return importlib.resources.files("teflon_py.cl_kernels").joinpath(name).read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise BackendError(f"OpenCL source {name!r} is missing from cl_kernels") from e


def _pocl_caches_kernels(dc: DeviceContext) -> bool:
    """Whether the device is PoCL's with its own kernel cache on (POCL_KERNEL_CACHE not 0)."""
    try:
        vendor = dc.device.platform.vendor.lower()
    except AttributeError:
        return False
    return "pocl" in vendor and os.environ.get("POCL_KERNEL_CACHE", "1").strip() != "0"


def template(name: str, **defines: object) -> tuple[str, tuple[tuple[str, object], ...]]:
    """The file entry instantiating template ``name`` under ``defines`` (a kernel name among them)."""
    return (name, tuple(defines.items()))


def entry_source(entry: FileEntry) -> str:
    """A file entry's text: the file, or the template file between ``#define``s and ``#undef``s."""
    if isinstance(entry, str):
        return load_source(entry)
    name, defines = entry
    head = "".join(f"#define {k} {_literal(v)}\n" for k, v in defines)
    tail = "".join(f"#undef {k}\n" for k, _ in defines)
    return f"{head}{load_source(name)}\n{tail}"


#: The files a template program starts with: the helpers its template files need (common.cl for
#: the float kernels, quant.cl for the integer ones). Template programs merge per base file.
TEMPLATE_BASES = ("common.cl", "quant.cl")


def is_template_program(files: Sequence[FileEntry], defines: Mapping[str, object]) -> bool:
    """Whether a program is a base file (``TEMPLATE_BASES``) plus template instantiations only,
    with no ``-D`` macros: such programs of one partition with the same base can merge into one
    (``merge_template_programs``)."""
    return (not defines and bool(files) and files[0] in TEMPLATE_BASES
            and all(not isinstance(f, str) for f in files[1:]))


def merge_template_programs(programs: Sequence[tuple[Sequence[FileEntry], str]]) -> dict[str, tuple[FileEntry, ...]]:
    """One program per base file for the (files, kernel function) pairs of template programs
    (see ``is_template_program``): the base, then only the instantiation each kernel needs (the
    one whose ``*_NAME`` macro is the function; for a kernel outside the template, such as
    gemm_pack_b, the file's first instantiation, which also defines it), each once, in a
    canonical order so equal sets give equal sources. One front-end compile per base for a
    partition."""
    entries: dict[str, set[FileEntry]] = {}
    for files, function in programs:
        instances = [f for f in files[1:] if not isinstance(f, str)]
        named = [f for f in instances if any(k.endswith("_NAME") and v == function for k, v in f[1])]
        entries.setdefault(str(files[0]), set()).add(named[0] if named else instances[0])
    return {base: (base, *sorted(found, key=lambda e: (e[0], repr(e[1])))) for base, found in entries.items()}


def _literal(value: object) -> str:
    if isinstance(value, float):
        return f"{float(value)!r}f"
    return str(value)


def format_define(name: str, value: object) -> str:
    """One ``-D`` option; floats get an exact, ``f``-suffixed literal so kernels stay float32."""
    if value is None or value is True:
        return f"-D{name}"
    if isinstance(value, float):
        if math.isinf(value):
            raise ValueError(f"macro {name} is infinite; leave it out instead")
        return f"-D{name}={float(value)!r}f"
    return f"-D{name}={value}"


def build_options(defines: Mapping[str, object], extra: Sequence[str] = ()) -> str:
    """The options string for ``defines`` (sorted, so equal specs give equal cache keys)."""
    return " ".join([format_define(k, v) for k, v in sorted(defines.items())] + list(extra))


class ProgramCache:
    """Builds programs for one DeviceContext, memoised in-process and cached on disk."""

    def __init__(self, dc: DeviceContext, cache_dir: str | os.PathLike[str] | None = None,
                 use_disk: bool = True, save_binaries: bool = True):
        self.dc = dc
        self.cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
        self.use_disk = use_disk
        self.save_binaries = use_disk and save_binaries
        self._pending: dict[str, Any] = {}  # key -> program built from source, not yet saved
        self.stats = {"memo": 0, "disk": 0, "source": 0, "corrupt": 0}
        #: macros of every program built here (they are part of its options, so of its key)
        self.device_defines: Mapping[str, object] = Caps.of(dc.device).program_defines

    def key(self, source: str, options: str) -> str:
        h = hashlib.sha256()
        for part in (source, options, self.dc.identity()):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()

    def build(self, files: Sequence[FileEntry], defines: Mapping[str, object] | None = None,
              extra_options: Sequence[str] = ()) -> Any:
        """The built program of ``PRELUDE`` and ``files`` (concatenated in order) under the
        device's macros and ``defines``."""
        return self.build_source(*self._source(files, defines, extra_options))

    def _source(self, files: Sequence[FileEntry], defines: Mapping[str, object] | None,
                extra_options: Sequence[str]) -> tuple[str, str, str]:
        """(source, options, label) of a program."""
        source = "\n".join(entry_source(f) for f in (PRELUDE, *files))
        label = "+".join(dict.fromkeys(f if isinstance(f, str) else f[0] for f in files))
        return source, build_options({**self.device_defines, **(defines or {})}, extra_options), label

    def probe_ahead(self, launches: Sequence[tuple[Sequence[FileEntry], Mapping[str, object], Sequence[str],
                                                   probe.WarmLaunch | None]]) -> ahead.Ahead:
        """Start probing, in the probe's children (``ahead.Ahead``), the programs of ``launches``
        (files, defines, extra options, the launch as a child replays it, or None) that no cache
        holds yet, and then warming one launch per kernel and work-group shape of each (what PoCL
        compiles at a first launch); ``build`` waits for a program's probe. ``wait()`` the result
        before the first run."""
        items: list[ahead.Program] = []
        warm: dict[str, list[probe.WarmLaunch]] = {}
        shapes = set()
        for files, defines, extra, launch in launches:
            source, options, label = self._source(files, defines, extra)
            key = self.key(source, options)
            if (self.dc.context.int_ptr, key) in _memo or (self.use_disk and self._path(key).exists()):
                continue
            items.append((key, source, options, label))
            shape = repr((key, launch["kernel"], launch["local"], launch["local"] or launch["global"])) if launch else None
            if launch is not None and shape not in shapes:
                shapes.add(shape)
                warm.setdefault(key, []).append(launch)
        return ahead.start(self.dc.device, items, warm, self.cache_dir if self.use_disk else None)

    def build_source(self, source: str, options: str, label: str = "<source>") -> Any:
        """The built program of ``source`` under ``options`` (memo, disk, or probed and built)."""
        key = self.key(source, options)
        memo_key = (self.dc.context.int_ptr, key)
        with _lock:
            if memo_key in _memo:
                self._count("memo")
                return _memo[memo_key]
            program = self._load(key, options) if self.use_disk else None
            if program is None:
                probe.check(self.dc.device, key, source, options, label, self.cache_dir if self.use_disk else None)
                program = self._compile(source, options, label)
                if self.save_binaries:
                    self._pending[key] = program
                self._count("source")
            _memo[memo_key] = program
            return program

    def _count(self, what: str) -> None:
        self.stats[what] += 1
        TOTALS[what] += 1

    def _path(self, key: str) -> Path:
        return self.cache_dir / f"{key}.bin"

    def _load(self, key: str, options: str) -> Any | None:
        path = self._path(key)
        try:
            blob = path.read_bytes()
        except OSError:
            return None
        payload = blob[len(_MAGIC) + 32:]
        ok = blob.startswith(_MAGIC) and hashlib.sha256(payload).digest() == blob[len(_MAGIC):len(_MAGIC) + 32]
        if ok:
            cl = _cl()
            try:
                with captured():
                    program = cl.Program(self.dc.context, [self.dc.device], [payload]).build(options=options)
                self._count("disk")
                return program
            except cl.Error:
                pass
        self._count("corrupt")
        path.unlink(missing_ok=True)
        return None

    def _compile(self, source: str, options: str, label: str) -> Any:
        cl = _cl()
        try:
            with captured():
                return cl.Program(self.dc.context, source).build(options=options, devices=[self.dc.device])
        except cl.Error as e:
            log = str(e)
            hint = ""
            if "unknown target CPU 'generic'" in log:
                hint = (" (PoCL's LLVM does not know this CPU: import teflon_py.opencl.runtime.device before "
                        "anything else queries OpenCL platforms, or set TEFLON_POCL_CPU)")
            raise BackendError(f"building {label} with {options!r} failed{hint}:\n{log}") from e

    def commit(self) -> int:
        """Write the binaries of programs built from source since the last commit; return how many."""
        with _lock:
            pending, self._pending = self._pending, {}
        if not self.save_binaries:
            return 0
        written = 0
        for key, program in pending.items():
            try:
                payload = bytes(program.get_info(_cl().program_info.BINARIES)[0])
            except _cl().Error:
                continue
            if payload and _write_atomic(self._path(key), _MAGIC + hashlib.sha256(payload).digest() + payload):
                written += 1
        return written


def _write_atomic(path: Path, data: bytes) -> bool:
    """Write via a temporary file and rename, so readers never see half a file; False on failure."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
    except OSError:
        return False  # a read-only or full cache directory only costs build time
    return True


def _cl() -> Any:
    import pyopencl

    return pyopencl


_caches: dict[tuple[int, str], ProgramCache] = {}


def program_cache(dc: DeviceContext, cache_dir: str | os.PathLike[str] | None = None) -> ProgramCache:
    """The shared ProgramCache of ``dc`` and ``cache_dir`` (default: ``default_cache_dir()``); it
    writes binaries unless PoCL's own kernel cache already keeps them (see the module doc)."""
    path = str(Path(cache_dir) if cache_dir is not None else default_cache_dir())
    with _lock:
        key = (dc.context.int_ptr, path)
        if key not in _caches:
            _caches[key] = ProgramCache(dc, path, save_binaries=not _pocl_caches_kernels(dc))
        return _caches[key]


def clear_memo() -> None:
    """Forget in-process programs (tests use it to exercise the disk cache)."""
    with _lock:
        _memo.clear()
        _caches.clear()
