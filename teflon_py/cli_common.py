"""What the ``teflon-py`` commands share (``teflon_py.cli`` and its command modules, such as
``teflon_py.check``): one-line errors, the interpreter a command runs, input files, the
delegate's fallback and device lines."""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from teflon_py.plan_report import debug_enabled, plan_rows

EXIT_USAGE = 2
#: Longest reason a fallback line quotes (``TEFLON_DEBUG`` shows them whole).
REASON_CHARS = 160
#: Most distinct reasons a fallback line lists (``teflon-py inspect`` shows every node's).
REASONS_SHOWN = 4


class CliError(Exception):
    """A problem with what the user asked for: printed as one line, exit status 2."""


# -- shared helpers ----------------------------------------------------------------------------
def _interpreter(model: str | bytes, delegate: str | None, progress: Any = None) -> Any:
    """An Interpreter for a path or model bytes, with the named delegate (or NumPy only);
    ``progress`` (a ``BuildProgress``) watches the delegate's partition builds."""
    from teflon_py import Interpreter, load_delegate

    if isinstance(model, str):
        _interpreter_path_check(model)
    try:
        delegates = [load_delegate(delegate)] if delegate else []
    except ImportError as e:
        raise CliError(f"delegate {delegate!r} is not available in this installation: {e}") from e
    if progress is not None:
        progress.watch(delegates)
    if isinstance(model, bytes):
        return Interpreter(model_content=model, experimental_delegates=delegates)
    from teflon_py.executorch.interpreter import ProgramInterpreter, is_program

    if is_program(model):  # an ExecuTorch .pte: its "forward" method
        return ProgramInterpreter(model, delegates)
    return Interpreter(model_path=model, experimental_delegates=delegates)


def _is_program(model: str) -> bool:
    """An ExecuTorch ``.pte`` (False for anything that is not a readable file: _interpreter says why)."""
    from teflon_py.executorch.interpreter import is_program

    return Path(model).is_file() and is_program(model)


def _interpreter_path_check(model: str) -> None:
    """A CliError unless ``model`` names a file."""
    if Path(model).is_dir():
        raise CliError(f"{model}: is a directory, not a model file")
    if not Path(model).is_file():
        raise CliError(f"{model}: no such model file")


def _progress(args: argparse.Namespace) -> Any:
    from teflon_py.progress import BuildProgress

    return BuildProgress(quiet=getattr(args, "quiet", False))


def _allocate(it: Any, progress: Any) -> None:
    """``allocate_tensors`` under the progress line."""
    with progress:
        it.allocate_tensors()


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= REASON_CHARS or debug_enabled() else text[:REASON_CHARS - 3] + "..."


def _check_delegate(it: Any, delegate: str | None) -> None:
    """An explicit ``--delegate`` that runs nothing because it has no usable device or none of
    its partitions builds is a CliError (nothing to fall back *from*: the user asked for it)."""
    if not delegate:
        return
    fallbacks = it.fallbacks()
    for f in fallbacks:
        if f.stage == "unavailable":
            raise CliError(f"--delegate {delegate}: no usable device: {f.reason}")
    failed = [f for f in fallbacks if f.stage == "build"]
    if failed and all(r["backend"] == "numpy" for r in plan_rows(it)):
        f = failed[0]
        raise CliError(f"--delegate {delegate}: no partition could be built ({len(failed)} tried); partition "
                       f"{f.partition}: {_short(f.reason)}")


