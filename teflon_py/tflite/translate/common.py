"""The TFLite encodings every family's translators share: fused activation codes, SAME/VALID
padding, and ops whose attributes are empty."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from teflon_py import ir
from teflon_py.ops.common import Act, FusedActivation, NoAttrs, Padding
from teflon_py.tflite.translate.registry import Source, parses, writes

_ACTS = {ir.Activation.NONE: Act.NONE, ir.Activation.RELU: Act.RELU, ir.Activation.RELU6: Act.RELU6,
         ir.Activation.RELU_N1_TO_1: Act.RELU_N1_TO_1, ir.Activation.TANH: Act.TANH,
         ir.Activation.SIGN_BIT: Act.SIGN_BIT}
_CODES = {v: k for k, v in _ACTS.items()}


def activation_of(src: Source, code: object) -> FusedActivation:
    """TFLite's ActivationFunctionType as a FusedActivation (ModelError for an unknown code)."""
    try:
        return FusedActivation.of(_ACTS[ir.Activation(int(code))])
    except (ValueError, KeyError):
        raise src.fail(f"unknown fused activation {code!r}") from None


def activation_code(act: FusedActivation) -> ir.Activation:
    """The TFLite code of a fused activation (a CLAMP with other bounds has none)."""
    if act.kind not in _CODES:
        raise ValueError(f"fused activation clamp [{act.lo}, {act.hi}] has no TFLite code")
    return _CODES[act.kind]


def padding_of(src: Source, code: object) -> Padding:
    """TFLite SAME / VALID as a Padding."""
    try:
        padding = ir.Padding(int(code))
    except ValueError:
        raise src.fail(f"unknown padding {code}") from None
    return Padding.tf_same() if padding == ir.Padding.SAME else Padding.valid()


def padding_code(padding: Padding) -> ir.Padding:
    """The TFLite code of a padding: SAME, or VALID (explicit zero padding)."""
    if padding.same:
        return ir.Padding.SAME
    if any(p != (0, 0) for p in padding.explicit):
        raise ValueError(f"explicit padding {padding.explicit} has no TFLite code")
    return ir.Padding.VALID


def register_empty(tables: Mapping[str, Any]) -> None:
    """Ops without attributes: parsed as ``NoAttrs``, written back with their empty options table
    (``tables[op]``: the options dataclass, or None for an op that has none)."""

    def parse(src: Source) -> NoAttrs:
        return NoAttrs()

    def write(attrs: NoAttrs, op: ir.Operation, graph: ir.Graph) -> Any:
        cls = tables[op.name]
        return cls() if cls is not None else None

    parses(*tables)(parse)
    writes(*tables)(write)
