"""NNAPI operands: the types' storage and rules, and one operand of a model.

``TYPES`` says, per ``OperandType``, whether it is a tensor, its NumPy dtype and how it is
quantized; ``check_type`` holds the rules ``ANeuralNetworksModel_addOperand`` applies to a type
(scale and zero point ranges, scalars without dimensions).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.errors import bad_data


@dataclass(frozen=True)
class TypeInfo:
    """What an operand type stores: ``tensor`` or scalar, its ``dtype``, and its quantization
    (``asym``: scale and zero point; ``symm``: scale, zero point 0; ``channel``: per-channel
    scales; None: not quantized)."""

    tensor: bool
    dtype: np.dtype | None
    quant: str | None = None
    zero_points: tuple[int, int] = (0, 0)


TYPES: dict[T, TypeInfo] = {
    T.FLOAT32: TypeInfo(False, np.dtype(np.float32)),
    T.INT32: TypeInfo(False, np.dtype(np.int32)),
    T.UINT32: TypeInfo(False, np.dtype(np.uint32)),
    T.BOOL: TypeInfo(False, np.dtype(np.bool_)),
    T.FLOAT16: TypeInfo(False, np.dtype(np.float16)),
    T.MODEL: TypeInfo(False, None),
    T.TENSOR_FLOAT32: TypeInfo(True, np.dtype(np.float32)),
    T.TENSOR_FLOAT16: TypeInfo(True, np.dtype(np.float16)),
    T.TENSOR_INT32: TypeInfo(True, np.dtype(np.int32)),
    T.TENSOR_BOOL8: TypeInfo(True, np.dtype(np.bool_)),
    T.TENSOR_QUANT8_ASYMM: TypeInfo(True, np.dtype(np.uint8), "asym", (0, 255)),
    T.TENSOR_QUANT8_ASYMM_SIGNED: TypeInfo(True, np.dtype(np.int8), "asym", (-128, 127)),
    T.TENSOR_QUANT8_SYMM: TypeInfo(True, np.dtype(np.int8), "symm"),
    T.TENSOR_QUANT8_SYMM_PER_CHANNEL: TypeInfo(True, np.dtype(np.int8), "channel"),
    T.TENSOR_QUANT16_SYMM: TypeInfo(True, np.dtype(np.int16), "symm"),
    T.TENSOR_QUANT16_ASYMM: TypeInfo(True, np.dtype(np.uint16), "asym", (0, 65535)),
}

FLOAT_TENSORS = (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16)
QUANT8 = (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED)


@dataclass
class Operand:
    """One operand of a model: its type, dimensions (None: unknown rank; a 0: unknown size),
    quantization, and value (a constant's array, a scalar's value, a referenced model) once set."""

    index: int
    type: T
    dims: tuple[int, ...] | None
    scale: float = 0.0
    zero_point: int = 0
    #: per-channel quantization (``TENSOR_QUANT8_SYMM_PER_CHANNEL``)
    channel_scales: np.ndarray | None = None
    channel_dim: int = 0
    value: Any = None
    has_value: bool = False  # set_operand_value was called (a value of None: omitted)

    @property
    def info(self) -> TypeInfo:
        return TYPES[self.type]

    @property
    def is_tensor(self) -> bool:
        return self.info.tensor

    @property
    def omitted(self) -> bool:
        """An optional operand given no value (``set_operand_value(i, None)``)."""
        return self.has_value and self.value is None

    @property
    def is_constant(self) -> bool:
        return self.has_value and self.value is not None

    @property
    def fully_specified(self) -> bool:
        return self.dims is not None and all(d > 0 for d in self.dims)

    def describe(self) -> str:
        dims = "unknown rank" if self.dims is None else list(self.dims)
        return f"operand {self.index} ({self.type.name} {dims})"

    def quantization(self) -> ir.Quantization | None:
        """The operand's quantization as the op layer holds it."""
        kind = self.info.quant
        if kind is None:
            if self.type == T.TENSOR_INT32 and self.scale > 0:  # a bias with its scale
                return ir.Quantization(np.array([self.scale], np.float32), np.array([self.zero_point], np.int64))
            return None
        if kind == "channel":
            scales = np.asarray(self.channel_scales, np.float32)
            return ir.Quantization(scales, np.zeros(scales.size, np.int64), self.channel_dim)
        return ir.Quantization(np.array([self.scale], np.float32), np.array([self.zero_point], np.int64))


