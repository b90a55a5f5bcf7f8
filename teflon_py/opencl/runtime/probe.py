"""Build a program in a child process before building it here, so a driver crash is survivable.

Some OpenCL compilers end the process instead of reporting a build error: Mesa rusticl on
llvmpipe exits on ``__builtin_prefetch`` ("Unexpected llvm intrinsic: llvm.prefetch") and aborts
on 64-lane vectors ("LLVM ERROR: Unsupported vector type"). So the first build of each program
(source + options) on each device and driver runs in a child (``probe_worker``, one per device,
started at its first probe and kept for the process's life; it makes its OpenCL calls through
ctypes, so it starts in ~0.05 s); only
when the child survived does the parent build it. A child killed while building, or still busy
after ``TEFLON_CL_PROBE_TIMEOUT`` seconds (default 120), makes the build a ``BackendError``
naming the program and device: the interpreter runs the partition on NumPy with a one-line
warning (``TEFLON_STRICT`` makes it an error).

Outcomes are recorded next to the program binaries (``<key>.ok`` / ``<key>.crash``, the key
covering source, options, device and driver versions), so each program is probed once per
driver; a cached binary needs no probe. On PoCL the child's build also fills PoCL's kernel cache,
so the parent's own build of the same program takes ~25 ms: probing costs the child's start-up
and little per program. A timed-out build is probed again under a
longer timeout. ``TEFLON_CL_PROBE=0`` builds in-process without probing, ignoring the records.
``TEFLON_CL_PROBE_FAULT`` (tests) makes the child abort or hang on programs built from a file:
``abort:gemm.cl,hang:qconv.cl`` (``warm-abort:`` aborts its warm-up instead).

The children also warm up (``ahead.Ahead``): on PoCL's CPU device a kernel's work-group function is
compiled at its first launch (0.05-0.7 s each for our kernels) and kept in PoCL's disk cache, so
the children run each freshly probed program's launches once, on zero-filled buffers, two
processes at once, and this process's first launch then loads what they compiled.
``TEFLON_CL_WARM=0`` leaves every first launch's compile to this process.
"""
from __future__ import annotations

import atexit
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import warnings
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from teflon_py.errors import BackendError
from teflon_py.opencl.runtime import cl_abi, pocl_target
from teflon_py.opencl.runtime import device as devices

ENV = "TEFLON_CL_PROBE"
TIMEOUT_ENV = "TEFLON_CL_PROBE_TIMEOUT"
FAULT_ENV = "TEFLON_CL_PROBE_FAULT"
WARM_ENV = "TEFLON_CL_WARM"
DEFAULT_TIMEOUT = 120.0
#: Probes in this process: "started" children, "probed" programs, and their outcomes ("ok",
#: "error": a build error the driver survived, "crash", "hang"); "recorded": answered from a record.
STATS: Counter[str] = Counter()
_known: dict[str, dict[str, Any]] = {}  # key -> outcome record, for caches without a directory
#: keys being probed by an ``ahead.Ahead`` -> set once answered (``check`` waits for it)
in_flight: dict[str, threading.Event] = {}
#: (device pointer, slot) -> a worker (slot 0 the device's own, more for ``ahead.Ahead``); None: it
#: cannot start
_children: dict[tuple[int, int], _Child | None] = {}


def forget() -> None:
    """Forget this process's outcomes (tests use it to exercise the records on disk)."""
    _known.clear()


def enabled() -> bool:
    return os.environ.get(ENV, "1").strip() != "0"


def timeout() -> float:
    value = os.environ.get(TIMEOUT_ENV, "")
    try:
        return float(value) if value.strip() else DEFAULT_TIMEOUT
    except ValueError:
        raise BackendError(f"{TIMEOUT_ENV} must be a number of seconds, got {value!r}") from None


def check(dev: Any, key: str, source: str, options: str, label: str, records: Path | None) -> None:
    """Return when building ``source`` with ``options`` on ``dev`` does not kill the process (as
    recorded, or probed now); raise BackendError when it did kill a child. ``records``: the
    directory of the ``.ok`` / ``.crash`` files (None: remembered in this process only)."""
    if not enabled():
        return
    event = in_flight.get(key)
    if event is not None:
        event.wait()
    limit = timeout()
    record = read(key, records)
    if record is not None and not (record["outcome"] == "hang" and record.get("timeout", 0) < limit):
        STATS["recorded"] += 1
        if record["outcome"] not in ("crash", "hang"):
            return
        raise BackendError(_message(record, records, key, earlier=True))
    worker = child(dev, limit)
    if worker is None:
        return  # cannot probe here: build as before
    record = worker.probe(key, source, options, label, fault(label), limit)
    STATS["probed"] += 1
    STATS[record["outcome"]] += 1
    write(key, records, record)
    if record["outcome"] in ("crash", "hang"):
        raise BackendError(_message(record, records, key, earlier=False))


