"""Run the BENCHMARKS.md measurements: every zoo model x delegate through ``teflon-py bench
--compare litert --json`` (one process each, as a user would run it), then print the tables.

    python benchmarks/report.py [--out DIR] [--runs N] [--only NAME ...]

Models are written with ``teflon-py zoo NAME OUT --size 224 --alpha 1.0 [--dtype int8]`` into
``DIR`` (default /tmp/teflon-bench), results go to ``DIR/<model>-<delegate>.json`` and the
profile of float32 MobileNetV2 on OpenCL to ``DIR/mobilenet_v2-opencl-trace.json``.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

MODELS = [("mobilenet_v1", "float32"), ("mobilenet_v2", "float32"), ("mobilenet_v1", "int8"),
          ("mobilenet_v2", "int8")]
DELEGATES = ("opencl", "none")
RUNS = {"opencl": 50, "none": 5}


def cli(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "teflon_py.cli", *args], capture_output=True, text=True,
                          check=False)
    if done.returncode:
        raise SystemExit(f"teflon-py {' '.join(args)} failed:\n{done.stderr}")
    return done.stdout


def measure(out: Path, runs: int | None, only: list[str]) -> dict[str, dict]:
    results = {}
    for name, dtype in MODELS:
        stem = f"{name}-{dtype}"
        if only and stem not in only:
            continue
        model = out / f"{stem}.tflite"
        if not model.exists():
            cli("zoo", name, str(model), "--size", "224", "--alpha", "1.0", "--dtype", dtype)
        for delegate in DELEGATES:
            args = ["bench", str(model), "--delegate", delegate, "--runs", str(runs or RUNS[delegate]),
                    "--compare", "litert", "--json"]
            if (name, dtype, delegate) == ("mobilenet_v2", "float32", "opencl"):
                args += ["--profile", str(out / "mobilenet_v2-opencl-trace.json")]
            doc = json.loads(cli(*args))
            (out / f"{stem}-{delegate}.json").write_text(json.dumps(doc, indent=2))
            results[f"{stem}-{delegate}"] = doc
            print(f"{stem} {delegate}: {doc['median_ms']:.2f} ms, LiteRT {doc['litert']['median_ms']:.2f} ms, "
                  f"ratio {doc['ratio_to_litert']:.2f}", file=sys.stderr)
    return results


def tables(results: dict[str, dict]) -> str:
    lines = []
    for name, dtype in MODELS:
        rows = [(d, results.get(f"{name}-{dtype}-{d}")) for d in DELEGATES]
        rows = [(d, r) for d, r in rows if r is not None]
        if not rows:
            continue
        lines += [f"### {name} {dtype} 224/1.0", "",
                  ("| teflon-py delegate | ours median ms (min-max) | LiteRT XNNPACK median ms | ours/LiteRT "
                   "(median of pairs) | allocate_tensors first / warm ms |"),
                  "|---|---|---|---|---|"]
        for d, r in rows:
            lines.append(f"| {d} | {r['median_ms']:.2f} ({r['min_ms']:.2f}-{r['max_ms']:.2f}) | "
                         f"{r['litert']['median_ms']:.2f} | {r['ratio_to_litert']:.2f} | "
                         f"{r['allocate_ms']:.0f} ({r['allocate_cache']}) / {r['allocate_warm_ms']:.0f} |")
        lines.append("")
    v2 = results.get("mobilenet_v2-float32-opencl")
    if v2 and "profile" in v2:
        lines += ["### Ten costliest kernels, float32 MobileNetV2 224/1.0 on OpenCL", "",
                  "| # | kernel (op) | median us | share | rate |", "|---|---|---|---|---|"]
        for k, row in enumerate(v2["profile"]["costliest"], 1):
            lines.append(f"| {k} | {row['label']} | {row['median_us']:.1f} | {row['share'] * 100:.1f}% | "
                         f"{row['rate']:.1f} {row['unit']} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="/tmp/teflon-bench")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--only", nargs="*", default=[], help="e.g. mobilenet_v2-float32")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(tables(measure(out, args.runs, args.only)))


if __name__ == "__main__":
    main()
