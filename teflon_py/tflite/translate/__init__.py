"""TFLite options <-> the op layer's attributes, one module per op family (mirroring
``teflon_py.ops``); importing this package fills ``registry.PARSERS`` and ``registry.WRITERS``."""
from __future__ import annotations

from typing import Any

from teflon_py import ir
from teflon_py.ops.common import UnknownAttrs
from teflon_py.tflite.translate import (  # noqa: F401  (each module registers its translators)
    control_flow,
    conv,
    custom,
    elementwise,
    indexing,
    lookup,
    matmul,
    movement,
    normalization,
    pool,
    recurrent,
    reduce,
    resize,
    shape,
    unary,
)
from teflon_py.tflite.translate.registry import PARSERS, WRITERS, Source


def to_attrs(src: Source) -> Any:
    """The op layer's attributes of one TFLite operator."""
    parser = PARSERS.get(src.name)
    if parser is None:  # an operator this project does not know: its name, nothing else
        return UnknownAttrs(src.name)
    return parser(src)


def to_options(op: ir.Operation, graph: ir.Graph) -> Any:
    """The TFLite options table that writes ``op`` back (None: none)."""
    writer = WRITERS.get(op.name)
    if writer is None:  # unknown to us: written back without options (custom options stay as read)
        return None
    return writer(op.attrs, op, graph)


__all__ = ["PARSERS", "WRITERS", "Source", "to_attrs", "to_options"]
