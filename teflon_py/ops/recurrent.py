"""The recurrent family: RNN, UNIDIRECTIONAL_SEQUENCE_RNN, SVDF, LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM
and BIDIRECTIONAL_SEQUENCE_LSTM.

One attributes dataclass serves the six ops (each uses its own subset, as its TFLite options table
holds): the fused activation (``activation``: the cell's activation, TFLite's
``fused_activation_function``), the cell / projection clips, time- or batch-major sequences,
merged bidirectional outputs, hybrid asymmetric input quantization, the LSTM kernel type and the
SVDF rank. Inference returns the output shapes the model declares (the state and gate layout
rules are LiteRT's Prepare's, checked by the kernels).
"""
from __future__ import annotations

from dataclasses import dataclass

from teflon_py.ops.common import NO_ACTIVATION, FusedActivation
from teflon_py.ops.registry import Inputs, Meta, declared, define

RNNS = ("RNN", "UNIDIRECTIONAL_SEQUENCE_RNN", "SVDF")
LSTMS = ("LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM", "BIDIRECTIONAL_SEQUENCE_LSTM")


@dataclass(frozen=True)
class RecurrentAttrs:
    """A recurrent op's attributes (fields an op's TFLite table lacks keep their defaults)."""

    activation: FusedActivation = NO_ACTIVATION
    cell_clip: float = 0.0
    proj_clip: float = 0.0
    time_major: bool = False
    merge_outputs: bool = False
    asymmetric_quantize_inputs: bool = False
    kernel_type: int = 0  # LSTM: 0 full kernel, 1 basic (4-input) kernel
    rank: int = 0  # SVDF
    diagonal_recurrent_tensors: bool = False  # UNIDIRECTIONAL_SEQUENCE_LSTM


@define(*RNNS, *LSTMS, attrs=RecurrentAttrs)
def infer(attrs: RecurrentAttrs, ins: Inputs) -> list[Meta]:
    """The declared outputs (their shapes follow the weights and the state, as the model fixes)."""
    if ins[0] is None:
        raise ins.error("the input operand is missing")
    if attrs.cell_clip < 0 or attrs.proj_clip < 0:
        raise ins.error(f"clips must not be negative (cell_clip {attrs.cell_clip}, proj_clip {attrs.proj_clip})")
    return [declared(ins, k, tuple(ins.outputs[k].shape)) for k in range(len(ins.outputs))]
