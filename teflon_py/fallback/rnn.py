"""RNN, UNIDIRECTIONAL_SEQUENCE_RNN and SVDF: TFLite's basic RNN and SVDF kernels in NumPy.

RNN steps ``h = activation(x @ W.T + h @ R.T + bias)`` (``kernel_utils::RnnBatchStep``); the hybrid
form (int8 weights, float32 activations) quantizes the input and the hidden state row by row each
step and rescales the integer products in float32. SVDF keeps a [batch, filters, memory] state:
each invoke shifts it left by one, appends ``x @ weights_feature.T``, applies ``weights_time`` and
sums ``rank`` filters per unit (``reference_ops::Eval{Float,Hybrid,Integer}SVDF``); its int8 form
keeps the state in int16. Hidden and SVDF states are variable tensors, written back through
``node.context.assign`` so they persist across invokes.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import ir, quant
from teflon_py.fallback.recurrent_shared import (
    apply_activation,
    assign_state,
    hybrid_matmul,
    op_options,
    quantize_rows,
)
from teflon_py.fallback.registry import Node, register
from teflon_py.ops.common import Act, FusedActivation

_F32 = np.float32


def neon_accumulate(start: np.ndarray, terms: np.ndarray) -> np.ndarray:
    """``start + sum(terms)`` over the last axis in the order of LiteRT's x86 build (its NEON
    kernels through NEON_2_SSE: NeonVectorVectorDotProduct, NeonReductionSumVector,
    NeonMatrixBatchVectorMultiplyAccumulate): four float32 lanes over the first multiple of 4
    terms, the lanes added left to right into ``start``, then the remaining terms one by one."""
    n = terms.shape[-1]
    body = n - n % 4
    lanes = np.cumsum(terms[..., :body].reshape(*terms.shape[:-1], body // 4, 4), axis=-2, dtype=_F32)
    lane_sum = (np.cumsum(lanes[..., -1, :], axis=-1, dtype=_F32)[..., -1] if body
                else np.zeros(terms.shape[:-1], _F32))
    tail = np.concatenate([(start + lane_sum)[..., None], terms[..., body:]], axis=-1)
    return np.cumsum(tail, axis=-1, dtype=_F32)[..., -1]


def neon_matvec(start: np.ndarray, matrix: np.ndarray, vectors: np.ndarray) -> np.ndarray:
    """MatrixBatchVectorMultiplyAccumulate (float32, NEON order): ``start + vectors @ matrix.T``."""
    return neon_accumulate(start, vectors[..., None, :] * matrix)


def _weights_kind(node: Node, x: ir.Tensor, w: ir.Tensor) -> str:
    """float / hybrid, as LiteRT dispatches on the weight type (RNN has no integer kernel)."""
    if np.dtype(x.dtype) != np.float32:
        raise node.error(f"{x.dtype} input is not supported (float32 only)")
    if np.dtype(w.dtype) == np.float32:
        return "float"
    if np.dtype(w.dtype) == np.int8:
        return "hybrid"
    raise node.error(f"{w.dtype} weights are not supported (float32 or int8)")


def rnn_float_steps(x: np.ndarray, w: np.ndarray, r: np.ndarray, bias: np.ndarray, h: np.ndarray,
                    act: FusedActivation, aux: np.ndarray | None = None, aux_w: np.ndarray | None = None,
                    reverse: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """RnnBatchStep in float32 over time-major ``x`` [T, B, input] from hidden state ``h`` [B, units]
    (``aux`` with ``aux_w``: a second input term; ``reverse``: last step first): ([T, B, units], h)."""
    units = w.shape[0]
    pre = neon_matvec(np.broadcast_to(np.asarray(bias, _F32), (*x.shape[:2], units)), np.asarray(w, _F32),
                      np.asarray(x, _F32))
    if aux is not None:
        pre = neon_matvec(pre, np.asarray(aux_w, _F32), np.asarray(aux, _F32))
    r = np.asarray(r, _F32)
    h = np.asarray(h, _F32)
    out = np.empty((x.shape[0], x.shape[1], units), _F32)
    for t in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        h = out[t] = apply_activation(neon_matvec(pre[t], r, h), act)
    return out, h


def _rnn_steps(node: Node, inputs: Sequence[np.ndarray | None], x: np.ndarray) -> np.ndarray:
    """RnnBatchStep over time-major ``x`` [T, B, input]; returns [T, B, units], writes the hidden state."""
    w, r, bias, h = inputs[1], inputs[2], inputs[3], inputs[4]
    units = w.shape[0]
    if h is None or h.size != x.shape[1] * units:
        raise node.error(f"hidden state must hold batch x units = {x.shape[1]} x {units} values")
    act = op_options(node).activation
    h = np.asarray(h, _F32).reshape(x.shape[1], units)
    bias = np.asarray(bias, _F32)
    out = np.empty((x.shape[0], x.shape[1], units), _F32)
    if _weights_kind(node, node.inputs[0], node.inputs[1]) == "float":
        out, h = rnn_float_steps(x, w, r, bias, h, act)
    else:
        asymmetric = bool(op_options(node).asymmetric_quantize_inputs)
        w_scale, r_scale = _F32(node.inputs[1].scale), _F32(node.inputs[2].scale)
        wq, rq = np.asarray(w, np.float64), np.asarray(r, np.float64)
        w_sums, r_sums = wq.sum(axis=1), rq.sum(axis=1)
        q, sf, zp = quantize_rows(np.asarray(x, _F32), asymmetric)
        pre = bias + hybrid_matmul(q, sf, zp, wq, w_scale, w_sums)
        for t in range(x.shape[0]):
            qh, sfh, zph = quantize_rows(h, asymmetric)
            h = out[t] = apply_activation(pre[t] + hybrid_matmul(qh, sfh, zph, rq, r_scale, r_sums), act)
    assign_state(node, 4, h)
    return out


@register("RNN")
def rnn(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """RNN: one step over [batch, input]."""
    x = inputs[0]
    if x.ndim != 2:
        raise node.error(f"RNN input must be [batch, input], got {x.shape}")
    return _rnn_steps(node, inputs, x[None])[0]


@register("UNIDIRECTIONAL_SEQUENCE_RNN")
def unidirectional_sequence_rnn(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """UNIDIRECTIONAL_SEQUENCE_RNN over [batch, time, input] (time_major: [time, batch, input])."""
    x = inputs[0]
    if x.ndim != 3:
        raise node.error(f"input must be 3-D, got {x.shape}")
    time_major = bool(op_options(node).time_major)
    out = _rnn_steps(node, inputs, x if time_major else np.swapaxes(x, 0, 1))
    return np.ascontiguousarray(out if time_major else np.swapaxes(out, 0, 1))


def _svdf_shapes(node: Node, inputs: Sequence[np.ndarray | None]) -> tuple[int, int, int, int]:
    """(batch, filters, memory, units), checked as SVDF's Prepare does."""
    x, wf, wt, state = inputs[0], inputs[1], inputs[2], inputs[4]
    rank = int(op_options(node).rank)
    if x.ndim != 2 or wf.ndim != 2 or wt.ndim != 2:
        raise node.error("SVDF needs a 2-D input, weights_feature and weights_time")
    filters, memory = wf.shape[0], wt.shape[1]
    if rank <= 0 or filters % rank or wt.shape[0] != filters or wf.shape[1] != x.shape[1]:
        raise node.error(f"inconsistent SVDF shapes: input {x.shape}, weights_feature {wf.shape}, "
                         f"weights_time {wt.shape}, rank {rank}")
    if state is None or state.size != x.shape[0] * filters * memory:
        raise node.error(f"state must hold batch x memory x filters = {x.shape[0] * filters * memory} values")
    return x.shape[0], filters, memory, filters // rank


