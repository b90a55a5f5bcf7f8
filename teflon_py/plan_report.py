"""Where every node runs and why: Teflon's ``TEFLON_DEBUG`` table, as data first, text second.

``plan_data`` is what ``teflon-py inspect --json`` prints; ``format_table`` is the text that
``teflon-py inspect`` prints and that ``allocate_tensors`` writes to stderr when ``TEFLON_DEBUG``
is set.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from teflon_py import ir, partitioner

if TYPE_CHECKING:
    from teflon_py.interpreter import Interpreter

DEBUG_ENV = "TEFLON_DEBUG"


def debug_enabled() -> bool:
    """``TEFLON_DEBUG`` set to anything but empty or 0."""
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def describe_tensor(graph: ir.Graph, index: int) -> str:
    """``int8[1,96,96,3]``; ``-`` for an absent optional operand."""
    if index == ir.NO_TENSOR:
        return "-"
    t = graph.tensors[index]
    return f"{t.dtype.name}[{','.join(str(d) for d in t.shape)}]"


def tensor_info(graph: ir.Graph, index: int) -> dict[str, Any] | None:
    """``{"tensor": index, "dtype": "int8", "shape": [1, 96, 96, 3]}``; None for an absent operand."""
    if index == ir.NO_TENSOR:
        return None
    t = graph.tensors[index]
    return {"tensor": index, "dtype": t.dtype.name, "shape": [int(d) for d in t.shape]}


def plan_rows(interpreter: Interpreter) -> list[dict[str, Any]]:
    """One dict per node of the main graph: index, op, operand descriptions, backend, partition, reason
    (an ExecuTorch program: per XNode of its delegate calls and per kernel call, its own rows)."""
    if hasattr(interpreter, "plan_rows"):
        return interpreter.plan_rows()
    graph = interpreter.graph
    rows = []
    for op, p in zip(graph.operations, interpreter.placements()):
        rows.append({
            "index": op.index,
            "op": op.name,
            "inputs": [describe_tensor(graph, i) for i in op.inputs],
            "outputs": [describe_tensor(graph, i) for i in op.outputs],
            "backend": p.backend,
            "partition": p.partition,
            "reason": p.reason,
            "input_info": [tensor_info(graph, i) for i in op.inputs],
            "output_info": [tensor_info(graph, i) for i in op.outputs],
        })
    return rows


def plan_data(interpreter: Interpreter, model: str, delegate: str | None) -> dict[str, Any]:
    """The ``inspect --json`` document: model, delegate, nodes, partitions (fixed keys). A node:
    index, op, backend, partition, reason, then its ``inputs`` and ``outputs`` as
    ``{"tensor", "dtype", "shape"}`` (null for an absent optional operand; ``tensor`` is null in an
    ExecuTorch program's portable kernel rows)."""
    keys = ("index", "op", "backend", "partition", "reason")
    return {
        "model": model,
        "delegate": delegate,
        "nodes": [{**{k: row[k] for k in keys}, "inputs": row["input_info"], "outputs": row["output_info"]}
                  for row in plan_rows(interpreter)],
        "partitions": interpreter.partitions(),
    }


def summary_line(interpreter: Interpreter) -> str:
    """How many nodes the partitions claim and how many run on the NumPy fallback."""
    if hasattr(interpreter, "plan_rows"):
        rows = interpreter.plan_rows()
        numpy = sum(r["backend"] == "numpy" for r in rows)
        return (f"{len(rows) - numpy} of {len(rows)} rows delegated in {len(interpreter.partitions())} "
                f"partition(s); {numpy} on the NumPy fallback")
    graph = interpreter.graph
    claimed = [p["nodes"] for p in interpreter.partitions()]
    parts = [partitioner.Partition(k, tuple(nodes), (), ()) for k, nodes in enumerate(claimed)]
    return partitioner.summary(graph, parts)


def format_table(interpreter: Interpreter) -> str:
    """The placement table as aligned text, one row per node, then the summary line."""
    head = ("#", "op", "inputs", "outputs", "backend", "part", "reason")
    lines = [head]
    for r in plan_rows(interpreter):
        lines.append((
            str(r["index"]), r["op"], " ".join(r["inputs"]), " ".join(r["outputs"]), r["backend"],
            "-" if r["partition"] is None else str(r["partition"]), r["reason"] or "",
        ))
    widths = [max(len(row[c]) for row in lines) for c in range(len(head))]
    text = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in lines]
    return "\n".join([*text, summary_line(interpreter), *partition_lines(interpreter)])


def partition_lines(interpreter: Interpreter) -> list[str]:
    """One line per partition whose backend says where it runs: ``partition 0 (opencl): device
    llvmpipe (LLVM 15.0.6, 256 bits), kernel family gpu``."""
    out = []
    for p in interpreter.partitions():
        where = [f"{k.replace('_', ' ')} {p[k]}" for k in ("device", "kernel_family") if p.get(k)]
        if where:
            out.append(f"partition {p['index']} ({p['backend']}): {', '.join(where)}")
    return out
