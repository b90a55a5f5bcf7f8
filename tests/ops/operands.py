"""Operand builders shared by the data-movement and indexing op tests: every storage type,
realistic quantization for the quantized ones, constants, random data, one-op runs."""
from __future__ import annotations

import numpy as np

from teflon_py import ir
from tests.harness import check_model, quantization, single_op

#: every storage type LiteRT's data-movement kernels know; each test narrows it to what the op accepts.
ALL = ["float32", "int8", "uint8", "int16", "int32", "int64", "bool"]
NO_BOOL = ALL[:-1]
NO_INT16 = [d for d in ALL if d != "int16"]


def qp(dtype: str) -> ir.Quantization | None:
    """Realistic per-tensor quantization for the quantized storage types, None for the rest."""
    return {
        "int8": quantization(0.05, -3),
        "uint8": quantization(0.05, 131),
        "int16": quantization(0.001, 0),
    }.get(dtype)


def tensor(shape: tuple[int, ...], dtype: str) -> dict:
    """A runtime input or output operand, quantized if its type is."""
    return {"shape": list(shape), "dtype": dtype, "quant": qp(dtype)}


def const(data: object, dtype: str = "int32", quant: ir.Quantization | None = None) -> dict:
    """A constant operand."""
    arr = np.asarray(data, dtype)
    return {"shape": list(arr.shape), "dtype": dtype, "data": arr, "quant": quant}


def data(shape: tuple[int, ...], dtype: str, seed: int = 0, low: int = -1000, high: int = 1000) -> np.ndarray:
    """Random test data: N(0,1) floats, integers in [low, high] clipped to the type, random booleans."""
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype == "float32":
        return rng.standard_normal(shape).astype(np.float32)
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, low), min(info.max, high), shape, endpoint=True).astype(dtype)


def run(backend: str, op: str, inputs: list[dict], outputs: list[dict], options: object = None,
        feed: list[np.ndarray] | None = None, refuses: str | tuple[str, ...] = (), **kw: object) -> None:
    """Build a one-op model and compare it with LiteRT on ``feed`` (random inputs if None);
    ``refuses``: the refusals the case expects (``harness.check_placement``)."""
    check_model(single_op(op, inputs, outputs, options, **kw), backend, inputs=feed, refuses=refuses)
