"""The recurrent operations: LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM,
QUANTIZED_LSTM, QUANTIZED_16BIT_LSTM, RNN, UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN
and SVDF.

NNAPI passes the states as inputs and returns the new states as outputs, where TFLite's recurrent
ops keep them in variable tensors; each becomes the op-layer op ``NNAPI_<name>``
(``teflon_py.ops.nnapi_recurrent``), whose kernels run TFLite's cell maths. The rules checked here
are the spec's (operand presence: CIFG, peephole, projection, layer norm all-or-none; shapes) and,
where the spec leaves them open, Android's reference implementation's.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py import ir
from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.nnapi_recurrent import NnapiRecurrentAttrs

FLOATS = {T.TENSOR_FLOAT32: 1, T.TENSOR_FLOAT16: 3}
SEQUENCE_FLOATS = {T.TENSOR_FLOAT32: 3, T.TENSOR_FLOAT16: 3}
#: NNAPI's LSTM activation codes (TfLiteFusedActivation's)
LSTM_ACTIVATIONS = {0: "none", 1: "relu", 3: "relu6", 4: "tanh", 6: "sigmoid"}
FUSE_CODES = {0: "none", 1: "relu", 2: "relu1", 3: "relu6"}

#: one LSTM direction's 17 weight operands by role (offsets from its first), as NNAPI orders them
GATES = ("input", "forget", "cell", "output")
W_X, W_H, BIAS, PROJ_W, PROJ_B = range(4), range(4, 8), range(11, 15), 15, 16


def _float_scalar(t: T) -> T:
    """The clip scalars' type: FLOAT16 with float16 tensors, else FLOAT32."""
    return T.FLOAT16 if t == T.TENSOR_FLOAT16 else T.FLOAT32


# -- signatures -------------------------------------------------------------------------------------

@signature(Op.LSTM)
def lstm_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, FLOATS)
    if s.n_in not in (23, 27):
        raise s.error(f"takes 23 inputs (27 with layer normalization), got {s.n_in}")
    s.expect([t] * 20 + [T.INT32, _float_scalar(t), _float_scalar(t)] + [t] * 4, [t] * 4, optional=4,
             level=3 if s.n_in == 27 else 1)


@signature(Op.UNIDIRECTIONAL_SEQUENCE_LSTM)
def unidirectional_lstm_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, SEQUENCE_FLOATS)
    if s.n_out not in (1, 3):
        raise s.error(f"takes 1 output (3 with the state outputs), got {s.n_out}")
    s.expect([t] * 20 + [T.INT32, _float_scalar(t), _float_scalar(t), T.BOOL] + [t] * 4, [t] * s.n_out,
             level=4 if s.n_out == 3 else 3)


@signature(Op.BIDIRECTIONAL_SEQUENCE_LSTM)
def bidirectional_lstm_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, SEQUENCE_FLOATS)
    if s.n_out not in (1, 2, 5, 6):
        raise s.error(f"takes 2 outputs (1 with merge_outputs; 4 more with the state outputs), got {s.n_out}")
    s.expect([t] * 48 + [T.INT32, _float_scalar(t), _float_scalar(t), T.BOOL, T.BOOL] + [t] * 8, [t] * s.n_out,
             level=4 if s.n_out > 2 else 3)


@signature(Op.QUANTIZED_LSTM)
def quantized_lstm_signature(s: Sig) -> None:
    q8, w8, q16 = T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM, T.TENSOR_QUANT16_SYMM
    s.supported(s.input_type(0), {q8: 4})
    s.expect([q8] + [w8] * 8 + [q16] * 3 + [T.TENSOR_INT32] * 4 + [w8, T.TENSOR_INT32, q8, q16] + [q16] * 4
             + [T.FLOAT32] * 6 + [T.INT32, T.FLOAT32], [q8, q16, q8], level=4)


@signature(Op.QUANTIZED_16BIT_LSTM)
def quantized_16bit_lstm_signature(s: Sig) -> None:
    u8 = T.TENSOR_QUANT8_ASYMM
    s.supported(s.input_type(0), {u8: 3})
    s.expect([u8] * 9 + [T.TENSOR_INT32] * 4 + [T.TENSOR_QUANT16_SYMM, u8], [T.TENSOR_QUANT16_SYMM, u8], level=3)


