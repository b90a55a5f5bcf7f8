"""The project's own exception types; each names the file, node or tensor at fault."""
from __future__ import annotations


class TeflonError(Exception):
    """Base class of every error teflon-py raises on purpose."""


class ModelError(TeflonError, ValueError):
    """A model file or IR is malformed: names the tensor, operator or buffer at fault."""


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
