"""The whole-zoo table of BENCHMARKS.md: every model given, benched against LiteRT one at a time.

    python benchmarks/zoo_table.py MODEL.tflite ... [--runs N] [--out rows.jsonl]

Each model runs in its own ``teflon-py bench MODEL --delegate opencl --compare litert --json``
process with empty program caches (``TEFLON_CACHE_DIR`` and ``POCL_CACHE_DIR`` in a fresh
temporary directory), so its first ``allocate_tensors`` is a cold load; the second is the warm one
bench reports. Prints one Markdown row per model, then the geometric means of ours/LiteRT per
type (a name with ``_i8`` is int8). ``--out`` keeps bench's JSON, one line per model.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path


def bench(path: str, runs: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "TEFLON_CACHE_DIR": f"{tmp}/teflon", "POCL_CACHE_DIR": f"{tmp}/pocl"}
        cmd = [sys.executable, "-m", "teflon_py", "bench", path, "--delegate", "opencl", "--compare", "litert",
               "--runs", str(runs), "--quiet", "--json"]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    try:
        return {"path": path, **json.loads(done.stdout)}
    except ValueError:
        return {"path": path, "error": (done.stderr or done.stdout).strip().splitlines()[-1:]}


def row(d: dict) -> str:
    name = Path(d["path"]).stem
    if "error" in d:
        return f"| {name} | | | | error: {' '.join(d['error'])} | | | |"
    nodes = d["nodes_on"]
    placed = d.get("fallback") or f"all {nodes.get('opencl', 0)}"
    return (f"| {name} | {'int8' if '_i8' in name else 'float32'} | {d['median_ms']:.2f} | "
            f"{d['litert']['median_ms']:.2f} | **{d['ratio_to_litert']:.2f}** | {d['allocate_ms'] / 1000:.1f} s "
            f"({d['allocate_programs_built']}) | {d['allocate_warm_ms'] / 1000:.2f} s | {placed} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    print("| model | type | ours ms | LiteRT ms | ours/LiteRT | cold load (programs) | warm load | "
          "nodes on OpenCL |")
    print("|---|---|---|---|---|---|---|---|")
    ratios: dict[str, list[float]] = {"float32": [], "int8": []}
    for path in args.models:
        d = bench(path, args.runs)
        if args.out is not None:
            with args.out.open("a", encoding="utf-8") as f:
                f.write(json.dumps(d) + "\n")
        print(row(d), flush=True)
        if "error" not in d:
            ratios["int8" if "_i8" in Path(path).stem else "float32"].append(d["ratio_to_litert"])
    for kind, xs in ratios.items():
        if xs:
            geomean = math.exp(sum(math.log(x) for x in xs) / len(xs))
            print(f"\n{kind}: {len(xs)} models, geomean ours/LiteRT {geomean:.2f}, highest {max(xs):.2f}")


if __name__ == "__main__":
    main()
