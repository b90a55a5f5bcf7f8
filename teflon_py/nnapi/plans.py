"""A planned NNAPI graph: the lowered op-layer model and the interpreter that runs it."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from teflon_py.interpreter import Interpreter
from teflon_py.nnapi.lowering import Lowered


@dataclass
class Prepared:
    lowered: Lowered
    interpreter: Interpreter


def invoke(prepared: Prepared, values: list[Any], loop_timeout_s: float | None,
           timeout_s: float | None = None) -> list[np.ndarray]:
    """Run one plan on the inputs it takes (``values`` by model input position); its outputs.
    ``loop_timeout_s`` bounds each WHILE, ``timeout_s`` the whole run (None: no limit)."""
    lowered, it = prepared.lowered, prepared.interpreter
    with it.lock:  # executions of one compilation share its plans: one runs at a time
        it._model_state.loop_timeout = loop_timeout_s
        it.invoke_timeout = timeout_s
        for k, t in lowered.feeds:
            it.set_tensor(t, values[k])
        it.invoke()
        return [np.array(it.get_tensor(t)) for t in lowered.outputs]
