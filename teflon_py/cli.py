"""``teflon-py``: run, inspect and time TFLite models and ExecuTorch programs; list OpenCL devices;
write zoo models.

Bad input (a missing file, a corrupt model, an input of the wrong shape, an unknown delegate) is
one line on stderr and exit status 2, without a traceback (``TEFLON_DEBUG=1`` shows it).

An explicit ``--delegate`` that can run nothing (no usable device, no partition builds) is such an
error too; nodes it leaves to NumPy are one warning line saying why, and the device that ran its
partitions is one line ("opencl: <device> (<platform>, driver <version>)"). Warnings are one line,
without Python's file:line decoration.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import statistics
import sys
import time
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from teflon_py.cli_common import (  # noqa: F401  (re-exported: tests and command modules use them)
    EXIT_USAGE,
    REASON_CHARS,
    REASONS_SHOWN,
    CliError,
    _allocate,
    _check_delegate,
    _device_lines,
    _fallback_line,
    _interpreter,
    _interpreter_path_check,
    _is_program,
    _load_inputs,
    _progress,
    _random_input,
    _read_npy,
    _report_delegation,
    _short,
    _warn,
)
from teflon_py.errors import FallbackWarning, TeflonError
from teflon_py.plan_report import debug_enabled, format_table, plan_data, plan_rows


def _summarise(name: str, value: np.ndarray) -> list[str]:
    """Shape, dtype, range; top-5 classes for a [1, N] classifier output."""
    lines = [f"{name}: {value.dtype}[{','.join(str(d) for d in value.shape)}]"]
    if value.size and value.dtype.kind in "fiub":
        v = value.astype(np.float64)
        lines[0] += f"  min {v.min():.6g}  max {v.max():.6g}  mean {v.mean():.6g}"
    if value.ndim == 2 and value.shape[0] == 1 and value.shape[1] > 1 and value.dtype.kind in "fiu":
        row = value[0]
        top = np.argsort(-row.astype(np.float64), kind="stable")[:5]
        lines.append("  top-5: " + ", ".join(f"{int(i)} ({row[i]:.6g})" for i in top))
    return lines


# -- commands ------------------------------------------------------------------------------------
def cmd_run(args: argparse.Namespace) -> int:
    if args.model is None:
        from teflon_py import zoo

        model: str | bytes = zoo.demo()
        print("model: zoo.demo() (a small float32 classifier with random weights)")
    else:
        model = args.model
        print(f"model: {model}")
    progress = _progress(args)
    it = _interpreter(model, args.delegate, progress)
    program = hasattr(it, "plan_rows")  # an ExecuTorch program knows its inputs once loaded
    inputs = None if program or not args.input else _load_inputs(args.input, it.get_input_details())
    _allocate(it, progress)  # compiles: after the inputs are checked
    _check_delegate(it, args.delegate)
    details = it.get_input_details()
    if args.input:
        inputs = inputs if inputs is not None else _load_inputs(args.input, details)
    else:
        rng = np.random.default_rng(args.seed)
        inputs = [_random_input(d, rng) for d in details]
        print(f"inputs: random (seed {args.seed})")
    for d, x in zip(details, inputs):
        it.set_tensor(d["index"], x)
    start = time.perf_counter()
    it.invoke()
    elapsed = (time.perf_counter() - start) * 1e3
    outputs = {d["name"] or f"output{k}": it.get_tensor(d["index"]) for k, d in enumerate(it.get_output_details())}
    for name, value in outputs.items():
        print("\n".join(_summarise(name, value)))
    on = sorted({r["backend"] for r in plan_rows(it)})
    programs = (f" ({progress.built} programs compiled, {progress.loaded} from caches)"
                if progress.built + progress.loaded else "")
    print(f"allocate_tensors: {progress.seconds * 1e3:.1f} ms{programs}")
    print(f"invoke (first): {elapsed:.2f} ms; nodes on: {', '.join(on) if on else 'none'}")
    _report_delegation(it, args.delegate, "run")  # after invoke: a partition may have failed to run
    if args.output:
        np.savez(args.output, **outputs)
        print(f"wrote {args.output}")
    return 0


def cmd_inspect(args: argparse.Namespace) -> int:
    progress = _progress(args)
    it = _interpreter(args.model, args.delegate, progress)
    _allocate(it, progress)
    _check_delegate(it, args.delegate)
    if args.dot or args.svg:
        _write_dot(it, args)
    if args.json:
        doc = plan_data(it, args.model, args.delegate)
        doc["devices"] = it.devices()
        doc["fallbacks"] = [dataclasses.asdict(f) for f in it.fallbacks()]
        print(json.dumps(doc, indent=2))
        line = _fallback_line(it, args.delegate)
        if line is not None:
            _warn("inspect", line)
    else:
        print(f"model: {args.model}  delegate: {args.delegate or 'none (NumPy fallback)'}")
        _report_delegation(it, args.delegate, "inspect")
        print(format_table(it))
    return 0


def _write_dot(it: Any, args: argparse.Namespace) -> None:
    """``--dot`` / ``--svg``: the placement as a Graphviz graph (see ``teflon_py.dot``)."""
    from teflon_py import dot

    if hasattr(it, "plan_rows"):
        raise CliError(f"{args.model}: --dot and --svg draw .tflite models, not ExecuTorch programs")
    text = dot.to_dot(it, Path(args.model).name)
    if args.dot:
        Path(args.dot).write_text(text)
    if args.svg:
        try:
            dot.render_svg(text, args.svg)
        except (FileNotFoundError, RuntimeError) as e:
            raise CliError(str(e)) from e
    target = " and ".join(p for p in (args.dot, args.svg) if p)
    print(f"wrote {target}", file=sys.stderr if args.json else sys.stdout)


def cmd_bench(args: argparse.Namespace) -> int:
    """Time invoke (and LiteRT's, alternating), allocate_tensors cold and warm, and a profile."""
    if args.runs < 1 or args.warmup < 0:
        raise CliError("--runs must be at least 1 and --warmup at least 0")
    if args.compare == "litert":  # before anything is compiled
        try:
            import ai_edge_litert.interpreter  # noqa: F401
        except ImportError as e:
            raise CliError(f"--compare litert needs LiteRT installed (pip install ai-edge-litert): {e}") from e
    program = _is_program(args.model)
    if program and (args.compare == "litert" or args.profile):
        raise CliError(f"{args.model}: an ExecuTorch program: --compare executorch, not litert; "
                       "--profile is for .tflite models")
    if not program and args.compare == "executorch":
        raise CliError(f"{args.model}: --compare executorch is for ExecuTorch programs (.pte)")
    it, cold = _timed_allocate(args.model, args.delegate, progress=_progress(args))
    _check_delegate(it, args.delegate)
    rng = np.random.default_rng(0)
    inputs = [_random_input(d, rng) for d in it.get_input_details()]
    again, warm = _timed_allocate(args.model, args.delegate, fresh_memo=True)  # caches are full now
    del again
    result: dict[str, Any] = {"model": args.model, "delegate": args.delegate, "runs": args.runs,
                              "warmup": args.warmup, "allocate_ms": cold["ms"],
                              "allocate_programs_built": cold["built"], "allocate_cache": cold["cache"],
                              "allocate_warm_ms": warm["ms"], "allocate_warm_programs_built": warm["built"]}
    if args.compare == "litert":
        lite = _litert(args.model, inputs)
    elif args.compare == "executorch":
        lite = _executorch(args.model, inputs)
    else:
        lite = None
    ours, theirs = _time_invokes(it, inputs, lite, args.runs, args.warmup)
    result.update(_stats(ours))
    # what the timings measured, after the runs (a partition that failed to run fell back in them)
    ran = sorted({r["backend"] for r in plan_rows(it)} - {"numpy"})
    result["delegate"] = args.delegate if args.delegate and ran else None
    result["delegate_requested"] = args.delegate
    result["nodes_on"] = dict(sorted(Counter(r["backend"] for r in plan_rows(it)).items()))
    result["devices"] = it.devices()
    fallback = _fallback_line(it, args.delegate)
    if fallback is not None:
        result["fallback"] = fallback
        _warn("bench", fallback)
    if lite is not None and program:
        result["executorch"] = {"runtime": "executorch.runtime (XNNPACK)", **_stats(theirs)}
        result["ratio_to_executorch"] = statistics.median(a / b for a, b in zip(ours, theirs))
    elif lite is not None:
        result["litert"] = {"resolver": "default (XNNPACK)", "num_threads": os.cpu_count(), **_stats(theirs)}
        result["ratio_to_litert"] = statistics.median(a / b for a, b in zip(ours, theirs))
        result["ratio_of_medians"] = result["median_ms"] / result["litert"]["median_ms"]
    if args.profile:
        from teflon_py import profile

        runs = [profile.profile_invoke(it) for _ in range(max(3, min(args.runs, 10)))]
        profile.write_chrome_trace(args.profile, runs[-1])
        result["profile"] = {"trace": args.profile, "events": len(runs[-1]), "profiled_invokes": len(runs),
                             "costliest": profile.costliest(runs, 10)}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    _print_bench(result)
    return 0


def _timed_allocate(model: str, delegate: str | None, fresh_memo: bool = False,
                    progress: Any = None) -> tuple[Any, dict[str, Any]]:
    """An allocated Interpreter and how long allocate_tensors took, with the program caches' state
    ("cold": something was compiled and cached, "warm": all came from the caches, "none": no
    programs): ``fresh_memo`` forgets in-process programs first, so they come from the caches."""
    if fresh_memo and delegate == "opencl":
        from teflon_py.opencl.runtime import programs

        programs.clear_memo()
    it = _interpreter(model, delegate, progress)
    before, files_before = _program_counts(), _cached_files()
    start = time.perf_counter()
    with progress if progress is not None else contextlib.nullcontext():
        it.allocate_tensors()
    ms = (time.perf_counter() - start) * 1e3
    after, files_after = _program_counts(), _cached_files()
    built = after.get("source", 0) - before.get("source", 0)
    loaded = sum(after.get(k, 0) - before.get(k, 0) for k in ("disk", "memo"))
    compiled = files_after > files_before or (built and not _pocl_kernel_cache_on())
    cache = "none" if built + loaded == 0 else ("cold" if compiled else "warm")
    return it, {"ms": ms, "built": built, "cache": cache}


def _program_counts() -> dict[str, int]:
    """Programs obtained so far in this process, by where they came from (empty without OpenCL)."""
    try:
        from teflon_py.opencl.runtime import programs
    except ImportError:
        return {}
    return dict(programs.TOTALS)


def _pocl_kernel_cache_on() -> bool:
    return os.environ.get("POCL_KERNEL_CACHE", "1").strip() != "0"


def _cached_files() -> int:
    """Files in PoCL's kernel cache and ours: a compile adds some, a cache hit none (PoCL's
    per-process ``tempfile_*`` scratch files and our build probe's ``.ok`` records aside)."""
    dirs = [os.environ.get("POCL_CACHE_DIR") or
            os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "pocl", "kcache")]
    try:
        from teflon_py.opencl.runtime import programs

        dirs.append(str(programs.default_cache_dir()))
    except ImportError:
        pass
    return sum(1 for d in dirs for _, _, files in os.walk(d) for f in files
               if not f.startswith("tempfile") and not f.endswith(".ok"))


