"""TFLite options <-> op-layer attributes: the control_flow family (see ``teflon_py.ops.control_flow``)."""
from __future__ import annotations

from typing import Any

from teflon_py import ir
from teflon_py.ops import control_flow as C
from teflon_py.ops.common import NoAttrs
from teflon_py.tflite import options as O
from teflon_py.tflite.translate.registry import Source, parses, writes


@parses("WHILE")
def parse_while(src: Source) -> C.WhileAttrs:
    o = src.option(O.WhileOptions)
    return C.WhileAttrs(int(o.cond_subgraph_index), int(o.body_subgraph_index))


@writes("WHILE")
def write_while(attrs: C.WhileAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.WhileOptions(cond_subgraph_index=attrs.cond_subgraph_index,
                          body_subgraph_index=attrs.body_subgraph_index)


@parses("IF")
def parse_if(src: Source) -> C.IfAttrs:
    o = src.option(O.IfOptions)
    return C.IfAttrs(int(o.then_subgraph_index), int(o.else_subgraph_index))


@writes("IF")
def write_if(attrs: C.IfAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.IfOptions(then_subgraph_index=attrs.then_subgraph_index, else_subgraph_index=attrs.else_subgraph_index)


@parses("CALL_ONCE")
def parse_call_once(src: Source) -> C.CallOnceAttrs:
    return C.CallOnceAttrs(int(src.option(O.CallOnceOptions).init_subgraph_index))


@writes("CALL_ONCE")
def write_call_once(attrs: C.CallOnceAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.CallOnceOptions(init_subgraph_index=attrs.init_subgraph_index)


@parses("VAR_HANDLE")
def parse_var_handle(src: Source) -> C.VarHandleAttrs:
    o = src.option(O.VarHandleOptions)
    return C.VarHandleAttrs(_text(src, o.container), _text(src, o.shared_name))


def _text(src: Source, value: object) -> str | None:
    """A flatbuffer string (bytes) as text."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            raise src.fail(f"resource name {value!r} is not UTF-8") from None
    return None if value is None else str(value)


@writes("VAR_HANDLE")
def write_var_handle(attrs: C.VarHandleAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.VarHandleOptions(container=attrs.container, shared_name=attrs.shared_name)


@parses("READ_VARIABLE", "ASSIGN_VARIABLE")
def parse_variable(src: Source) -> NoAttrs:
    return NoAttrs()


@writes("READ_VARIABLE", "ASSIGN_VARIABLE")
def write_variable(attrs: NoAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.ReadVariableOptions() if op.name == "READ_VARIABLE" else O.AssignVariableOptions()