def check_type(type_code: Any, dims: Any, scale: float, zero_point: int) -> tuple[T, tuple[int, ...] | None]:
    """The operand type and dimensions ``add_operand`` takes, or BAD_DATA with the rule broken."""
    try:
        t = T(int(type_code))
    except (TypeError, ValueError):
        raise bad_data(f"add_operand: {type_code!r} is not an OperandType") from None
    info = TYPES[t]
    if dims is not None:
        try:
            dims = tuple(int(d) for d in dims)
        except (TypeError, ValueError):
            raise bad_data(f"add_operand: {t.name} dimensions {dims!r} are not a sequence of integers") from None
        if any(d < 0 for d in dims):
            raise bad_data(f"add_operand: {t.name} dimensions {list(dims)} must not be negative")
    if not info.tensor:
        if dims:
            raise bad_data(f"add_operand: scalar type {t.name} takes no dimensions, got {list(dims)}")
        dims = ()
    elif dims is not None and len(dims) == 0:
        dims = None  # dimensionCount 0 on a tensor: rank unknown until execution
    scale, zero_point = float(scale), int(zero_point)
    kind = info.quant
    if kind in ("asym", "symm"):
        if not scale > 0:
            raise bad_data(f"add_operand: {t.name} needs a scale > 0, got {scale}")
        lo, hi = info.zero_points
        if not lo <= zero_point <= hi:
            raise bad_data(f"add_operand: {t.name} zero point {zero_point} is outside [{lo}, {hi}]")
    elif kind == "channel":
        if scale != 0 or zero_point != 0:
            raise bad_data(f"add_operand: {t.name} takes scale 0 and zero point 0 (its scales are set "
                           "with set_operand_symm_per_channel_quant_params)")
    elif t == T.TENSOR_INT32:
        if scale < 0:
            raise bad_data(f"add_operand: {t.name} scale must be >= 0, got {scale}")
    elif scale != 0 or zero_point != 0:
        raise bad_data(f"add_operand: {t.name} takes scale 0 and zero point 0, got {scale} and {zero_point}")
    return t, dims


def as_value(operand: Operand, value: Any, what: str) -> Any:
    """``value`` stored as ``operand``'s type: a NumPy array of its dtype and dimensions for a
    tensor, a Python scalar for a scalar; BAD_DATA where it does not fit."""
    info = operand.info
    if not info.tensor:
        arr = np.asarray(value)
        if arr.size != 1 or arr.dtype.kind not in "biuf":
            raise bad_data(f"{what}: {operand.describe()} takes one scalar, got {value!r}")
        if info.dtype.kind == "b":
            return bool(arr.reshape(()).item())
        if info.dtype.kind in "iu":
            v = arr.reshape(()).item()
            if arr.dtype.kind == "f" and v != int(v):
                raise bad_data(f"{what}: {operand.describe()} takes an integer, got {v!r}")
            iinfo = np.iinfo(info.dtype)
            if not iinfo.min <= int(v) <= iinfo.max:
                raise bad_data(f"{what}: {operand.describe()} value {int(v)} is outside the range of {info.dtype}")
            return int(v)
        return float(info.dtype.type(arr.reshape(()).item()))
    return as_array(operand, value, what)


def as_array(operand: Operand, value: Any, what: str, dims: tuple[int, ...] | None = None) -> np.ndarray:
    """A tensor's value as an array of its dtype: raw bytes of the right length, or array-likes
    whose values the dtype holds (floats of any width for a float tensor). Its shape is ``dims``
    (default: the operand's) where that is fully known and the element count matches."""
    dtype = operand.info.dtype
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if len(raw) % dtype.itemsize:
            raise bad_data(f"{what}: {len(raw)} bytes are not a whole number of {dtype} elements")
        arr = np.frombuffer(raw, dtype).copy()
    else:
        src = np.asarray(value)
        if src.dtype == object or src.dtype.kind not in "biuf":
            raise bad_data(f"{what}: {operand.describe()} takes numbers, got an array of {src.dtype}")
        if src.dtype == dtype:
            arr = np.array(src, dtype, copy=True)
        elif dtype.kind == "b":  # NNAPI's booleans: zero is false, anything else true
            arr = src != 0
        elif dtype.kind == "f" and src.dtype.kind in "biuf":
            arr = src.astype(dtype)
        else:
            arr = src.astype(dtype)
            if not np.array_equal(arr.astype(np.float64), src.astype(np.float64)):
                raise bad_data(f"{what}: {operand.describe()} holds {dtype}; the {src.dtype} values given do not fit")
    dims = operand.dims if dims is None else dims
    if dims is not None and all(d > 0 for d in dims):
        if arr.size != int(np.prod(dims)):
            raise bad_data(f"{what}: {operand.describe()} holds {int(np.prod(dims))} elements, got {arr.size}")
        arr = arr.reshape(dims)
    elif dims is not None and arr.ndim != len(dims):
        if arr.ndim == 0 or len(dims) == 0:
            raise bad_data(f"{what}: {operand.describe()} has rank {len(dims)}, got an array of rank {arr.ndim}")
        raise bad_data(f"{what}: {operand.describe()} has rank {len(dims)}, got an array of shape {arr.shape}")
    elif dims is not None:
        for d, n in zip(dims, arr.shape):
            if d and d != n:
                raise bad_data(f"{what}: {operand.describe()} does not admit an array of shape {arr.shape}")
    return arr