def _litert(model: str, inputs: list[np.ndarray]) -> Any:
    """LiteRT with its default resolver (XNNPACK) and one thread per CPU, inputs set."""
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    lite = LiteRT(model_path=model, num_threads=os.cpu_count())
    lite.allocate_tensors()
    for d, x in zip(lite.get_input_details(), inputs):
        lite.set_tensor(d["index"], x)
    return lite


class _ExecuTorchMethod:
    """ExecuTorch's own runtime on the same program and inputs, timed like an interpreter."""

    def __init__(self, method: Any, inputs: list[Any]):
        self.method, self.inputs = method, inputs

    def invoke(self) -> None:
        self.method.execute(self.inputs)


def _executorch(model: str, inputs: list[np.ndarray]) -> Any:
    try:
        import torch
        from executorch.runtime import Runtime
    except ImportError as e:
        raise CliError(f"--compare executorch needs ExecuTorch installed (pip install executorch): {e}") from e
    method = Runtime.get().load_program(model).load_method("forward")
    return _ExecuTorchMethod(method, [torch.from_numpy(np.ascontiguousarray(x)) for x in inputs])


def _time_invokes(it: Any, inputs: list[np.ndarray], lite: Any, runs: int,
                  warmup: int) -> tuple[list[float], list[float]]:
    """Milliseconds per invoke of ``it`` and, alternating with it, of ``lite`` (when given).

    Alternating, each timed invoke follows an untimed one of the same interpreter: a thread pool
    that has just run (XNNPACK's spins a while before it sleeps) would otherwise be timed against
    the other one's first invoke."""
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    contenders = [it] if lite is None else [it, lite]
    times: list[list[float]] = [[] for _ in contenders]
    for k in range(warmup + runs):
        for c, t in zip(contenders, times):
            if lite is not None:
                c.invoke()
            start = time.perf_counter()
            c.invoke()
            if k >= warmup:
                t.append((time.perf_counter() - start) * 1e3)
    return times[0], times[1] if lite is not None else []


