"""The integer 8x8 -> 8 LSTM kernel (LiteRT's EvalInteger8x8_8): LSTM ops with twelve intermediates.

LiteRT picks this kernel for the LSTM op (not the sequence ops, whose Prepare takes five
intermediates only) when an int8 model carries twelve ``intermediates``: per gate (input, forget,
cell, output) the quantization of the gate's sum (int16) and of its input and recurrent matmul
results (int8). Each gate's matmuls produce int8 at those intermediates' scale and zero point; the
two are rescaled to the sum's scale and added (saturating int16); layer norm, sigmoid and tanh run
in float32 on the int16 values and quantize back (Q3.12 gates, Q0.15 activations); the cell state
is Q0.15 and the hidden state, o * tanh(c) in Q0.15, goes through the projection to the int8 output.

What LiteRT's kernel does regardless of the model, kept here because LiteRT computes it so: the
input gate is always 1 - forget (CIFG), whatever input-gate weights the model has; the output
gate has no recurrent term (LiteRT 2.3's outputs are unchanged, bit for bit, when the
recurrent-to-output weights are zeroed, while zeroing the forget or cell gate's changes them);
peephole weights and the fused activation are ignored; the gate biases only enter through layer
norm; the cell state is Q0.15 whatever its scale, the cell clip applies only when 0 < cell_clip < 1,
and neither clip applies unless the cell scale is 2^-15 (LiteRT's Prepare sets the clips after
that check and ignores its failure). What it cannot compute (it dereferences absent tensors and
crashes) is refused: a model without layer norm, projection weights or projection bias; so are
the sequence ops with twelve intermediates, which LiteRT's Prepare rejects.

The float steps are those of LiteRT's portable kernels: the activations' inputs are int16, so each
activation is a table over the 65536 inputs, built with the C library's ``expf`` / ``tanhf`` (the
functions LiteRT's build calls; glibc's ``tanhf`` is not correctly rounded, so NumPy's would differ).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import TYPE_CHECKING, Any

import numpy as np

from teflon_py import quant
from teflon_py.fallback.lstm_integer import _mbqm, _multiplier
from teflon_py.fallback.recurrent_shared import _time_steps, op_options
from teflon_py.fallback.registry import Node

if TYPE_CHECKING:
    from teflon_py.fallback.lstm import _Cell, _Slots

_F32 = np.float32
_GATES8 = ("f", "c", "o")  # the gates the kernel computes; the input gate is 1 - forget
#: per gate, the positions of (sum, input matmul, recurrent matmul) among the intermediates
_INTERMEDIATE = {"i": (0, 1, 2), "f": (3, 4, 5), "c": (6, 7, 8), "o": (9, 10, 11)}


# -- parameters (Prepare) -----------------------------------------------------------------------

def integer8_params(node: Node, slots: _Slots, cell: _Cell) -> dict[str, Any]:
    """PopulateQuantizedLstmParams8x8_8: the matmuls' multipliers (float32 arithmetic, as LiteRT's),
    the ratios from each matmul's scale to its gate sum's, the layer norm scales and the clips."""
    if node.op.name != "LSTM":
        raise node.error("the 12-intermediate 8x8->8 integer kernel exists only for the LSTM op "
                         "(LiteRT's sequence LSTMs take 5 intermediates)")
    missing = [what for what, absent in (("layer norm", not cell.ln), ("projection weights", cell.proj_w is None),
                                         ("projection bias", cell.proj_b is None)) if absent]
    if missing:
        raise node.error(f"the 8x8->8 integer LSTM needs {', '.join(missing)}: LiteRT's kernel uses them "
                         "unconditionally (it crashes without them)")
    x_t, h_t, c_t, out_t = node.inputs[0], node.inputs[slots.h], node.inputs[slots.c], node.outputs[0]
    if np.dtype(c_t.dtype) != np.int16 or np.dtype(h_t.dtype) != np.int8:
        raise node.error("the integer LSTM needs an int8 output state and an int16 cell state")
    inter = [node.graph.tensors[i] for i in node.op.intermediates]
    if any(t.quantization is None for t in inter):
        raise node.error("the integer LSTM's intermediate tensors must be quantized")
    scale = [_F32(t.scale) for t in inter]
    # the int8 results' zero points travel as int8_t (wrapped) through the kernel
    zp = [int(quant.wrap_int(np.int64(t.zero_point), 8)) for t in inter]
    in_scale, state_scale = _F32(x_t.scale), _F32(h_t.scale)
    p: dict[str, Any] = {"in_zp": x_t.zero_point, "state_zp": h_t.zero_point}
    for g in _GATES8:
        k_sum, k_x, k_h = _INTERMEDIATE[g]
        p["x", g] = _multiplier(_F32(node.inputs[slots.w_x[g]].scale) * in_scale / scale[k_x])
        p["h", g] = _multiplier(_F32(node.inputs[slots.w_h[g]].scale) * state_scale / scale[k_h])
        p["zp_x", g], p["zp_h", g] = zp[k_x], zp[k_h]
        p["sum_x", g] = _multiplier(scale[k_x] / scale[k_sum])
        p["sum_h", g] = _multiplier(scale[k_h] / scale[k_sum])
        a, b = _multiplier(_F32(node.inputs[slots.ln[g]].scale))
        p["ln", g] = _F32(a * 2.0 ** (b - 31))
        p["ln_bias", g] = _F32(2.0 ** -10 * np.float64(p["ln", g]))
    proj_scale = np.float64(_F32(node.inputs[slots.proj_w].scale)) * 2.0 ** -15 / np.float64(state_scale)
    p["proj"] = _multiplier(_F32(proj_scale))
    opts = op_options(node)
    cell_clip, proj_clip = _F32(opts.cell_clip), _F32(opts.proj_clip)
    # LiteRT's Prepare checks the cell scale only after it has set everything but the clips, and
    # ignores the failure: a cell state not at 2^-15 is computed as if it were, without clips
    q15 = _F32(c_t.scale) == np.float64(1.0 / 32768)
    p["cell_clip"] = int(np.clip(cell_clip * _F32(32768), -32768, 32767)) if q15 and 0 < cell_clip < 1 else 0
    p["proj_clip"] = int(np.clip(proj_clip / _F32(out_t.scale), -128, 127)) if q15 and proj_clip > 0 else 0
    return p


# -- float steps on int16 values ----------------------------------------------------------------

def _c_library() -> ctypes.CDLL:
    """The C maths library LiteRT's kernels call (``libm``; the process itself where it has none)."""
    return ctypes.CDLL(ctypes.util.find_library("m"))


