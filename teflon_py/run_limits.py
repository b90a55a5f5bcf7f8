"""Limits on running a graph, so that a hostile or broken model ends with a clear error.

* ``TEFLON_WHILE_MAX_ITERATIONS`` (default 1,000,000; 0: none): iterations one WHILE may run before
  it fails with ``LoopLimitError`` (LiteRT has no cap: a loop whose condition never turns false runs
  forever there). NNAPI's loop timeout (``ModelState.loop_timeout``) is a time limit beside it.
* ``TEFLON_INVOKE_TIMEOUT`` seconds (default none) or ``Interpreter(invoke_timeout=...)``: an invoke
  past it fails with ``InvokeTimeoutError`` at the next step (a NumPy node, a partition, a loop
  iteration); a step already running is not interrupted.
* Control flow nests at most ``MAX_NESTING`` subgraphs deep (a model whose IFs call IFs deeper
  than that is a ``ModelError``, not a ``RecursionError``).
"""
from __future__ import annotations

import os
import time

from teflon_py.errors import InvokeTimeoutError, ModelError

ITERATIONS_ENV = "TEFLON_WHILE_MAX_ITERATIONS"
DEFAULT_MAX_ITERATIONS = 1_000_000
TIMEOUT_ENV = "TEFLON_INVOKE_TIMEOUT"
MAX_NESTING = 64


def max_iterations() -> int | None:
    """The WHILE iteration cap (None: no cap)."""
    text = os.environ.get(ITERATIONS_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_ITERATIONS
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{ITERATIONS_ENV} must be a whole number, got {text!r}") from None
    return value if value > 0 else None


def invoke_timeout(option: float | None) -> float | None:
    """Seconds an invoke may take: the interpreter's option, else ``TEFLON_INVOKE_TIMEOUT``, else none."""
    if option is not None:
        value = float(option)
    else:
        text = os.environ.get(TIMEOUT_ENV, "").strip()
        if not text:
            return None
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"{TIMEOUT_ENV} must be a number of seconds, got {text!r}") from None
    if not value > 0:
        raise ValueError(f"the invoke timeout must be positive, got {value}")
    return value


class Deadline:
    """When the running invoke must end (``None``: no limit)."""

    def __init__(self, seconds: float | None):
        self.seconds = seconds
        self.at = None if seconds is None else time.monotonic() + seconds

    def expired(self) -> bool:
        return self.at is not None and time.monotonic() > self.at

    def check(self, where: str) -> None:
        if self.expired():
            raise InvokeTimeoutError(f"the invoke ran past its {self.seconds:g} s limit ({where})")


def check_nesting(depth: int, index: int) -> None:
    if depth >= MAX_NESTING:
        raise ModelError(f"subgraph {index}: control flow nests more than {MAX_NESTING} subgraphs deep")