def _stats(times: list[float]) -> dict[str, float]:
    return {"median_ms": statistics.median(times), "min_ms": min(times), "max_ms": max(times)}


def _print_bench(r: dict[str, Any]) -> None:
    if r["delegate"]:
        delegate = r["delegate"] + "".join(f"; {name}: {desc}" for name, desc in r["devices"].items())
    elif r["delegate_requested"]:
        delegate = f"none ran ({r['delegate_requested']} runs no node; NumPy fallback)"
    else:
        delegate = "none (NumPy fallback)"
    print(f"model: {r['model']}  delegate: {delegate}")
    print("nodes on: " + ", ".join(f"{name} {n}" for name, n in r["nodes_on"].items()))
    print(f"allocate_tensors (first): {r['allocate_ms']:.1f} ms  [program caches: {r['allocate_cache']}; "
          f"{r['allocate_programs_built']} programs]")
    print(f"allocate_tensors (warm: fresh Interpreter, in-process programs forgotten, caches full): "
          f"{r['allocate_warm_ms']:.1f} ms")
    print(f"invoke x{r['runs']} after {r['warmup']} warm-up: median {r['median_ms']:.3f} ms  "
          f"min {r['min_ms']:.3f}  max {r['max_ms']:.3f}")
    if "executorch" in r:
        et = r["executorch"]
        print(f"ExecuTorch {et['runtime']}: median {et['median_ms']:.3f} ms  min {et['min_ms']:.3f}  "
              f"max {et['max_ms']:.3f}")
        print(f"ours/ExecuTorch: {r['ratio_to_executorch']:.2f} (median of {r['runs']} alternating pairs)")
    if "litert" in r:
        lite = r["litert"]
        print(f"LiteRT {lite['resolver']}, {lite['num_threads']} threads: median {lite['median_ms']:.3f} ms  "
              f"min {lite['min_ms']:.3f}  max {lite['max_ms']:.3f}")
        print(f"ours/LiteRT: {r['ratio_to_litert']:.2f} (median of {r['runs']} alternating pairs, each timed "
              f"invoke after an untimed one of its own; ratio of medians {r['ratio_of_medians']:.2f})")
    if "profile" in r:
        from teflon_py import profile

        p = r["profile"]
        print(f"profile: {p['events']} events written to {p['trace']}; costliest (median of "
              f"{p['profiled_invokes']} profiled invokes):")
        print(profile.format_costliest(p["costliest"]))


