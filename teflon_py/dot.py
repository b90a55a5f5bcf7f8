"""``teflon-py inspect MODEL --dot OUT.dot [--svg OUT.svg]``: the graph as Graphviz draws it.

One box per node ("12 CONV_2D", its output's dtype and shape), filled by where it runs: each
partition of a delegate its own colour (and a cluster around its nodes, labelled with the backend
and partition), NumPy nodes white; a node a delegate could not take is labelled with its reason.
Edges are tensors between nodes; the graph's inputs and outputs are ellipses.
"""
from __future__ import annotations

import shutil
import subprocess
from typing import Any

#: Fill colours of partitions, in turn (a ColorBrewer set: distinct and readable with black text).
PALETTE = ("#8dd3c7", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69", "#fccde5", "#bc80bd",
           "#ccebc5", "#ffed6f")
NUMPY_FILL = "#ffffff"
REASON_CHARS = 60


def _quote(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _wrap(text: str, width: int = REASON_CHARS) -> str:
    words, lines, line = str(text).split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    lines.append(line)
    return "\n".join(lines[:4]) + ("..." if len(lines) > 4 else "")


def to_dot(interpreter: Any, title: str = "model") -> str:
    """The Graphviz text of an allocated ``Interpreter``'s main graph and placement."""
    from teflon_py import ir
    from teflon_py.plan_report import describe_tensor

    graph, placements = interpreter.graph, interpreter.placements()
    producer = {o: op.index for op in graph.operations for o in op.outputs if o != ir.NO_TENSOR}
    lines = [f"digraph {_quote(title)} {{", "  rankdir=TB;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=8, color="#555555"];']
    colours: dict[tuple[str, int], str] = {}
    clusters: dict[tuple[str, int], list[str]] = {}
    for op, p in zip(graph.operations, placements):
        outs = " ".join(describe_tensor(graph, i) for i in op.outputs)
        label = f"{op.index} {op.name}\n{outs}"
        if p.partition is not None:
            key = (p.backend, p.partition)
            fill = colours.setdefault(key, PALETTE[len(colours) % len(PALETTE)])
            node = f"  n{op.index} [label={_quote(label)}, fillcolor={_quote(fill)}, tooltip={_quote(p.backend)}];"
            clusters.setdefault(key, []).append(node)
            continue
        attrs = f"fillcolor={_quote(NUMPY_FILL)}"
        if p.reason:
            label += f"\nnumpy: {_wrap(p.reason)}"
            attrs += ', color="#d62728", penwidth=1.5'
        lines.append(f"  n{op.index} [label={_quote(label)}, {attrs}, tooltip=\"numpy\"];")
    for (backend, part), nodes in clusters.items():
        lines.append(f"  subgraph cluster_{backend.replace('-', '_')}_{part} {{")
        lines.append(f"    label={_quote(f'{backend} partition {part}')}; style=dashed; color=\"#888888\";")
        lines.extend("  " + n for n in nodes)
        lines.append("  }")
    for k, i in enumerate(graph.inputs):
        lines.append(f"  in{k} [label={_quote(f'input {graph.tensors[i].name}')}, shape=ellipse, fillcolor=\"#eeeeee\"];")
    for k, i in enumerate(graph.outputs):
        lines.append(f"  out{k} [label={_quote(f'output {graph.tensors[i].name}')}, shape=ellipse, "
                     'fillcolor="#eeeeee"];')
    inputs = {i: k for k, i in enumerate(graph.inputs)}
    for op in graph.operations:
        for i in op.inputs:
            if i in producer:
                lines.append(f"  n{producer[i]} -> n{op.index};")
            elif i in inputs:
                lines.append(f"  in{inputs[i]} -> n{op.index};")
    for k, i in enumerate(graph.outputs):
        if i in producer:
            lines.append(f"  n{producer[i]} -> out{k};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_svg(dot_text: str, path: str) -> None:
    """Run Graphviz's ``dot`` to write ``path``; a RuntimeError when it is not on PATH or fails."""
    exe = shutil.which("dot")
    if exe is None:
        raise FileNotFoundError("--svg needs Graphviz's dot on PATH (apt install graphviz); --dot writes the source")
    done = subprocess.run([exe, "-Tsvg", "-o", path], input=dot_text, text=True, capture_output=True,
                          timeout=120, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"dot -Tsvg failed: {' '.join(done.stderr.split())}")
