"""TFLite options <-> op-layer attributes: the recurrent family (see ``teflon_py.ops.recurrent``)."""
from __future__ import annotations

from typing import Any

from teflon_py import ir
from teflon_py.ops.recurrent import LSTMS, RNNS, RecurrentAttrs
from teflon_py.tflite import options as O
from teflon_py.tflite.translate.common import activation_code, activation_of
from teflon_py.tflite.translate.registry import Source, parses, writes

_TABLES = {"LSTM": O.LSTMOptions, "UNIDIRECTIONAL_SEQUENCE_LSTM": O.UnidirectionalSequenceLSTMOptions,
           "BIDIRECTIONAL_SEQUENCE_LSTM": O.BidirectionalSequenceLSTMOptions, "RNN": O.RNNOptions,
           "UNIDIRECTIONAL_SEQUENCE_RNN": O.SequenceRNNOptions, "SVDF": O.SVDFOptions}


@parses(*RNNS, *LSTMS)
def parse(src: Source) -> RecurrentAttrs:
    o = src.option(_TABLES[src.name])
    return RecurrentAttrs(
        activation=activation_of(src, o.fused_activation_function),
        cell_clip=float(getattr(o, "cell_clip", 0.0)),
        proj_clip=float(getattr(o, "proj_clip", 0.0)),
        time_major=bool(getattr(o, "time_major", False)),
        merge_outputs=bool(getattr(o, "merge_outputs", False)),
        asymmetric_quantize_inputs=bool(getattr(o, "asymmetric_quantize_inputs", False)),
        kernel_type=int(getattr(o, "kernel_type", 0)),
        rank=int(getattr(o, "rank", 0)),
        diagonal_recurrent_tensors=bool(getattr(o, "diagonal_recurrent_tensors", False)),
    )


_FIELDS = ("cell_clip", "proj_clip", "time_major", "merge_outputs", "asymmetric_quantize_inputs", "kernel_type",
           "rank", "diagonal_recurrent_tensors")


@writes(*RNNS, *LSTMS)
def write(attrs: RecurrentAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
    table = _TABLES[op.name]
    names = {f for f in table.__dataclass_fields__}
    kwargs = {f: getattr(attrs, f) for f in _FIELDS if f in names}
    return table(fused_activation_function=activation_code(attrs.activation), **kwargs)
