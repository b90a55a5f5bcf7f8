"""``nnapi.Compilation``: a finished model prepared for the given delegates.

The model's op-layer graph is partitioned onto the delegates exactly as the TFLite interpreter
partitions a ``.tflite`` (an ``Interpreter`` over the lowered graph does the planning), so
placements, the profiler and ``TEFLON_DEBUG`` serve NNAPI models too. A model whose graph
depends on its inputs' dimensions or values is lowered per execution, and each distinct graph
is planned once and kept.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from teflon_py.delegate import Delegate
from teflon_py.errors import TeflonError
from teflon_py.executor import Placement
from teflon_py.interpreter import Interpreter
from teflon_py.nnapi import eager
from teflon_py.nnapi.enums import Preference, Priority, ResultCode
from teflon_py.nnapi.errors import NNAPIError, bad_data, bad_state
from teflon_py.nnapi.lowering import Dynamic, Lowered, lower
from teflon_py.nnapi.model import Model
from teflon_py.nnapi.plans import Prepared, invoke


class Compilation:
    """``ANeuralNetworksCompilation``: ``Compilation(model, delegates=[...])``; ``delegates=[]``
    (the default) runs everything on the NumPy fallback."""

    def __init__(self, model: Model, delegates: Sequence[Delegate] | None = None):
        if not isinstance(model, Model):
            raise bad_data(f"Compilation: {model!r} is not an nnapi.Model")
        if not model.finished:
            raise bad_state("Compilation: the model is not finished")
        self.model = model
        self.delegates = list(delegates or [])
        for d in self.delegates:
            if not isinstance(d, Delegate):
                raise bad_data(f"Compilation: delegates take teflon_py.load_delegate(name), got {d!r}")
        self.preference = Preference.FAST_SINGLE_ANSWER
        self.priority = Priority.MEDIUM
        self.timeout_ns = 0
        self.finished = False
        self._prepared: list[tuple[tuple, Prepared]] = []
        self._eager = False  # the model runs operation by operation (see ``run``)
        self._last: Prepared | None = None

    def _building(self, call: str) -> None:
        if self.finished:
            raise bad_state(f"{call}: the compilation is finished")

    def set_preference(self, preference: Any) -> None:
        """How to trade speed for power (kept; every preference runs the same plan here)."""
        self._building("set_preference")
        try:
            self.preference = Preference(int(preference))
        except (TypeError, ValueError):
            raise bad_data(f"set_preference: {preference!r} is not a Preference (0 to 2)") from None

    def set_priority(self, priority: Any) -> None:
        self._building("set_priority")
        try:
            self.priority = Priority(int(priority))
        except (TypeError, ValueError):
            raise bad_data(f"set_priority: {priority!r} is not a Priority (90, 100, 110)") from None

    def set_timeout(self, duration_ns: int) -> None:
        """A time limit for preparing (accepted: preparing here is bounded by the model)."""
        self._building("set_timeout")
        if int(duration_ns) < 0:
            raise bad_data("set_timeout: the duration must not be negative")
        self.timeout_ns = int(duration_ns)

    def set_caching(self, cache_dir: str, token: bytes) -> None:
        """Accepted: OpenCL program binaries are cached per device already (``TEFLON_CACHE_DIR``)."""
        self._building("set_caching")

    def finish(self) -> None:
        """Plan (and compile for the delegates) the graph of a model whose inputs' dimensions
        are known; others are planned at their first execution."""
        self._building("finish")
        static = self.model.static_lowering
        if static is not None:  # its key: the declared shapes, no input omitted
            shapes = tuple(tuple(self.model.operands[i].dims) for i in self.model.inputs)
            self._last = self._prepare(static)
            self._prepared.append(((None, shapes, (False,) * len(shapes)), self._last))
        self.finished = True

    # -- plans ------------------------------------------------------------------------------
    def _prepare(self, lowered: Lowered) -> Prepared:
        try:
            it = Interpreter.from_ir(lowered.model, self.delegates)
            it.allocate_tensors()
        except NNAPIError:
            raise
        except TeflonError as e:
            raise NNAPIError(ResultCode.OP_FAILED, f"preparing the model: {e}") from e
        return Prepared(lowered, it)

    def prepared_for(self, shapes: list[tuple[int, ...] | None], values: list[Any], view: Any = None) -> Prepared:
        """The plan for running ``view`` (default: the whole model) on inputs of these shapes
        and values (None: omitted); planned once per distinct key and kept."""
        model = self.model if view is None else view
        key = (getattr(view, "operation", None), tuple(shapes), tuple(v is None for v in values))
        for k, cand in self._prepared:
            if k == key and _reads_match(cand.lowered, values):
                self._last = cand
                return cand
        prepared = self._prepare(lower(model, shapes, values))
        self._prepared.append((key, prepared))
        self._last = prepared
        return prepared

    def run(self, values: list[Any], loop_timeout_s: float | None = None,
            timeout_s: float | None = None) -> list[np.ndarray]:
        """The model's outputs for these input values (None: an omitted input): the whole graph
        as one plan, or, where an operation needs a shape an earlier one computes from data,
        operation by operation (``eager``). Lowering failures are BAD_DATA, run failures
        OP_FAILED (the caller maps them); ``timeout_s`` bounds the whole run, ``loop_timeout_s``
        each WHILE."""
        if not self._eager:
            try:
                prepared = self.prepared_for(_shapes(values), values)
            except Dynamic:
                self._eager = True
            else:
                return invoke(prepared, values, loop_timeout_s, timeout_s)
        return eager.run(self, values, loop_timeout_s, timeout_s)

    def placements(self) -> list[list[Placement]]:
        """Per NNAPI operation, where each op-layer op it became runs (the latest plan)."""
        if self._last is None:
            raise bad_state("placements: nothing is planned yet (finish a model with known input "
                            "dimensions, or run an execution)")
        rows: list[list[Placement]] = [[] for _ in self.model.operations]
        for place, origin in zip(self._last.interpreter.placements(), self._last.lowered.origin):
            rows[origin].append(place)
        return rows

    def interpreter(self) -> Interpreter:
        """The interpreter of the latest plan (its ``placements``, ``partitions``, ``devices``)."""
        if self._last is None:
            raise bad_state("interpreter: nothing is planned yet")
        return self._last.interpreter


def supported_operations(model: Model, delegates: Sequence[Delegate]) -> list[bool]:
    """Per operation of a finished model whose inputs' dimensions are known, whether every
    op-layer op it becomes runs on one of ``delegates``
    (``ANeuralNetworksModel_getSupportedOperationsForDevices``)."""
    c = Compilation(model, delegates=list(delegates))
    c.finish()
    return [bool(rows) and all(p.backend != "numpy" for p in rows) for rows in c.placements()]


def _shapes(values: list[Any]) -> list[tuple[int, ...] | None]:
    return [None if v is None else tuple(np.shape(v)) for v in values]


def _reads_match(lowered: Lowered, values: list[Any]) -> bool:
    """Whether the inputs the graph was specialised to hold the same values now."""
    for k, v in lowered.read_inputs.items():
        now = values[k]
        if now is None or not np.array_equal(np.asarray(now), v) or np.asarray(now).dtype != v.dtype:
            return False
    return True
