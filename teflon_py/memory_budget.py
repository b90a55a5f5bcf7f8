"""The memory budget a graph's tensors are checked against before anything is allocated.

A graph is refused at ``allocate_tensors`` (``ModelError`` naming the tensor and its size) when
one tensor's shape product overflows int64, when one tensor needs more than the budget, or when
all its non-constant tensors together do (the NumPy fallback keeps every tensor's value). The
budget: ``Interpreter(memory_budget=...)`` bytes, else ``TEFLON_MEMORY_BUDGET`` (bytes, or with a
K/M/G/T suffix: ``4G``), else half of physical memory (or of the address-space limit,
``RLIMIT_AS``, when the process has a lower one).
"""
from __future__ import annotations

import os
import resource

from teflon_py import ir
from teflon_py.errors import ModelError

ENV = "TEFLON_MEMORY_BUDGET"
PHYSICAL_FRACTION = 0.5
_FALLBACK = 8 << 30  # where physical memory cannot be read
_SUFFIXES = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
INT64_MAX = (1 << 63) - 1


def parse_size(text: str) -> int:
    """Bytes from ``"1073741824"``, ``"512M"``, ``"4G"`` or ``"4GiB"``."""
    s = text.strip().upper().removesuffix("IB").removesuffix("B")
    suffix = s[-1:] if s[-1:] in _SUFFIXES else ""
    try:
        value = float(s[:len(s) - len(suffix)]) * _SUFFIXES[suffix]
    except ValueError:
        raise ValueError(f"{ENV}={text!r} is not a size (bytes, or a number with K, M, G or T)") from None
    if value <= 0:
        raise ValueError(f"{ENV}={text!r}: the memory budget must be positive")
    return int(value)


def default_budget() -> int:
    """``TEFLON_MEMORY_BUDGET`` if set, else a fraction of physical memory (or of a lower
    address-space limit)."""
    if os.environ.get(ENV):
        return parse_size(os.environ[ENV])
    try:
        memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        memory = _FALLBACK
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit != resource.RLIM_INFINITY and 0 < limit < memory:
        memory = limit
    return int(memory * PHYSICAL_FRACTION) if memory > 0 else _FALLBACK


def human(n: int) -> str:
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.2f} {unit}"
    return f"{n} bytes"


def tensor_bytes(t: ir.Tensor, label: str) -> int:
    """The bytes tensor ``t`` needs (an unknown dimension, -1, counts as 1); ModelError when its
    shape product overflows int64."""
    elements = 1
    for d in t.shape:
        elements *= max(int(d), 1) if d != 0 else 0
    if elements > INT64_MAX:
        raise ModelError(f"{label}: shape {list(t.shape)} has {elements} elements, which overflows int64")
    size = elements * max(t.dtype.itemsize, 1)
    if size > INT64_MAX:
        raise ModelError(f"{label}: shape {list(t.shape)} of {t.dtype} needs {size} bytes, which overflows int64")
    return size


def check_graph(graph: ir.Graph, budget: int | None, source: str = "") -> None:
    """Refuse ``graph`` if a tensor, or all its non-constant tensors together, exceed ``budget``
    bytes (None: ``default_budget()``)."""
    limit = default_budget() if budget is None else int(budget)
    where = f"{source}: subgraph {graph.index}" if source else f"subgraph {graph.index}"
    total, largest = 0, (0, None)
    for t in graph.tensors:
        label = f"{where} {t.describe()}"
        size = tensor_bytes(t, label)
        if t.is_constant:
            continue  # a view of the file
        if size > limit:
            raise ModelError(f"{label}: shape {list(t.shape)} of {t.dtype} needs {human(size)}, more than the "
                             f"memory budget of {human(limit)} ({ENV} or Interpreter(memory_budget=...))")
        total += size
        if size > largest[0]:
            largest = (size, t)
    if total > limit:
        t = largest[1]
        raise ModelError(f"{where}: its tensors need {human(total)} together, more than the memory budget of "
                         f"{human(limit)} ({ENV} or Interpreter(memory_budget=...)); the largest is "
                         f"{t.describe()} of shape {list(t.shape)} ({human(largest[0])})")
