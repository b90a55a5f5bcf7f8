"""Profile one invoke step by step: every OpenCL kernel and every NumPy fallback op, timed.

OpenCL partitions run on a profiling queue and report each launch's device timestamps
(``OpenCLPartition.profile``); fallback nodes and other delegates' partitions are timed on the
host. ``chrome_trace`` turns the events into chrome://tracing JSON (``{"traceEvents": [...]}``,
complete events ``"ph": "X"`` in microseconds), ``costliest`` ranks launches by their median
time over several profiled invokes, with GFLOP/s for the multiply-add ops (conv, depthwise,
fully connected, batch matmul: FLOPs counted from shapes) and GB/s (bytes their arguments span)
for the rest.
"""
from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.executor import RunObserver, StepRecord

#: Ops whose cost is counted in FLOPs (2 per multiply-add), the others in bytes moved.
FLOP_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "BATCH_MATMUL")


@dataclass
class Event:
    """One timed piece of an invoke: an OpenCL launch or a host-run op (times in microseconds)."""

    name: str  # kernel name, or the op's name for a fallback node
    where: str  # "opencl", "numpy", or another delegate's name
    op: int  # graph operation index (-1: a launch of no op, e.g. an output copy)
    op_name: str
    start_us: float
    dur_us: float
    flops: int = 0
    nbytes: int = 0
    args: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        where = f"#{self.op}" if self.op >= 0 else ""
        return f"{self.name} ({self.op_name}{where})" if self.name != self.op_name else f"{self.op_name}{where}"

    def rate(self) -> tuple[float, str]:
        """(value, unit): GFLOP/s when FLOPs are known, else GB/s over the bytes moved."""
        seconds = max(self.dur_us, 1e-3) * 1e-6
        if self.flops:
            return self.flops / seconds / 1e9, "GFLOP/s"
        return self.nbytes / seconds / 1e9, "GB/s"


def op_flops(graph: ir.Graph, op: ir.Operation) -> int:
    """FLOPs (2 per multiply-add) of a conv, depthwise, fully connected or batch matmul op."""
    if op.name not in FLOP_OPS:
        return 0
    out = graph.tensors[op.outputs[0]].shape
    w = graph.tensors[op.inputs[1]].shape
    if op.name == "CONV_2D":
        return 2 * int(np.prod(out)) * int(np.prod(w[1:]))
    if op.name == "DEPTHWISE_CONV_2D":
        return 2 * int(np.prod(out)) * int(w[1]) * int(w[2])
    if op.name == "FULLY_CONNECTED":
        return 2 * int(np.prod(out)) * int(w[-1])
    a = graph.tensors[op.inputs[0]].shape
    adj_x = bool(op.attrs.adj_x)
    return 2 * int(np.prod(out)) * int(a[-2] if adj_x else a[-1])


def profile_invoke(interpreter: Any) -> list[Event]:
    """Run ``interpreter`` (inputs already set) once, timing each step; the tensors are updated as
    ``invoke`` would. OpenCL partitions run profiled (``profile``): one event per launch."""
    profiler = _Profiler()
    interpreter.invoke(observer=profiler)
    return profiler.events


class _Profiler(RunObserver):
    """Turns an observed run's steps into events on a timeline starting at its creation."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter_ns()
        self.events: list[Event] = []
        self._timings: list[Any] | None = None  # device timings of the partition that just ran

    def invoke(self, compiled: Any, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run partitions that can profile themselves (OpenCL) on their profiling queue."""
        if not hasattr(compiled, "profile"):
            return compiled.invoke(inputs)
        outs, self._timings = compiled.profile(inputs)
        return outs

    def step(self, record: StepRecord) -> None:
        start_us = (record.start_ns - self.t0) / 1e3
        dur_us = (record.end_ns - record.start_ns) / 1e3
        if record.op is not None:
            self.events.append(_host_event(record.executor, record.op, start_us, dur_us))
        elif self._timings is not None:
            self.events.extend(_kernel_events(self._timings, record.executor.graph, start_us))
            self._timings = None
        else:
            self.events.append(Event(f"{record.delegate} partition {record.partition}", str(record.delegate),
                                     -1, "partition", start_us, dur_us))