def _float_function(name: str) -> Any:
    f = getattr(_c_library(), name)
    f.restype, f.argtypes = ctypes.c_float, [ctypes.c_float]
    return f


def _to_q15(y: np.ndarray) -> np.ndarray:
    """static_cast<int32>(y * 2^15) clamped to int16: truncation toward zero."""
    return np.minimum(np.trunc(y.astype(np.float64) * 32768), 32767).astype(np.int64)


_INT16_DOMAIN = np.arange(-32768, 32768)


@functools.cache
def _sigmoid_table() -> np.ndarray:
    """ApplySigmoidFloat for every int16 input: 1 / (1 + expf(-q 2^-12)) in float32, as Q0.15."""
    expf = _float_function("expf")
    x = (_INT16_DOMAIN * 2.0 ** -12).astype(_F32)
    e = np.array([expf(float(v)) for v in -x], _F32)
    return _to_q15(_F32(1) / (_F32(1) + e))


@functools.cache
def _tanh_table(integer_bits: int) -> np.ndarray:
    """ApplyTanhFloat for every int16 input: tanhf(q 2^integer_bits), as Q0.15."""
    tanhf = _float_function("tanhf")
    x = (_INT16_DOMAIN * 2.0 ** integer_bits).astype(_F32)
    return _to_q15(np.array([tanhf(float(v)) for v in x], _F32))


def _lookup(table: np.ndarray, q: np.ndarray) -> np.ndarray:
    return table[np.asarray(q, np.int64) + 32768]


def _sequential_sum(x: np.ndarray) -> np.ndarray:
    """A float32 sum along the last axis, left to right (C's loop; NumPy's sum is pairwise)."""
    return np.cumsum(x, axis=-1, dtype=_F32)[..., -1]


def _round_to_int32(y: np.ndarray) -> np.ndarray:
    """static_cast<int32>(std::round(y)) on x86: halves away from zero; NaN and out-of-range
    values give INT32_MIN (cvttsd2si's answer)."""
    with np.errstate(invalid="ignore"):
        r = quant.round_half_away(y)
        bad = ~((r >= quant.INT32_MIN) & (r <= quant.INT32_MAX))
    return np.where(bad, quant.INT32_MIN, np.where(bad, 0, r).astype(np.int64))


