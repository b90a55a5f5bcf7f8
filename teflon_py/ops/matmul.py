"""The matmul family: FULLY_CONNECTED and BATCH_MATMUL attributes, rules and shape inference.

The shared rules (``fc_shape_reason``, ``fc_output_shape``, ``matmul_reason``, ``matmul_dims``)
are what the NumPy fallback and the OpenCL lowerings both call.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teflon_py.ops.common import NO_ACTIVATION, FusedActivation, Requantization
from teflon_py.ops.conv import ConvAttrs, conv_groups_reason, conv_window_reason, windows
from teflon_py.ops.registry import Inputs, Meta, define


@dataclass(frozen=True)
class FullyConnectedAttrs:
    """FULLY_CONNECTED: fused activation, weights format (0: default; 1: shuffled 4x16 int8),
    keep_num_dims (the output keeps the input's leading dimensions), hybrid quantization flag,
    TFLite's bias type."""

    activation: FusedActivation = NO_ACTIVATION
    weights_format: int = 0
    keep_num_dims: bool = False
    asymmetric_quantize_inputs: bool = False
    quantized_bias_type: int = 0
    requantization: Requantization = Requantization.TFLITE


@dataclass(frozen=True)
class BatchMatMulAttrs:
    """BATCH_MATMUL: transpose the last two axes of the LHS (``adj_x``) / RHS (``adj_y``) first."""

    adj_x: bool = False
    adj_y: bool = False
    asymmetric_quantize_inputs: bool = False


def fc_shape_reason(attrs: FullyConnectedAttrs, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> str | None:
    """Why the input and [units, depth] weights of a FULLY_CONNECTED do not fit together, or None."""
    if len(w_shape) != 2:
        return f"weights must be 2-D [units, depth], got {tuple(w_shape)}"
    depth = w_shape[1]
    size = int(np.prod(x_shape, dtype=np.int64))
    if depth == 0 or size % depth:
        return f"input of {size} elements does not split into rows of depth {depth}"
    if attrs.keep_num_dims and (not x_shape or x_shape[-1] != depth):
        last = x_shape[-1] if x_shape else None
        return f"keep_num_dims needs the input's last dimension {last} to equal depth {depth}"
    return None


def fc_output_shape(attrs: FullyConnectedAttrs, x_shape: tuple[int, ...], w_shape: tuple[int, ...]) -> tuple[int, ...]:
    """The output shape (after ``fc_shape_reason``): [rows, units], or the input's with units last."""
    units, depth = w_shape
    if attrs.keep_num_dims:
        return (*x_shape[:-1], units)
    return (int(np.prod(x_shape, dtype=np.int64)) // depth, units)


def matmul_reason(attrs: BatchMatMulAttrs, a: tuple[int, ...], b: tuple[int, ...]) -> str | None:
    """Why a BATCH_MATMUL of these operand shapes breaks LiteRT's rules, or None."""
    for name, s in (("LHS", a), ("RHS", b)):
        if not 2 <= len(s) <= 5:
            return f"{name} has rank {len(s)}; BATCH_MATMUL takes ranks 2 to 5"
    ka = a[-2] if attrs.adj_x else a[-1]
    kb = b[-1] if attrs.adj_y else b[-2]
    if ka != kb:
        return f"inner dimensions {ka} and {kb} differ (after adj_x / adj_y)"
    for x, y in zip(reversed(a[:-2]), reversed(b[:-2])):
        if x != y and 1 not in (x, y):
            return f"batch dimensions {tuple(a[:-2])} and {tuple(b[:-2])} do not broadcast"
    return None


def matmul_dims(attrs: BatchMatMulAttrs, a: tuple[int, ...],
                b: tuple[int, ...]) -> tuple[int, int, int, tuple[int, ...]]:
    """(M, N, K, broadcast batch shape) of a BATCH_MATMUL (after ``matmul_reason``)."""
    m, k = (a[-1], a[-2]) if attrs.adj_x else (a[-2], a[-1])
    n = b[-2] if attrs.adj_y else b[-1]
    return m, n, k, tuple(np.broadcast_shapes(tuple(a[:-2]), tuple(b[:-2])))


@define("FULLY_CONNECTED", attrs=FullyConnectedAttrs)
def infer_fully_connected(attrs: FullyConnectedAttrs, ins: Inputs) -> list[Meta]:
    x, w, y = ins[0], ins[1], ins.outputs[0]
    if x is None or w is None:
        raise ins.error("input and weights are required")
    reason = fc_shape_reason(attrs, tuple(x.shape), tuple(w.shape))
    if reason:
        raise ins.error(reason)
    return [Meta(fc_output_shape(attrs, tuple(x.shape), tuple(w.shape)), np.dtype(y.dtype))]


@define("BATCH_MATMUL", attrs=BatchMatMulAttrs)
def infer_batch_matmul(attrs: BatchMatMulAttrs, ins: Inputs) -> list[Meta]:
    a, b, y = ins[0], ins[1], ins.outputs[0]
    if a is None or b is None:
        raise ins.error("both operands are required")
    reason = matmul_reason(attrs, tuple(a.shape), tuple(b.shape))
    if reason:
        raise ins.error(reason)
    m, n, _, batch = matmul_dims(attrs, tuple(a.shape), tuple(b.shape))
    return [Meta((*batch, m, n), np.dtype(y.dtype))]


# -- dynamic quantization (XNNPACK's qd8: ExecuTorch's dynamically quantized linear layers) ----------


@dataclass(frozen=True)
class DynamicQuantizeAttrs:
    """DYNAMIC_QUANTIZE: int8 with per-row parameters chosen at run time from each row's range;
    a row is everything in the last ``num_nonbatch_dims`` axes."""

    num_nonbatch_dims: int = 1


def dynamic_rows(attrs: DynamicQuantizeAttrs, shape: tuple[int, ...]) -> int:
    return int(np.prod(shape[:len(shape) - attrs.num_nonbatch_dims], dtype=np.int64))


@define("DYNAMIC_QUANTIZE", attrs=DynamicQuantizeAttrs)
def infer_dynamic_quantize(attrs: DynamicQuantizeAttrs, ins: Inputs) -> list[Meta]:
    """float32 ``x`` -> (int8 values of ``x``'s shape, float32 [rows, 2]: scale and zero point)."""
    x = ins[0]
    if x is None or np.dtype(x.dtype) != np.float32:
        raise ins.error("takes one float32 input")
    if not 1 <= attrs.num_nonbatch_dims <= max(len(x.shape), 1):
        raise ins.error(f"num_nonbatch_dims {attrs.num_nonbatch_dims} does not fit a rank-{len(x.shape)} input")
    if len(ins.outputs) != 2:
        raise ins.error("has two outputs: the values and their per-row parameters")
    return [Meta(tuple(x.shape), np.dtype(np.int8)), Meta((dynamic_rows(attrs, tuple(x.shape)), 2),
                                                          np.dtype(np.float32))]


@define("DYNAMIC_FULLY_CONNECTED", attrs=FullyConnectedAttrs)
def infer_dynamic_fully_connected(attrs: FullyConnectedAttrs, ins: Inputs) -> list[Meta]:
    """FULLY_CONNECTED over a DYNAMIC_QUANTIZE'd input: (int8 values, their [rows, 2] parameters,
    int8 weights [units, depth] quantized per tensor or per unit, optional float32 bias) -> float32."""
    q, params, w = ins[0], ins[1], ins[2]
    if q is None or params is None or w is None:
        raise ins.error("values, their parameters and weights are required")
    if np.dtype(q.dtype) != np.int8 or np.dtype(w.dtype) != np.int8 or w.quantization is None:
        raise ins.error("takes int8 values and quantized int8 weights")
    reason = fc_shape_reason(attrs, tuple(q.shape), tuple(w.shape))
    if reason:
        raise ins.error(reason)
    rows = int(np.prod(q.shape, dtype=np.int64)) // w.shape[1]
    if tuple(params.shape) != (rows, 2):
        raise ins.error(f"parameters must be [{rows}, 2] (one scale and zero point per row), got {list(params.shape)}")
    b = ins[3]
    if b is not None and tuple(b.shape) != (w.shape[0],):
        raise ins.error(f"bias must be [{w.shape[0]}], got {list(b.shape)}")
    return [Meta(fc_output_shape(attrs, tuple(q.shape), tuple(w.shape)), np.dtype(np.float32))]


@define("DYNAMIC_CONV_2D", attrs=ConvAttrs)
def infer_dynamic_conv_2d(attrs: ConvAttrs, ins: Inputs) -> list[Meta]:
    """CONV_2D over a DYNAMIC_QUANTIZE'd NHWC input (one row per image: [batch, 2] parameters):
    (int8 values, parameters, int8 [O, KH, KW, C/G] filter quantized per tensor or per output
    channel, optional float32 bias) -> float32."""
    q, params, w = ins[0], ins[1], ins[2]
    if q is None or params is None or w is None:
        raise ins.error("values, their parameters and filter are required")
    if np.dtype(q.dtype) != np.int8 or np.dtype(w.dtype) != np.int8 or w.quantization is None:
        raise ins.error("takes int8 values and a quantized int8 filter")
    reason = conv_groups_reason(tuple(q.shape), tuple(w.shape))
    reason = reason or conv_window_reason(attrs, q.shape[1], q.shape[2], w.shape[1], w.shape[2])
    if reason:
        raise ins.error(reason)
    if tuple(params.shape) != (q.shape[0], 2):
        raise ins.error(f"parameters must be [{q.shape[0]}, 2] (one scale and zero point per image), "
                        f"got {list(params.shape)}")
    wh, ww = windows(attrs, q.shape[1], q.shape[2], w.shape[1], w.shape[2])
    return [Meta((q.shape[0], wh.out, ww.out, w.shape[0]), np.dtype(np.float32))]
