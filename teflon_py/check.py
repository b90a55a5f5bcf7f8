"""``teflon-py check MODEL``: run a model on a backend and on a reference, compare every tensor.

The backend (``--delegate``, default opencl; ``none`` for the NumPy fallback) and the reference
(``--reference numpy``, the NumPy fallback, or ``litert``, LiteRT's ``BUILTIN_REF`` reference
kernels) both keep every tensor (``experimental_preserve_all_tensors=True``) and get the same
inputs. Operators are compared in execution order, each on every tensor it produces: integers by
their largest difference in LSB (``--lsb``, default 0: bit-exact), floats by the relative L2 error
``|a - b| / |b|`` (``--tolerance``). The first operator whose outputs differ is printed with its
error and placement; ``-v`` prints one line per operator. Exit status 0 when all agree, 1 when
they diverge (2 for bad input, as every command).

Errors compound along a network: the backend's tensors are compared with the reference's, not
recomputed from the reference's inputs, so the first divergent operator is the one to look at.
Keeping every tensor also keeps a delegate from folding ops into their neighbours (a fold needs a
tensor no one else reads), so a second run of the backend, as an application runs it, is compared
on the graph's outputs: that is where fused kernels (an activation, ADD or PRELU in a conv's
epilogue, a depthwise conv inside the 1x1 conv after it) are checked.
"""
from __future__ import annotations

import argparse
import contextlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from teflon_py import ir


@dataclass
class TensorDiff:
    """One tensor's comparison: ``error`` in LSB (integers, bool: mismatches) or relative L2 (floats)."""

    tensor: int
    description: str
    unit: str  # "LSB", "rel L2", "mismatches"
    error: float
    diverges: bool

    def text(self) -> str:
        value = f"{self.error:.3g}" if self.unit == "rel L2" else f"{int(self.error)}"
        return f"tensor {self.tensor} {self.description}: {value} {self.unit}"


def compare(ours: np.ndarray, ref: np.ndarray, tolerance: float, lsb: int) -> tuple[str, float, bool]:
    """(unit, error, diverges) of ``ours`` against ``ref`` (shapes and dtypes must agree)."""
    if ours.shape != ref.shape or ours.dtype != ref.dtype:
        return "mismatches", float(max(ours.size, ref.size)), True
    if ref.dtype.kind == "f":
        a, b = ours.astype(np.float64), ref.astype(np.float64)
        same_nan = np.isnan(a) == np.isnan(b)
        if not same_nan.all():
            return "rel L2", float("inf"), True
        finite = ~np.isnan(b)
        a, b = a[finite], b[finite]
        if not (np.isinf(a) == np.isinf(b)).all() or not (a[np.isinf(b)] == b[np.isinf(b)]).all():
            return "rel L2", float("inf"), True
        a, b = a[~np.isinf(b)], b[~np.isinf(b)]
        norm = float(np.linalg.norm(b))
        diff = float(np.linalg.norm(a - b))
        error = diff / norm if norm > 0 else diff
        return "rel L2", error, error > tolerance
    if ref.dtype.kind in "iu":
        error = float(np.max(np.abs(ours.astype(np.int64) - ref.astype(np.int64)), initial=0))
        return "LSB", error, error > lsb
    mismatches = float(np.count_nonzero(ours != ref))
    return "mismatches", mismatches, mismatches > 0


def _describe(t: ir.Tensor) -> str:
    return f"'{t.name}' {t.dtype.name}[{','.join(str(d) for d in t.shape)}]"


