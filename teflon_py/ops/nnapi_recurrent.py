"""NNAPI's recurrent ops: their states are inputs and their new states outputs (TFLite's recurrent ops
keep them in variable tensors instead), so each is an op of its own, computed by the cell maths the
TFLite ops use (``teflon_py.fallback.nnapi_recurrent``).

Tensor inputs, in order (NNAPI's scalars become attributes; absent optional operands NO_TENSOR):

* NNAPI_LSTM, NNAPI_UNIDIRECTIONAL_SEQUENCE_LSTM, NNAPI_QUANTIZED_LSTM: input, the 17 weight
  operands (input-to-i/f/c/o, recurrent-to-i/f/c/o, cell-to-i/f/o, gate biases i/f/c/o, projection
  weights and bias), output state, cell state, the 4 layer-norm weights (TFLite's 24-operand LSTM);
* NNAPI_BIDIRECTIONAL_SEQUENCE_LSTM: NNAPI's inputs 0-47, then the 8 layer-norm weights (53-60);
* NNAPI_RNN, NNAPI_UNIDIRECTIONAL_SEQUENCE_RNN: input, weights, recurrent weights, bias, hidden state;
* NNAPI_BIDIRECTIONAL_SEQUENCE_RNN: NNAPI's inputs 0-11;
* NNAPI_SVDF: input, weights_feature, weights_time, bias, state;
* NNAPI_QUANTIZED_16BIT_LSTM: NNAPI's inputs 0-14.

Outputs: NNAPI's, in its order (the optional state outputs when ``state_outputs``).
"""
from __future__ import annotations

from dataclasses import dataclass

from teflon_py.ops.registry import Inputs, Meta, declared, define

#: the activations NNAPI's recurrent ops name (LSTMs: 0 none, 1 relu, 3 relu6, 4 tanh, 6 sigmoid;
#: RNN, SVDF: a FuseCode)
ACTIVATIONS = ("none", "relu", "relu1", "relu6", "tanh", "sigmoid")


@dataclass(frozen=True)
class NnapiRecurrentAttrs:
    """An NNAPI recurrent op's scalars (each op reads its own)."""

    activation: str = "none"
    cell_clip: float = 0.0
    proj_clip: float = 0.0
    time_major: bool = False
    merge_outputs: bool = False
    state_outputs: bool = False
    rank: int = 0  # SVDF
    #: QUANTIZED_LSTM: the scales of the four gates' matmul results (input, forget, cell, output)
    #: and the hidden state's quantization
    gate_scales: tuple[float, ...] = ()
    hidden_scale: float = 0.0
    hidden_zero_point: int = 0


def _dim(ins: Inputs, k: int, axis: int) -> int:
    t = ins[k]
    if t is None or len(t.shape) <= axis:
        raise ins.error(f"operand {k} must be a tensor of rank > {axis}")
    return int(t.shape[axis])


def _sequence(ins: Inputs, attrs: NnapiRecurrentAttrs) -> tuple[int, int]:
    """(time, batch) of a 3-D sequence input."""
    if ins[0] is None or len(ins[0].shape) != 3:
        raise ins.error("the input must be 3-D")
    t, b = ins[0].shape[:2]
    return (int(t), int(b)) if attrs.time_major else (int(b), int(t))


def _seq_shape(attrs: NnapiRecurrentAttrs, time: int, batch: int, depth: int) -> tuple[int, int, int]:
    return (time, batch, depth) if attrs.time_major else (batch, time, depth)


def _metas(ins: Inputs, shapes: list[tuple[int, ...]]) -> list[Meta]:
    if len(shapes) != len(ins.outputs):
        raise ins.error(f"takes {len(shapes)} outputs, got {len(ins.outputs)}")
    return [declared(ins, k, tuple(s)) for k, s in enumerate(shapes)]


def _check(attrs: NnapiRecurrentAttrs, ins: Inputs) -> None:
    if attrs.activation not in ACTIVATIONS:
        raise ins.error(f"unknown activation {attrs.activation!r}")
    if attrs.cell_clip < 0 or attrs.proj_clip < 0:
        raise ins.error(f"clips must not be negative (cell_clip {attrs.cell_clip}, proj_clip {attrs.proj_clip})")


