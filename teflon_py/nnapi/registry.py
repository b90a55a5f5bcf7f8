"""Every NNAPI operation's two rules, found by its ``OperationType``.

``@signature(OP)``: the operand counts and types the operation takes, checked when the operation
is added (``Sig``: the types alone, as ``ANeuralNetworksModel_addOperation`` checks them).
``@lowering(OP)``: its values, quantization and shape rules and its translation into the op layer,
run when the model is finished or first executed (``lowering.Call``). Both live beside each
other in ``teflon_py.nnapi.operations``, one module per family.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from teflon_py.nnapi.enums import OperandType, OperationType
from teflon_py.nnapi.errors import NNAPIError, bad_data

TypeSpec = OperandType | Collection[OperandType]


@dataclass
class OperationDef:
    type: OperationType
    signature: Callable[[Sig], None] | None = None
    lower: Callable[[Any], None] | None = None


OPERATIONS: dict[OperationType, OperationDef] = {}


def _register(field: str, types: Sequence[OperationType]) -> Callable:
    def wrap(fn: Callable) -> Callable:
        for t in types:
            d = OPERATIONS.setdefault(t, OperationDef(t))
            if getattr(d, field) is not None:
                raise ValueError(f"NNAPI {field} of {t.name} defined twice")
            setattr(d, field, fn)
        return fn

    return wrap


def signature(*types: OperationType) -> Callable:
    """Decorator: the function checking these operations' operand counts and types."""
    return _register("signature", types)


def lowering(*types: OperationType) -> Callable:
    """Decorator: the function translating these operations into the op layer."""
    return _register("lower", types)


def label(op_type: OperationType, index: int | None) -> str:
    return f"operation {index} ({op_type.name})" if index is not None else op_type.name


class Sig:
    """What a signature check sees: the operation, and its operands' types by position."""

    def __init__(self, op_type: OperationType, index: int | None, inputs: Sequence[OperandType],
                 outputs: Sequence[OperandType]):
        self.op = op_type
        self.index = index
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        #: the feature level the matched signature needs (informational: every level is served)
        self.level = 1

    @property
    def n_in(self) -> int:
        return len(self.inputs)

    @property
    def n_out(self) -> int:
        return len(self.outputs)

    def error(self, message: str) -> NNAPIError:
        return bad_data(f"{label(self.op, self.index)}: {message}")

    def input_type(self, k: int) -> OperandType:
        if k >= self.n_in:
            raise self.error(f"takes at least {k + 1} inputs, got {self.n_in}")
        return self.inputs[k]

    def output_type(self, k: int) -> OperandType:
        if k >= self.n_out:
            raise self.error(f"takes at least {k + 1} outputs, got {self.n_out}")
        return self.outputs[k]

    def supported(self, t: OperandType, levels: Mapping[OperandType, int], what: str = "input 0") -> None:
        """``t`` must be a key of ``levels`` (type -> the feature level that added it)."""
        if t not in levels:
            names = ", ".join(x.name for x in levels)
            raise self.error(f"{what} of type {t.name} is not supported (supported: {names})")
        self.level = max(self.level, levels[t])

    def expect(self, inputs: Sequence[TypeSpec], outputs: Sequence[TypeSpec], optional: int = 0,
               level: int = 1) -> None:
        """Exactly these input and output types; the last ``optional`` inputs may be left off."""
        lo, hi = len(inputs) - optional, len(inputs)
        if not lo <= self.n_in <= hi:
            want = f"{hi}" if lo == hi else f"{lo} to {hi}"
            raise self.error(f"takes {want} inputs, got {self.n_in}")
        if self.n_out != len(outputs):
            raise self.error(f"takes {len(outputs)} outputs, got {self.n_out}")
        for what, given, wanted in (("input", self.inputs, inputs), ("output", self.outputs, outputs)):
            for k, (t, spec) in enumerate(zip(given, wanted)):
                allowed = (spec,) if isinstance(spec, OperandType) else tuple(spec)
                if t not in allowed:
                    names = " or ".join(a.name for a in allowed)
                    raise self.error(f"{what} {k} has type {t.name}, the operation takes {names} there")
        self.level = max(self.level, level)


def check_signature(op_type: OperationType, index: int | None, inputs: Sequence[OperandType],
                    outputs: Sequence[OperandType]) -> int:
    """Check an operation's operand types (BAD_DATA); the feature level its signature needs."""
    d = OPERATIONS.get(op_type)
    if d is None or d.signature is None:
        raise bad_data(f"{label(op_type, index)}: the operation is not implemented")
    sig = Sig(op_type, index, inputs, outputs)
    d.signature(sig)
    return sig.level
