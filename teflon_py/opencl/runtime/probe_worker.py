"""The child process of ``probe``: builds programs on one device, so a driver that aborts kills
this process and not the interpreter.

Run as ``python -m teflon_py.opencl.runtime.probe_worker P:D NAME``. It selects the device the
way the parent did (same index, same name), answers ``{"ready": true}`` (or ``{"fatal": why}``
and exits 3), then reads one JSON request a line from stdin — ``key``, ``source``, ``options``
and, for tests, ``fault`` ("abort" or "hang") — builds the program, creates its kernels, and
answers ``{"key": ..., "outcome": "ok"}``, or ``"error"`` when the driver reported a build error
(survivable: the parent's own build will raise it). It exits at the end of stdin.

Answers go to the original stdout; the process's fd 1 is pointed at stderr so that whatever the
driver prints lands in the parent's stderr log, whose tail explains a crash.
"""
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, TextIO


def _send(out: TextIO, message: dict[str, Any]) -> None:
    out.write(json.dumps(message) + "\n")
    out.flush()


def main(argv: list[str]) -> int:
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    spec, name = argv
    try:
        import pyopencl as cl

        from teflon_py.opencl.runtime import device as devices

        dev = devices.select_device(spec)  # applies the parent's PoCL CPU-name patch too
        if dev.name.strip() != name:
            raise LookupError(f"device {spec} is {dev.name.strip()!r} here, not {name!r}")
        context = cl.Context([dev])
    except Exception as e:  # noqa: BLE001 - any reason this process cannot probe goes to the parent
        _send(out, {"fatal": f"{type(e).__name__}: {e}"})
        return 3
    _send(out, {"ready": True})
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("fault") == "abort":
            os.abort()
        while request.get("fault") == "hang":
            time.sleep(3600)
        try:
            program = cl.Program(context, request["source"]).build(options=request["options"], devices=[dev])
            program.all_kernels()
            outcome = "ok"
        except cl.Error:
            outcome = "error"
        program = None
        _send(out, {"key": request["key"], "outcome": outcome})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