@signature(Op.RNN)
def rnn_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, FLOATS)
    s.expect([t] * 5 + [T.INT32], [t, t])


@signature(Op.UNIDIRECTIONAL_SEQUENCE_RNN)
def unidirectional_rnn_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, SEQUENCE_FLOATS)
    if s.n_out not in (1, 2):
        raise s.error(f"takes 1 output (2 with the hidden state output), got {s.n_out}")
    s.expect([t] * 5 + [T.INT32, T.INT32], [t] * s.n_out, level=4 if s.n_out == 2 else 3)


@signature(Op.BIDIRECTIONAL_SEQUENCE_RNN)
def bidirectional_rnn_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, SEQUENCE_FLOATS)
    if not 1 <= s.n_out <= 4:
        raise s.error(f"takes 2 outputs (1 with merge_outputs; 2 more with the state outputs), got {s.n_out}")
    s.expect([t] * 12 + [T.INT32, T.BOOL, T.BOOL], [t] * s.n_out, level=4 if s.n_out > 2 else 3)


@signature(Op.SVDF)
def svdf_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, FLOATS)
    s.expect([t] * 5 + [T.INT32, T.INT32], [t, t])


# -- shared rules -----------------------------------------------------------------------------------

def _require(c: Call, positions: Sequence[int]) -> None:
    for k in positions:
        if c.omitted(k):
            raise c.error("is required", k)


def _shape_is(c: Call, k: int, shape: Sequence[int], what: str) -> None:
    if tuple(c.shape(k)) != tuple(shape):
        raise c.error(f"{what} must have shape {list(shape)}, got {list(c.shape(k))}", k)


def _all_or_none(c: Call, positions: Sequence[int], what: str) -> bool:
    """Whether the operands are all present; BAD_DATA where only some are."""
    present = [not c.omitted(k) for k in positions]
    if any(present) and not all(present):
        missing = [k for k, p in zip(positions, present) if not p]
        raise c.error(f"the {what} are given together or not at all (input {missing[0]} is omitted)",
                      positions[present.index(True)])
    return all(present)


def _lstm_cell(c: Call, first: int, h: int, cell: int, ln: Sequence[int], batch: int, n_input: int
               ) -> tuple[int, int]:
    """Check one LSTM direction: its 17 weight operands from input ``first`` on, its state inputs
    ``h`` and ``cell``, its layer-norm weights ``ln``; returns (num_units, output_size)."""
    w = [first + k for k in range(17)]
    _require(c, [w[k] for k in (1, 2, 3, 5, 6, 7, 12, 13, 14)] + [h, cell])
    if c.rank(w[3]) != 2 or c.rank(w[7]) != 2:
        raise c.error("the input-to-output and recurrent-to-output weights must be 2-D", w[3])
    n_cell, n_output = c.shape(w[3])[0], c.shape(w[7])[1]
    cifg = not _all_or_none(c, [w[0], w[4], w[11]], "input-to-input and recurrent-to-input weights and the "
                                                     "input gate bias (absent: CIFG)")
    for k in W_X:
        if not c.omitted(w[k]):
            _shape_is(c, w[k], (n_cell, n_input), f"the input-to-{GATES[k]} weights")
    for k in W_H:
        if not c.omitted(w[k]):
            _shape_is(c, w[k], (n_cell, n_output), f"the recurrent-to-{GATES[k - 4]} weights")
    for k in BIAS:
        if not c.omitted(w[k]):
            _shape_is(c, w[k], (n_cell,), f"the {GATES[k - 11]} gate bias")
    peephole = [w[8], w[9], w[10]] if not cifg else [w[9], w[10]]
    if cifg and not c.omitted(w[8]):
        raise c.error("with CIFG (no input gate) the cell-to-input weights must be omitted", w[8])
    if _all_or_none(c, peephole, "peephole (cell-to-gate) weights"):
        for k in peephole:
            _shape_is(c, k, (n_cell,), "peephole weights")
    if not c.omitted(w[PROJ_W]):
        _shape_is(c, w[PROJ_W], (n_output, n_cell), "the projection weights")
        if not c.omitted(w[PROJ_B]):
            _shape_is(c, w[PROJ_B], (n_output,), "the projection bias")
    else:
        if not c.omitted(w[PROJ_B]):
            raise c.error("a projection bias needs projection weights", w[PROJ_B])
        if n_output != n_cell:
            raise c.error(f"without projection the output size ({n_output}) must equal num_units ({n_cell})",
                          w[7])
    if ln:
        if cifg and not c.omitted(ln[0]):
            raise c.error("with CIFG (no input gate) the input layer normalization weights must be omitted", ln[0])
        if _all_or_none(c, ln[1:] if cifg else ln, "layer normalization weights"):
            for k in ln[1:] if cifg else ln:
                _shape_is(c, k, (n_cell,), "layer normalization weights")
    _shape_is(c, h, (batch, n_output), "the output state")
    _shape_is(c, cell, (batch, n_cell), "the cell state")
    return n_cell, n_output