def compiles_at_launch_into_disk_cache(dev: Any) -> bool:
    """PoCL's CPU devices with their kernel cache on: a kernel's work-group function, compiled at
    its first launch, is kept on disk, where every process finds it (``ahead.Ahead``)."""
    pocl = "pocl" in dev.platform.vendor.lower() or "portable computing" in dev.platform.name.lower()
    return (pocl and devices.device_kind(dev) == "CPU" and os.environ.get("POCL_KERNEL_CACHE", "1") != "0"
            and os.environ.get(WARM_ENV, "1").strip() != "0")


#: a launch to warm up: kernel name, global size, local size (None: the driver's), and each
#: argument as ``("buf", nbytes)`` or ``("raw", hex of its bytes)``
WarmLaunch = dict[str, Any]


def driver_options(dev: Any, options: str) -> str:
    """The options pyopencl's ``Program.build`` hands the driver for ``options`` (it adds its
    include directory, its defaults and ``PYOPENCL_BUILD_OPTIONS``). The child builds through
    ctypes with these, so both processes build the same program: PoCL's cache key covers the
    options, and the child's compiled kernels are of no use to this process otherwise."""
    try:
        import pyopencl as cl

        raw, _ = cl.Program._process_build_options(SimpleNamespace(devices=[dev]), options)
        return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
    except Exception:  # noqa: BLE001 - another pyopencl: the options as given (a cache miss at worst)
        return options


def _message(record: dict[str, Any], records: Path | None, key: str, earlier: bool) -> str:
    where = f"{record.get('label', '?')} on {record.get('device', '?')}"
    if record["outcome"] == "hang":
        what = f"building {where} did not finish within {record.get('timeout', 0):g} s ({TIMEOUT_ENV})"
    else:
        what = (f"the OpenCL driver ended the process building {where} "
                f"({record.get('exit', '?')}: {record.get('stderr', '')})")
    when = "in an earlier probe" if earlier else "in a probe process"
    retry = f"delete {records / (key + '.crash')} to retry, " if records is not None else ""
    return f"{what} {when}; not building it here ({retry}{ENV}=0 builds without probing)"


def fault(label: str) -> str | None:
    for item in os.environ.get(FAULT_ENV, "").replace("|", ",").split(","):
        kind, _, name = item.strip().partition(":")
        if name and (name == label or name in label.split("+")):
            return kind
    return None


def read(key: str, records: Path | None) -> dict[str, Any] | None:
    if key in _known or records is None:
        return _known.get(key)
    for suffix in ("ok", "crash"):
        try:
            record = json.loads((records / f"{key}.{suffix}").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and "outcome" in record:
            _known[key] = record
            return record
    return None


def write(key: str, records: Path | None, record: dict[str, Any]) -> None:
    _known[key] = record
    if records is None:
        return
    suffix = "crash" if record["outcome"] in ("crash", "hang") else "ok"
    path = records / f"{key}.{suffix}"
    try:
        records.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".tmp-{os.getpid()}-{path.name}")
        tmp.write_text(json.dumps(record), encoding="utf-8")
        os.replace(tmp, path)
        (records / f"{key}.{'ok' if suffix == 'crash' else 'crash'}").unlink(missing_ok=True)
    except OSError:
        pass  # a read-only cache directory: probe again next time


def child(dev: Any, limit: float, slot: int = 0) -> _Child | None:
    """The device's worker in ``slot``, started when there is none (or it died); None when it
    cannot start (slot 0 says so once: programs are then built unprobed; an ``ahead.Ahead``
    does without a further slot)."""
    key = (dev.int_ptr, slot)
    worker = _children.get(key, False)
    if worker is None:
        return None
    if worker is False or not worker.alive():
        try:
            worker = _children[key] = _Child(dev, limit)
            STATS["started"] += 1
        except BackendError as e:
            _children[key] = None
            if slot == 0:
                warnings.warn(f"cannot start the OpenCL build probe on {dev.name.strip()}, building "
                              f"programs in this process unprobed: {e}", RuntimeWarning, stacklevel=4)
            return None
    return worker


