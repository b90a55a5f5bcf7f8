"""The unary family: attributes, rules and shape inference.

Every one-input op (maths, activations, LOGICAL_NOT, CAST, QUANTIZE, DEQUANTIZE, ZEROS_LIKE):
the output has the input's shape and the declared type (bool for LOGICAL_NOT). LEAKY_RELU
carries its slope, GELU whether it is the tanh approximation; the pure clamps (RELU, RELU6,
RELU_N1_TO_1, RELU_0_TO_1) say their range through ``clamp_of`` (OpenCL fusion folds them).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teflon_py.ops.common import Act, FusedActivation, NoAttrs
from teflon_py.ops.registry import Inputs, Meta, define


@dataclass(frozen=True)
class LeakyReluAttrs:
    alpha: float = 0.0


@dataclass(frozen=True)
class GeluAttrs:
    approximate: bool = False


MATHS = ("ABS", "NEG", "EXP", "LOG", "SQRT", "RSQRT", "SQUARE", "SIN", "COS", "CEIL", "FLOOR", "ROUND", "SIGN")
ACTIVATIONS = ("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "LOGISTIC", "TANH", "ELU", "HARD_SWISH")
CONVERSIONS = ("CAST", "QUANTIZE", "DEQUANTIZE", "ZEROS_LIKE")

#: standalone activations that are only a clamp to a fixed real range
CLAMPS: dict[str, FusedActivation] = {
    "RELU": FusedActivation.of(Act.RELU),
    "RELU6": FusedActivation.of(Act.RELU6),
    "RELU_N1_TO_1": FusedActivation.of(Act.RELU_N1_TO_1),
    "RELU_0_TO_1": FusedActivation.clamp(0.0, 1.0),
}


def clamp_of(name: str) -> FusedActivation | None:
    """The clamp a standalone activation op is (RELU: [0, inf) ...), or None for other ops."""
    return CLAMPS.get(name)


def _input(ins: Inputs):
    x = ins[0]
    if x is None:
        raise ins.error("input 0 is missing")
    return x


@define(*MATHS, *ACTIVATIONS, *CONVERSIONS, attrs=NoAttrs)
def infer_unary(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    """The input's shape, the declared type."""
    x = _input(ins)
    return [Meta(tuple(x.shape), np.dtype(ins.outputs[0].dtype))]


@define("LEAKY_RELU", attrs=LeakyReluAttrs)
def infer_leaky_relu(attrs: LeakyReluAttrs, ins: Inputs) -> list[Meta]:
    return infer_unary(attrs, ins)


@define("GELU", attrs=GeluAttrs)
def infer_gelu(attrs: GeluAttrs, ins: Inputs) -> list[Meta]:
    return infer_unary(attrs, ins)


@define("LOGICAL_NOT", attrs=NoAttrs)
def infer_logical_not(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    x = _input(ins)
    if x.dtype != np.bool_:
        raise ins.error(f"input type {x.dtype} must be bool")
    return [Meta(tuple(x.shape), np.dtype(np.bool_))]
