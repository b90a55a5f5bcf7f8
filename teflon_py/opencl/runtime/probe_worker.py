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
