"""NNAPI's recurrent ops (``teflon_py.ops.nnapi_recurrent``): states in, new states out.

The cells are TFLite's (``lstm.run_direction``, ``rnn.rnn_float_steps``, ``rnn.svdf_features`` /
``svdf_output``, the integer LSTM of ``lstm_integer``); what differs is NNAPI's, as Android's
reference CPU implementation (frameworks/ml/nn/common/operations) computes it:

* the LSTM activation is applied as given (NONE: the identity, also on the cell state before the
  output gate, where LiteRT keeps the cell gate; 6: the sigmoid);
* LSTM's scratch buffer output is a workspace whose contents the spec leaves undefined (Android's
  tests ignore it): it is written with zeros;
* SVDF's state holds the memory shifted one step further than TFLite's: the newest feature goes
  into the last slot of each filter's memory, the output is computed, then every memory shifts
  left by one with a zero appended (so the last slot of a state input is never read);
* QUANTIZED_LSTM is TFLite's integer 8x8->16 LSTM with the four gates' matmul scales and the hidden
  state's quantization given as scalars, used as given with or without layer norm (as Android does;
  LiteRT fixes the gates at 2^-12 without layer norm). Where Android's QLSTM.cpp departs from
  TFLite's kernel and from the spec's equations we follow TFLite: Android adds the gate biases only
  inside layer normalization (without it they are ignored), takes the input and forget peepholes'
  cell state from its not yet written output buffer, and quantizes the projection clip with the
  projection weights' scale rather than the output's;
* QUANTIZED_16BIT_LSTM is TFLite's legacy quantized basic LSTM cell (reference_ops::LstmCell with
  4 state integer bits): one uint8 fully connected layer over [input, previous output] into Q3.12
  gates, gemmlowp fixed-point logistic/tanh, an int16 Q4.11 cell state. The spec pairs the
  input-to-X weights with the input and the recurrent-to-X weights with the previous output, but
  Android's reference (QuantizedLSTM.cpp, which its conformance tests encode) lays each gate's row
  out as [recurrent-to-X | input-to-X] against the concatenation [input, previous output], so column
  d of that row meets element d of the concatenation whatever the sizes: we compute that.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from teflon_py import quant
from teflon_py.fallback.lstm import _FULL, _FULL_LN, _gate_map, _Options, _Slots, _time_major, run_direction
from teflon_py.fallback.lstm_integer import IntegerScales
from teflon_py.fallback.recurrent_shared import eigen_logistic, eigen_tanh
from teflon_py.fallback.registry import Node, register
from teflon_py.fallback.rnn import rnn_float_steps, svdf_features, svdf_output
from teflon_py.ops.common import Act, FusedActivation

_F32 = np.float32

#: NNAPI_BIDIRECTIONAL_SEQUENCE_LSTM's two directions: NNAPI's operand positions, the layer-norm
#: weights (NNAPI's 53-60) following the 48 others
_BIDI_FW = _Slots(_FULL.w_x, _FULL.w_h, _FULL.w_c, _FULL.bias, 16, 17, 35, 36, ln=_gate_map(48), w_aux=_gate_map(40))
_BIDI_BW = _Slots(_gate_map(18), _gate_map(22), {"i": 26, "f": 27, "o": 28}, _gate_map(29), 33, 34, 37, 38,
                  ln=_gate_map(52), w_aux=_gate_map(44))

_LSTM_ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "none": lambda x: x,
    "relu": lambda x: np.maximum(x, _F32(0)),
    "relu6": lambda x: np.clip(x, _F32(0), _F32(6)),
    "tanh": eigen_tanh,
    "sigmoid": lambda x: eigen_logistic(x),
}
_FUSED = {"none": Act.NONE, "relu": Act.RELU, "relu1": Act.RELU_N1_TO_1, "relu6": Act.RELU6}


def _lstm_options(node: Node) -> _Options:
    a = node.attrs
    if a.activation not in _LSTM_ACTIVATIONS:
        raise node.error(f"LSTM activation {a.activation!r} is not computed")
    return _Options(FusedActivation.of(Act.TANH), float(_F32(a.cell_clip)), float(_F32(a.proj_clip)), False,
                    cell_activation=_LSTM_ACTIVATIONS[a.activation])


def _fused(node: Node) -> FusedActivation:
    if node.attrs.activation not in _FUSED:
        raise node.error(f"activation {node.attrs.activation!r} is not a FuseCode")
    return FusedActivation.of(_FUSED[node.attrs.activation])


def _float_input(node: Node, x: np.ndarray) -> np.ndarray:
    if np.dtype(x.dtype) != np.float32:
        raise node.error(f"float32 input expected, got {x.dtype}")
    return x


# -- LSTMs ------------------------------------------------------------------------------------------

@register("NNAPI_LSTM")
def nnapi_lstm(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """One step: (scratch buffer, output state, cell state, output)."""
    x = _float_input(node, inputs[0])
    out, h, c = run_direction(node, inputs, _FULL_LN, "cell", x[None], None, False, opts=_lstm_options(node))
    return [np.zeros(node.outputs[0].shape, _F32), h, c, out[0]]


@register("NNAPI_UNIDIRECTIONAL_SEQUENCE_LSTM")
def nnapi_unidirectional_sequence_lstm(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The sequence's outputs, and with ``state_outputs`` the last step's output and cell states."""
    tm = bool(node.attrs.time_major)
    x = _time_major(_float_input(node, inputs[0]), tm)
    out, h, c = run_direction(node, inputs, _FULL_LN, "cell", x, None, False, tm, opts=_lstm_options(node))
    result = [np.ascontiguousarray(_time_major(out, tm))]
    return result + [h, c] if node.attrs.state_outputs else result


