"""Operand-type modes of the convolution and fully-connected tests, and their ``.tflite`` twins.

A ``Mode`` is one configuration the spec allows: float32, float16, uint8 or int8 activations with
a per-tensor filter of the same type, or with a TENSOR_QUANT8_SYMM_PER_CHANNEL filter. The twin
computes it with LiteRT's reference kernels in the configuration Android's reference computes it
in: float16 in float32; a uint8 input with a per-channel filter as the int8 operation on the
activations shifted by -128; an int8 input with a per-tensor filter (whose zero point NNAPI lets
be nonzero) as the uint8 operation on everything shifted by +128 (Android's
``convertInt8ToUInt8``). Shifting by 128 at the same scale changes no real value.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from teflon_py.nnapi import OperandType as T
from tests.nnapi.harness import Spec, rng_array
from tests.nnapi.tflite_graphs import TfliteGraph

Q = tuple[float, int]


@dataclass(frozen=True)
class Mode:
    type: T  # of the input and output
    x: Q | None = None  # (scale, zero point) of the input
    w: Q | None = None  # of a per-tensor filter
    y: Q | None = None
    per_channel: bool = False

    @property
    def quantized(self) -> bool:
        return self.x is not None

    @property
    def float16(self) -> bool:
        return self.type == T.TENSOR_FLOAT16

    @property
    def filter_type(self) -> T:
        return T.TENSOR_QUANT8_SYMM_PER_CHANNEL if self.per_channel else self.type

    @property
    def shift(self) -> int:
        """What the twin adds to the activations (and to a per-tensor int8 filter)."""
        if self.type == T.TENSOR_QUANT8_ASYMM and self.per_channel:
            return -128
        if self.type == T.TENSOR_QUANT8_ASYMM_SIGNED and not self.per_channel:
            return 128
        return 0

    @property
    def twin_dtype(self) -> type:
        if not self.quantized:
            return np.float32
        signed = self.type == T.TENSOR_QUANT8_ASYMM_SIGNED
        return np.int8 if signed != (self.shift != 0) else np.uint8

    @property
    def tol(self) -> float:
        return 3e-3 if self.float16 else 1e-5

    # -- data ---------------------------------------------------------------------------------
    def channel_scales(self, n: int) -> np.ndarray:
        return np.linspace(0.01, 0.03, n).astype(np.float32)

    def filter_data(self, rng: np.random.Generator, shape: Sequence[int]) -> np.ndarray:
        if not self.quantized:
            return rng.standard_normal(shape).astype(np.float16 if self.float16 else np.float32)
        if self.per_channel:
            return rng.integers(-127, 127, shape, endpoint=True).astype(np.int8)
        return rng_array(rng, self.type, shape)

    def bias_data(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if not self.quantized:
            return rng.standard_normal(n).astype(np.float16 if self.float16 else np.float32)
        return rng.integers(-2000, 2000, n).astype(np.int32)

    def input_data(self, rng: np.random.Generator, dims: Sequence[int]) -> np.ndarray:
        return rng_array(rng, self.type, dims)

    def bias_scales(self, w: np.ndarray, channel_dim: int) -> np.ndarray:
        """The real scale of each bias value: input scale x filter scale (float32 products)."""
        ws = self.channel_scales(w.shape[channel_dim]) if self.per_channel else np.float32([self.w[0]])
        return np.float32(self.x[0]) * ws

    # -- the NNAPI model ----------------------------------------------------------------------
    def input(self, s: Spec, dims: Sequence[int]) -> int:
        return s.input(self.type, dims, *(self.x or (0.0, 0)))

    def output(self, s: Spec, dims: Sequence[int]) -> int:
        return s.output(self.type, dims, *(self.y or (0.0, 0)))

    def filter(self, s: Spec, w: np.ndarray, channel_dim: int) -> int:
        if self.per_channel:
            return s.const(self.filter_type, w, channel=(self.channel_scales(w.shape[channel_dim]), channel_dim))
        scale, zero_point = self.w or (0.0, 0)
        return s.const(self.filter_type, w, scale=scale, zero_point=zero_point)

    def bias(self, s: Spec, b: np.ndarray, w: np.ndarray, channel_dim: int) -> int:
        if not self.quantized:
            return s.const(self.type, b)
        scale = 0.0 if self.per_channel else float(self.bias_scales(w, channel_dim)[0])
        return s.const(T.TENSOR_INT32, b, scale=scale)


class Twin(TfliteGraph):
    """The ``.tflite`` twin of one mode (see the module's docstring), in NHWC."""

    def __init__(self, mode: Mode) -> None:
        super().__init__()
        self.mode = mode
        self.dtype = mode.twin_dtype

    def _shifted_q(self, q: Q | None) -> tuple:
        return (q[0], q[1] + self.mode.shift) if q else (None,)

    def input(self, shape: Sequence[int]) -> int:  # type: ignore[override]
        return super().input(shape, self.dtype, *self._shifted_q(self.mode.x))

    def act(self, shape: Sequence[int], which: str = "y") -> int:
        """An intermediate or output tensor quantized as the input (``x``) or the output (``y``)."""
        return self.tensor(shape, self.dtype, *self._shifted_q(getattr(self.mode, which)))

    def filter(self, w: np.ndarray, channel_dim: int) -> int:
        m = self.mode
        if not m.quantized:
            return self.const(w.astype(np.float32), np.float32)
        if m.per_channel:
            return self.const(w, np.int8, m.channel_scales(w.shape[channel_dim]), 0, channel_dim)
        return self.const(w.astype(np.int16) + m.shift, self.dtype, m.w[0], m.w[1] + m.shift)

    def bias(self, b: np.ndarray, w: np.ndarray, channel_dim: int) -> int:
        if not self.mode.quantized:
            return self.const(b.astype(np.float32), np.float32)
        return self.const(b, np.int32, self.mode.bias_scales(w, channel_dim), 0)

    def feed(self, x: np.ndarray) -> np.ndarray:
        """An NNAPI input as the twin takes it."""
        if not self.mode.quantized:
            return x.astype(np.float32)
        return (x.astype(np.int16) + self.mode.shift).astype(self.dtype)

    def back(self, y: np.ndarray) -> np.ndarray:
        """A twin output as the NNAPI output expected."""
        if self.mode.float16:
            return y.astype(np.float16)
        if not self.mode.quantized:
            return y
        return (y.astype(np.int16) - self.mode.shift).astype(np.int8 if self.mode.type ==
                                                              T.TENSOR_QUANT8_ASYMM_SIGNED else np.uint8)


MODES = {
    "float32": Mode(T.TENSOR_FLOAT32),
    "float16": Mode(T.TENSOR_FLOAT16),
    "uint8": Mode(T.TENSOR_QUANT8_ASYMM, (0.05, 120), (0.02, 130), (0.25, 125)),
    "uint8_per_channel": Mode(T.TENSOR_QUANT8_ASYMM, (0.05, 120), None, (0.25, 125), per_channel=True),
    "int8": Mode(T.TENSOR_QUANT8_ASYMM_SIGNED, (0.05, -3), (0.02, 7), (0.25, 4)),
    "int8_per_channel": Mode(T.TENSOR_QUANT8_ASYMM_SIGNED, (0.05, -3), None, (0.25, 4), per_channel=True),
}
