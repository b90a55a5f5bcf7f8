"""TFLite options <-> op-layer attributes: the unary family (see ``teflon_py.ops.unary``)."""
from __future__ import annotations

from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.ops import unary as U
from teflon_py.ops.common import NoAttrs
from teflon_py.tflite import options as O
from teflon_py.tflite.translate.elementwise import empty_options
from teflon_py.tflite.translate.registry import Source, parses, writes

_EMPTY_OPTIONS = {
    "ABS": "AbsOptions", "NEG": "NegOptions", "EXP": "ExpOptions", "SQUARE": "SquareOptions", "COS": "CosOptions",
    "SIGN": "SignOptions", "HARD_SWISH": "HardSwishOptions", "QUANTIZE": "QuantizeOptions",
    "ZEROS_LIKE": "ZerosLikeOptions", "LOGICAL_NOT": "LogicalNotOptions",
}
_PLAIN = (*U.MATHS, *U.ACTIVATIONS, "QUANTIZE", "DEQUANTIZE", "ZEROS_LIKE", "LOGICAL_NOT")


@parses(*_PLAIN, "CAST")
def parse_plain(src: Source) -> NoAttrs:
    return NoAttrs()


@writes(*_PLAIN)
def write_plain(attrs: NoAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    name = _EMPTY_OPTIONS.get(op.name)
    return empty_options(name) if name else None


@writes("CAST")
def write_cast(attrs: NoAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    """CastOptions from the tensors' types (LiteRT reads the tensors; the table only echoes them)."""
    from teflon_py.tflite import reader

    codes: dict[np.dtype, int] = {}
    for code, dtype in reader.DTYPES.items():
        codes.setdefault(np.dtype(dtype), code)
    x, y = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
    if np.dtype(x.dtype) not in codes or np.dtype(y.dtype) not in codes:
        return None
    return O.CastOptions(in_data_type=codes[np.dtype(x.dtype)], out_data_type=codes[np.dtype(y.dtype)])


@parses("LEAKY_RELU")
def parse_leaky_relu(src: Source) -> U.LeakyReluAttrs:
    return U.LeakyReluAttrs(float(src.option(O.LeakyReluOptions).alpha))


@writes("LEAKY_RELU")
def write_leaky_relu(attrs: U.LeakyReluAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.LeakyReluOptions(alpha=attrs.alpha)


@parses("GELU")
def parse_gelu(src: Source) -> U.GeluAttrs:
    return U.GeluAttrs(bool(src.option(O.GeluOptions).approximate))


@writes("GELU")
def write_gelu(attrs: U.GeluAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    return O.GeluOptions(approximate=attrs.approximate)