def _fallback_line(it: Any, delegate: str | None) -> str | None:
    """With a ``--delegate``: one line saying how many nodes run on NumPy instead, and why."""
    if not delegate:
        return None
    rows = plan_rows(it)
    numpy = [r for r in rows if r["backend"] == "numpy" and not (r["reason"] or "").startswith("folded")]
    if not numpy:
        return None
    parts = [f"partition {f.partition} ({len(f.nodes)} nodes) failed to {f.stage}: {_short(f.reason)}"
             for f in it.fallbacks() if f.stage in ("build", "run")]
    by_reason: dict[str, Counter[str]] = {}
    for r in numpy:
        reason = r["reason"] or "not claimed"
        if reason.endswith((" build failed", " run failed")):
            continue  # said above, with the error
        by_reason.setdefault(reason, Counter())[r["op"]] += 1
    for reason, ops in list(by_reason.items())[:REASONS_SHOWN]:
        parts.append(f"{', '.join(f'{n} {op}' for op, n in ops.items())} ({_short(reason)})")
    if len(by_reason) > REASONS_SHOWN:
        parts.append(f"{len(by_reason) - REASONS_SHOWN} more reasons (teflon-py inspect lists every node)")
    return f"{len(numpy)} of {len(rows)} nodes run on NumPy, not {delegate}: " + "; ".join(parts)


def _device_lines(it: Any) -> list[str]:
    """"opencl: <device> (<platform>, driver <version>)" per delegate that runs a node."""
    return [f"{name}: {desc}" for name, desc in it.devices().items()]


def _report_delegation(it: Any, delegate: str | None, command: str) -> None:
    """Print which device runs the partitions (stdout) and what fell back to NumPy (stderr)."""
    for line in _device_lines(it):
        print(line)
    line = _fallback_line(it, delegate)
    if line is not None:
        _warn(command, line)


def _warn(command: str, message: str) -> None:
    print(f"teflon-py {command}: warning: {' '.join(str(message).split())}", file=sys.stderr)


def _random_input(detail: dict[str, Any], rng: np.random.Generator) -> np.ndarray:
    """Inputs when none are given: images in [-1, 1] (as real values), full range for integers."""
    shape, dtype = tuple(detail["shape"]), np.dtype(detail["dtype"])
    scales = detail["quantization_parameters"]["scales"]
    if dtype.kind == "f":
        return rng.uniform(-1.0, 1.0, shape).astype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu" and scales.size:
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    return rng.integers(0, 10, shape).astype(dtype)  # indices, sizes: small and valid


NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"


def _read_npy(path: str) -> np.ndarray:
    """One array from a ``.npy`` file; anything else (a directory, an ``.npz`` archive, a text
    file, a pickled object array) is a CliError naming what it is."""
    p = Path(path)
    if p.is_dir():
        raise CliError(f"{path}: is a directory, not a .npy file")
    try:
        with open(p, "rb") as f:
            head = f.read(len(NPY_MAGIC))
    except OSError as e:
        raise CliError(f"{path}: cannot read: {e.strerror or e}") from e
    if head.startswith(ZIP_MAGIC):
        raise CliError(f"{path}: an .npz archive; --input takes one .npy file per model input "
                       "(np.save each array)")
    if head != NPY_MAGIC:
        raise CliError(f"{path}: not a .npy file (np.save writes one)")
    try:
        return np.load(p, allow_pickle=False)
    except ValueError as e:
        if "allow_pickle" in str(e):
            raise CliError(f"{path}: holds Python objects (a pickled object array), not numbers") from e
        raise CliError(f"{path}: cannot load as .npy: {e}") from e


def _load_inputs(paths: Sequence[str], details: list[dict[str, Any]]) -> list[np.ndarray]:
    """Arrays from ``.npy`` files, one per model input in order, checked against the model: the
    same shape and dtype (a float64 array for a float32 input is refused, as ``set_tensor`` does)."""
    if len(paths) != len(details):
        raise CliError(f"the model has {len(details)} input(s), {len(paths)} --input file(s) given")
    arrays = []
    for k, (path, d) in enumerate(zip(paths, details)):
        arr = _read_npy(path)
        want_shape, want_dtype = tuple(int(s) for s in d["shape"]), np.dtype(d["dtype"])
        if arr.shape != want_shape:
            raise CliError(f"{path}: shape {list(arr.shape)} but input {k} '{d['name']}' wants {list(want_shape)}")
        if arr.dtype != want_dtype:
            hint = f" (save it with .astype(np.{want_dtype.name}))" if arr.dtype.kind in "fiub" else ""
            raise CliError(f"{path}: dtype {arr.dtype} but input {k} '{d['name']}' wants {want_dtype}{hint}")
        arrays.append(arr)
    return arrays
