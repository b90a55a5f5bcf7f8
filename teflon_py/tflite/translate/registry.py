"""TFLite <-> op layer: per op, a parser (options table -> attrs) and a writer (attrs -> options).

The reader calls ``to_attrs`` once per operator; nothing downstream of it reads a TFLite options
table. The builder's ``write_model`` calls ``to_options`` to write an ``ir.Model`` back. A parser
only translates (TFLite's SAME/VALID become ``ops.common.Padding``, its activation codes a
``FusedActivation``, axes given as constant operands become attributes); the op's rules are
checked by the op layer's ``infer`` when the graph is planned, as LiteRT checks them in Prepare.
A parser raises ``ModelError`` only for what cannot be decoded at all.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from teflon_py import ir
from teflon_py.errors import ModelError


@dataclass(frozen=True)
class Source:
    """One TFLite operator as the reader found it: what a parser translates."""

    opcode: str  # builtin name, or "CUSTOM"
    name: str  # builtin name, or the custom code
    options: Any  # the decoded options dataclass (``teflon_py.tflite.options``), or None
    custom_options: bytes | None
    version: int
    inputs: tuple[ir.Tensor | None, ...]
    outputs: tuple[ir.Tensor, ...]
    label: str

    def option(self, cls: type) -> Any:
        """The options table, or the schema's defaults where the model omits it (TFLite's rule)."""
        return self.options if isinstance(self.options, cls) else cls()

    def input(self, k: int) -> ir.Tensor | None:
        return self.inputs[k] if k < len(self.inputs) else None

    def fail(self, message: str) -> ModelError:
        return ModelError(f"{self.label}: {message}")


Parser = Callable[[Source], Any]
#: writer(attrs, op, graph) -> the options dataclass to write (None: no options table)
Writer = Callable[[Any, ir.Operation, ir.Graph], Any]

PARSERS: dict[str, Parser] = {}
WRITERS: dict[str, Writer] = {}


def parses(*names: str) -> Callable[[Parser], Parser]:
    def wrap(fn: Parser) -> Parser:
        for name in names:
            if name in PARSERS:
                raise ValueError(f"TFLite parser for {name} registered twice")
            PARSERS[name] = fn
        return fn

    return wrap


def writes(*names: str) -> Callable[[Writer], Writer]:
    def wrap(fn: Writer) -> Writer:
        for name in names:
            if name in WRITERS:
                raise ValueError(f"TFLite writer for {name} registered twice")
            WRITERS[name] = fn
        return fn

    return wrap
