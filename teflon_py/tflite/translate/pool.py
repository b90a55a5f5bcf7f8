"""TFLite options <-> op-layer attributes: the pool family (see ``teflon_py.ops.pool``)."""
from __future__ import annotations

from teflon_py import ir
from teflon_py.ops.common import Act, FusedActivation, Padding
from teflon_py.ops.pool import PoolAttrs
from teflon_py.tflite.options import Pool2DOptions
from teflon_py.tflite.translate.registry import Source, parses, writes

POOLS = ("AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D")
_ACTS = {ir.Activation.NONE: Act.NONE, ir.Activation.RELU: Act.RELU, ir.Activation.RELU6: Act.RELU6,
         ir.Activation.RELU_N1_TO_1: Act.RELU_N1_TO_1, ir.Activation.TANH: Act.TANH,
         ir.Activation.SIGN_BIT: Act.SIGN_BIT}
_CODES = {v: k for k, v in _ACTS.items()}


def activation_of(src: Source, code: object) -> FusedActivation:
    """TFLite's ActivationFunctionType as a FusedActivation (ModelError for an unknown code)."""
    try:
        return FusedActivation.of(_ACTS[ir.Activation(int(code))])
    except (ValueError, KeyError):
        raise src.fail(f"unknown fused activation {code}") from None


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


@parses(*POOLS)
def parse(src: Source) -> PoolAttrs:
    o = src.option(Pool2DOptions)
    return PoolAttrs((int(o.filter_height), int(o.filter_width)), (int(o.stride_h), int(o.stride_w)),
                     padding_of(src, o.padding), activation_of(src, o.fused_activation_function))


@writes(*POOLS)
def write(attrs: PoolAttrs, op: ir.Operation, graph: ir.Graph) -> object:
    return Pool2DOptions(padding=padding_code(attrs.padding), stride_w=attrs.strides[1], stride_h=attrs.strides[0],
                         filter_width=attrs.filter[1], filter_height=attrs.filter[0],
                         fused_activation_function=activation_code(attrs.activation))
