"""``nnapi.Model``: ``ANeuralNetworksModel_*`` in Python, with NNAPI's operand and state rules.

Operands are added, typed and given values; operations are added and their operand types
checked at once (``registry.check_signature``); ``finish`` checks the graph (every operand
computed once, no cycles, inputs and outputs identified) and, where every input's dimensions
are known, lowers it to the op layer, which checks every operation's remaining rules: a model
that breaks one is refused with BAD_DATA before anything runs.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from teflon_py.nnapi import operations  # noqa: F401  (fills the registry)
from teflon_py.nnapi.enums import OperandType, OperationType
from teflon_py.nnapi.errors import bad_data, bad_state
from teflon_py.nnapi.operands import Operand, as_value, check_type
from teflon_py.nnapi.registry import check_signature, label


@dataclass
class Operation:
    type: OperationType
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    level: int = 1


class Model:
    """An NNAPI model under construction, then finished (immutable)."""

    def __init__(self) -> None:
        self.operands: list[Operand] = []
        self.operations: list[Operation] = []
        self.inputs: tuple[int, ...] = ()
        self.outputs: tuple[int, ...] = ()
        self.relaxed = False
        self.finished = False
        self._identified = False
        self._order: list[int] | None = None
        #: the op-layer graph made at ``finish`` where the inputs' dimensions are all known
        self.static_lowering: Any = None

    def _building(self, call: str) -> None:
        if self.finished:
            raise bad_state(f"{call}: the model is finished")

    def _operand(self, index: Any, call: str) -> Operand:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < len(self.operands):
            raise bad_data(f"{call}: {index!r} is not an operand index (the model has {len(self.operands)})")
        return self.operands[int(index)]

    # -- operands ---------------------------------------------------------------------------
    def add_operand(self, type: Any, dimensions: Sequence[int] | None = None, scale: float = 0.0,
                    zero_point: int = 0) -> int:
        """Add an operand; returns its index (0, 1, ...). A tensor's dimension may be 0 (known
        only at execution); ``dimensions`` None or empty for a tensor: rank unknown too."""
        self._building("add_operand")
        t, dims = check_type(type, dimensions, scale, zero_point)
        self.operands.append(Operand(len(self.operands), t, dims, float(scale), int(zero_point)))
        return len(self.operands) - 1

    def set_operand_value(self, index: int, value: Any) -> None:
        """Make an operand a constant (its value is copied), or omit an optional one (None)."""
        self._building("set_operand_value")
        op = self._operand(index, "set_operand_value")
        what = f"set_operand_value({index})"
        if op.type == OperandType.MODEL:
            raise bad_data(f"{what}: {op.describe()} takes a model: use set_operand_value_from_model")
        if value is None:
            op.value, op.has_value = None, True
            return
        if op.is_tensor and not op.fully_specified:
            raise bad_data(f"{what}: a constant's dimensions must all be known, {op.describe()} has not")
        op.value, op.has_value = as_value(op, value, what), True
        if op.is_tensor:
            op.value.setflags(write=False)

    def set_operand_value_from_model(self, index: int, model: Model) -> None:
        """Make a ``MODEL`` operand refer to another finished model (IF and WHILE take them)."""
        self._building("set_operand_value_from_model")
        op = self._operand(index, "set_operand_value_from_model")
        if op.type != OperandType.MODEL:
            raise bad_data(f"set_operand_value_from_model({index}): {op.describe()} is not of type MODEL")
        if not isinstance(model, Model):
            raise bad_data(f"set_operand_value_from_model({index}): {model!r} is not an nnapi.Model")
        if not model.finished:
            raise bad_state(f"set_operand_value_from_model({index}): the referenced model is not finished")
        op.value, op.has_value = model, True

    def set_operand_symm_per_channel_quant_params(self, index: int, scales: Sequence[float],
                                                  channel_dim: int) -> None:
        """The per-channel scales of a ``TENSOR_QUANT8_SYMM_PER_CHANNEL`` operand."""
        self._building("set_operand_symm_per_channel_quant_params")
        op = self._operand(index, "set_operand_symm_per_channel_quant_params")
        what = f"set_operand_symm_per_channel_quant_params({index})"
        if op.type != OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
            raise bad_data(f"{what}: {op.describe()} is not TENSOR_QUANT8_SYMM_PER_CHANNEL")
        s = np.asarray(scales, np.float32).reshape(-1)
        if op.dims is None or not 0 <= int(channel_dim) < len(op.dims):
            raise bad_data(f"{what}: channel dimension {channel_dim} is outside {op.describe()}")
        if op.dims[channel_dim] == 0 or s.size != op.dims[channel_dim]:
            raise bad_data(f"{what}: {s.size} scales for channel dimension {channel_dim} of size "
                           f"{op.dims[channel_dim]}")
        if not np.all(s > 0):
            raise bad_data(f"{what}: every scale must be > 0")
        op.channel_scales, op.channel_dim = s, int(channel_dim)

    # -- operations -------------------------------------------------------------------------
    def add_operation(self, type: Any, inputs: Sequence[int], outputs: Sequence[int]) -> int:
        """Add an operation; its operand counts and types are checked now (BAD_DATA)."""
        self._building("add_operation")
        try:
            op_type = OperationType(int(type))
        except (TypeError, ValueError):
            raise bad_data(f"add_operation: {type!r} is not an OperationType") from None
        index = len(self.operations)
        call = f"add_operation({label(op_type, index)})"
        ins = tuple(int(self._operand(i, call).index) for i in inputs)
        outs = tuple(int(self._operand(i, call).index) for i in outputs)
        for k, o in enumerate(outs):
            operand = self.operands[o]
            if operand.has_value:
                raise bad_data(f"{label(op_type, index)}: output {k} is {operand.describe()}, a constant")
            if operand.type == OperandType.MODEL:
                raise bad_data(f"{label(op_type, index)}: output {k} is {operand.describe()}, a model reference")
        level = check_signature(op_type, index, [self.operands[i].type for i in ins],
                                [self.operands[o].type for o in outs])
        self.operations.append(Operation(op_type, ins, outs, level))
        return index

    def identify_inputs_and_outputs(self, inputs: Sequence[int], outputs: Sequence[int]) -> None:
        """Which operands the model takes and gives, in order (positions of ``Execution``)."""
        self._building("identify_inputs_and_outputs")
        call = "identify_inputs_and_outputs"
        ins = tuple(int(self._operand(i, call).index) for i in inputs)
        outs = tuple(int(self._operand(i, call).index) for i in outputs)
        for what, indices in (("input", ins), ("output", outs)):
            for k, i in enumerate(indices):
                op = self.operands[i]
                if op.has_value or op.type == OperandType.MODEL:
                    raise bad_data(f"{call}: {what} {k} is {op.describe()}, which has a value")
                if indices.count(i) > 1:
                    raise bad_data(f"{call}: {op.describe()} is {what} {k} and another {what} too")
        both = set(ins) & set(outs)
        if both:
            raise bad_data(f"{call}: operand {min(both)} is both an input and an output")
        self.inputs, self.outputs, self._identified = ins, outs, True

    def relax_computation_float32_to_float16(self, allow: bool) -> None:
        """Let TENSOR_FLOAT32 operations compute with float16 range and precision. teflon-py
        computes them in float32 either way, which the relaxed contract allows."""
        self._building("relax_computation_float32_to_float16")
        self.relaxed = bool(allow)

    # -- finish -----------------------------------------------------------------------------
    def finish(self) -> None:
        """Check the graph and, where every input's dimensions are known, lower it (BAD_DATA
        for a model that breaks a rule); the model is immutable afterwards."""
        self._building("finish")
        if not self._identified:
            raise bad_data("finish: identify_inputs_and_outputs was not called")
        self._order = self._check_graph()
        self.finished = True
        from teflon_py.nnapi.lowering import Unknown, lower

        if all(self.operands[i].fully_specified for i in self.inputs):
            try:
                self.static_lowering = lower(self, [self.operands[i].dims for i in self.inputs], None)
            except Unknown:
                self.static_lowering = None  # the graph depends on an input's value: made per execution
            except BaseException:
                self.finished = False
                raise

    def _check_graph(self) -> list[int]:
        """The operations in an order that computes every operand before it is read (BAD_DATA
        for an operand computed twice or never, or a cycle)."""
        producer: dict[int, int] = {}
        for i, op in enumerate(self.operations):
            for o in op.outputs:
                if o in producer:
                    first = self.operations[producer[o]]
                    raise bad_data(f"finish: operand {o} is computed by {label(first.type, producer[o])} "
                                   f"and by {label(op.type, i)}")
                if o in self.inputs:
                    raise bad_data(f"finish: operand {o} is a model input and computed by {label(op.type, i)}")
                producer[o] = i
        for k, o in enumerate(self.outputs):
            if o not in producer:
                raise bad_data(f"finish: output {k} ({self.operands[o].describe()}) is computed by no operation")
        for i, op in enumerate(self.operations):
            for k, o in enumerate(op.inputs):
                operand = self.operands[o]
                if o not in producer and o not in self.inputs and not operand.has_value:
                    raise bad_data(f"finish: {label(op.type, i)} input {k} ({operand.describe()}) has no value, "
                                   "is no model input and is computed by no operation")
        order: list[int] = []
        state = [0] * len(self.operations)  # 0 new, 1 on the path, 2 done
        for start in range(len(self.operations)):
            stack = [(start, iter(self._deps(start, producer)))]
            if state[start]:
                continue
            state[start] = 1
            while stack:
                node, deps = stack[-1]
                nxt = next(deps, None)
                if nxt is None:
                    stack.pop()
                    state[node] = 2
                    order.append(node)
                elif state[nxt] == 1:
                    cycle = label(self.operations[nxt].type, nxt)
                    raise bad_data(f"finish: the operations form a cycle through {cycle}")
                elif state[nxt] == 0:
                    state[nxt] = 1
                    stack.append((nxt, iter(self._deps(nxt, producer))))
        return order

    def _deps(self, i: int, producer: dict[int, int]) -> list[int]:
        return sorted({producer[o] for o in self.operations[i].inputs if o in producer})

    def run_order(self) -> list[int]:
        assert self._order is not None, "the model is not finished"
        return self._order