def _shift_state(state: np.ndarray, latest: np.ndarray) -> np.ndarray:
    """Drop the oldest of the ``memory`` entries of each (batch, filter) row, append ``latest``."""
    return np.concatenate([state[:, :, 1:], latest[:, :, None].astype(state.dtype)], axis=2)


@register("SVDF")
def svdf(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """SVDF: float32, hybrid (int8 weights_feature / weights_time, float32 state) or int8 (int16 state)."""
    batch, filters, memory, units = _svdf_shapes(node, inputs)
    x, wf, wt, bias = inputs[0], inputs[1], inputs[2], inputs[3]
    act = op_options(node).activation
    if np.dtype(x.dtype) == np.int8:
        return _svdf_integer(node, inputs, batch, filters, memory, units)
    kind = _weights_kind(node, node.inputs[0], node.inputs[1])
    state = np.asarray(inputs[4], _F32).reshape(batch, filters, memory)
    if kind == "float":
        latest = svdf_features(x, wf)
        wt = np.asarray(wt, _F32)
    else:
        q, sf, zp = quantize_rows(np.asarray(x, _F32), bool(op_options(node).asymmetric_quantize_inputs))
        wq = np.asarray(wf, np.float64)
        latest = hybrid_matmul(q, sf, zp, wq, _F32(node.inputs[1].scale), wq.sum(axis=1))
        wt = _F32(node.inputs[2].scale) * np.asarray(wt, _F32)
    state = _shift_state(state, latest)
    assign_state(node, 4, state)
    return svdf_output(state, wt, bias, units, act)


def svdf_features(x: np.ndarray, wf: np.ndarray) -> np.ndarray:
    """SVDF's first stage in float32: each filter's feature of each batch row, [batch, filters]."""
    return neon_matvec(np.zeros((x.shape[0], wf.shape[0]), _F32), np.asarray(wf, _F32), np.asarray(x, _F32))


def svdf_output(state: np.ndarray, wt: np.ndarray, bias: np.ndarray | None, units: int,
                act: FusedActivation) -> np.ndarray:
    """SVDF's second stage in float32 on the [batch, filters, memory] state holding the newest
    feature last: time weights, the sum of each unit's ``rank`` filters, bias, activation."""
    batch, filters = state.shape[:2]
    zero = np.zeros((batch, filters), _F32)
    scratch = neon_accumulate(zero, state * wt).reshape(batch, units, filters // units)
    out = neon_accumulate(zero[:, :units], scratch)
    if bias is not None:
        out = out + np.asarray(bias, _F32)
    return apply_activation(out.astype(_F32), act)


def _svdf_integer(node: Node, inputs: Sequence[np.ndarray | None], batch: int, filters: int, memory: int,
                  units: int) -> np.ndarray:
    """reference_ops::EvalIntegerSVDF: int8 x int8 feature matmul rescaled into the int16 state,
    int16 x int16 time weights, rescaled to int8 (LiteRT requires RELU but clamps to [-128, 127] only)."""
    x_t, wf_t, wt_t, state_t, out_t = node.inputs[0], node.inputs[1], node.inputs[2], node.inputs[4], node.outputs[0]
    if np.dtype(wf_t.dtype) != np.int8 or np.dtype(wt_t.dtype) != np.int16 or np.dtype(state_t.dtype) != np.int16:
        raise node.error("int8 SVDF needs int8 weights_feature, int16 weights_time and an int16 state")
    if op_options(node).activation.kind != Act.RELU:
        raise node.error("int8 SVDF supports only the RELU activation (as LiteRT)")
    scale_1, scale_2 = node.memo("svdf_scales", lambda: (
        quant.quantize_multiplier(np.float64(x_t.scale) * np.float64(wf_t.scale) / np.float64(state_t.scale)),
        quant.quantize_multiplier(np.float64(state_t.scale) * np.float64(wt_t.scale) / np.float64(out_t.scale))))
    x, wf, wt, bias = (np.asarray(a, np.int64) if a is not None else None for a in inputs[:4])
    state = np.asarray(inputs[4], np.int64).reshape(batch, filters, memory)
    dot = (np.asarray(x - x_t.zero_point, np.float64) @ np.asarray(wf, np.float64).T).astype(np.int64)
    latest = np.clip(quant.multiply_by_quantized_multiplier(quant.wrap_int(dot), *scale_1),
                     quant.INT16_MIN, quant.INT16_MAX)
    state = _shift_state(state, latest)
    scratch = quant.wrap_int((state * wt).sum(axis=2))
    out = quant.wrap_int(scratch.reshape(batch, units, filters // units).sum(axis=2))
    if bias is not None:
        out = quant.wrap_int(out + bias)
    out = quant.multiply_by_quantized_multiplier(out, *scale_2) + out_t.zero_point
    assign_state(node, 4, state)
    return np.clip(out, -128, 127).astype(np.int8)
