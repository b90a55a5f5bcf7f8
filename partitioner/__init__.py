"""Pure graph code: which supported nodes a delegate runs together, and in what order."""
from __future__ import annotations

from teflon_py.partitioner.partition import (
    RESOURCE_OPS,
    Partition,
    Step,
    execution_plan,
    node_predecessors,
    partition,
    summary,
)

__all__ = [
    "RESOURCE_OPS",
    "Partition",
    "Step",
    "execution_plan",
    "node_predecessors",
    "partition",
    "summary",
]