def _layer_norm_float(x: np.ndarray, w: np.ndarray, bias: np.ndarray, ln_scale: np.float32,
                      bias_scale: np.float32) -> np.ndarray:
    """ApplyLayerNormFloat on int16 rows: mean and variance in float32 (E[x^2] - mean^2), the
    inverse standard deviation 1 / sqrtf (the float overload: a double sqrt differs, measured),
    weights and bias in float32, out in Q3.12."""
    n = _F32(x.shape[-1])
    xf = x.astype(_F32)
    mean = _sequential_sum(xf) / n
    variance = _sequential_sum(xf * xf) / n - mean * mean
    with np.errstate(invalid="ignore", divide="ignore"):
        inv = np.where(variance == 0, _F32(1.0 / np.sqrt(1e-8)), _F32(1) / np.sqrt(variance))
        normalized = (xf - mean[..., None]) * inv[..., None]
        weighted = normalized * np.asarray(w).astype(_F32) * ln_scale + np.asarray(bias).astype(_F32) * bias_scale
    return np.clip(_round_to_int32(weighted.astype(np.float64) * 4096.0), -32768, 32767)


# -- integer steps ------------------------------------------------------------------------------

def _matmul_int8(v: np.ndarray, zp: int, w: np.ndarray, ms: tuple[int, int], out_zp: int) -> np.ndarray:
    """MatrixBatchVectorMultiply: sum((v - zp) * w), rescaled to an int8 result at ``out_zp``."""
    acc = ((v - zp).astype(np.float64) @ w.T).astype(np.int64)
    return np.clip(_mbqm(acc, ms) + out_zp, -128, 127)


def _two_gate_add(xq: np.ndarray, hq: np.ndarray, p: dict[str, Any], g: str) -> np.ndarray:
    """TwoGateSaturatingAdd: both int8 matmul results rescaled to the gate sum's scale, added, int16."""
    total = _mbqm(xq - p["zp_x", g], p["sum_x", g]) + _mbqm(hq - p["zp_h", g], p["sum_h", g])
    return np.clip(total, -32768, 32767)


def _mul_q15(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """CwiseMul with shift 15: the rounded product, cast to int16."""
    return quant.wrap_int(quant.rounding_divide_by_pot(a * b, 15), 16)


def run_integer8(cell: _Cell, x: np.ndarray, h: np.ndarray, c: np.ndarray,
                 reverse: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """EvalInteger8x8_8 over time-major int8 ``x`` [T, B, n_input]: (outputs, h, c)."""
    p = cell.integer
    xs = np.asarray(x, np.int64)
    pre = {g: _matmul_int8(xs, p["in_zp"], cell.w_x[g], p["x", g], p["zp_x", g]) for g in _GATES8}
    h = np.asarray(h, np.int64)
    c = np.asarray(c, np.int64)
    sigmoid, tanh_gate, tanh_cell = _sigmoid_table(), _tanh_table(-12), _tanh_table(-15)
    out = np.empty((x.shape[0], x.shape[1], cell.n_output), np.int8)
    for t in _time_steps(x.shape[0], reverse):
        gate = {}
        for g in _GATES8:
            # the output gate's recurrent term is its zero point: LiteRT adds none (see the docstring)
            hq = (p["zp_h", g] if g == "o" else
                  _matmul_int8(h, p["state_zp"], cell.w_h[g], p["h", g], p["zp_h", g]))
            acc = _layer_norm_float(_two_gate_add(pre[g][t], hq, p, g), cell.ln[g], cell.bias[g],
                                    p["ln", g], p["ln_bias", g])
            gate[g] = _lookup(tanh_gate if g == "c" else sigmoid, acc)
        kept = _mul_q15(gate["f"], c)
        added = _mul_q15(32767 - gate["f"], gate["c"])
        c = np.clip(kept + added, -32768, 32767)
        if p["cell_clip"] > 0:
            c = np.clip(c, -p["cell_clip"], p["cell_clip"])
        hidden = _mul_q15(gate["o"], _lookup(tanh_cell, c))
        acc = (hidden.astype(np.float64) @ cell.proj_w.T).astype(np.int64) + np.asarray(cell.proj_b, np.int64)
        h = np.clip(quant.multiply_by_quantized_multiplier_int64(acc, *p["proj"]) + p["state_zp"], -128, 127)
        if p["proj_clip"] > 0:
            h = np.clip(h, -p["proj_clip"], p["proj_clip"])
        out[t] = h
    return out, h, c