@define("NNAPI_LSTM", "NNAPI_QUANTIZED_LSTM", "NNAPI_UNIDIRECTIONAL_SEQUENCE_LSTM", attrs=NnapiRecurrentAttrs)
def infer_lstm(attrs: NnapiRecurrentAttrs, ins: Inputs) -> list[Meta]:
    _check(attrs, ins)
    n_cell, n_output = _dim(ins, 4, 0), _dim(ins, 8, 1)
    if ins.op == "NNAPI_UNIDIRECTIONAL_SEQUENCE_LSTM":
        time, batch = _sequence(ins, attrs)
        out = [_seq_shape(attrs, time, batch, n_output)]
        return _metas(ins, out + ([(batch, n_output), (batch, n_cell)] if attrs.state_outputs else []))
    batch = _dim(ins, 0, 0)
    if ins.op == "NNAPI_QUANTIZED_LSTM":
        return _metas(ins, [(batch, n_output), (batch, n_cell), (batch, n_output)])
    gates = 4 if ins[1] is not None else 3
    return _metas(ins, [(batch, n_cell * gates), (batch, n_output), (batch, n_cell), (batch, n_output)])


@define("NNAPI_BIDIRECTIONAL_SEQUENCE_LSTM", attrs=NnapiRecurrentAttrs)
def infer_bidirectional_lstm(attrs: NnapiRecurrentAttrs, ins: Inputs) -> list[Meta]:
    _check(attrs, ins)
    time, batch = _sequence(ins, attrs)
    fw_cell, fw_out, bw_cell, bw_out = _dim(ins, 4, 0), _dim(ins, 8, 1), _dim(ins, 21, 0), _dim(ins, 25, 1)
    if attrs.merge_outputs:
        shapes = [_seq_shape(attrs, time, batch, fw_out + bw_out)]
    else:
        shapes = [_seq_shape(attrs, time, batch, fw_out), _seq_shape(attrs, time, batch, bw_out)]
    if attrs.state_outputs:
        shapes += [(batch, fw_out), (batch, fw_cell), (batch, bw_out), (batch, bw_cell)]
    return _metas(ins, shapes)


@define("NNAPI_RNN", "NNAPI_UNIDIRECTIONAL_SEQUENCE_RNN", attrs=NnapiRecurrentAttrs)
def infer_rnn(attrs: NnapiRecurrentAttrs, ins: Inputs) -> list[Meta]:
    _check(attrs, ins)
    units = _dim(ins, 1, 0)
    if ins.op == "NNAPI_RNN":
        batch = _dim(ins, 0, 0)
        return _metas(ins, [(batch, units), (batch, units)])
    time, batch = _sequence(ins, attrs)
    return _metas(ins, [_seq_shape(attrs, time, batch, units)] + ([(batch, units)] if attrs.state_outputs else []))


@define("NNAPI_BIDIRECTIONAL_SEQUENCE_RNN", attrs=NnapiRecurrentAttrs)
def infer_bidirectional_rnn(attrs: NnapiRecurrentAttrs, ins: Inputs) -> list[Meta]:
    _check(attrs, ins)
    time, batch = _sequence(ins, attrs)
    fw, bw = _dim(ins, 1, 0), _dim(ins, 5, 0)
    if attrs.merge_outputs:
        shapes = [_seq_shape(attrs, time, batch, fw + bw)]
    else:
        shapes = [_seq_shape(attrs, time, batch, fw), _seq_shape(attrs, time, batch, bw)]
    return _metas(ins, shapes + ([(batch, fw), (batch, bw)] if attrs.state_outputs else []))


@define("NNAPI_SVDF", attrs=NnapiRecurrentAttrs)
def infer_svdf(attrs: NnapiRecurrentAttrs, ins: Inputs) -> list[Meta]:
    _check(attrs, ins)
    batch, filters, memory = _dim(ins, 0, 0), _dim(ins, 1, 0), _dim(ins, 2, 1)
    if attrs.rank < 1 or filters % attrs.rank:
        raise ins.error(f"rank {attrs.rank} must be >= 1 and divide the {filters} filters")
    return _metas(ins, [(batch, memory * filters), (batch, filters // attrs.rank)])


@define("NNAPI_QUANTIZED_16BIT_LSTM", attrs=NnapiRecurrentAttrs)
def infer_quantized_16bit_lstm(attrs: NnapiRecurrentAttrs, ins: Inputs) -> list[Meta]:
    batch, units = _dim(ins, 0, 0), _dim(ins, 1, 0)
    return _metas(ins, [(batch, units), (batch, units)])
