"""The integer (int8 x int8 -> int16 cell state) LSTM kernel: its quantized parameters and time steps."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from teflon_py import quant
from teflon_py.fallback.recurrent_shared import _time_steps, op_options
from teflon_py.fallback.registry import Node

if TYPE_CHECKING:
    from teflon_py.fallback.lstm import _Cell, _Slots

_F32 = np.float32
_GATE_INDEX = {"i": 0, "f": 1, "c": 2, "o": 3}


# -- parameters (Prepare) -----------------------------------------------------------------------

@dataclass(frozen=True)
class IntegerScales:
    """The gate and hidden quantization given as values rather than as TFLite's five intermediate
    tensors (NNAPI's QUANTIZED_LSTM): the four gates' matmul result scales (input, forget, cell,
    output), used as given with or without layer norm, and the hidden state's scale and zero point."""

    gates: tuple[float, float, float, float]
    hidden_scale: float
    hidden_zero_point: int


def _multiplier(real: float | np.floating) -> tuple[int, int]:
    """QuantizeMultiplier of a float32 value (widened to double, as the C++ call does)."""
    m, s = quant.quantize_multiplier(np.float64(_F32(real)))
    return int(m), int(s)


def _integer_params(node: Node, slots: _Slots, cell: _Cell, scales: IntegerScales | None = None) -> dict[str, Any]:
    """PopulateQuantizedLstmParams8x8_16 and PopulatePrecomputedZPTimesWeightsWithBias, with the
    same float32 / double arithmetic (the multipliers' low bits depend on it). The gate and hidden
    quantization come from the op's five intermediates, or from ``scales``."""
    if scales is None:
        scales = _intermediate_scales(node, bool(cell.ln))
    x_t, h_t, c_t, out_t = node.inputs[0], node.inputs[slots.h], node.inputs[slots.c], node.outputs[0]
    if np.dtype(c_t.dtype) != np.int16 or np.dtype(h_t.dtype) != np.int8:
        raise node.error("the integer LSTM needs an int8 output state and an int16 cell state")
    is_pot, cell_scale = quant.checked_log2(c_t.scale)
    if not is_pot:
        raise node.error(f"the cell state scale {c_t.scale} must be a power of two")
    if not 0 <= 15 + cell_scale <= 6:
        raise node.error(f"cell state scale 2^{cell_scale}: the integer tanh needs 2^-15 .. 2^-9")
    layer_norm = bool(cell.ln)
    inter_scale = [_F32(s) for s in scales.gates]
    hidden_scale, hidden_zp = _F32(scales.hidden_scale), scales.hidden_zero_point
    in_scale, in_zp = _F32(x_t.scale), x_t.zero_point
    state_scale, state_zp = _F32(h_t.scale), h_t.zero_point
    p: dict[str, Any] = {"cell_scale": cell_scale, "hidden_zp": hidden_zp, "state_zp": state_zp}
    for g in cell.gates:
        k = _GATE_INDEX[g]
        p["x", g] = _multiplier(_F32(node.inputs[slots.w_x[g]].scale) * in_scale / inter_scale[k])
        p["h", g] = _multiplier(_F32(node.inputs[slots.w_h[g]].scale) * state_scale / inter_scale[k])
        if g in cell.w_c:
            p["c", g] = _multiplier(2.0 ** cell_scale * np.float64(_F32(node.inputs[slots.w_c[g]].scale))
                                    / np.float64(inter_scale[k]))
        bias = np.asarray(cell.bias[g], np.int64)
        p["bias_x", g] = (0 if layer_norm else bias) - in_zp * cell.row_sums["x", g]
        p["bias_h", g] = -state_zp * cell.row_sums["h", g]
        if layer_norm:
            ln_scale = _F32(node.inputs[slots.ln[g]].scale)
            p["ln", g] = _multiplier(ln_scale)
            p["guard", g] = max(1, int(_F32(10000) * ln_scale))
    p["hidden"] = _multiplier(2.0 ** -15 / np.float64(hidden_scale) * 2.0 ** -15)
    if cell.proj_w is not None:
        p["proj"] = _multiplier(_F32(node.inputs[slots.proj_w].scale) * hidden_scale / state_scale)
        proj_b = 0 if cell.proj_b is None else np.asarray(cell.proj_b, np.int64)
        p["bias_proj"] = proj_b + hidden_zp * cell.row_sums["proj", ""]
    opts = op_options(node)
    p["cell_clip"] = (int(np.clip(_F32(opts.cell_clip) / _F32(c_t.scale), -32768, 32767))
                      if opts.cell_clip > 0 else 0)
    p["proj_clip"] = (int(np.clip(_F32(opts.proj_clip) / _F32(out_t.scale), -128, 127))
                      if opts.proj_clip > 0 else 0)
    if cell.w_c and cell.n_output > cell.n_cell:
        raise node.error("integer peephole with n_output > n_cell: LiteRT reads past its peephole weights")
    return p


def _intermediate_scales(node: Node, layer_norm: bool) -> IntegerScales:
    """The five intermediates' quantization; without layer norm LiteRT's gates are Q3.12 (2^-12)
    and it reads only the hidden state's (the converter leaves the four gates' unquantized then)."""
    intermediates = [node.graph.tensors[i] for i in node.op.intermediates]
    if len(intermediates) != 5:
        raise node.error(f"the integer LSTM needs 5 intermediate tensors (8x8->16) or, for LSTM, 12 (8x8->8), "
                         f"got {len(intermediates)}")
    if any(t.quantization is None for t in (intermediates if layer_norm else intermediates[4:])):
        raise node.error("the integer LSTM's intermediate tensors must be quantized")
    gates = tuple(float(t.scale) if layer_norm else 2.0 ** -12 for t in intermediates[:4])
    return IntegerScales(gates, float(intermediates[4].scale), int(intermediates[4].zero_point))


# -- integer (8x8 -> 16) step -------------------------------------------------------------------

def _clamp16(x: np.ndarray) -> np.ndarray:
    return np.clip(x, quant.INT16_MIN, quant.INT16_MAX)


def _mbqm(x: np.ndarray, ms: tuple[int, int]) -> np.ndarray:
    return quant.multiply_by_quantized_multiplier(quant.wrap_int(x), ms[0], ms[1])


def _gate_matmul(v: np.ndarray, w: np.ndarray, bias: np.ndarray, ms: tuple[int, int]) -> np.ndarray:
    """MatrixBatchVectorMultiplyAccumulate (int8 x int8 + effective bias, rescaled) before the
    saturating add into the gate."""
    return _mbqm((v.astype(np.float64) @ w.T).astype(np.int64) + bias, ms)


def _trunc_div(a: np.ndarray, b: int) -> np.ndarray:
    """C integer division (truncates toward zero)."""
    return np.where(a >= 0, a // b, -((-a) // b))


def _layer_norm_int16(x: np.ndarray, w: np.ndarray, bias: np.ndarray, ms: tuple[int, int],
                      guard: int) -> np.ndarray:
    """tensor_utils::ApplyLayerNorm on int16 rows (last axis): mean and variance in int64, the
    inverse standard deviation from GetInvSqrtQuantizedMultiplierExp, output in Q3.12."""
    n = x.shape[-1]
    total = x.sum(axis=-1)
    mean = _trunc_div(total * 1024, n)
    variance = (x * x).sum(axis=-1) * ((1 << 20) // n) - mean * mean
    variance = quant.wrap_int(_trunc_div(variance, 1 << 20))
    variance = np.where(variance < 1, guard, variance)
    inv_m, inv_s = quant.get_inv_sqrt_quantized_multiplier_exp(variance, -1)
    rescaled = quant.multiply_by_quantized_multiplier(
        quant.wrap_int(1024 * x - mean[..., None]), inv_m[..., None], inv_s[..., None])
    val3 = quant.wrap_int(rescaled * np.asarray(w, np.int64) + np.asarray(bias, np.int64))
    val4 = _trunc_div(val3 + np.where(val3 > 0, 512, -512), 1024)
    return _clamp16(quant.multiply_by_quantized_multiplier(quant.wrap_int(val4), ms[0], ms[1] + 12))


def _peephole_int16(w: np.ndarray, c: np.ndarray, ms: tuple[int, int], n_output: int, flat: bool) -> np.ndarray:
    """VectorBatchVectorCwiseProductAccumulate as the integer gate calls it, over ``n_output`` (not
    n_cell) elements per batch row: of the flat cell state when the batch runs as one (time-major),
    of each row's start when LiteRT steps batch rows one by one (batch-major); zeros elsewhere. The
    two agree when n_output == n_cell."""
    term = np.zeros(c.shape, np.int64)
    if flat:
        used = c.shape[0] * n_output
        term.reshape(-1)[:used] = _mbqm(w[np.arange(used) % n_output] * c.reshape(-1)[:used], ms)
    else:
        term[:, :n_output] = _mbqm(w[:n_output] * c[:, :n_output], ms)
    return term


def _run_integer(cell: _Cell, x: np.ndarray, h: np.ndarray, c: np.ndarray, reverse: bool,
                 time_major: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """EvalInteger8x8_16 over time-major int8 ``x``: gates in Q3.12, sigmoid/tanh in Q0.15, cell
    state int16 at 2^cell_scale, output state int8 (``time_major``: how LiteRT walked the batch)."""
    p = cell.integer
    xs = np.asarray(x, np.int64)
    pre = {g: _clamp16(_gate_matmul(xs, cell.w_x[g], p["bias_x", g], p["x", g])) for g in cell.gates}
    h = np.asarray(h, np.int64)
    c = np.asarray(c, np.int64)
    out = np.empty((x.shape[0], x.shape[1], cell.n_output), np.int8)
    cell_scale = p["cell_scale"]
    for t in _time_steps(x.shape[0], reverse):
        gate = {}
        for g in cell.gates:
            if g == "o":
                c = _update_cell_int16(cell, gate, c, p)
            acc = _clamp16(_gate_matmul(h, cell.w_h[g], p["bias_h", g], p["h", g]) + pre[g][t])
            if g in cell.w_c:
                acc = _clamp16(_peephole_int16(cell.w_c[g], c, p["c", g], cell.n_output, time_major) + acc)
            if cell.ln:
                acc = _layer_norm_int16(acc, cell.ln[g], cell.bias[g], p["ln", g], p["guard", g])
            gate[g] = quant.tanh_gemmlowp_int16(acc, 3) if g == "c" else quant.logistic_int16(acc, 3)
        tanh_c = quant.tanh_gemmlowp_int16(c, 15 + cell_scale)
        hidden = _mbqm(gate["o"] * tanh_c, p["hidden"])
        if cell.proj_w is not None:
            hidden = np.clip(hidden - p["hidden_zp"], -128, 127)
            hidden = np.clip(_gate_matmul(hidden, cell.proj_w, p["bias_proj"], p["proj"]) + p["state_zp"],
                             -128, 127)
            if p["proj_clip"] > 0:
                hidden = np.clip(hidden, -p["proj_clip"], p["proj_clip"])
        else:
            hidden = np.clip(hidden + p["hidden_zp"], -128, 127)
        h = hidden
        out[t] = hidden
    return out, h, c


def _update_cell_int16(cell: _Cell, gate: dict[str, np.ndarray], c: np.ndarray, p: dict[str, Any]) -> np.ndarray:
    """UpdateLstmCellInteger: CwiseMul(forget, cell) >> 15 plus CwiseMul(input, cell_gate) >>
    (30 + cell_scale), saturating, clipped."""
    kept = quant.wrap_int(quant.rounding_divide_by_pot(gate["f"] * c, 15), 16)
    i = quant.INT16_MAX - gate["f"] if cell.cifg else gate["i"]
    added = quant.wrap_int(quant.rounding_divide_by_pot(i * gate["c"], 30 + p["cell_scale"]), 16)
    c = _clamp16(kept + added)
    clip = p["cell_clip"]
    return np.clip(c, -clip, clip) if clip > 0 else c
