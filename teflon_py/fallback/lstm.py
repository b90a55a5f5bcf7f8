"""LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM: TFLite's ``lstm_eval`` in NumPy.

Three kernels, chosen as LiteRT chooses them, by the weight and input types:

* float: float32 weights and activations (``EvalFloat``);
* hybrid: int8 weights, float32 activations (``EvalHybrid``): every step quantizes its input rows
  and the output state row by row (``BatchQuantizeFloats``, symmetric or asymmetric), multiplies
  in integers and rescales in float32;
* integer: int8 input and weights, int16 cell state, five ``intermediates`` carrying the gate
  and hidden quantization (``EvalInteger8x8_16``); gemmlowp int16 sigmoid/tanh;
* integer 8x8->8 (LSTM only): twelve ``intermediates``, int8 matmul results, float layer norm and
  activations on int16 values (``EvalInteger8x8_8``, in ``lstm_integer8``).

Options as ``lstm_eval`` supports them: CIFG (no input gate), peephole, projection (+ bias,
clip), layer norm, cell clip, diagonal (1-D) recurrent weights (float UNIDIRECTIONAL only), the
auxiliary input of the bidirectional op. One Python loop over time steps; the batch rows of a step
run together (TFLite's batch-major loop gives the same numbers: rows are independent). The state
operands are variable tensors: the final states go back through ``node.context.assign`` so they
persist across invokes, as in TFLite.

Bit-exactness beyond the integer kernel: the hybrid kernel is bit-exact with LiteRT's x86 build
(its float steps decide the next step's quantization, so they must be): the gate sigmoid and the
tanh are Eigen's float approximations (``eigen_logistic``, ``eigen_tanh``; the few sigmoid elements
Eigen computes unvectorised, where LiteRT's scratch is not 16-byte aligned, use glibc's expf),
input quantization is LiteRT's NEON kernel through NEON_2_SSE (``quant.symmetric_quantize_rows``)
and layer norm sums left to right. The float kernel differs from LiteRT only by its GEMM's
summation order (~1e-7 relative).

LiteRT quirks kept on purpose: with activation NONE the output is
``output_gate * cell_gate`` (``CalculateLstmOutputFloat`` leaves its scratch, the cell gate, in
place of ``activation(cell_state)``); the integer peephole walks ``n_output`` (not ``n_cell``)
elements per batch row; the integer projection subtracts the hidden zero point before the matmul
and adds ``hidden_zp * row_sums`` back in the bias.

The shared float maths and op helpers live in ``recurrent_shared``, the integer kernel in
``lstm_integer``; this module reads the operands, runs the float and hybrid steps and registers
the ops.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.fallback.lstm_integer import IntegerScales, _integer_params, _run_integer
from teflon_py.fallback.lstm_integer8 import integer8_params, run_integer8
from teflon_py.fallback.recurrent_shared import (
    _clip,
    _mean_stddev_normalization,
    _time_steps,
    apply_activation,
    assign_state,
    eigen_logistic,
    eigen_scalar_elements,
    hybrid_matmul,
    op_options,
    quantize_rows,
)
from teflon_py.fallback.registry import Node, register
from teflon_py.ops.common import Act, FusedActivation

_F32 = np.float32
_GATES = ("i", "f", "c", "o")


@dataclass(frozen=True)
class _Slots:
    """Operand positions of one LSTM direction inside its op (missing keys: not an operand)."""

    w_x: dict[str, int]
    w_h: dict[str, int]
    w_c: dict[str, int]
    bias: dict[str, int]
    proj_w: int
    proj_b: int
    h: int
    c: int
    ln: dict[str, int] = field(default_factory=dict)
    w_aux: dict[str, int] = field(default_factory=dict)


def _gate_map(first: int) -> dict[str, int]:
    return dict(zip(_GATES, range(first, first + 4)))


_FULL = _Slots(_gate_map(1), _gate_map(5), {"i": 9, "f": 10, "o": 11}, _gate_map(12), 16, 17, 18, 19)
_FULL_LN = _Slots(_FULL.w_x, _FULL.w_h, _FULL.w_c, _FULL.bias, 16, 17, 18, 19, _gate_map(20))
_BIDI_FW = _Slots(_FULL.w_x, _FULL.w_h, _FULL.w_c, _FULL.bias, 16, 17, 35, 36, w_aux=_gate_map(40))
_BIDI_BW = _Slots(_gate_map(18), _gate_map(22), {"i": 26, "f": 27, "o": 28}, _gate_map(29), 33, 34, 37, 38,
                  w_aux=_gate_map(44))


@dataclass
class _Cell:
    """One direction's constants, derived once per node (LiteRT's Prepare plus its row sums)."""

    kind: str  # "float" | "hybrid" | "integer" (8x8->16) | "integer8" (8x8->8)
    gates: tuple[str, ...]  # computed gates: i (unless CIFG), f, c, o
    n_cell: int
    n_output: int
    w_x: dict[str, np.ndarray]  # float32 [n_cell, n_input]; hybrid/integer: float64 holding int8
    w_h: dict[str, np.ndarray]  # [n_cell, n_output], or float32 [n_cell] when diagonal
    w_aux: dict[str, np.ndarray]
    w_c: dict[str, np.ndarray]  # peephole: float32 (hybrid: recovered scale * int8), integer: int64
    ln: dict[str, np.ndarray]
    bias: dict[str, np.ndarray]
    proj_w: np.ndarray | None
    proj_b: np.ndarray | None
    diagonal: bool = False
    scale: dict[tuple[str, str], np.float32] = field(default_factory=dict)  # hybrid weight scales
    row_sums: dict[tuple[str, str], np.ndarray] = field(default_factory=dict)  # int8 weight row sums
    integer: dict[str, Any] = field(default_factory=dict)  # integer kernel parameters

    @property
    def cifg(self) -> bool:
        return "i" not in self.gates


# -- reading the operands -----------------------------------------------------------------------

def _kind(node: Node, x: ir.Tensor, w: ir.Tensor) -> str:
    """float / hybrid / integer, as LiteRT dispatches on the weight and input types."""
    wt, xt = np.dtype(w.dtype), np.dtype(x.dtype)
    if wt == np.float32 and xt == np.float32:
        return "float"
    if wt == np.int8 and xt == np.float32:
        return "hybrid"
    if wt == np.int8 and xt == np.int8:
        return "integer"
    raise node.error(f"{xt} input with {wt} weights is not supported (float32, hybrid int8 weights, "
                     f"or int8 8x8->16 integer)")


def _constant_operands(node: Node, slots: _Slots) -> bool:
    """Whether every weight of this direction is a constant (its derived values can be memoised)."""
    positions = [*slots.w_x.values(), *slots.w_h.values(), *slots.w_c.values(), *slots.bias.values(),
                 *slots.ln.values(), *slots.w_aux.values(), slots.proj_w, slots.proj_b]
    return all(node.inputs[k] is None or node.inputs[k].is_constant for k in positions if k < len(node.inputs))


def _operand(node: Node, inputs: Sequence[np.ndarray | None], k: int | None) -> np.ndarray | None:
    if k is None or k >= len(inputs):
        return None
    return inputs[k]


def _read_cell(node: Node, inputs: Sequence[np.ndarray | None], slots: _Slots,
               scales: IntegerScales | None = None) -> _Cell:
    """The direction's weights in the form its kernel multiplies with, and the shapes they imply
    (``scales``: the integer kernel's gate and hidden quantization, where not from intermediates)."""
    if any(t is not None and t.sparsity is not None for t in node.inputs[1:]):
        raise node.error("sparse LSTM weights are not supported")
    x_t, wo_t = node.inputs[0], node.inputs[slots.w_x["o"]]
    kind = _kind(node, x_t, wo_t)
    w_x_o = inputs[slots.w_x["o"]]
    n_cell = w_x_o.shape[0]
    cifg = _operand(node, inputs, slots.w_x["i"]) is None
    gates = ("f", "c", "o") if cifg else _GATES
    w_h_o = inputs[slots.w_h["o"]]
    diagonal = w_h_o.ndim == 1
    if diagonal and kind != "float":
        raise node.error("diagonal (1-D) recurrent weights are only supported with float32 weights")
    n_output = n_cell if diagonal else w_h_o.shape[1]
    peephole = _operand(node, inputs, slots.w_c["o"]) is not None
    layer_norm = bool(slots.ln) and _operand(node, inputs, slots.ln["f"]) is not None
    has_aux = bool(slots.w_aux) and _operand(node, inputs, slots.w_aux["f"]) is not None
    proj_w = _operand(node, inputs, slots.proj_w)
    proj_b = _operand(node, inputs, slots.proj_b)

    def weight(k: int) -> np.ndarray:
        w = inputs[k]
        return np.asarray(w, _F32) if kind == "float" else np.asarray(w, np.float64)

    cell = _Cell(
        kind, gates, n_cell, n_output,
        w_x={g: weight(slots.w_x[g]) for g in gates},
        w_h={g: weight(slots.w_h[g]) for g in gates},
        w_aux={g: weight(slots.w_aux[g]) for g in gates} if has_aux else {},
        w_c={},
        ln={g: np.asarray(inputs[slots.ln[g]]) for g in gates} if layer_norm else {},
        bias={g: np.asarray(inputs[slots.bias[g]]) for g in gates},
        proj_w=None if proj_w is None else weight(slots.proj_w),
        proj_b=None if proj_b is None else np.asarray(proj_b),
        diagonal=diagonal,
    )
    if kind == "float" and diagonal:
        cell.w_h = {g: np.asarray(inputs[slots.w_h[g]], _F32) for g in gates}
    if peephole:
        for g in ("i", "f", "o"):
            if g in gates:
                w = inputs[slots.w_c[g]]
                if kind == "hybrid":  # VectorScalarMultiply: scale * int8, in float32
                    w = _F32(node.inputs[slots.w_c[g]].scale) * np.asarray(w, _F32)
                cell.w_c[g] = np.asarray(w, np.int64 if kind == "integer" else _F32)
    if kind != "float":
        _integer_weight_sums(node, slots, cell)
    if kind == "hybrid":
        _hybrid_scales(node, slots, cell)
    if kind == "integer" and scales is None and len(node.op.intermediates) == 12:
        cell.kind = "integer8"
        cell.integer = integer8_params(node, slots, cell)
    elif kind == "integer":
        cell.integer = _integer_params(node, slots, cell, scales)
    return cell


def _integer_weight_sums(node: Node, slots: _Slots, cell: _Cell) -> None:
    """Row sums of the int8 weights (ReductionSumVector), for the zero-point corrections."""
    for g in cell.gates:
        cell.row_sums["x", g] = cell.w_x[g].sum(axis=1).astype(np.int64)
        cell.row_sums["h", g] = cell.w_h[g].sum(axis=1).astype(np.int64)
        if cell.w_aux:
            cell.row_sums["aux", g] = cell.w_aux[g].sum(axis=1).astype(np.int64)
    if cell.proj_w is not None:
        cell.row_sums["proj", ""] = cell.proj_w.sum(axis=1).astype(np.int64)


def _hybrid_scales(node: Node, slots: _Slots, cell: _Cell) -> None:
    """The float32 scale of each int8 weight matrix (per-tensor, as GetTensorScale reads it)."""
    for g in cell.gates:
        cell.scale["x", g] = _F32(node.inputs[slots.w_x[g]].scale)
        cell.scale["h", g] = _F32(node.inputs[slots.w_h[g]].scale)
        if cell.w_aux:
            cell.scale["aux", g] = _F32(node.inputs[slots.w_aux[g]].scale)
    if cell.proj_w is not None:
        cell.scale["proj", ""] = _F32(node.inputs[slots.proj_w].scale)


def slots_for(n_inputs: int) -> _Slots:
    """The operand slots of LSTM / UNIDIRECTIONAL_SEQUENCE_LSTM with ``n_inputs`` (20 or 24) operands."""
    return _FULL_LN if n_inputs == 24 else _FULL


def read_cell(node: Node, inputs: Sequence[np.ndarray | None], slots: _Slots) -> _Cell:
    """The Prepare another backend reuses (the OpenCL lowering): ``_read_cell`` with the
    intermediates' scales, so its weights and integer parameters are this kernel's."""
    return _read_cell(node, inputs, slots)


def _cell(node: Node, inputs: Sequence[np.ndarray | None], slots: _Slots, key: str,
          scales: IntegerScales | None = None) -> _Cell:
    if _constant_operands(node, slots):
        return node.memo(key, lambda: _read_cell(node, inputs, slots, scales))
    return _read_cell(node, inputs, slots, scales)


# -- float and hybrid steps ---------------------------------------------------------------------

@dataclass
class _Options:
    """The op options one direction runs with, and which sigmoid elements Eigen computes one by one."""

    activation: FusedActivation
    cell_clip: float
    proj_clip: float
    asymmetric: bool
    scalar: dict[str, np.ndarray] = field(default_factory=dict)
    #: an activation applied as given to the cell gate and the cell state, in place of
    #: ``activation`` and its NONE quirk (NNAPI's LSTMs: NONE is the identity, 6 is the sigmoid)
    cell_activation: Callable[[np.ndarray], np.ndarray] | None = None


def _options(node: Node) -> _Options:
    o = op_options(node)
    return _Options(o.activation, float(_F32(o.cell_clip)), float(_F32(o.proj_clip)), bool(o.asymmetric_quantize_inputs))


def _finish_gate(cell: _Cell, g: str, acc: np.ndarray, c: np.ndarray, opts: _Options) -> np.ndarray:
    """Peephole, layer norm (+ bias), activation: the tail of CalculateLstmGate{Float,Hybrid}."""
    if g in cell.w_c:
        acc = acc + cell.w_c[g] * c
    if cell.ln:
        acc = _mean_stddev_normalization(acc) * cell.ln[g] + cell.bias[g]
    if g != "c":
        return eigen_logistic(acc, opts.scalar.get(g))
    return opts.cell_activation(acc) if opts.cell_activation else apply_activation(acc, opts.activation)


def _update_cell(cell: _Cell, gate: dict[str, np.ndarray], c: np.ndarray, opts: _Options) -> np.ndarray:
    """UpdateLstmCellFloat: forget * cell + input * cell_gate (CIFG: input = 1 - forget), clipped."""
    i = _F32(1) - gate["f"] if cell.cifg else gate["i"]
    return _clip(gate["f"] * c + gate["c"] * i, opts.cell_clip)


def _hidden(gate: dict[str, np.ndarray], c: np.ndarray, opts: _Options) -> np.ndarray:
    """output_gate * activation(cell); with activation NONE LiteRT multiplies the cell gate instead."""
    if opts.cell_activation is not None:
        return gate["o"] * opts.cell_activation(c)
    return gate["o"] * (gate["c"] if opts.activation.kind == Act.NONE else apply_activation(c, opts.activation))


def _run_float(cell: _Cell, x: np.ndarray, aux: np.ndarray | None, h: np.ndarray, c: np.ndarray,
               reverse: bool, opts: _Options) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """EvalFloat over time-major ``x`` [T, B, n_input]: (outputs [T, B, n_output], h, c)."""
    pre = {}
    for g in cell.gates:
        acc = x @ cell.w_x[g].T
        if aux is not None and cell.w_aux:
            acc = acc + aux @ cell.w_aux[g].T
        pre[g] = acc if cell.ln else cell.bias[g] + acc
    out = np.empty((x.shape[0], x.shape[1], cell.n_output), _F32)
    for t in _time_steps(x.shape[0], reverse):
        gate = {}
        for g in cell.gates:
            if g == "o":
                c = _update_cell(cell, gate, c, opts)
            rec = h * cell.w_h[g] if cell.diagonal else h @ cell.w_h[g].T
            gate[g] = _finish_gate(cell, g, pre[g][t] + rec, c, opts)
        hidden = _hidden(gate, c, opts)
        if cell.proj_w is not None:
            hidden = hidden @ cell.proj_w.T
            if cell.proj_b is not None:
                hidden = cell.proj_b + hidden
            hidden = _clip(hidden, opts.proj_clip)
        h = out[t] = hidden
    return out, h, c


def _run_hybrid(cell: _Cell, x: np.ndarray, aux: np.ndarray | None, h: np.ndarray, c: np.ndarray,
                reverse: bool, opts: _Options) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """EvalHybrid over time-major ``x``: inputs quantized per row for all steps at once, the output
    state per step; gate = bias + x-term + aux-term + h-term (+ peephole), in float32."""
    terms = {g: [] for g in cell.gates}
    sources = [("x", x)] + ([("aux", aux)] if aux is not None and cell.w_aux else [])
    for name, v in sources:
        q, sf, zp = quantize_rows(v, opts.asymmetric)
        w = cell.w_x if name == "x" else cell.w_aux
        for g in cell.gates:
            terms[g].append(hybrid_matmul(q, sf, zp, w[g], cell.scale[name, g], cell.row_sums[name, g]))
    out = np.empty((x.shape[0], x.shape[1], cell.n_output), _F32)
    for t in _time_steps(x.shape[0], reverse):
        qh, sfh, zph = quantize_rows(h, opts.asymmetric)
        gate = {}
        for g in cell.gates:
            if g == "o":
                c = _update_cell(cell, gate, c, opts)
            acc = np.zeros_like(h, shape=(h.shape[0], cell.n_cell)) if cell.ln else cell.bias[g]
            for term in terms[g]:
                acc = acc + term[t]
            acc = acc + hybrid_matmul(qh, sfh, zph, cell.w_h[g], cell.scale["h", g], cell.row_sums["h", g])
            gate[g] = _finish_gate(cell, g, acc, c, opts)
        hidden = _hidden(gate, c, opts)
        if cell.proj_w is not None:
            qp, sfp, zpp = quantize_rows(hidden, opts.asymmetric)
            proj = hybrid_matmul(qp, sfp, zpp, cell.proj_w, cell.scale["proj", ""], cell.row_sums["proj", ""])
            hidden = _clip(proj if cell.proj_b is None else cell.proj_b + proj, opts.proj_clip)
        h = out[t] = hidden
    return out, h, c


# -- driving one direction ----------------------------------------------------------------------

def _scalar_sigmoid(cell: _Cell, batch: int, time_major: bool) -> dict[str, np.ndarray]:
    """Per sigmoid gate, the [batch, n_cell] elements LiteRT's Eigen logistic computes one by one
    (``eigen_scalar_elements``): its scratch holds the gates at multiples of batch * n_cell floats
    (input, cell, forget, output; CIFG: cell, forget, output) and activates a gate at once
    (time-major) or row by row (batch-major)."""
    order = ("c", "f", "o") if cell.cifg else ("i", "c", "f", "o")
    n, size = cell.n_cell, batch * cell.n_cell
    masks = {}
    for g in ("i", "f", "o"):
        if g in order:
            base = order.index(g) * size
            if time_major:
                masks[g] = eigen_scalar_elements(size, base).reshape(batch, n)
            else:
                masks[g] = eigen_scalar_elements(n, base + n * np.arange(batch))
    return masks


def run_direction(node: Node, inputs: Sequence[np.ndarray | None], slots: _Slots, key: str, x: np.ndarray,
                  aux: np.ndarray | None, reverse: bool, time_major: bool = True, opts: _Options | None = None,
                  scales: IntegerScales | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run one direction over time-major ``x`` from the states at ``slots.h`` / ``slots.c``:
    (outputs [T, B, n_output], final output state, final cell state). ``opts``: the options to run
    with (default: the op's TFLite options); ``scales``: see ``_read_cell``."""
    cell = _cell(node, inputs, slots, key, scales)
    batch = x.shape[1]
    h_t, c_t = node.inputs[slots.h], node.inputs[slots.c]
    if h_t is None or c_t is None:
        raise node.error("the output state and cell state operands are required")
    h0, c0 = inputs[slots.h], inputs[slots.c]
    if h0 is None or h0.size != batch * cell.n_output or c0 is None or c0.size != batch * cell.n_cell:
        raise node.error(f"state sizes must be batch x n_output ({batch} x {cell.n_output}) and "
                         f"batch x n_cell ({batch} x {cell.n_cell})")
    h0, c0 = h0.reshape(batch, cell.n_output), c0.reshape(batch, cell.n_cell)
    opts = _options(node) if opts is None else opts
    if cell.kind == "integer":
        return _run_integer(cell, x, h0, c0, reverse, time_major)
    if cell.kind == "integer8":
        return run_integer8(cell, x, h0, c0, reverse)
    if cell.diagonal and opts.activation.kind == Act.NONE:
        raise node.error("diagonal recurrent weights with activation NONE are not supported")
    opts.scalar = _scalar_sigmoid(cell, batch, time_major)
    run = _run_float if cell.kind == "float" else _run_hybrid
    return run(cell, np.asarray(x, _F32), None if aux is None else np.asarray(aux, _F32),
               np.asarray(h0, _F32), np.asarray(c0, _F32), reverse, opts)


def _direction(node: Node, inputs: Sequence[np.ndarray | None], slots: _Slots, key: str, x: np.ndarray,
               aux: np.ndarray | None, reverse: bool, time_major: bool = True) -> np.ndarray:
    """Run one direction over time-major ``x`` and write its final states back; returns [T, B, n_output]."""
    out, h, c = run_direction(node, inputs, slots, key, x, aux, reverse, time_major)
    assign_state(node, slots.h, h)
    assign_state(node, slots.c, c)
    return out


def _time_major(x: np.ndarray, time_major: bool) -> np.ndarray:
    return x if time_major else np.swapaxes(x, 0, 1)


def _check_output(node: Node, out: np.ndarray) -> np.ndarray:
    dtype = np.dtype(node.outputs[0].dtype)
    if np.dtype(out.dtype) != dtype:
        raise node.error(f"output type {dtype} does not match the kernel's {out.dtype}")
    return out


# -- the ops ------------------------------------------------------------------------------------

@register("LSTM")
def lstm(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """LSTM (full kernel, 20 or 24 operands): one step over [batch, n_input]."""
    opts = op_options(node)
    if int(opts.kernel_type) != 0:
        raise node.error("the BASIC LSTM kernel (kernel_type 1) is not supported")
    if len(node.op.inputs) not in (20, 24) or len(node.outputs) != 1:
        raise node.error("the full LSTM kernel takes 20 or 24 inputs and one output")
    x = inputs[0]
    if x.ndim != 2:
        raise node.error(f"LSTM input must be [batch, n_input], got {x.shape}")
    slots = _FULL_LN if len(node.op.inputs) == 24 else _FULL
    return _check_output(node, _direction(node, inputs, slots, "cell", x[None], None, False)[0])


@register("UNIDIRECTIONAL_SEQUENCE_LSTM")
def unidirectional_sequence_lstm(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """UNIDIRECTIONAL_SEQUENCE_LSTM over [batch, time, n_input] (time_major: [time, batch, n_input])."""
    if len(node.op.inputs) not in (20, 24):
        raise node.error("UNIDIRECTIONAL_SEQUENCE_LSTM takes 20 or 24 inputs")
    x = inputs[0]
    if x.ndim != 3:
        raise node.error(f"input must be 3-D, got {x.shape}")
    time_major = bool(op_options(node).time_major)
    slots = _FULL_LN if len(node.op.inputs) == 24 else _FULL
    out = _direction(node, inputs, slots, "cell", _time_major(x, time_major), None, False, time_major)
    return _check_output(node, np.ascontiguousarray(_time_major(out, time_major)))


@register("BIDIRECTIONAL_SEQUENCE_LSTM")
def bidirectional_sequence_lstm(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """BIDIRECTIONAL_SEQUENCE_LSTM: a forward and a backward (reversed in time) pass; merge_outputs
    concatenates them along the last axis. Auxiliary input: with aux weights it feeds both cells
    (cross links); without, it is the backward cell's input."""
    opts = op_options(node)
    if len(node.op.inputs) != 48:
        raise node.error("BIDIRECTIONAL_SEQUENCE_LSTM takes 48 inputs")
    x = inputs[0]
    if x.ndim != 3 or np.dtype(x.dtype) != np.float32:
        raise node.error(f"input must be 3-D float32, got {x.dtype} {x.shape}")
    time_major = bool(opts.time_major)
    aux = inputs[39]
    use_aux_weights = inputs[41] is not None
    bw_x = aux if aux is not None and not use_aux_weights else x
    real_aux = aux if use_aux_weights else None
    if use_aux_weights and aux is None:
        raise node.error("auxiliary weights need an auxiliary input")
    xs = _time_major(x, time_major)
    aux_tm = None if real_aux is None else _time_major(real_aux, time_major)
    fw = _direction(node, inputs, _BIDI_FW, "fw", xs, aux_tm, False, time_major)
    bw = _direction(node, inputs, _BIDI_BW, "bw", _time_major(bw_x, time_major), aux_tm, True, time_major)
    if opts.merge_outputs:
        return [_check_output(node, np.ascontiguousarray(_time_major(np.concatenate([fw, bw], axis=-1),
                                                                      time_major)))]
    return [np.ascontiguousarray(_time_major(fw, time_major)), np.ascontiguousarray(_time_major(bw, time_major))]
