"""SOFTMAX, LOG_SOFTMAX, L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION and INSTANCE_NORMALIZATION.

The first four are the op layer's ops of the same names, which work on the last axis: an NNAPI
axis elsewhere is swapped with the last one (a TRANSPOSE each side). LOG_SOFTMAX's beta (TFLite's
has none) scales the input first: ``log_softmax(beta * x)`` is the spec's formula. LOCAL_RESPONSE_
NORMALIZATION takes NNAPI's window ``[c - radius, c + radius]`` (``LRNAttrs.inclusive``; TFLite's
reference kernel stops one short) and a 4-D input (lower ranks are reshaped to 4-D around it).
INSTANCE_NORMALIZATION, which TFLite lacks, is composed in NHWC: the mean and the variance over
height and width (two MEANs), then ``(x - mean) * gamma / sqrt(var + epsilon) + beta``, in the
order Android's reference computes the last expression.
"""
from __future__ import annotations

import numpy as np

from teflon_py import ops
from teflon_py.errors import UnsupportedError
from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operations.axes import along_last, read_axis, reshape, then_reshape
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.elementwise import BinaryAttrs
from teflon_py.ops.normalization import L2NormAttrs, LRNAttrs, SoftmaxAttrs, softmax_scaling
from teflon_py.ops.reduce import ReduceAttrs

SOFTMAX_TYPES = {T.TENSOR_FLOAT32: 1, T.TENSOR_QUANT8_ASYMM: 1, T.TENSOR_FLOAT16: 3, T.TENSOR_QUANT8_ASYMM_SIGNED: 4}
L2_TYPES = {T.TENSOR_FLOAT32: 1, T.TENSOR_FLOAT16: 3, T.TENSOR_QUANT8_ASYMM: 3, T.TENSOR_QUANT8_ASYMM_SIGNED: 4}
FLOAT_TYPES = {T.TENSOR_FLOAT32: 1, T.TENSOR_FLOAT16: 3}
#: (scale, zero point) the spec fixes for a quantized output
SOFTMAX_GRID = {T.TENSOR_QUANT8_ASYMM: (1 / 256, 0), T.TENSOR_QUANT8_ASYMM_SIGNED: (1 / 256, -128)}
L2_GRID = {T.TENSOR_QUANT8_ASYMM: (1 / 128, 128), T.TENSOR_QUANT8_ASYMM_SIGNED: (1 / 128, 0)}
MAX_RANK = 4


def scalar_type(t: T) -> T:
    """The type of a float parameter beside a tensor of type ``t``: FLOAT16 with a float16
    tensor, FLOAT32 otherwise."""
    return T.FLOAT16 if t == T.TENSOR_FLOAT16 else T.FLOAT32


def check_rank(c: Call, lo: int = 1, hi: int | None = MAX_RANK) -> int:
    """Input 0's rank, which must lie in [lo, hi] (hi None: no bound)."""
    rank = c.rank(0)
    if rank < lo or (hi is not None and rank > hi):
        raise c.error(f"rank {rank} is not supported (ranks {lo} to {hi if hi is not None else 'any'})", 0)
    return rank


def check_grid(c: Call, grids: dict[T, tuple[float, int]]) -> None:
    """A quantized output's scale and zero point must be the ones the spec fixes."""
    grid = grids.get(c.type(0))
    if grid is None:
        return
    y = c.out_operand(0)
    if np.float32(y.scale) != np.float32(grid[0]) or y.zero_point != grid[1]:
        raise c.error(f"a {c.type(0).name} output takes scale 1/{round(1 / grid[0])} and zero point {grid[1]}, "
                      f"got ({y.scale}, {y.zero_point})", 0, "output")


def positive_beta(c: Call, k: int) -> float:
    beta = c.scalar(k)
    if not beta > 0:
        raise c.error(f"beta must be positive, got {beta}", k)
    return float(beta)


@signature(Op.SOFTMAX)
def softmax_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, SOFTMAX_TYPES)
    s.expect([t, scalar_type(t), T.INT32], [t], optional=1, level=3 if s.n_in == 3 else 1)


@lowering(Op.SOFTMAX)
def lower_softmax(c: Call) -> None:
    rank = check_rank(c)
    beta = positive_beta(c, 1)
    axis = read_axis(c, 2, rank, -1)
    check_grid(c, SOFTMAX_GRID)
    if c.type(0) in SOFTMAX_GRID:
        try:
            softmax_scaling(beta, c.operand(0).scale)
        except UnsupportedError as e:
            raise c.error(f"beta x input scale cannot be computed in fixed point: {e}", 1) from None
    x, y = along_last(c, c.input(0), 0, rank, axis)
    c.emit("SOFTMAX", SoftmaxAttrs(beta), [x], [y])


