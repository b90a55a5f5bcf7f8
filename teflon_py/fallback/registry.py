"""The fallback's one registry: op name -> NumPy kernel.

A kernel is a plain function named after its op, ``kernel(node, inputs) -> outputs``: ``inputs``
are arrays (None for absent optional operands) in operand order; it returns one array or a list,
in the dtypes of the output tensors. Constants a kernel derives once (requantization multipliers,
re-laid weights) go through ``node.memo``.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.errors import ModelError, UnsupportedError


@dataclass
class Node:
    """What a kernel sees of one operation: the op, its tensors' metadata, a per-node memo."""

    op: ir.Operation
    graph: ir.Graph
    inputs: list[ir.Tensor | None]
    outputs: list[ir.Tensor]
    model: ir.Model | None = None
    cache: dict[str, Any] = field(default_factory=dict)
    #: set by the executor for ops that run subgraphs or keep state (WHILE, IF, variables)
    context: Any = None

    @classmethod
    def of(cls, graph: ir.Graph, op: ir.Operation, model: ir.Model | None = None) -> Node:
        return cls(op, graph, graph.input_tensors(op), graph.output_tensors(op), model)

    @property
    def attrs(self) -> Any:
        """The op layer's attributes of this node (``teflon_py.ops``)."""
        return self.op.attrs

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per node (prepare-time work), then the cached value."""
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]

    def error(self, message: str) -> UnsupportedError:
        """Valid, but this kernel does not compute it."""
        return UnsupportedError(f"{self.op.describe()}: {message}", node=self.op.index, op=self.op.name)

    def invalid(self, message: str) -> ModelError:
        """The model breaks the op's rules (LiteRT rejects it too)."""
        return ModelError(f"{self.op.describe()}: {message}")


Kernel = Callable[[Node, Sequence[np.ndarray | None]], "np.ndarray | list[np.ndarray]"]
KERNELS: dict[str, Kernel] = {}


def register(*names: str) -> Callable[[Kernel], Kernel]:
    """Decorator: ``@register("ADD")`` makes the function the fallback kernel for ADD."""

    def wrap(fn: Kernel) -> Kernel:
        for name in names:
            if name in KERNELS:
                raise ValueError(f"fallback kernel for {name} registered twice")
            KERNELS[name] = fn
        return fn

    return wrap


def register_custom_op(name: str, kernel: Kernel) -> None:
    """Let users add kernels for custom ops (matched on the op's custom code)."""
    KERNELS[name] = kernel


def kernel_for(graph: ir.Graph, op: ir.Operation) -> Kernel:
    """The kernel for ``op``, or an UnsupportedError naming the node."""
    kernel = KERNELS.get(op.name)
    if kernel is None:
        kind = "custom op" if op.opcode == "CUSTOM" else "operator"
        raise UnsupportedError(
            f"{op.describe()}: {kind} {op.name} has no NumPy fallback kernel "
            f"(register one with teflon_py.register_custom_op)" if op.opcode == "CUSTOM" else
            f"{op.describe()}: {kind} {op.name} has no NumPy fallback kernel",
            node=op.index, op=op.name,
        )
    return kernel