def _lstm_inputs(c: Call, first: int, h: int, cell: int, ln: Sequence[int]) -> list[int]:
    """One direction's op-layer inputs: the 17 weights, the states, the 4 layer-norm weights."""
    return ([c.optional_input(first + k) for k in range(17)] + [c.input(h), c.input(cell)]
            + [c.optional_input(k) for k in ln])


def _clip(c: Call, k: int) -> float:
    value = float(c.scalar(k, 0.0))
    if not value >= 0:
        raise c.error(f"a clipping threshold must be >= 0, got {value}", k)
    return value


def _lstm_activation(c: Call, k: int) -> str:
    code = c.scalar(k)
    if code not in LSTM_ACTIVATIONS:
        raise c.error(f"activation {code} is not one of 0 (none), 1 (relu), 3 (relu6), 4 (tanh), 6 (sigmoid)", k)
    return LSTM_ACTIVATIONS[code]


def _fuse_code(c: Call, k: int) -> str:
    code = c.scalar(k, 0)
    if code not in FUSE_CODES:
        raise c.error(f"{code} is not a FuseCode (0 to 3)", k)
    return FUSE_CODES[code]


def _sequence(c: Call, time_major: bool) -> tuple[int, int, int]:
    """(max_time, batch, input_size) of the 3-D sequence input 0."""
    if c.rank(0) != 3:
        raise c.error(f"must be 3-D, got rank {c.rank(0)}", 0)
    a, b, n = c.shape(0)
    return (a, b, n) if time_major else (b, a, n)


def _outputs(c: Call) -> list[int]:
    return [c.output(k) for k in range(c.n_out)]


# -- LSTMs ------------------------------------------------------------------------------------------

@lowering(Op.LSTM)
def lower_lstm(c: Call) -> None:
    if c.rank(0) != 2:
        raise c.error(f"must be 2-D [batch_size, input_size], got rank {c.rank(0)}", 0)
    batch, n_input = c.shape(0)
    ln = [23, 24, 25, 26] if c.n_in == 27 else []
    _lstm_cell(c, 1, 18, 19, ln, batch, n_input)
    attrs = NnapiRecurrentAttrs(activation=_lstm_activation(c, 20), cell_clip=_clip(c, 21), proj_clip=_clip(c, 22))
    inputs = [c.input(0)] + _lstm_inputs(c, 1, 18, 19, ln or [])
    inputs += [ir.NO_TENSOR] * (24 - len(inputs))
    c.emit("NNAPI_LSTM", attrs, inputs, _outputs(c))


@lowering(Op.UNIDIRECTIONAL_SEQUENCE_LSTM)
def lower_unidirectional_lstm(c: Call) -> None:
    time_major = bool(c.scalar(23))
    _, batch, n_input = _sequence(c, time_major)
    ln = [24, 25, 26, 27]
    _lstm_cell(c, 1, 18, 19, ln, batch, n_input)
    attrs = NnapiRecurrentAttrs(activation=_lstm_activation(c, 20), cell_clip=_clip(c, 21), proj_clip=_clip(c, 22),
                                time_major=time_major, state_outputs=c.n_out == 3)
    c.emit("NNAPI_UNIDIRECTIONAL_SEQUENCE_LSTM", attrs, [c.input(0)] + _lstm_inputs(c, 1, 18, 19, ln), _outputs(c))