@register("NNAPI_BIDIRECTIONAL_SEQUENCE_LSTM")
def nnapi_bidirectional_sequence_lstm(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Forward and backward (reversed in time) passes. Auxiliary input with auxiliary weights feeds
    both cells (cross linking); without weights it is the backward cell's input (parallel linking)."""
    a = node.attrs
    tm = bool(a.time_major)
    x, aux = _float_input(node, inputs[0]), inputs[39]
    cross = inputs[41] is not None
    bw_x = aux if aux is not None and not cross else x
    aux_tm = _time_major(aux, tm) if cross else None
    opts = _lstm_options(node)
    fw, fw_h, fw_c = run_direction(node, inputs, _BIDI_FW, "fw", _time_major(x, tm), aux_tm, False, tm, opts=opts)
    bw, bw_h, bw_c = run_direction(node, inputs, _BIDI_BW, "bw", _time_major(bw_x, tm), aux_tm, True, tm,
                                   opts=_lstm_options(node))
    outs = [fw, bw] if not a.merge_outputs else [np.concatenate([fw, bw], axis=-1)]
    result = [np.ascontiguousarray(_time_major(o, tm)) for o in outs]
    return result + [fw_h, fw_c, bw_h, bw_c] if a.state_outputs else result


@register("NNAPI_QUANTIZED_LSTM")
def nnapi_quantized_lstm(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """One step of the int8 x int8 -> int16-cell LSTM: (output state, cell state, output), with the
    gate and hidden quantization from the op's scalars."""
    a = node.attrs
    if np.dtype(inputs[0].dtype) != np.int8:
        raise node.error(f"int8 input expected, got {inputs[0].dtype}")
    scales = IntegerScales(tuple(a.gate_scales), a.hidden_scale, a.hidden_zero_point)
    opts = _Options(FusedActivation.of(Act.TANH), a.cell_clip, a.proj_clip, False)
    out, h, c = run_direction(node, inputs, _FULL_LN, "cell", inputs[0][None], None, False, opts=opts,
                              scales=scales)
    return [h.astype(np.int8), c.astype(np.int16), out[0]]


@register("NNAPI_QUANTIZED_16BIT_LSTM")
def nnapi_quantized_16bit_lstm(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """(cell state, output): each gate's uint8 fully connected layer over the input and the previous
    output (both zero point 128) into Q3.12, then the fixed-point cell (see the module docstring)."""
    x, c_prev, h_prev = inputs[0], inputs[13], inputs[14]
    w_t, b_t = node.inputs[1], node.inputs[9]
    m, s = node.memo("accum", lambda: quant.quantize_multiplier(np.float64(4096) * np.float64(_F32(b_t.scale))))
    xs = np.concatenate([np.asarray(x, np.int64), np.asarray(h_prev, np.int64)], axis=1) - 128
    acc = {}
    for g, (wx, wh, b) in zip("ifco", ((1, 5, 9), (2, 6, 10), (3, 7, 11), (4, 8, 12))):
        # Android's row layout [recurrent | input] against [input, previous output] (module docstring)
        w = np.concatenate([np.asarray(inputs[wh], np.int64), np.asarray(inputs[wx], np.int64)], axis=1)
        dot = (xs.astype(np.float64) @ (w - w_t.zero_point).T.astype(np.float64)).astype(np.int64)
        total = quant.wrap_int(dot + np.asarray(inputs[b], np.int64))
        acc[g] = np.clip(quant.multiply_by_quantized_multiplier(total, m, s), quant.INT16_MIN, quant.INT16_MAX)
    srdhm = quant.saturating_rounding_doubling_high_mul_int16
    i, f, o = (quant.logistic_int16(acc[g], 3) for g in "ifo")
    g_ = quant.tanh_gemmlowp_int16(acc["c"], 3)
    kept = srdhm(f, np.asarray(c_prev, np.int64))  # F0 x Q4.11 -> Q4.11
    added = quant.rounding_divide_by_pot(srdhm(i, g_), 4)  # Rescale<4> of the F0 product
    c = np.clip(kept + added, quant.INT16_MIN, quant.INT16_MAX)
    c3 = quant.saturating_rounding_multiply_by_pot(c, 1, bits=16)  # Rescale<3>
    h16 = srdhm(o, quant.tanh_gemmlowp_int16(c3, 3))
    h = np.clip(quant.rounding_divide_by_pot(h16, 8), -128, 127) + 128
    return [c.astype(np.int16), h.astype(np.uint8)]


# -- RNNs and SVDF ----------------------------------------------------------------------------------

@register("NNAPI_RNN")
def nnapi_rnn(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """One step: (hidden state, output), both the new hidden state."""
    x, w, r, b, h = inputs
    out, h = rnn_float_steps(_float_input(node, x)[None], w, r, b, h, _fused(node))
    return [h, out[0]]


@register("NNAPI_UNIDIRECTIONAL_SEQUENCE_RNN")
def nnapi_unidirectional_sequence_rnn(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    tm = bool(node.attrs.time_major)
    x, w, r, b, h = inputs
    out, h = rnn_float_steps(_time_major(_float_input(node, x), tm), w, r, b, h, _fused(node))
    result = [np.ascontiguousarray(_time_major(out, tm))]
    return result + [h] if node.attrs.state_outputs else result


@register("NNAPI_BIDIRECTIONAL_SEQUENCE_RNN")
def nnapi_bidirectional_sequence_rnn(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """Forward and backward passes; the auxiliary input as in NNAPI_BIDIRECTIONAL_SEQUENCE_LSTM."""
    a = node.attrs
    tm = bool(a.time_major)
    x, aux, fw_aux_w, bw_aux_w = _float_input(node, inputs[0]), inputs[9], inputs[10], inputs[11]
    cross = fw_aux_w is not None
    bw_x = aux if aux is not None and not cross else x
    aux_tm = _time_major(aux, tm) if cross else None
    act = _fused(node)
    fw, fw_h = rnn_float_steps(_time_major(x, tm), *inputs[1:5], act, aux_tm, fw_aux_w)
    bw, bw_h = rnn_float_steps(_time_major(bw_x, tm), *inputs[5:9], act, aux_tm, bw_aux_w, reverse=True)
    outs = [fw, bw] if not a.merge_outputs else [np.concatenate([fw, bw], axis=-1)]
    result = [np.ascontiguousarray(_time_major(o, tm)) for o in outs]
    return result + [fw_h, bw_h] if a.state_outputs else result


@register("NNAPI_SVDF")
def nnapi_svdf(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """(state out, output) in NNAPI's state convention (see the module docstring)."""
    x, wf, wt, bias, state = inputs
    batch, filters, memory = x.shape[0], wf.shape[0], wt.shape[1]
    state = np.asarray(state, _F32).reshape(batch, filters, memory)
    working = np.concatenate([state[:, :, :-1], svdf_features(_float_input(node, x), wf)[:, :, None]], axis=2)
    out = svdf_output(working, np.asarray(wt, _F32), bias, filters // node.attrs.rank, _fused(node))
    shifted = np.concatenate([working[:, :, 1:], np.zeros((batch, filters, 1), _F32)], axis=2)
    return [shifted.reshape(batch, filters * memory), out]
