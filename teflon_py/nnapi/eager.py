"""Operation-by-operation execution, for a model in which an operation needs the shape of an
operand that an earlier one computes from data (BOX_WITH_NMS_LIMIT's detections feeding
ROI_ALIGN, zero-sized results...): the whole graph cannot be lowered before it runs. Each
operation is then lowered as a one-operation model for the shapes its inputs actually have, planned
once per distinct shape (``Compilation.prepared_for``) and run; its results feed the next ones.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from teflon_py.nnapi.model import Model, Operation
from teflon_py.nnapi.operands import Operand
from teflon_py.nnapi.plans import invoke

if TYPE_CHECKING:
    from teflon_py.nnapi.compilation import Compilation


@dataclass
class OperationView:
    """One operation of a finished model seen as a model of its own: its non-constant inputs
    are the inputs, its outputs the outputs (what ``lowering.lower`` reads of a model)."""

    operands: list[Operand]
    operations: list[Operation]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    operation: int
    relaxed: bool = False

    def run_order(self) -> list[int]:
        return [self.operation]


def run(compilation: Compilation, values: list[Any], loop_timeout_s: float | None,
        timeout_s: float | None = None) -> list[np.ndarray]:
    """Run ``compilation``'s model one operation at a time on these input values (``timeout_s``:
    for all of them together)."""
    model: Model = compilation.model
    env: dict[int, Any] = dict(zip(model.inputs, values))
    end = None if timeout_s is None else time.monotonic() + timeout_s
    for i in model.run_order():
        op = model.operations[i]
        feeds = tuple(dict.fromkeys(o for o in op.inputs if o in env))
        view = OperationView(model.operands, model.operations, feeds, op.outputs, i, model.relaxed)
        args = [env[o] for o in feeds]
        prepared = compilation.prepared_for([None if v is None else tuple(np.shape(v)) for v in args], args, view)
        left = None if end is None else max(end - time.monotonic(), 1e-9)
        env.update(zip(op.outputs, invoke(prepared, args, loop_timeout_s, left)))
    return [env[o] for o in model.outputs]
