"""The op layer's registry: op name -> its attributes type and its shape/dtype inference.

``infer(attrs, inputs) -> [Meta]`` reads only attributes and the inputs' metadata (shape, dtype,
quantization, constant data), validates the op (``ModelError`` where the model breaks the op's
rules, ``UnsupportedError`` where it is valid but not computed here) and says what each output
is. A data-dependent output has ``shape=None`` (dynamic: settled when the op runs).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.errors import ModelError, UnsupportedError


@dataclass(frozen=True)
class Meta:
    """What inference says of one output: its shape (None: known only when the op runs), dtype."""

    shape: tuple[int, ...] | None
    dtype: np.dtype


@dataclass(frozen=True)
class Inputs:
    """What ``infer`` sees: the op's input tensors (None for absent optional operands), its
    declared outputs (for dtypes and quantization the model fixes), and a label for errors."""

    inputs: tuple[ir.Tensor | None, ...]
    outputs: tuple[ir.Tensor, ...]
    label: str
    node: int | None = None
    op: str | None = None

    def __getitem__(self, k: int) -> ir.Tensor | None:
        return self.inputs[k] if k < len(self.inputs) else None

    def __len__(self) -> int:
        return len(self.inputs)

    def error(self, message: str) -> ModelError:
        """The model breaks the op's rules."""
        return ModelError(f"{self.label}: {message}")

    def unsupported(self, message: str) -> UnsupportedError:
        """Valid, but not computed here."""
        return UnsupportedError(f"{self.label}: {message}", node=self.node, op=self.op)


Infer = Callable[[Any, Inputs], "list[Meta]"]


@dataclass(frozen=True)
class OpDef:
    name: str
    attrs: type
    infer: Infer | None = None


OPS: dict[str, OpDef] = {}


def define(*names: str, attrs: type) -> Callable[[Infer], Infer]:
    """Decorator: ``@define("ADD", "SUB", attrs=BinaryAttrs)`` on the ops' inference function."""

    def wrap(fn: Infer) -> Infer:
        for name in names:
            if name in OPS:
                raise ValueError(f"op {name} defined twice")
            OPS[name] = OpDef(name, attrs, fn)
        return fn

    return wrap


def inputs_of(graph: ir.Graph, op: ir.Operation) -> Inputs:
    return Inputs(tuple(graph.input_tensors(op)), tuple(graph.output_tensors(op)), op.describe(),
                  op.index, op.name)


def infer(graph: ir.Graph, op: ir.Operation) -> list[Meta] | None:
    """The op's output metadata, or None where its op has no inference (then its outputs keep
    what the model declares)."""
    d = OPS.get(op.name)
    if d is None or d.infer is None:
        return None
    return d.infer(op.attrs, inputs_of(graph, op))


def declared(ins: Inputs, k: int = 0, shape: tuple[int, ...] | None = None) -> Meta:
    """Output ``k`` with ``shape`` and the dtype the model declares for it."""
    return Meta(shape, np.dtype(ins.outputs[k].dtype))