@signature(Op.LOG_SOFTMAX)
def log_softmax_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, {T.TENSOR_FLOAT32: 3, T.TENSOR_FLOAT16: 3})
    s.expect([t, scalar_type(t), T.INT32], [t])


@lowering(Op.LOG_SOFTMAX)
def lower_log_softmax(c: Call) -> None:
    rank = check_rank(c, hi=None)  # the spec: rank 1 or more
    beta = positive_beta(c, 1)
    axis = read_axis(c, 2, rank)
    x = c.input(0)
    if beta != 1:
        scaled = c.temp(like=x, what="input x beta")
        c.emit("MUL", BinaryAttrs(), [x, c.const(np.array([beta], np.float32), what="beta")], [scaled])
        x = scaled
    x, y = along_last(c, x, 0, rank, axis)
    c.emit("LOG_SOFTMAX", ops.NoAttrs(), [x], [y])


@signature(Op.L2_NORMALIZATION)
def l2_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, L2_TYPES)
    s.expect([t, T.INT32], [t], optional=1, level=3 if s.n_in == 2 else 1)


@lowering(Op.L2_NORMALIZATION)
def lower_l2(c: Call) -> None:
    rank = check_rank(c)
    axis = read_axis(c, 1, rank, -1)
    check_grid(c, L2_GRID)
    x, y = along_last(c, c.input(0), 0, rank, axis)
    c.emit("L2_NORMALIZATION", L2NormAttrs(), [x], [y])


@signature(Op.LOCAL_RESPONSE_NORMALIZATION)
def lrn_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, FLOAT_TYPES)
    f = scalar_type(t)
    s.expect([t, T.INT32, f, f, f, T.INT32], [t], optional=1, level=3 if s.n_in == 6 else 1)


@lowering(Op.LOCAL_RESPONSE_NORMALIZATION)
def lower_lrn(c: Call) -> None:
    rank = check_rank(c)
    axis = read_axis(c, 5, rank, -1)
    radius = c.scalar(1)
    if radius < 0:
        raise c.error(f"the radius must not be negative, got {radius}", 1)
    # The spec's text asks for a non-zero bias, but Android's reference takes 0 (input / (alpha *
    # sqr_sum) ** beta) and its conformance tests use it: so do we.
    bias, alpha, beta = (float(c.scalar(k)) for k in (2, 3, 4))
    x, y = along_last(c, c.input(0), 0, rank, axis)
    if rank < 4:  # the op layer's LRN takes 4-D: leading 1s, then back
        shape = c.ir_tensor(x).shape
        x = reshape(c, x, (1,) * (4 - rank) + tuple(shape), "as 4-D")
        y = then_reshape(c, y, shape, "result as 4-D")
    c.emit("LOCAL_RESPONSE_NORMALIZATION", LRNAttrs(radius, bias, alpha, beta, inclusive=True), [x], [y])


@signature(Op.INSTANCE_NORMALIZATION)
def instance_norm_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, {T.TENSOR_FLOAT32: 3, T.TENSOR_FLOAT16: 3})
    f = scalar_type(t)
    s.expect([t, f, f, f, T.BOOL], [t], level=3)


@lowering(Op.INSTANCE_NORMALIZATION)
def lower_instance_norm(c: Call) -> None:
    check_rank(c, 4, 4)
    gamma, beta, epsilon = (float(c.scalar(k)) for k in (1, 2, 3))
    nchw = c.nchw(4)
    x = c.nhwc(c.input(0), nchw)
    y = c.nhwc_output(0, nchw)

    def step(opcode: str, attrs: object, inputs: list[int], what: str, out: int | None = None) -> int:
        out = c.temp(like=x, what=what) if out is None else out
        c.emit(opcode, attrs, inputs, [out])
        return out

    def scalar(v: float, what: str) -> int:
        return c.const(np.array([v], np.float32), what=what)

    spatial = ReduceAttrs((1, 2), keep_dims=True)
    axes = c.const(np.array([1, 2], np.int32), what="spatial axes")
    mean = step("MEAN", spatial, [x, axes], "mean")
    centred = step("SUB", BinaryAttrs(), [x, mean], "x - mean")
    squares = step("MUL", BinaryAttrs(), [centred, centred], "(x - mean)^2")
    variance = step("MEAN", spatial, [squares, axes], "variance")
    shifted = step("ADD", BinaryAttrs(), [variance, scalar(epsilon, "epsilon")], "variance + epsilon")
    sigma = step("SQRT", ops.NoAttrs(), [shifted], "sigma")
    scaled = step("MUL", BinaryAttrs(), [centred, scalar(gamma, "gamma")], "(x - mean) * gamma")
    normalized = step("DIV", BinaryAttrs(), [scaled, sigma], "(x - mean) * gamma / sigma")
    step("ADD", BinaryAttrs(), [normalized, scalar(beta, "beta")], "result", out=y)
