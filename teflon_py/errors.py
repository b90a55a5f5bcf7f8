"""The project's own exception types; each names the file, node or tensor at fault."""
from __future__ import annotations

import os


class TeflonError(Exception):
    """Base class of every error teflon-py raises on purpose."""


class ModelError(TeflonError, ValueError, RuntimeError):
    """A model file or IR is malformed, or breaks an op's rules: names the tensor, operator,
    buffer or field at fault. A ValueError as LiteRT raises for a bad file at load, and a
    RuntimeError as it raises when a node fails to prepare at ``allocate_tensors`` / ``invoke``."""


class UnsupportedError(TeflonError, NotImplementedError):
    """An operator (or one of its parameters) that no available implementation computes."""

    def __init__(self, message: str, *, node: int | None = None, op: str | None = None):
        super().__init__(message)
        self.node = node
        self.op = op


class BackendError(TeflonError, RuntimeError):
    """A backend failed to build or run a partition; the interpreter falls back to NumPy."""

    def __init__(self, message: str, *, partition: int | None = None):
        super().__init__(message)
        self.partition = partition


class LoopLimitError(TeflonError, RuntimeError):
    """A WHILE loop ran past its iteration cap (``TEFLON_WHILE_MAX_ITERATIONS``) or its time limit
    (NNAPI's loop timeout: ``ModelState.loop_timeout``)."""


class InvokeTimeoutError(TeflonError, RuntimeError):
    """An invoke ran past its time limit (``Interpreter(invoke_timeout=...)`` / ``TEFLON_INVOKE_TIMEOUT``)."""


class FallbackWarning(TeflonError, RuntimeWarning):
    """A delegate could not run (part of) a graph, which then runs on the NumPy fallback."""


#: Environment variable for what a delegate's failure does when its ``fallback`` option is unset.
FALLBACK_ENV = "TEFLON_FALLBACK"
FALLBACK_POLICIES = ("warn", "error")


def fallback_policy(option: str | None = None) -> str:
    """What a delegate that cannot build or run a partition (or has no usable device) does:
    "warn" (one ``FallbackWarning``, the nodes run on NumPy) or "error" (its error is raised).
    ``option`` (a delegate's ``fallback`` option) wins, else ``TEFLON_FALLBACK``, else "warn";
    ``TEFLON_STRICT`` makes it "error" whatever they say."""
    if strict_mode():
        return "error"
    value = option if option not in (None, "") else os.environ.get(FALLBACK_ENV, "")
    value = str(value).strip().lower() or "warn"
    if value not in FALLBACK_POLICIES:
        where = "fallback option" if option not in (None, "") else FALLBACK_ENV
        raise ValueError(f"{where} must be one of {', '.join(FALLBACK_POLICIES)}, got {value!r}")
    return value


def strict_mode() -> bool:
    """``TEFLON_STRICT`` set (to anything but ``0``): a backend that fails to build or run a
    partition, or cannot be used at all, raises instead of falling back to NumPy (the test suite
    and CI set it, so that a bug fails a test instead of hiding in a fallback)."""
    return os.environ.get("TEFLON_STRICT", "0") not in ("", "0")
