"""Plain-data intermediate representation of a model, whatever format it came from.

Nothing downstream of a frontend touches its file format: the reader normalises every tensor
(shape, dtype, quantization, constant data as a read-only NumPy view) and every operation (op
name, inputs, outputs, the op layer's attributes) once, here.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import numpy as np

#: Marks an absent optional operand in ``Operation.inputs`` (as in TFLite).
NO_TENSOR = -1


class Padding(enum.IntEnum):
    SAME = 0
    VALID = 1


class Activation(enum.IntEnum):
    """Fused activation functions (``ActivationFunctionType`` in the schema)."""

    NONE = 0
    RELU = 1
    RELU_N1_TO_1 = 2
    RELU6 = 3
    TANH = 4
    SIGN_BIT = 5


@dataclass(frozen=True)
class Quantization:
    """Affine quantization: real = scale * (q - zero_point), per tensor or per channel."""

    scale: np.ndarray  # float32, shape (1,) or (channels,)
    zero_point: np.ndarray  # int64, same length as scale
    quantized_dimension: int = 0

    @property
    def per_channel(self) -> bool:
        return self.scale.size > 1

    def __eq__(self, other: object) -> bool:  # ndarray fields need element comparison
        return (
            isinstance(other, Quantization)
            and self.quantized_dimension == other.quantized_dimension
            and np.array_equal(self.scale, other.scale)
            and np.array_equal(self.zero_point, other.zero_point)
        )

    __hash__ = None  # type: ignore[assignment]


@dataclass
class Tensor:
    """One tensor of a graph. ``data`` is set (read-only) for constants, else None."""

    index: int
    name: str
    shape: tuple[int, ...]
    dtype: np.dtype
    quantization: Quantization | None = None
    data: np.ndarray | None = None
    shape_signature: tuple[int, ...] | None = None
    is_variable: bool = False
    sparsity: Any = None  # reader-specific sparsity description, decoded by DENSIFY

    @property
    def is_constant(self) -> bool:
        return self.data is not None

    @property
    def scale(self) -> float:
        """Per-tensor scale (first entry for per-channel tensors); 0.0 when not quantized."""
        return float(self.quantization.scale[0]) if self.quantization is not None else 0.0

    @property
    def zero_point(self) -> int:
        return int(self.quantization.zero_point[0]) if self.quantization is not None else 0

    def describe(self) -> str:
        return f"tensor {self.index} '{self.name}'"


@dataclass
class Operation:
    """One node: a builtin op name (``"CONV_2D"``) or ``"CUSTOM"`` with ``custom_code``."""

    index: int
    opcode: str
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    attrs: Any = None  # the op layer's frozen attributes record (teflon_py.ops)
    version: int = 1
    custom_code: str | None = None
    custom_options: bytes | None = None
    intermediates: tuple[int, ...] = ()

    @property
    def name(self) -> str:
        """What users call the op: the builtin name, or the custom code for custom ops."""
        return self.custom_code if self.opcode == "CUSTOM" and self.custom_code else self.opcode

    def describe(self) -> str:
        return f"node {self.index} ({self.name})"


@dataclass
class Graph:
    """A subgraph: tensors, operations in execution order, graph inputs and outputs."""

    tensors: list[Tensor]
    operations: list[Operation]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    name: str = ""
    index: int = 0

    def input_tensors(self, op: Operation) -> list[Tensor | None]:
        return [None if i == NO_TENSOR else self.tensors[i] for i in op.inputs]

    def output_tensors(self, op: Operation) -> list[Tensor]:
        return [self.tensors[i] for i in op.outputs]


@dataclass(frozen=True)
class Signature:
    """A signature def: named inputs/outputs mapped to tensor indices of one subgraph."""

    key: str
    subgraph_index: int
    inputs: dict[str, int] = field(default_factory=dict)
    outputs: dict[str, int] = field(default_factory=dict)


@dataclass
class Model:
    graphs: list[Graph]
    signatures: list[Signature] = field(default_factory=list)
    description: str = ""
    version: int = 3
    source: str = "<bytes>"  # file path or "<bytes>", used in error messages

    @property
    def main(self) -> Graph:
        return self.graphs[0]