class _Child:
    """One ``probe_worker`` process on one device: requests on its stdin, answers on its stdout,
    its stderr in a temporary file whose tail explains a crash."""

    def __init__(self, dev: Any, limit: float):
        self.device = f"{dev.name.strip()} ({dev.platform.name.strip()} {dev.driver_version.strip()})"
        self.dev = dev
        self.pid = os.getpid()
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - open for the child's life, closed by close()
        cmd = [sys.executable, str(Path(__file__).with_name("probe_worker.py")), devices.index_of(dev), dev.name.strip(),
               cl_abi.opencl_library() or "", pocl_target.pocl_path() or ""]
        try:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                         text=True, encoding="utf-8")
        except OSError as e:
            raise BackendError(f"cannot run {sys.executable}: {e}") from e
        self.answers: queue.Queue[str | None] = queue.Queue()
        self.timed_out = False
        self.lock = threading.Lock()  # one request at a time, whichever thread asks
        threading.Thread(target=self._read, daemon=True).start()
        atexit.register(self.close)
        limit = max(limit, DEFAULT_TIMEOUT)  # start-up: importing pyopencl, finding the platforms
        answer = self._answer(limit)
        if answer is None or not answer.get("ready"):
            why = answer.get("fatal") if answer else (f"no answer within {limit:g} s" if self.timed_out else
                                                      f"{self._exit()}: {self._tail(0)}")
            self.close()
            raise BackendError(str(why))

    def _read(self) -> None:
        assert self.proc.stdout is not None
        with self.proc.stdout:  # closed once the child has ended (no ResourceWarning at exit)
            for line in self.proc.stdout:
                self.answers.put(line)
        self.answers.put(None)

    def _answer(self, limit: float) -> dict[str, Any] | None:
        """The next answer; None when the child ended (or was killed after ``limit`` seconds)."""
        try:
            line = self.answers.get(timeout=limit)
        except queue.Empty:
            self.timed_out = True
            self.proc.kill()
            self.proc.wait()
            return None
        return json.loads(line) if line is not None else None

    def _ask(self, request: dict[str, Any], limit: float) -> dict[str, Any] | None:
        """Send one request and return its answer (None: the child ended or was killed)."""
        with self.lock:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.write(json.dumps(request) + "\n")
                self.proc.stdin.flush()
                return self._answer(limit)
            except (BrokenPipeError, OSError):
                return None

    def alive(self) -> bool:
        return self.pid == os.getpid() and self.proc.poll() is None

    def probe(self, key: str, source: str, options: str, label: str, fault: str | None,
              limit: float) -> dict[str, Any]:
        """The record of building one program in the child: outcome "ok", "error", "crash", "hang"."""
        start = os.fstat(self.stderr.fileno()).st_size
        answer = self._ask({"key": key, "source": source, "options": driver_options(self.dev, options),
                            "fault": fault}, limit)
        record: dict[str, Any] = {"label": label, "device": self.device, "timeout": limit}
        if answer is not None and answer.get("key") == key:
            return {**record, "outcome": answer["outcome"]}
        try:  # it ended or was killed: wait for its exit status (a kill now would hide it)
            self.proc.wait(timeout=limit if answer is None else 0)
        except subprocess.TimeoutExpired:  # still alive: answering another request, or stuck
            self.proc.kill()
        return {**record, "outcome": "hang" if self.timed_out else "crash", "exit": self._exit(),
                "stderr": self._tail(start)}

    def warm(self, key: str, source: str, options: str, launches: list[WarmLaunch], fault: str | None,
             limit: float) -> int:
        """Run ``launches`` of the program in the child (``probe_worker``'s ``warm`` request); the
        number it ran, 0 when it failed or died (a dead child is restarted by the next ``child``)."""
        answer = self._ask({"key": key, "source": source, "options": driver_options(self.dev, options), "warm": launches,
                            "fault": fault if fault == "warm-abort" else None}, limit)
        if answer is None or answer.get("key") != key:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            return 0
        return int(answer.get("warmed", 0))

    def _exit(self) -> str:
        code = self.proc.wait()
        if code < 0:
            try:
                return f"signal {-code} ({signal.Signals(-code).name})"
            except ValueError:
                return f"signal {-code}"
        return f"exit status {code}"

    def _tail(self, start: int, lines: int = 3, chars: int = 400) -> str:
        """The last non-empty lines the (ended) child wrote to stderr since byte ``start``, as one
        line. Only once it ended: the file's offset is shared with the child's writes."""
        size = os.fstat(self.stderr.fileno()).st_size
        self.stderr.seek(max(start, size - 64 * 1024))
        text = self.stderr.read()
        kept = [ln.strip() for ln in text.decode("utf-8", "replace").splitlines() if ln.strip()][-lines:]
        joined = " / ".join(kept) or "no message"
        return joined if len(joined) <= chars else "..." + joined[-chars:]

    def close(self) -> None:
        if self.pid != os.getpid():
            return
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()