def cmd_devices(args: argparse.Namespace) -> int:
    try:
        from teflon_py.opencl.runtime.device import list_devices
    except ImportError as e:
        print(f"teflon-py: the OpenCL backend is not available ({e})", file=sys.stderr)
        return 1
    try:
        devices = list_devices()
    except TeflonError as e:
        print(f"teflon-py: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(devices, indent=2))
        return 0
    if not devices:
        print("no OpenCL devices found")
        return 1
    for d in devices:
        extra = f"  {d['type']}  {d['version']}" if "type" in d else ""
        print(f"{d.get('index', '?')}  {d.get('name', '?')}  ({d.get('platform', '?')}){extra}")
    print("pick one with TEFLON_CL_DEVICE=P:D (or a name substring)")
    return 0


def cmd_ops(args: argparse.Namespace) -> int:
    from teflon_py import support

    rows = {b: support.backend_ops(b) for b in ([args.backend] if args.backend else support.BACKENDS)}
    print(json.dumps(rows, indent=2) if args.json else support.format_ops(rows))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from teflon_py import check

    return check.main(args)


def cmd_zoo(args: argparse.Namespace) -> int:
    from teflon_py import zoo

    kwargs: dict[str, Any] = {"dtype": args.dtype, "io": args.io, "seed": args.seed}
    for flag, value in (("--size", args.size), ("--classes", args.classes)):
        if value is not None and value < 1:
            raise CliError(f"{flag} must be at least 1, got {value}")
    if args.alpha is not None and not args.alpha > 0:
        raise CliError(f"--alpha must be positive, got {args.alpha}")
    if args.size is not None:
        kwargs["input_size"] = args.size
    if args.classes is not None:
        kwargs["num_classes"] = args.classes
    if args.alpha is not None:
        if args.name == "demo":
            raise CliError("--alpha applies to the mobilenets, not to demo")
        kwargs["alpha"] = args.alpha
    data = zoo.build(args.name, **kwargs)
    if args.external_buffers:
        from teflon_py.tflite.builder import write_model
        from teflon_py.tflite.reader import read_model

        data = write_model(read_model(data), external_buffers=True)
    Path(args.out).write_bytes(data)
    print(f"wrote {args.out} ({len(data) / 1e6:.2f} MB)")
    return 0


# -- argument parsing ----------------------------------------------------------------------------
class _HelpFormatter(argparse.HelpFormatter):
    """Help lines end with the option's default when it has one (and the text does not say it)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if (action.option_strings and action.default is not None and action.default is not False
                and action.default != argparse.SUPPRESS and "default" not in text):
            text += " (default: %(default)s)"
        return text


def _add_delegate(p: argparse.ArgumentParser) -> None:
    p.add_argument("--delegate", metavar="NAME",
                   help="opencl (or a registered backend); default none: the NumPy fallback only")


def _parser() -> argparse.ArgumentParser:
    from teflon_py import __version__, zoo
    from teflon_py.support import BACKENDS

    f = {"formatter_class": _HelpFormatter}
    p = argparse.ArgumentParser(prog="teflon-py", description=__doc__.splitlines()[0], **f)
    p.add_argument("--version", action="version", version=f"teflon-py {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run a model once (no MODEL: the built-in demo network)", **f)
    run.add_argument("model", nargs="?", metavar="MODEL",
                     help=".tflite file or ExecuTorch .pte program; default the built-in demo network")
    run.add_argument("--input", action="append", metavar="X.npy",
                     help="one .npy per model input, in order (its exact shape and dtype); default random inputs")
    run.add_argument("--output", metavar="OUT.npz", help="save the outputs, keyed by tensor name")
    _add_delegate(run)
    run.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    run.add_argument("--quiet", action="store_true", help="no progress line while OpenCL programs compile")
    run.set_defaults(func=cmd_run)

    ins = sub.add_parser("inspect", help="where every node runs and why", **f)
    ins.add_argument("model", metavar="MODEL", help=".tflite file or ExecuTorch .pte program")
    _add_delegate(ins)
    ins.add_argument("--json", action="store_true", help="machine-readable plan")
    ins.add_argument("--dot", metavar="OUT.dot",
                     help="write the graph for Graphviz: nodes coloured by backend and partition")
    ins.add_argument("--svg", metavar="OUT.svg", help="render that graph to SVG (needs Graphviz's dot on PATH)")
    ins.add_argument("--quiet", action="store_true", help="no progress line while OpenCL programs compile")
    ins.set_defaults(func=cmd_inspect)

    bench = sub.add_parser("bench", help="time invoke (median/min/max) and allocate_tensors, cold and warm", **f)
    bench.add_argument("model", metavar="MODEL", help=".tflite file or ExecuTorch .pte program")
    _add_delegate(bench)
    bench.add_argument("--runs", type=int, default=20, help="timed invokes")
    bench.add_argument("--warmup", type=int, default=3, help="untimed invokes before them")
    bench.add_argument("--compare", choices=["litert", "executorch"],
                       help="also time LiteRT (XNNPACK, one thread per CPU) on a .tflite, or ExecuTorch's "
                            "runtime on a .pte, alternating runs; default no comparison")
    bench.add_argument("--profile", metavar="TRACE.json",
                       help="write a chrome://tracing trace of one invoke; print the costliest kernels")
    bench.add_argument("--json", action="store_true", help="one JSON object with every number")
    bench.add_argument("--quiet", action="store_true", help="no progress line while OpenCL programs compile")
    bench.set_defaults(func=cmd_bench)

    chk = sub.add_parser("check", help="compare every tensor of a backend's run with NumPy's (and LiteRT's)", **f)
    chk.add_argument("model", metavar="MODEL", help=".tflite file")
    chk.add_argument("--delegate", metavar="NAME", default="opencl", help="the backend checked")
    chk.add_argument("--reference", choices=["numpy", "litert"], default="numpy",
                     help="what it is compared with: the NumPy fallback, or LiteRT's reference kernels "
                          "(BUILTIN_REF; needs ai-edge-litert)")
    chk.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    chk.add_argument("--input", action="append", metavar="X.npy", help="one .npy per model input; default random")
    chk.add_argument("--tolerance", type=float, default=1e-5,
                     help="largest relative L2 error of a float tensor that counts as equal")
    chk.add_argument("--lsb", type=int, default=0, help="largest integer difference that counts as equal")
    chk.add_argument("-v", "--verbose", action="store_true", help="one line per operator")
    chk.add_argument("--quiet", action="store_true", help="no progress line while OpenCL programs compile")
    chk.set_defaults(func=cmd_check)

    ops_ = sub.add_parser("ops", help="list every op (and dtype) each backend runs", **f)
    ops_.add_argument("--backend", choices=BACKENDS, help="one backend; default both")
    ops_.add_argument("--json", action="store_true", help="a JSON object: backend -> rows")
    ops_.set_defaults(func=cmd_ops)

    dev = sub.add_parser("devices", help="list OpenCL devices", **f)
    dev.add_argument("--json", action="store_true", help="a JSON list of devices")
    dev.set_defaults(func=cmd_devices)

    z = sub.add_parser("zoo", help="write a built-in demo network to a .tflite file", **f)
    z.add_argument("name", choices=sorted(zoo.MODELS), metavar="NAME", help=", ".join(sorted(zoo.MODELS)))
    z.add_argument("out", metavar="OUT.tflite", help="file to write")
    z.add_argument("--dtype", choices=["float32", "int8"], default="float32", help="weights and activations")
    z.add_argument("--io", choices=["int8", "uint8", "float32"],
                   help="int8 models: input/output type; default int8 for int8 models")
    z.add_argument("--size", type=int, help="input height and width; default 96 (demo 32)")
    z.add_argument("--alpha", type=float, help="width multiplier of the mobilenets; default 0.5")
    z.add_argument("--classes", type=int, help="number of classes; default 1000 (demo 10)")
    z.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    z.add_argument("--external-buffers", action="store_true", help="constants after the flatbuffer (3c)")
    z.set_defaults(func=cmd_zoo)
    return p


def _one_line_warning(command: str) -> Any:
    """``warnings.showwarning`` for the CLI: one line, no file:line (``TEFLON_DEBUG``: Python's)."""
    python = warnings.showwarning

    def show(message: Any, category: type[Warning], filename: str, lineno: int, file: Any = None,
             line: str | None = None) -> None:
        if debug_enabled():
            python(message, category, filename, lineno, file, line)
        else:
            _warn(command, f"{category.__name__}: {message}")

    return show


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``teflon-py`` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    if getattr(args, "delegate", None) == "none":  # `--delegate none`: NumPy fallback only
        args.delegate = None
    try:
        with warnings.catch_warnings():
            # fallbacks are reported by the command itself (_check_delegate, _fallback_line)
            warnings.simplefilter("ignore", FallbackWarning)
            warnings.showwarning = _one_line_warning(args.command)
            return args.func(args)
    except (CliError, TeflonError, OSError, ValueError) as e:
        if debug_enabled():
            raise
        message = " ".join(str(e).split()) or type(e).__name__
        print(f"teflon-py {args.command}: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
