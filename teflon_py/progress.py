"""Feedback while ``allocate_tensors`` compiles: one line on a terminal, rewritten in place
("teflon-py: compiling OpenCL programs: 5 built, partition 2 (31 nodes), 4.2 s"), then a last
line ("compiled 9 OpenCL programs in 6.1 s; cached for next time"). Quiet when the stream is not
a terminal, with ``quiet``, and when every program came from a cache."""
from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterable
from typing import Any, TextIO

#: Seconds between refreshes of the line.
TICK_S = 0.25


def _totals() -> dict[str, int]:
    """Programs obtained so far in this process by origin ("source", "disk", "memo"); empty
    without the OpenCL backend."""
    try:
        from teflon_py.opencl.runtime import programs
    except ImportError:
        return {}
    return dict(programs.TOTALS)


class BuildProgress:
    """Context manager around ``allocate_tensors``; ``watch(delegates)`` first lets it name the
    partition being compiled. ``built``, ``loaded`` and ``seconds`` hold the result afterwards."""

    def __init__(self, stream: TextIO | None = None, quiet: bool = False):
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.enabled = not quiet and bool(isatty and isatty())
        self.built = self.loaded = 0
        self.seconds = 0.0
        self._partition: str | None = None
        self._shown = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, delegates: Iterable[Any]) -> None:
        """Wrap each delegate's ``compile`` so the line says which partition is being built."""
        for d in delegates:
            original = d.compile

            def compile(graph: Any, partition: Any, _original: Any = original) -> Any:
                self._partition = f"partition {partition.index} ({len(partition.nodes)} nodes)"
                return _original(graph, partition)

            d.compile = compile

    def _counts(self) -> tuple[int, int]:
        now = _totals()
        built = now.get("source", 0) - self._before.get("source", 0)
        loaded = sum(now.get(k, 0) - self._before.get(k, 0) for k in ("disk", "memo"))
        return built, loaded

    def _write(self, text: str, end: str = "") -> None:
        self.stream.write(f"\r\x1b[K{text}{end}")
        self.stream.flush()

    def _tick(self) -> None:
        while not self._stop.wait(TICK_S):
            built, loaded = self._counts()
            if not built:  # warm caches: nothing worth a line
                continue
            parts = [f"{built} built"] + ([f"{loaded} from cache"] if loaded else [])
            if self._partition:
                parts.append(self._partition)
            self._write(f"teflon-py: compiling OpenCL programs: {', '.join(parts)}, "
                        f"{time.perf_counter() - self._start:.1f} s")
            self._shown = True

    def __enter__(self) -> BuildProgress:  # noqa: PYI034  (typing.Self is 3.11+)
        self._before = _totals()
        self._start = time.perf_counter()
        if self.enabled:
            self._thread = threading.Thread(target=self._tick, name="teflon-py progress", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self._start
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
        self.built, self.loaded = self._counts()
        if self.enabled and self.built and exc[0] is None:
            self._write(f"teflon-py: compiled {self.built} OpenCL program{'s' * (self.built != 1)} in "
                        f"{self.seconds:.1f} s; cached for next time", end="\n")
        elif self._shown:
            self._write("")  # clear the line
