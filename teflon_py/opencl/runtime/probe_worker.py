"""The child process of ``probe``: builds programs on one device, so a driver that aborts kills
this process and not the interpreter.

Run as a script, ``python .../probe_worker.py P:D NAME``, not with ``-m``: importing the
``teflon_py`` package would cost the child ~1 s, so it loads only its sibling ``pocl_target.py``
(standard library only) by path. It applies PoCL's CPU-name patch as the parent did, finds the
device as ``device.select_device`` numbers them (same index, same name), answers ``{"ready": true}`` (or ``{"fatal": why}``
and exits 3), then reads one JSON request a line from stdin — ``key``, ``source``, ``options``
and, for tests, ``fault`` ("abort" or "hang") — builds the program, creates its kernels, and
answers ``{"key": ..., "outcome": "ok"}``, or ``"error"`` when the driver reported a build error
(survivable: the parent's own build will raise it). It exits at the end of stdin.

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


def _select(spec: str) -> Any:
    """The device ``spec`` ("P:D") names, numbered as ``device._all_devices`` numbers them."""
    loader = importlib.util.spec_from_file_location("_teflon_pocl_target", HERE / "pocl_target.py")
    assert loader is not None and loader.loader is not None
    pocl_target = importlib.util.module_from_spec(loader)
    loader.loader.exec_module(pocl_target)
    pocl_target.ensure()  # before PoCL initialises its devices, as in the parent
    import pyopencl as cl

    p_i, d_i = (int(part) for part in spec.split(":"))
    devices = cl.get_platforms()[p_i].get_devices()
    return devices[d_i]


def _send(out: TextIO, message: dict[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def main(argv: list[str]) -> int:
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    spec, name = argv
    try:
        dev = _select(spec)
        import pyopencl as cl

        if dev.name.strip() != name:
            raise LookupError(f"device {spec} is {dev.name.strip()!r} here, not {name!r}")
        context = cl.Context([dev])
    except Exception as e:  # noqa: BLE001 - any reason this process cannot probe goes to the parent
        _send(out, {"fatal": f"{type(e).__name__}: {e}"})
        return 3
    _send(out, {"ready": True})
    programs: dict[str, Any] = {}  # key -> a program this child built without error
    for line in sys.stdin:
        request = json.loads(line)
        fault = request.get("fault")
        if "warm" in request:
            if fault == "warm-abort":
                os.abort()
            _send(out, {"key": request["key"], "warmed": _warm(context, dev, programs, request)})
            continue
        if fault == "abort":
            os.abort()
        while fault == "hang":
            time.sleep(3600)
        try:
            program = _build(context, dev, request)
            program.all_kernels()
            programs[request["key"]] = program
            outcome = "ok"
        except cl.Error:
            outcome = "error"
        _send(out, {"key": request["key"], "outcome": outcome})
    return 0


def _build(context: Any, dev: Any, request: dict[str, Any]) -> Any:
    """The request's program built on ``dev`` (cl.Error when the driver reports a build error)."""
    import pyopencl as cl

    return cl.Program(context, request["source"]).build(options=request["options"], devices=[dev])


def _warm(context: Any, dev: Any, programs: dict[str, Any], request: dict[str, Any]) -> int:
    """Run each of ``request["warm"]``'s launches once on zero-filled buffers; the number run."""
    import numpy as np
    import pyopencl as cl

    key = request["key"]
    if key not in programs:
        try:
            programs[key] = _build(context, dev, request)
        except cl.Error:
            return 0
    queue = cl.CommandQueue(context, dev)
    done = 0
    for launch in request["warm"]:
        try:
            kernel = cl.Kernel(programs[key], launch["kernel"])
            buffers = []
            for i, (kind, value) in enumerate(launch["args"]):
                if kind == "buf":
                    buf = cl.Buffer(context, cl.mem_flags.READ_WRITE, max(int(value), 64))
                    cl.enqueue_fill_buffer(queue, buf, np.zeros(1, np.uint8), 0, buf.size)
                    buffers.append(buf)
                    kernel.set_arg(i, buf)
                else:
                    kernel.set_arg(i, bytes.fromhex(value))
            local = tuple(launch["local"]) if launch["local"] is not None else None
            cl.enqueue_nd_range_kernel(queue, kernel, tuple(launch["global"]), local)
            queue.finish()
        except cl.Error:
            continue  # the parent's own launch meets (and reports) whatever this was
        done += 1
    return done


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
