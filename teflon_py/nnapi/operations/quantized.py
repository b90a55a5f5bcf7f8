"""Quantization rules NNAPI states for several operations, and their lowering helpers."""
from __future__ import annotations

import numpy as np

from teflon_py import ops
from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operations.copies import requantize, shifted


def check_bias_scale(c: Call, x: int, w: int, b: int) -> None:
    """A quantized convolution's bias scale must be input scale x filter scale (per channel for a
    per-channel filter, whose bias scale is 0); NNAPI allows a relative difference of 1e-6."""
    if c.type(x) not in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
        return
    xo, wo, bo = c.operand(x), c.operand(w), c.operand(b)
    if bo.zero_point != 0:
        raise c.error(f"a quantized bias takes zero point 0, got {bo.zero_point}", b)
    if wo.type == T.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        if bo.scale != 0:
            raise c.error(f"with a per-channel filter the bias scale must be 0, got {bo.scale}", b)
        return
    want = np.float32(xo.scale) * np.float32(wo.scale)
    if abs(float(want) - bo.scale) > 1e-6 * min(float(want), bo.scale):
        raise c.error(f"bias scale {bo.scale} must equal input scale x filter scale ({xo.scale} x {wo.scale} "
                      f"= {float(want)})", b)


def signed_per_channel(c: Call, x: int, w: int, y: int) -> tuple[int, int]:
    """A uint8 (QUANT8_ASYMM) input with a per-channel filter: the op layer's convolutions take
    per-channel filters with int8 activations only, so the input is shifted to int8 (QUANTIZE at
    the same scale, zero point - 128: exact), the int8 convolution computes the same
    accumulators and requantization, and its int8 result is shifted back into ``y``. Returns the
    (input, output) ir tensors the convolution then uses."""
    if c.ir_tensor(x).dtype != np.uint8 or c.ir_tensor(w).dtype != np.int8:
        return x, y
    return requantize(c, x, np.int8, -128, "input as int8"), _shifted_out(c, y, np.int8, -128)


def unsigned_per_tensor(c: Call, x: int, w: int, y: int) -> tuple[int, int, int]:
    """An int8 (QUANT8_ASYMM_SIGNED) input with an int8 per-tensor filter: NNAPI's filter may
    have any zero point, which LiteRT's int8 convolutions reject (CONV_2D) or never read
    (DEPTHWISE_CONV_2D, TRANSPOSE_CONV). Android's reference implementation computes these as the
    uint8 operation on everything shifted by +128 (convertInt8ToUInt8, offsets + 128), and so do
    we: the input and a runtime filter through QUANTIZE (same scale, zero point + 128: exact), a
    constant filter shifted here, the uint8 result shifted back into ``y``. Returns the (input,
    filter, output) ir tensors the operation then uses."""
    xt, wt = c.ir_tensor(x), c.ir_tensor(w)
    if xt.dtype != np.int8 or wt.dtype != np.int8 or wt.quantization is None or wt.quantization.per_channel:
        return x, w, y
    x = requantize(c, x, np.uint8, 128, "input as uint8")
    if wt.is_constant:
        w = c.const((wt.data.astype(np.int16) + 128).astype(np.uint8), np.uint8,
                    shifted(wt.quantization, 128), what="filter as uint8")
    else:
        w = requantize(c, w, np.uint8, 128, "filter as uint8")
    return x, w, _shifted_out(c, y, np.uint8, 128)


def quantized_domain(c: Call, x: int, w: int, y: int) -> tuple[int, int, int]:
    """The (input, filter, output) ir tensors a convolution computes with: as given, or moved to
    the signedness the op layer computes the filter's quantization in (``signed_per_channel``,
    ``unsigned_per_tensor``)."""
    x, y = signed_per_channel(c, x, w, y)
    return unsigned_per_tensor(c, x, w, y)


def _shifted_out(c: Call, y: int, dtype: type, by: int) -> int:
    """Where the operation computes ``y`` as ``dtype`` (zero point moved ``by``, as ``requantize``
    moves an input); shifted back into ``y`` after it."""
    out = c.temp(dtype, shifted(c.ir_tensor(y).quantization, by), what=f"output as {np.dtype(dtype)}")
    c.after("QUANTIZE", ops.NoAttrs(), [out], [y])
    return out
