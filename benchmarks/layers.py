"""Layer by layer against LiteRT: each op of a model as a one-op model through LiteRT (XNNPACK),
beside that op's kernels in teflon-py's profile of the whole model on the OpenCL delegate.

    python benchmarks/layers.py MODEL.tflite [--runs N] [--threads T] [--ops CONV_2D,...]

LiteRT's time per op is the median of N invokes of the one-op model (a trivial model's invoke
costs ~0.5 us here, so nothing is subtracted); ours is the median, over N profiled invokes, of
the device time of the launches the op produced (folded ops count under the op they folded into).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import teflon_py
from teflon_py import ir, profile
from teflon_py.tflite.builder import ModelBuilder
from teflon_py.tflite.reader import read_model


def one_op_model(graph: ir.Graph, op: ir.Operation) -> bytes:
    """``op`` alone: its non-constant inputs become graph inputs, constants stay constants."""
    mb = ModelBuilder("layer")
    g = mb.main
    remap = {}
    for i in op.inputs:
        if i == ir.NO_TENSOR or i in remap:
            continue
        t = graph.tensors[i]
        if t.is_constant:
            remap[i] = g.add_tensor(t.name, t.shape, t.dtype, data=np.asarray(t.data), quantization=t.quantization)
        else:
            remap[i] = g.add_input(t.name, t.shape, t.dtype, quantization=t.quantization)
    outs = []
    for o in op.outputs:
        t = graph.tensors[o]
        remap[o] = g.add_tensor(t.name, t.shape, t.dtype, quantization=t.quantization)
        outs.append(remap[o])
    g.add_op(op.opcode, [remap.get(i, ir.NO_TENSOR) for i in op.inputs], outs, op.attrs, version=op.version)
    g.mark_outputs(*outs)
    return mb.build()


def litert_ms(model: bytes, runs: int, threads: int) -> float:
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_content=model, num_threads=threads)
    it.allocate_tensors()
    rng = np.random.default_rng(0)
    for d in it.get_input_details():
        it.set_tensor(d["index"], rng.uniform(-1, 1, d["shape"]).astype(d["dtype"]))
    for _ in range(5):
        it.invoke()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        it.invoke()
        times.append((time.perf_counter() - t) * 1e3)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--ops", default="CONV_2D,DEPTHWISE_CONV_2D,FULLY_CONNECTED,ADD,MEAN,AVERAGE_POOL_2D")
    args = ap.parse_args()
    data = Path(args.model).read_bytes()
    graph = read_model(data).main
    it = teflon_py.Interpreter(model_content=data, experimental_delegates=[teflon_py.load_delegate("opencl")])
    it.allocate_tensors()
    for d in it.get_input_details():
        it.set_tensor(d["index"], np.random.default_rng(0).uniform(-1, 1, d["shape"]).astype(d["dtype"]))
    for _ in range(5):
        it.invoke()
    runs = [profile.profile_invoke(it) for _ in range(args.runs)]
    ours: dict[int, list[float]] = defaultdict(list)
    names: dict[int, str] = {}
    for events in runs:
        per: dict[int, float] = defaultdict(float)
        for e in events:
            per[e.op] += e.dur_us
            names[e.op] = e.name
        for op, us in per.items():
            ours[op].append(us)
    wanted = set(args.ops.split(","))
    print(f"{'op':>4} {'name':18} {'shape':34} {'ours us':>8} {'LiteRT us':>9} {'ratio':>6}  kernel")
    tot_ours = tot_lite = 0.0
    for op in graph.operations:
        if op.name not in wanted:
            continue
        x, w = graph.tensors[op.inputs[0]].shape, graph.tensors[op.outputs[0]].shape
        desc = f"{'x'.join(map(str, x[1:]))}->{'x'.join(map(str, w[1:]))}"
        if op.name in ("CONV_2D", "DEPTHWISE_CONV_2D"):
            k = graph.tensors[op.inputs[1]].shape
            desc += f" k{k[1]}s{op.attrs.strides[0]}"
        lite_us = litert_ms(one_op_model(graph, op), args.runs, args.threads) * 1e3
        our_us = statistics.median(ours[op.index]) if op.index in ours else 0.0
        tot_ours += our_us
        tot_lite += lite_us
        ratio = our_us / lite_us if lite_us > 0 else float("nan")
        print(f"{op.index:>4} {op.name[:18]:18} {desc[:34]:34} {our_us:8.1f} {lite_us:9.1f} {ratio:6.2f}  "
              f"{names.get(op.index, '(folded)')}")
    print(f"total ours {tot_ours:.1f} us, LiteRT one-op models {tot_lite:.1f} us")


if __name__ == "__main__":
    main()