def _host_event(executor: Any, op: ir.Operation, start_us: float, dur_us: float) -> Event:
    values = executor.values
    nbytes = sum(values[i].nbytes for i in (*op.inputs, *op.outputs)
                 if i != ir.NO_TENSOR and values[i] is not None and hasattr(values[i], "nbytes"))
    return Event(op.name, "numpy", op.index, op.name, start_us, dur_us, op_flops(executor.graph, op), nbytes)


def _kernel_events(timings: Sequence[Any], graph: ir.Graph, start_us: float) -> list[Event]:
    """OpenCL launches placed on the host timeline: the first one queued at ``start_us``."""
    if not timings:
        return []
    origin = min(t.queued_ns for t in timings)
    events = []
    for t in timings:
        info = t.launch.info
        op = int(info.get("op", -1))
        events.append(Event(
            t.launch.name, "opencl", op, str(info.get("op_name", "")),
            start_us + (t.start_ns - origin) / 1e3, (t.end_ns - t.start_ns) / 1e3,
            int(info.get("flops", 0)), int(info.get("bytes", 0)),
            {k: (list(v) if isinstance(v, tuple) else v) for k, v in info.items() if k not in ("op", "op_name")},
        ))
    return events


def chrome_trace(events: Sequence[Event]) -> dict[str, Any]:
    """chrome://tracing JSON: one complete ("X") event per launch or host op; OpenCL kernels on
    thread 1 ("OpenCL queue"), host ops on thread 0."""
    pid = os.getpid()
    out: list[dict[str, Any]] = [
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": "host (fallback ops)"}},
        {"name": "thread_name", "ph": "M", "pid": pid, "tid": 1, "args": {"name": "OpenCL queue"}},
    ]
    for e in events:
        rate, unit = e.rate()
        args = {"op": e.op, "op_name": e.op_name, "where": e.where, "flops": e.flops, "bytes": e.nbytes,
                unit: round(rate, 3), **e.args}
        out.append({"name": e.name, "cat": e.where, "ph": "X", "ts": round(e.start_us, 3),
                    "dur": round(e.dur_us, 3), "pid": pid, "tid": 1 if e.where == "opencl" else 0, "args": args})
    return {"traceEvents": out, "displayTimeUnit": "ms"}


def write_chrome_trace(path: str | os.PathLike[str], events: Sequence[Event]) -> None:
    """Write ``chrome_trace(events)`` to ``path``."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(chrome_trace(events), f)


def costliest(runs: Sequence[Sequence[Event]], n: int = 10) -> list[dict[str, Any]]:
    """The ``n`` costliest events by median duration over ``runs`` (profiled invokes of the same
    plan, so event k is the same launch in each), with their share of the summed medians."""
    if not runs:
        return []
    count = min(len(r) for r in runs)
    medians = [statistics.median(r[k].dur_us for r in runs) for k in range(count)]
    total = sum(medians) or 1.0
    rows = []
    for k in sorted(range(count), key=lambda k: -medians[k])[:n]:
        e = runs[0][k]
        timed = Event(e.name, e.where, e.op, e.op_name, e.start_us, medians[k], e.flops, e.nbytes, e.args)
        rate, unit = timed.rate()
        rows.append({"kernel": e.name, "where": e.where, "op": e.op, "op_name": e.op_name, "label": e.label,
                     "median_us": medians[k], "share": medians[k] / total, "rate": rate, "unit": unit,
                     "flops": e.flops, "bytes": e.nbytes})
    return rows


def format_costliest(rows: Sequence[dict[str, Any]]) -> str:
    """The ``costliest`` rows as an aligned table."""
    lines = [f"{'#':>2}  {'kernel (op)':44} {'us':>8} {'share':>6} {'rate':>16}"]
    for k, r in enumerate(rows, 1):
        lines.append(f"{k:>2}  {r['label'][:44]:44} {r['median_us']:8.1f} {r['share'] * 100:5.1f}% "
                     f"{r['rate']:8.1f} {r['unit']:7}")
    return "\n".join(lines)
