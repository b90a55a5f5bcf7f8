"""What every op's attributes are made of, in format-neutral terms.

Frontends (``teflon_py.tflite``, later ExecuTorch's XNNPACK graphs and NNAPI) translate their
encodings into these once; backends read only these. A fused activation is a kind *and* its clamp
range (XNNPACK and NNAPI clamp to arbitrary bounds); padding is explicit per side, or TensorFlow's
SAME rule resolved against the actual input size (TFLite's SAME, XNNPACK's
``TENSORFLOW_SAME_PADDING`` flag), so that a resized input re-derives it; the window arithmetic
(output size, padding before and after) lives here and nowhere else.
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from teflon_py.errors import ModelError
from teflon_py.quant import core as qcore


class Act(enum.Enum):
    """Kinds of fused activation. CLAMP is an arbitrary [lo, hi] (XNNPACK's output_min/max)."""

    NONE = "none"
    RELU = "relu"
    RELU6 = "relu6"
    RELU_N1_TO_1 = "relu_n1_to_1"
    TANH = "tanh"
    SIGN_BIT = "sign_bit"
    CLAMP = "clamp"


_RANGES = {Act.NONE: (-math.inf, math.inf), Act.RELU: (0.0, math.inf), Act.RELU6: (0.0, 6.0),
           Act.RELU_N1_TO_1: (-1.0, 1.0)}


@dataclass(frozen=True)
class FusedActivation:
    """A fused activation: its kind and, for the clamping kinds, the real-valued range it keeps."""

    kind: Act = Act.NONE
    lo: float = -math.inf
    hi: float = math.inf

    @classmethod
    def of(cls, kind: Act) -> FusedActivation:
        lo, hi = _RANGES.get(kind, (-math.inf, math.inf))
        return cls(kind, lo, hi)

    @classmethod
    def clamp(cls, lo: float, hi: float) -> FusedActivation:
        """[lo, hi]; named kinds where the bounds are theirs, so backends see RELU as RELU."""
        for kind, bounds in _RANGES.items():
            if (float(lo), float(hi)) == bounds:
                return cls.of(kind)
        return cls(Act.CLAMP, float(lo), float(hi))

    @property
    def is_clamp(self) -> bool:
        """Whether applying it is a clamp to [lo, hi] (TANH and SIGN_BIT are not)."""
        return self.kind not in (Act.TANH, Act.SIGN_BIT)

    def range(self, dtype: Any, scale: float = 1.0, zero_point: int = 0) -> tuple[float, float] | tuple[int, int]:
        """The clamp bounds in the output's domain: floats, or quantized integers as TFLite's
        CalculateActivationRangeQuantized computes them (each finite bound quantized, then
        intersected with the type's range)."""
        dtype = np.dtype(dtype)
        if dtype.kind == "f":
            return (self.lo, self.hi) if self.is_clamp else (-math.inf, math.inf)
        qmin, qmax = qcore.QRANGE[dtype]
        if not self.is_clamp:
            return qmin, qmax

        def q(real: float) -> int:
            return zero_point + int(qcore.round_half_away(np.float32(real) / np.float32(scale)))

        lo = qmin if self.lo == -math.inf else max(qmin, q(self.lo))
        hi = qmax if self.hi == math.inf else min(qmax, q(self.hi))
        return lo, hi


NO_ACTIVATION = FusedActivation()


class Requantization(enum.Enum):
    """How a quantized convolution or fully connected layer turns its int32 accumulators into
    8-bit outputs: TFLite's rule (fixed-point multipliers; FULLY_CONNECTED's float64 scale), or
    XNNPACK's (``float32(acc) * float32(in_scale * w_scale / out_scale)``, clamped, rounded half
    to even), which ExecuTorch's XNNPACK programs compute."""

    TFLITE = "tflite"
    FLOAT32 = "float32"


@dataclass(frozen=True)
class Padding:
    """Padding of the spatial axes: explicit ``(before, after)`` per axis, or ``same``:
    TensorFlow's SAME rule, resolved per input size by ``window``."""

    explicit: tuple[tuple[int, int], ...] = ()
    same: bool = False

    @classmethod
    def valid(cls, axes: int = 2) -> Padding:
        return cls(((0, 0),) * axes)

    @classmethod
    def tf_same(cls) -> Padding:
        return cls((), True)

    def per_axis(self, axis: int) -> tuple[int, int]:
        return self.explicit[axis] if axis < len(self.explicit) else (0, 0)


@dataclass(frozen=True)
class Window1D:
    """One spatial axis of a sliding window: output size and the padding before and after it."""

    out: int
    before: int
    after: int


def window(size: int, kernel: int, stride: int, dilation: int, padding: Padding, axis: int) -> Window1D:
    """Output size and padding of one axis. SAME: ``ceil(size / stride)`` outputs, half the total
    padding before (TFLite's ComputePaddingWithOffset: the odd one goes after); explicit: the
    windows that fit the padded input."""
    effective = (kernel - 1) * dilation + 1
    if padding.same:
        out = (size + stride - 1) // stride
        total = max(0, (out - 1) * stride + effective - size)
        return Window1D(out, total // 2, total - total // 2)
    before, after = padding.per_axis(axis)
    out = (size + before + after - effective) // stride + 1
    return Window1D(out, before, after)


@dataclass(frozen=True)
class NoAttrs:
    """Attributes of an op that has none (ABS, LOGISTIC, ...)."""


@dataclass(frozen=True)
class UnknownAttrs:
    """An operator this project does not know: the frontend's name for it, nothing else."""

    name: str = ""


def normalize_axis(axis: int, rank: int, label: str) -> int:
    """``axis`` in [-rank, rank) as a non-negative axis (ModelError outside)."""
    if not -rank <= axis < max(rank, 1):
        raise ModelError(f"{label}: axis {axis} is out of range for rank {rank}")
    return axis % max(rank, 1)