def _run_teflon(model: str, delegate: str | None, inputs: list[np.ndarray] | None, seed: int,
                progress: Any = None, preserve: bool = True) -> tuple[Any, list[np.ndarray]]:
    from teflon_py import Interpreter, load_delegate
    from teflon_py import cli_common as cli

    if delegate:
        try:
            delegates = [load_delegate(delegate)]
        except ImportError as e:
            raise cli.CliError(f"delegate {delegate!r} is not available in this installation: {e}") from e
        if progress is not None:
            progress.watch(delegates)
    else:
        delegates = []
    it = Interpreter(model_path=model, experimental_delegates=delegates, experimental_preserve_all_tensors=preserve)
    details = it.get_input_details()
    if inputs is None:
        rng = np.random.default_rng(seed)
        inputs = [cli._random_input(d, rng) for d in details]
    with progress if progress is not None else contextlib.nullcontext():
        it.allocate_tensors()
    if delegate:
        cli._check_delegate(it, delegate)
    for d, x in zip(details, inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return it, inputs


def _run_litert(model: str, inputs: list[np.ndarray]) -> Any:
    from teflon_py import cli_common as cli

    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError as e:
        raise cli.CliError(f"--reference litert needs LiteRT installed (pip install ai-edge-litert): {e}") from e
    lite = Interpreter(model_path=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                       experimental_preserve_all_tensors=True)
    lite.allocate_tensors()
    for d, x in zip(lite.get_input_details(), inputs):
        lite.set_tensor(d["index"], x)
    lite.invoke()
    return lite


def main(args: argparse.Namespace) -> int:
    from teflon_py import cli_common as cli
    from teflon_py.executorch.interpreter import is_program
    from teflon_py.progress import BuildProgress

    model = args.model
    cli._interpreter_path_check(model)
    if is_program(model):
        raise cli.CliError(f"{model}: teflon-py check takes .tflite models (an ExecuTorch program was given)")
    delegate = None if args.delegate in (None, "none", "numpy") else args.delegate
    if delegate is None and args.reference == "numpy":
        raise cli.CliError("--delegate none compares the NumPy fallback with itself: use --reference litert")
    if args.tolerance < 0 or args.lsb < 0:
        raise cli.CliError("--tolerance and --lsb must be at least 0")
    inputs = None
    if args.input:
        from teflon_py import Interpreter

        inputs = cli._load_inputs(args.input, Interpreter(model_path=model).get_input_details())
    ours, inputs = _run_teflon(model, delegate, inputs, args.seed, BuildProgress(quiet=args.quiet))
    name = delegate or "numpy"
    if args.reference == "litert":
        ref_name, reference = "LiteRT BUILTIN_REF", _run_litert(model, inputs)
    else:
        ref_name, reference = "numpy", _run_teflon(model, None, inputs, args.seed)[0]
    for line in cli._device_lines(ours):
        print(line)
    graph, placements = ours.graph, ours.placements()
    first: tuple[ir.Operation, TensorDiff] | None = None
    compared = 0
    worst: dict[str, float] = {}
    for op in graph.operations:
        p = placements[op.index]
        where = p.backend + (f" partition {p.partition}" if p.partition is not None else "")
        diffs = []
        for i in op.outputs:
            if i == ir.NO_TENSOR:
                continue
            t = graph.tensors[i]
            try:
                a, b = ours.get_tensor(i), reference.get_tensor(i)
            except ValueError as e:  # a tensor the reference does not keep (LiteRT's scratch)
                if args.verbose:
                    print(f"  node {op.index} {op.name}: tensor {i} not compared ({' '.join(str(e).split())})")
                continue
            unit, error, bad = compare(np.asarray(a), np.asarray(b), args.tolerance, args.lsb)
            diffs.append(TensorDiff(i, _describe(t), unit, error, bad))
            worst[unit] = max(worst.get(unit, 0.0), error)
            compared += 1
        diverged = [d for d in diffs if d.diverges]
        if args.verbose:
            status = "DIVERGES" if diverged else "ok"
            detail = "; ".join(d.text() for d in diffs) or "no tensor compared"
            print(f"node {op.index:<4} {op.name:<24} {where:<22} {status:<8} {detail}")
        if diverged and first is None:
            first = (op, diverged[0])
    if first is not None:
        op, d = first
        p = placements[op.index]
        where = p.backend + (f" partition {p.partition}" if p.partition is not None else "")
        print(f"first divergence from {ref_name}: node {op.index} {op.name} (on {where}): {d.text()}")
        return 1
    summary = ", ".join(f"largest {v:.3g} {unit}" if unit == "rel L2" else f"largest {int(v)} {unit}"
                        for unit, v in sorted(worst.items()))
    print(f"{name} agrees with {ref_name} on {compared} tensors of {len(graph.operations)} operators"
          + (f" ({summary})" if summary else ""))
    if delegate is None:
        return 0
    # Keeping every tensor keeps the backend from folding ops into their neighbours (a fold needs
    # a tensor nobody else reads), so the fused kernels a normal run uses are checked here, on
    # the graph's outputs.
    fused = _run_teflon(model, delegate, inputs, args.seed, BuildProgress(quiet=args.quiet), preserve=False)[0]
    for k, i in enumerate(graph.outputs):
        unit, error, bad = compare(np.asarray(fused.get_tensor(i)), np.asarray(reference.get_tensor(i)),
                                   args.tolerance, args.lsb)
        if bad:
            diff = TensorDiff(i, _describe(graph.tensors[i]), unit, error, True)
            print(f"first divergence from {ref_name} with ops folded as in a normal run: graph output {k}, "
                  f"{diff.text()}")
            return 1
    print(f"{name} with ops folded as in a normal run agrees on the {len(graph.outputs)} graph outputs")
    return 0

