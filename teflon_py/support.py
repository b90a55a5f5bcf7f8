"""What each backend runs, from its registry: ``teflon-py ops`` prints it.

The NumPy fallback has one kernel per op (``teflon_py.fallback.KERNELS``) for every dtype the
op's rules in ``teflon_py.ops`` allow (those of LiteRT's reference kernels), so its rows list no
dtypes. The OpenCL delegate has one lowering per op and data-operand dtype
(``teflon_py.opencl.registry.LOWERINGS``); a lowering's own check may still refuse particular
parameters or shapes, and a device's capabilities some of them (``teflon-py inspect`` says why).
"""
from __future__ import annotations

from typing import Any

BACKENDS = ("numpy", "opencl")


def backend_ops(backend: str) -> list[dict[str, Any]]:
    """Per op the backend runs, sorted by name: ``{"op", "dtypes"}``; OpenCL rows add
    ``operand_dtypes`` ({data dtype: the dtypes its other non-parameter operands may have})."""
    if backend == "numpy":
        from teflon_py.fallback import KERNELS

        return [{"op": name, "dtypes": None} for name in sorted(KERNELS)]
    if backend == "opencl":
        from teflon_py.opencl import lowerings  # noqa: F401  (registers every lowering)
        from teflon_py.opencl.registry import LOWERINGS

        return [{"op": name, "dtypes": sorted(kinds),
                 "operand_dtypes": {kind: sorted(low.dtypes) for kind, low in sorted(kinds.items())}}
                for name, kinds in sorted(LOWERINGS.items())]
    raise ValueError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")


def format_ops(rows_by_backend: dict[str, list[dict[str, Any]]]) -> str:
    """Aligned text: one line per (backend, op) with its dtypes, then a count per backend."""
    lines, counts = [], []
    for backend, rows in rows_by_backend.items():
        width = max((len(r["op"]) for r in rows), default=0)
        for r in rows:
            dtypes = ", ".join(r["dtypes"]) if r["dtypes"] is not None else "every dtype its rules allow"
            lines.append(f"{backend:<7} {r['op']:<{width}}  {dtypes}")
        counts.append(f"{backend}: {len(rows)} ops")
    return "\n".join([*lines, "; ".join(counts)])
