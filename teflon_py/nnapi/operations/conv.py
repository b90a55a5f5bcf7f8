"""CONV_2D (op layer: CONV_2D, in NHWC, with its filter layout [depth_out, h, w, depth_in])."""
from __future__ import annotations

from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operations.quantized import check_bias_scale, signed_per_channel
from teflon_py.nnapi.operations.window import scalar_types, window_params
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.conv import ConvAttrs

#: input type -> (filter types, bias type, feature level)
CONV_TYPES = {
    T.TENSOR_FLOAT32: ((T.TENSOR_FLOAT32,), T.TENSOR_FLOAT32, 1),
    T.TENSOR_FLOAT16: ((T.TENSOR_FLOAT16,), T.TENSOR_FLOAT16, 3),
    T.TENSOR_QUANT8_ASYMM: ((T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_SYMM_PER_CHANNEL), T.TENSOR_INT32, 1),
    T.TENSOR_QUANT8_ASYMM_SIGNED: ((T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT8_SYMM_PER_CHANNEL),
                                   T.TENSOR_INT32, 4),
}


@signature(Op.CONV_2D)
def conv_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, {k: v[2] for k, v in CONV_TYPES.items()})
    filters, bias, level = CONV_TYPES[t]
    scalars, optional = scalar_types(s.inputs, 3, 0, dilation=True)
    s.expect([t, filters, bias, *scalars], [t], optional=optional, level=level)


@lowering(Op.CONV_2D)
def lower_conv(c: Call) -> None:
    p = window_params(c, 3, dilation=True)
    if c.rank(0) != 4 or c.rank(1) != 4 or c.rank(2) != 1:
        raise c.error(f"takes a 4-D input and filter and a 1-D bias, got ranks {c.rank(0)}, {c.rank(1)}, {c.rank(2)}")
    if c.type(1) == T.TENSOR_QUANT8_SYMM_PER_CHANNEL and c.operand(1).channel_dim != 0:
        raise c.error(f"a per-channel filter's channel dimension must be 0, got {c.operand(1).channel_dim}", 1)
    check_bias_scale(c, 0, 1, 2)
    attrs = ConvAttrs(padding=p.padding, strides=p.strides, dilations=p.dilations, activation=p.activation)
    x = c.nhwc(c.input(0), p.nchw)
    y = c.nhwc_output(0, p.nchw)
    x, y = signed_per_channel(c, x, c.input(1), y)
    c.emit("CONV_2D", attrs, [x, c.input(1), c.input(2)], [y])

