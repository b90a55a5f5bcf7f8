"""The child process of ``probe``: builds programs on one device, so a driver that aborts kills
this process and not the interpreter.

Run as a script, ``python .../probe_worker.py P:D NAME LIBOPENCL LIBPOCL``, not with ``-m``:
importing the ``teflon_py`` package (or pyopencl and NumPy) would cost the child ~1 s, so it loads
only its siblings ``cl_abi.py`` (OpenCL through ctypes) and ``pocl_target.py`` by path, both
standard library only. It opens the parent's OpenCL library (LIBOPENCL) after its libpocl
(LIBPOCL, empty when the parent has none), applies PoCL's CPU-name patch as the parent did, finds
the device as ``device.select_device`` numbers them (same index, same name), answers
``{"ready": true}`` (or ``{"fatal": why}`` and exits 3), then reads one JSON request a line from
stdin — ``key``, ``source``, ``options`` and, for tests, ``fault`` ("abort" or "hang") — builds
the program, creates its kernels, and answers ``{"key": ..., "outcome": "ok"}``, or ``"error"``
when the driver reported a build error (survivable: the parent's own build will raise it). It exits at the end of stdin.

A request with ``warm`` (a list of launches: ``kernel``, ``global``, ``local`` and ``args``, each
``["buf", nbytes]`` or ``["raw", hex bytes]``) runs each launch once on zero-filled buffers of the
sizes given and answers ``{"key": ..., "warmed": n}``: PoCL compiles a kernel's work-group function
at its first launch and keeps it in its disk cache, where the parent's own first launch then finds
it, so a partition's kernels compile in several processes at once instead of one after another.
Its programs are remembered by key, so a program this child probed is not built twice.

Answers go to the original stdout; the process's fd 1 is pointed at stderr so that whatever the
driver prints lands in the parent's stderr log, whose tail explains a crash.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

HERE = Path(__file__).resolve().parent
if sys.path and Path(sys.path[0] or ".").resolve() == HERE:
    del sys.path[0]  # a script's directory leads sys.path: keep device.py and friends from shadowing


def _load(name: str) -> Any:
    """A sibling module (standard library only) loaded by path, not through the package."""
    loader = importlib.util.spec_from_file_location(f"_teflon_{name}", HERE / f"{name}.py")
    assert loader is not None and loader.loader is not None
    module = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(module)
    return module


def _send(out: TextIO, message: dict[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def main(argv: list[str]) -> int:
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    spec, name, library, pocl = argv
    cl_abi = _load("cl_abi")
    try:
        if pocl:
            _load("pocl_target").ensure(pocl)  # before PoCL initialises its devices, as in the parent
        cl = cl_abi.OpenCL(library, preload=pocl or None)
        dev = cl.device(*(int(part) for part in spec.split(":")))
        if cl.device_name(dev) != name:
            raise LookupError(f"device {spec} is {cl.device_name(dev)!r} here, not {name!r}")
        context = cl.context(dev)
        queue = cl.queue(context, dev)  # the warm-ups' launches, one after another
    except Exception as e:  # noqa: BLE001 - any reason this process cannot probe goes to the parent
        _send(out, {"fatal": f"{type(e).__name__}: {e}"})
        return 3
    _send(out, {"ready": True})
    programs: dict[str, int] = {}  # key -> a program this child built without error
    for line in sys.stdin:
        request = json.loads(line)
        fault = request.get("fault")
        if "warm" in request:
            if fault == "warm-abort":
                os.abort()
            _send(out, {"key": request["key"], "warmed": _warm(cl, context, dev, queue, programs, request)})
            continue
        if fault == "abort":
            os.abort()
        while fault == "hang":
            time.sleep(3600)
        try:
            program = cl.build(context, dev, request["source"], request["options"])
            cl.create_kernels(program)
            programs[request["key"]] = program
            outcome = "ok"
        except cl_abi.CLError:
            outcome = "error"
        _send(out, {"key": request["key"], "outcome": outcome})
    return 0


def _warm(cl: Any, context: int, dev: int, queue: int, programs: dict[str, int], request: dict[str, Any]) -> int:
    """Run each of ``request["warm"]``'s launches once on zero-filled buffers; the number run."""
    key = request["key"]
    if key not in programs:
        try:
            programs[key] = cl.build(context, dev, request["source"], request["options"])
        except Exception:  # noqa: BLE001 - a build error: nothing to warm (the probe recorded it)
            return 0
    done = 0
    for launch in request["warm"]:
        try:
            cl.launch(context, queue, programs[key], launch["kernel"], launch["global"], launch["local"],
                      launch["args"])
            done += 1
        except Exception:  # noqa: BLE001, S110 - the parent's own launch meets (and reports) whatever this was
            pass
    return done


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
