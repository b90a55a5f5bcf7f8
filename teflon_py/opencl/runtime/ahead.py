"""A partition's programs probed, and its kernels warmed up, in the probe's children while this
process goes on building (a cold load's two costs, spread over the CPU's cores).

A cold load of a partition pays two compiles per program: the OpenCL C front-end (``build``) and,
on PoCL's CPU device, each kernel's work-group function at its first launch (0.05-0.7 s per
kernel here, under one compile lock per process). ``Ahead`` hands both to ``PARALLEL`` probe
children (``probe._Child``):

* every program no record covers yet is probed (built in a child; a crash is recorded, as
  ``probe.check`` records it), in the partition's order;
* once a program is probed, its launches are *warmed*: the child runs each once, on zero-filled
  buffers of the real sizes (``probe_worker``'s ``warm`` request), and PoCL keeps the compiled
  work-group functions in its disk cache, where this process's first launch finds them.

Children take the next probe, else the warm-up whose program is probed that compiles longest
(``JIT_SECONDS``), so one child warms a small program's kernels while the other still builds a
big one, and the two end together. Meanwhile this process builds
its own programs (PoCL's cache hits, once probed: ``probe.check`` waits for a program's probe
here) and sets kernel arguments; ``wait`` ends the batch before the first run.

Warm-ups only where they pay (``probe.compiles_at_launch_into_disk_cache``: PoCL's CPU device
with its kernel cache on, ``TEFLON_CL_WARM`` not 0). A child that dies while warming costs that
warm-up and nothing else: nothing is recorded and this process compiles at its first launch what
is left.
"""
from __future__ import annotations

import os
import threading
from collections import deque
from pathlib import Path
from typing import Any

from teflon_py.opencl.runtime import probe

#: children probing and warming at once (each compiles one thing at a time; PoCL compiles under
#: one lock per process, so parallel compiles need processes)
PARALLEL = 2
#: a program to probe: (key, source, options, label)
Program = tuple[str, str, str, str]
#: Seconds PoCL 3.0 took to compile a kernel's work-group function at its first launch, by kernel
#: name prefix (the longest that matches), on the 2-core Zen 3 of BENCHMARKS.md. Only the order of
#: the warm-ups reads them: longest first, so that two children end together (on MobileNetV2
#: float32 the 0.45 s dwpw kernel came last and one child idled meanwhile).
JIT_SECONDS = {"qdepthwise": 0.3, "qconv_variant": 0.03, "qconv": 0.5, "dwpw": 0.5,
               "conv2d": 0.37, "gemm": 0.27, "depthwise": 0.25, "qsoftmax": 0.17,
               "qmean": 0.12, "softmax": 0.1, "mean": 0.06}


def jit_seconds(kernel: str) -> float:
    """``JIT_SECONDS`` of ``kernel`` (0.1 for a kernel none of its prefixes names)."""
    best = max((p for p in JIT_SECONDS if kernel.startswith(p)), key=len, default=None)
    return JIT_SECONDS[best] if best is not None else 0.1


class Ahead:
    """Probes of ``programs`` and warm-ups of ``warm`` (key -> launches, for keys among
    ``programs``), running in up to ``PARALLEL`` children from construction to ``wait``."""

    def __init__(self, dev: Any, programs: list[Program], warm: dict[str, list[probe.WarmLaunch]],
                 records: Path | None):
        self.dev, self.records, self.limit = dev, records, probe.timeout()
        self.cond = threading.Condition()
        self.probes: deque[Program] = deque(programs)
        by_key = {p[0]: p for p in programs}
        self.warms: deque[tuple[Program, probe.WarmLaunch]] = deque(
            (by_key[key], launch) for key, launches in warm.items() if key in by_key for launch in launches)
        self.probing = set(by_key)  # keys not answered yet
        self.answered = {key: threading.Event() for key in by_key}
        for key, event in self.answered.items():
            probe.in_flight[key] = event
        # as many children as can work at once: a lone program's single kernel waits for its probe
        workers = min(PARALLEL, max(len(self.probes), len(self.warms)), os.cpu_count() or 1)
        self.running = workers
        self.threads = [threading.Thread(target=self._work, args=(slot,), daemon=True) for slot in range(workers)]
        for t in self.threads:  # each thread starts its child, so the children start together
            t.start()
        if not self.threads:
            with self.cond:
                self._finish()

    def wait(self) -> None:
        """Until every probe and warm-up has run (or the children that would run them died)."""
        for t in self.threads:
            t.join()

    def _next(self) -> tuple[Program, probe.WarmLaunch | None] | None:
        """The next probe, else the next warm-up whose program is probed; None when none is left."""
        with self.cond:
            while True:
                if self.probes:
                    return self.probes.popleft(), None
                ready = [k for k, (program, _) in enumerate(self.warms) if program[0] not in self.probing]
                if ready:  # the longest compile first: the last to start are the short ones
                    k = max(ready, key=lambda i: jit_seconds(self.warms[i][1]["kernel"]))
                    program, launch = self.warms[k]
                    del self.warms[k]
                    return program, launch
                if not self.warms:
                    return None
                self.cond.wait()  # the other child is probing what is left to warm

    def _work(self, slot: int) -> None:
        try:
            child = probe.child(self.dev, self.limit, slot)
            while child is not None and child.alive():
                job = self._next()
                if job is None:
                    return
                (key, source, options, label), launch = job
                if launch is None:
                    self._probe(child, key, source, options, label)
                else:
                    ran = child.warm(key, source, options, [launch], probe.fault(label), self.limit)
                    with self.cond:
                        probe.STATS["warmed" if ran else "warm_failed"] += 1
        finally:
            with self.cond:
                self.running -= 1
                if self.running == 0:
                    self._finish()

    def _probe(self, child: Any, key: str, source: str, options: str, label: str) -> None:
        record = child.probe(key, source, options, label, probe.fault(label), self.limit)
        probe.STATS["probed"] += 1
        probe.STATS[record["outcome"]] += 1
        probe.write(key, self.records, record)
        with self.cond:
            self.probing.discard(key)
            if record["outcome"] != "ok":  # nothing to warm: the build failed or killed the child
                self.warms = deque(w for w in self.warms if w[0][0] != key)
            self.cond.notify_all()
        self._answer(key)

    def _answer(self, key: str) -> None:
        probe.in_flight.pop(key, None)
        self.answered[key].set()

    def _finish(self) -> None:
        """No child is left (called holding ``cond``): whatever was not probed is for
        ``probe.check`` to probe itself."""
        self.probes.clear()
        self.warms.clear()
        for key in list(self.probing):
            self._answer(key)
        self.probing.clear()
        self.cond.notify_all()


def check_many(dev: Any, items: list[Program], records: Path | None) -> None:
    """Probe the (key, source, options, label) programs not probed yet, up to ``PARALLEL`` at a
    time, and record each outcome; ``probe.check`` then answers from the records."""
    start(dev, items, {}, records).wait()


def start(dev: Any, items: list[Program], warm: dict[str, list[probe.WarmLaunch]],
          records: Path | None) -> Ahead:
    """An ``Ahead`` of the ``items`` no record covers yet (probing on), warming those of ``warm``
    that are probed now where warm-ups pay."""
    todo = [it for it in dict.fromkeys(items) if probe.enabled() and probe.read(it[0], records) is None
            and it[0] not in probe.in_flight]
    if not probe.compiles_at_launch_into_disk_cache(dev):
        warm = {}
    return Ahead(dev, todo, warm, records)
