"""The backend contract: Teflon's ``pipe_ml_*`` in Python.

A backend answers ``check`` for every node (supported, or a reason a user can act on),
``compile``s each partition the partitioner hands it into a ``CompiledPartition``, runs it with
``invoke`` and releases its resources with ``close``. A new backend implements these and nothing
else, then registers itself with ``register_backend`` so ``load_delegate(name)`` finds it.
"""
from __future__ import annotations

import abc
import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from teflon_py import ir


@dataclass(frozen=True)
class Verdict:
    """Whether a backend runs a node; ``reason`` says why not (shown by ``teflon-py inspect``)."""

    supported: bool
    reason: str | None = None

    @classmethod
    def ok(cls) -> Verdict:
        return cls(True, None)

    @classmethod
    def no(cls, reason: str) -> Verdict:
        return cls(False, reason)

    def __bool__(self) -> bool:
        return self.supported


class CompiledPartition(abc.ABC):
    """A partition built for one backend. ``inputs``/``outputs`` are graph tensor indices."""

    inputs: tuple[int, ...]
    outputs: tuple[int, ...]

    @abc.abstractmethod
    def invoke(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Run on arrays for ``self.inputs`` (in order); return arrays for ``self.outputs``."""

    def describe(self) -> dict[str, Any]:
        """What ``inspect`` reports about where the partition runs (e.g. device, kernel family)."""
        return {}

    def close(self) -> None:
        """Release device resources; the default holds none."""


class Delegate(abc.ABC):
    """A backend. ``name`` is what ``load_delegate`` and ``inspect`` call it."""

    name: str = "backend"
    #: Partitioner options: the most partitions to delegate (None: all), the fewest nodes worth one.
    max_partitions: int | None = None
    min_nodes: int = 1
    #: What a failure to build or run a partition, or a missing device, does: "warn" (the nodes run
    #: on NumPy, with a ``FallbackWarning``) or "error" (raised); None: ``TEFLON_FALLBACK`` decides
    #: (``errors.fallback_policy``).
    fallback: str | None = None

    @abc.abstractmethod
    def check(self, graph: ir.Graph, op: ir.Operation) -> Verdict:
        """Can this backend run ``op`` of ``graph``? Pure: no device work."""

    @abc.abstractmethod
    def compile(self, graph: ir.Graph, partition: Any) -> CompiledPartition:
        """Build a ``partitioner.Partition`` of ``graph``; raise BackendError on failure."""

    def device_description(self) -> str | None:
        """The device (and driver) its partitions run on, once one is chosen; None before, or
        for a backend without such a thing."""
        return None

    def close(self) -> None:
        """Release the backend's resources."""


BackendFactory = Callable[[Mapping[str, Any]], Delegate]
_BACKENDS: dict[str, BackendFactory] = {}
#: Built-in backends, found by name: ``teflon_py.<module>`` defines the ``Delegate`` subclass
#: (imported on first use, so this module imports no backend and no backend imports it back).
BUILTIN_BACKENDS = {"opencl": ("teflon_py.opencl.delegate", "OpenCLDelegate")}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Make ``load_delegate(name, options)`` return ``factory(options)``."""
    _BACKENDS[name] = factory


def load_delegate(library: str, options: Mapping[str, Any] | None = None) -> Delegate:
    """LiteRT's ``load_delegate``: ``"opencl"`` or any registered backend name (a ``TypeError``
    for anything but a string, a ``ValueError`` for an unknown name or options that are no mapping)."""
    if not isinstance(library, str):
        raise TypeError(f"load_delegate takes a delegate name such as 'opencl', got {library!r}")
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"load_delegate options must be a dict of option names to values, got {options!r}")
    key = library.removeprefix("teflon_py.").removesuffix(".so")
    if key not in _BACKENDS and key in BUILTIN_BACKENDS:
        module, cls = BUILTIN_BACKENDS[key]
        _BACKENDS[key] = getattr(importlib.import_module(module), cls)
    if key not in _BACKENDS:
        known = ", ".join(sorted({*_BACKENDS, *BUILTIN_BACKENDS})) or "none"
        raise ValueError(f"unknown delegate {library!r}; available: {known}")
    return _BACKENDS[key](dict(options or {}))