@lowering(Op.BIDIRECTIONAL_SEQUENCE_LSTM)
def lower_bidirectional_lstm(c: Call) -> None:
    merge, time_major = bool(c.scalar(51)), bool(c.scalar(52))
    _check_output_count(c, merge, 4)
    time, batch, n_input = _sequence(c, time_major)
    _lstm_cell(c, 1, 35, 36, [53, 54, 55, 56], batch, n_input)
    _lstm_cell(c, 18, 37, 38, [57, 58, 59, 60], batch, n_input)
    fw_aux = _all_or_none(c, [40, 41, 42, 43] if not c.omitted(40) else [41, 42, 43],
                          "forward auxiliary weights")
    bw_aux = _all_or_none(c, [44, 45, 46, 47] if not c.omitted(44) else [45, 46, 47],
                          "backward auxiliary weights")
    for aux_i, gate_i, aux in ((40, 1, fw_aux), (44, 18, bw_aux)):
        if aux and c.omitted(aux_i) != c.omitted(gate_i):
            raise c.error("the auxiliary input-to-input weights are present exactly when the input gate is "
                          f"(input {gate_i})", aux_i)
    _check_aux(c, 39, fw_aux, bw_aux, time_major, time, batch, n_input,
               [(k, c.shape(2)[0]) for k in range(40, 44)] + [(k, c.shape(19)[0]) for k in range(44, 48)])
    attrs = NnapiRecurrentAttrs(activation=_lstm_activation(c, 48), cell_clip=_clip(c, 49), proj_clip=_clip(c, 50),
                                merge_outputs=merge, time_major=time_major, state_outputs=c.n_out > 2)
    inputs = [c.input(0)] + [c.optional_input(k) for k in range(1, 35)] + [c.input(k) for k in range(35, 39)]
    inputs += [c.optional_input(k) for k in range(39, 48)] + [c.optional_input(k) for k in range(53, 61)]
    c.emit("NNAPI_BIDIRECTIONAL_SEQUENCE_LSTM", attrs, inputs, _outputs(c))


def _check_output_count(c: Call, merge: bool, states: int) -> None:
    """A bidirectional operation's outputs: forward (and backward unless merged), then optionally
    ``states`` state outputs."""
    base = 1 if merge else 2
    if c.n_out not in (base, base + states):
        raise c.error(f"with merge_outputs {str(merge).lower()} the operation has {base} outputs "
                      f"({base + states} with the state outputs), got {c.n_out}")


def _check_aux(c: Call, k: int, fw_aux: bool, bw_aux: bool, time_major: bool, time: int, batch: int,
               n_input: int, weights: Sequence[tuple[int, int]]) -> None:
    """The auxiliary input ``k`` and weights: none, the input alone (parallel linking: the backward
    direction's input, so shaped like input 0) or input and both directions' weights (cross linking)."""
    if fw_aux != bw_aux:
        raise c.error("the forward and backward auxiliary weights are given together or not at all",
                      weights[0][0] if not fw_aux else weights[-1][0])
    if c.omitted(k):
        if fw_aux:
            raise c.error("auxiliary weights need the auxiliary input", k)
        return
    if c.rank(k) != 3:
        raise c.error(f"the auxiliary input must be 3-D, got rank {c.rank(k)}", k)
    a, b, aux_size = c.shape(k)
    if ((a, b) if time_major else (b, a)) != (time, batch):
        raise c.error(f"the auxiliary input's time and batch sizes must be the input's, got {list(c.shape(k))}", k)
    if not fw_aux:
        if aux_size != n_input:
            raise c.error(f"without auxiliary weights the auxiliary input is the backward input: its size must be "
                          f"{n_input}, got {aux_size}", k)
        return
    for w, units in weights:
        if not c.omitted(w):
            _shape_is(c, w, (units, aux_size), "auxiliary weights")


