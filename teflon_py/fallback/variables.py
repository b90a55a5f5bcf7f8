"""VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE: resource variables, as TFLite's kernels keep them.

A VAR_HANDLE gives the int32 id of its (container, shared_name) resource, numbered model-wide as
TFLite does; the values live in the interpreter's resource store (``node.context.resources``),
shared by every subgraph, so an init subgraph run by CALL_ONCE can set what the main graph reads.
Values persist across invokes; ``reset_all_variables`` leaves them, as LiteRT's does.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py.errors import ModelError
from teflon_py.fallback.registry import Node, register


def _resource_id(node: Node, handle: np.ndarray | None) -> int:
    """The id a resource handle tensor holds (one int32, as VAR_HANDLE writes it)."""
    if handle is None or handle.dtype != np.int32 or handle.size != 1:
        got = "nothing" if handle is None else f"{handle.dtype} of shape {list(handle.shape)}"
        raise node.error(f"the resource handle must be one int32 (a VAR_HANDLE output), got {got}")
    return int(handle.reshape(-1)[0])


@register("VAR_HANDLE")
def var_handle(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """The resource id of the op's (container, shared_name)."""
    out = node.outputs[0]
    if out.dtype != np.int32:
        raise node.error(f"the handle output must be a resource (int32), not {out.dtype}")
    rid = node.context.state.resource_id(node.attrs.container, node.attrs.shared_name)
    return np.full(out.shape if int(np.prod(out.shape)) == 1 else (), rid, np.int32)


@register("READ_VARIABLE")
def read_variable(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """A copy of the variable's current value (its shape is the value's, not the declared one)."""
    rid = _resource_id(node, inputs[0])
    value = node.context.resources.get(rid)
    if value is None:
        raise ModelError(f"{node.op.describe()}: resource variable {rid} is read before any ASSIGN_VARIABLE")
    if value.dtype != node.outputs[0].dtype:
        raise ModelError(
            f"{node.op.describe()}: resource variable {rid} holds {value.dtype}, "
            f"the output is {node.outputs[0].dtype}"
        )
    return np.array(value, copy=True)


@register("ASSIGN_VARIABLE")
def assign_variable(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Store a copy of the value as the variable's (any type or shape: it replaces the old one)."""
    rid = _resource_id(node, inputs[0])
    if inputs[1] is None:
        raise node.error("ASSIGN_VARIABLE needs a value")
    node.context.resources[rid] = np.array(inputs[1], copy=True)
    return []
