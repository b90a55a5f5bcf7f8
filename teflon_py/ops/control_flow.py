"""The control_flow family: WHILE, IF, CALL_ONCE (ops that run other subgraphs) and the resource
variables VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE.

Their attributes name subgraphs by index (``subgraphs(attrs)`` lists them, what the executor
prepares) or a resource by (container, shared_name) (``resource_key(attrs)``). Their outputs are
what the subgraphs or the variables give at run time: inference returns the declared outputs
(WHILE / IF / READ_VARIABLE results are data-dependent).
"""
from __future__ import annotations

from dataclasses import dataclass

from teflon_py.ops.common import NoAttrs
from teflon_py.ops.registry import Inputs, Meta, declared, define


@dataclass(frozen=True)
class WhileAttrs:
    cond_subgraph_index: int = 0
    body_subgraph_index: int = 0


@dataclass(frozen=True)
class IfAttrs:
    then_subgraph_index: int = 0
    else_subgraph_index: int = 0


@dataclass(frozen=True)
class CallOnceAttrs:
    init_subgraph_index: int = 0


@dataclass(frozen=True)
class VarHandleAttrs:
    container: str | None = None
    shared_name: str | None = None


def subgraphs(attrs: object) -> list[int]:
    """The subgraph indices an op's attributes name (the ones it runs), in order."""
    if isinstance(attrs, WhileAttrs):
        return [attrs.cond_subgraph_index, attrs.body_subgraph_index]
    if isinstance(attrs, IfAttrs):
        return [attrs.then_subgraph_index, attrs.else_subgraph_index]
    if isinstance(attrs, CallOnceAttrs):
        return [attrs.init_subgraph_index]
    return []


def resource_key(attrs: object) -> tuple[str, str] | None:
    """The (container, shared_name) of a VAR_HANDLE's resource, or None for other ops."""
    if isinstance(attrs, VarHandleAttrs):
        return (attrs.container or "", attrs.shared_name or "")
    return None


@define("WHILE", attrs=WhileAttrs)
@define("IF", attrs=IfAttrs)
def infer_dynamic(attrs: object, ins: Inputs) -> list[Meta]:
    """The subgraph's results: their shapes are known only when it runs."""
    return [declared(ins, k) for k in range(len(ins.outputs))]


@define("READ_VARIABLE", attrs=NoAttrs)
def infer_read(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    """The variable's value: its shape is the value's, known only at run time."""
    if ins[0] is None:
        raise ins.error("READ_VARIABLE needs a resource handle")
    return [declared(ins, k) for k in range(len(ins.outputs))]


@define("CALL_ONCE", attrs=CallOnceAttrs)
@define("VAR_HANDLE", attrs=VarHandleAttrs)
@define("ASSIGN_VARIABLE", attrs=NoAttrs)
def infer_declared(attrs: object, ins: Inputs) -> list[Meta]:
    """The outputs as the model declares them (a VAR_HANDLE's one int32 handle; the others none)."""
    return [declared(ins, k, tuple(ins.outputs[k].shape)) for k in range(len(ins.outputs))]