@lowering(Op.QUANTIZED_LSTM)
def lower_quantized_lstm(c: Call) -> None:
    if c.rank(0) != 2:
        raise c.error(f"must be 2-D [batchSize, inputSize], got rank {c.rank(0)}", 0)
    batch, n_input = c.shape(0)
    ln = [20, 21, 22, 23]
    _lstm_cell(c, 1, 18, 19, ln, batch, n_input)
    cell_t = c.operand(19)
    exponent = np.log2(cell_t.scale) if cell_t.scale > 0 else 0.5
    if exponent != int(exponent) or not -15 <= exponent <= -9:
        raise c.error(f"the cell state scale must be a power of two from 2^-15 to 2^-9, got {cell_t.scale}", 19)
    for k in range(1, 17):
        if not c.omitted(k) and c.operand(k).scale <= 0 and c.type(k) != T.TENSOR_INT32:
            raise c.error("weights need a scale > 0", k)
    scales = tuple(float(c.scalar(k)) for k in range(26, 30))
    hidden_scale = float(c.scalar(31))
    for k, v in zip(range(26, 30), scales):
        if not v > 0:
            raise c.error(f"an intermediate scale must be > 0, got {v}", k)
    if not hidden_scale > 0:
        raise c.error(f"the hidden state scale must be > 0, got {hidden_scale}", 31)
    hidden_zp = int(c.scalar(30))
    if not -128 <= hidden_zp <= 127:
        raise c.error(f"the hidden state zero point must be in [-128, 127], got {hidden_zp}", 30)
    state_q = c.operand(18)
    for k in (0, 2):
        o = c.out_operand(k)
        if (o.scale, o.zero_point) != (state_q.scale, state_q.zero_point):
            raise c.error("the output and output state take the previous output state's quantization", k, "output")
    if (c.out_operand(1).scale, c.out_operand(1).zero_point) != (cell_t.scale, 0):
        raise c.error("the cell state output takes the cell state input's quantization", 1, "output")
    attrs = NnapiRecurrentAttrs(cell_clip=_clip(c, 24), proj_clip=_clip(c, 25), gate_scales=scales,
                                hidden_scale=hidden_scale, hidden_zero_point=hidden_zp)
    c.emit("NNAPI_QUANTIZED_LSTM", attrs, [c.input(0)] + _lstm_inputs(c, 1, 18, 19, ln), _outputs(c))


@lowering(Op.QUANTIZED_16BIT_LSTM)
def lower_quantized_16bit_lstm(c: Call) -> None:
    _require(c, range(15))
    if c.rank(0) != 2:
        raise c.error(f"must be 2-D [numBatches, inputSize], got rank {c.rank(0)}", 0)
    batch, n_input = c.shape(0)
    n_out = c.shape(1)[0] if c.rank(1) == 2 else -1
    fixed = 1.0 / 128
    for k, what in ((0, "input"), (14, "previous output")):
        if (c.operand(k).scale, c.operand(k).zero_point) != (fixed, 128):
            raise c.error(f"the {what} takes scale 1/128 and zero point 128", k)
    w = c.operand(1)
    for k in range(1, 9):
        _shape_is(c, k, (n_out, n_input if k <= 4 else n_out), "weights")
        if (c.operand(k).scale, c.operand(k).zero_point) != (w.scale, w.zero_point):
            raise c.error("all weights share one scale and zero point (input 1's)", k)
    for k in range(9, 13):
        _shape_is(c, k, (n_out,), "a gate bias")
        b = c.operand(k)
        if b.zero_point != 0 or abs(b.scale - w.scale / 128) > 1e-6 * w.scale / 128:
            raise c.error(f"a gate bias takes scale weights scale / 128 ({w.scale / 128}) and zero point 0, "
                          f"got {b.scale}, {b.zero_point}", k)
    _shape_is(c, 13, (batch, n_out), "the cell state")
    _shape_is(c, 14, (batch, n_out), "the previous output")
    if c.operand(13).scale != 2.0 ** -11:
        raise c.error(f"the cell state takes scale 2^-11 (2^4 / 32768), got {c.operand(13).scale}", 13)
    for k, ref in ((0, 13), (1, 14)):
        o, r = c.out_operand(k), c.operand(ref)
        if (o.scale, o.zero_point) != (r.scale, r.zero_point):
            raise c.error(f"takes input {ref}'s scale and zero point", k, "output")
    c.emit("NNAPI_QUANTIZED_16BIT_LSTM", NnapiRecurrentAttrs(), [c.input(k) for k in range(15)], _outputs(c))


