"""TFLite options <-> op-layer attributes: the elementwise family (see ``teflon_py.ops.elementwise``)."""
from __future__ import annotations

from typing import Any

from teflon_py import ir
from teflon_py.ops import elementwise as E
from teflon_py.ops.common import NoAttrs
from teflon_py.tflite import options as O
from teflon_py.tflite.translate.common import activation_code, activation_of
from teflon_py.tflite.translate.registry import Source, parses, writes

#: TFLite's ActivationFunctionType <-> the op layer's kinds

_BINARY_OPTIONS = {"ADD": O.AddOptions, "SUB": O.SubOptions, "MUL": O.MulOptions, "DIV": O.DivOptions}
#: empty options tables, written back as the model usually carries them
_EMPTY_OPTIONS = {
    "POW": "PowOptions", "MAXIMUM": "MaximumMinimumOptions", "MINIMUM": "MaximumMinimumOptions",
    "SQUARED_DIFFERENCE": "SquaredDifferenceOptions", "FLOOR_DIV": "FloorDivOptions",
    "FLOOR_MOD": "FloorModOptions", "ADD_N": "AddNOptions", "SELECT": "SelectOptions",
    "SELECT_V2": "SelectV2Options", "EQUAL": "EqualOptions", "NOT_EQUAL": "NotEqualOptions",
    "LESS": "LessOptions", "LESS_EQUAL": "LessEqualOptions", "GREATER": "GreaterOptions",
    "GREATER_EQUAL": "GreaterEqualOptions", "LOGICAL_AND": "LogicalAndOptions", "LOGICAL_OR": "LogicalOrOptions",
}


def empty_options(name: str) -> Any:
    """The empty options table of ``name`` (None where the schema has none)."""
    table = O.OPTIONS.get(name)
    return table() if table is not None else None


@parses(*E.ACTIVATED)
def parse_binary(src: Source) -> E.BinaryAttrs:
    opts = src.option(_BINARY_OPTIONS[src.name])
    # TFLite zero-initialises absent options: pot_scale_int16 is then false (the schema says true)
    pot = bool(getattr(src.options, "pot_scale_int16", False)) if src.options is not None else False
    return E.BinaryAttrs(activation_of(src, opts.fused_activation_function), pot)


@writes(*E.ACTIVATED)
def write_binary(attrs: E.BinaryAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    act = activation_code(attrs.activation)
    if op.name in ("ADD", "SUB"):
        return _BINARY_OPTIONS[op.name](fused_activation_function=act, pot_scale_int16=attrs.pot_scale_int16)
    return _BINARY_OPTIONS[op.name](fused_activation_function=act)


@parses(*E.PLAIN_BINARY, "PRELU", *E.COMPARISONS, *E.LOGICAL, "ADD_N", "SELECT", "SELECT_V2")
def parse_plain(src: Source) -> NoAttrs:
    return NoAttrs()


@writes(*E.PLAIN_BINARY, "PRELU", *E.COMPARISONS, *E.LOGICAL, "ADD_N", "SELECT", "SELECT_V2")
def write_plain(attrs: NoAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    name = _EMPTY_OPTIONS.get(op.name)
    return empty_options(name) if name else None