# -- RNNs and SVDF ----------------------------------------------------------------------------------

def _rnn_cell(c: Call, first: int, batch: int, n_input: int) -> int:
    """Check an RNN cell's weights, recurrent weights, bias and hidden state; its num_units."""
    _require(c, range(first, first + 4))
    if c.rank(first) != 2:
        raise c.error(f"the weights must be 2-D, got rank {c.rank(first)}", first)
    units = c.shape(first)[0]
    _shape_is(c, first, (units, n_input), "the weights")
    _shape_is(c, first + 1, (units, units), "the recurrent weights")
    _shape_is(c, first + 2, (units,), "the bias")
    _shape_is(c, first + 3, (batch, units), "the hidden state")
    return units


@lowering(Op.RNN)
def lower_rnn(c: Call) -> None:
    if c.rank(0) != 2:
        raise c.error(f"must be 2-D [batch_size, input_size], got rank {c.rank(0)}", 0)
    _rnn_cell(c, 1, *c.shape(0))
    c.emit("NNAPI_RNN", NnapiRecurrentAttrs(activation=_fuse_code(c, 5)), [c.input(k) for k in range(5)],
           _outputs(c))


@lowering(Op.UNIDIRECTIONAL_SEQUENCE_RNN)
def lower_unidirectional_rnn(c: Call) -> None:
    time_major = c.scalar(6)
    if time_major not in (0, 1):
        raise c.error(f"timeMajor must be 0 or 1, got {time_major}", 6)
    _, batch, n_input = _sequence(c, bool(time_major))
    _rnn_cell(c, 1, batch, n_input)
    attrs = NnapiRecurrentAttrs(activation=_fuse_code(c, 5), time_major=bool(time_major), state_outputs=c.n_out == 2)
    c.emit("NNAPI_UNIDIRECTIONAL_SEQUENCE_RNN", attrs, [c.input(k) for k in range(5)], _outputs(c))


@lowering(Op.BIDIRECTIONAL_SEQUENCE_RNN)
def lower_bidirectional_rnn(c: Call) -> None:
    time_major, merge = bool(c.scalar(13)), bool(c.scalar(14))
    _check_output_count(c, merge, 2)
    time, batch, n_input = _sequence(c, time_major)
    fw, bw = _rnn_cell(c, 1, batch, n_input), _rnn_cell(c, 5, batch, n_input)
    _check_aux(c, 9, not c.omitted(10), not c.omitted(11), time_major, time, batch, n_input, [(10, fw), (11, bw)])
    attrs = NnapiRecurrentAttrs(activation=_fuse_code(c, 12), time_major=time_major, merge_outputs=merge,
                                state_outputs=c.n_out > 2)
    inputs = [c.input(k) for k in range(9)] + [c.optional_input(k) for k in range(9, 12)]
    c.emit("NNAPI_BIDIRECTIONAL_SEQUENCE_RNN", attrs, inputs, _outputs(c))


@lowering(Op.SVDF)
def lower_svdf(c: Call) -> None:
    _require(c, (0, 1, 2, 4))
    if c.rank(0) != 2 or c.rank(1) != 2 or c.rank(2) != 2:
        raise c.error("the input, weights_feature and weights_time must be 2-D", 0)
    batch, n_input = c.shape(0)
    filters, memory = c.shape(2)
    rank = c.scalar(5)
    if rank < 1 or filters % rank:
        raise c.error(f"the rank must be >= 1 and divide the {filters} filters (weights_time's rows), got {rank}", 5)
    _shape_is(c, 1, (filters, n_input), "weights_feature")
    if not c.omitted(3):
        _shape_is(c, 3, (filters // rank,), "the bias")
    _shape_is(c, 4, (batch, memory * filters), "the state")
    attrs = NnapiRecurrentAttrs(activation=_fuse_code(c, 6), rank=rank)
    c.emit("NNAPI_SVDF", attrs, [c.input(0), c.input(1), c.input(2), c.optional_input(3), c.input(4)], _outputs(c))
