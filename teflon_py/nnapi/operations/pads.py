"""PAD, PAD_V2, MIRROR_PAD (op layer: PAD, PADV2, MIRROR_PAD).

PAD fills with the logical zero (the zero point of a QUANT8 tensor), as TFLite's PAD. PAD_V2's
value is a scalar of the input's family: FLOAT16 / FLOAT32, or for QUANT8 an INT32 holding the
quantized value itself (the spec: "scale and zeroPoint are assumed to be the same as in input0");
one outside the type's range has no quantized meaning and is refused.
"""
from __future__ import annotations

import numpy as np

from teflon_py import ops
from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operations.copies import CLASSIC, check_paddings, rank_between, same_quantization
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.movement import MirrorMode, MirrorPadAttrs

PAD_LEVELS = {**CLASSIC, T.TENSOR_FLOAT32: 2, T.TENSOR_QUANT8_ASYMM: 2}
PAD_V2_LEVELS = {T.TENSOR_FLOAT16: 3, T.TENSOR_FLOAT32: 3, T.TENSOR_QUANT8_ASYMM: 3, T.TENSOR_QUANT8_ASYMM_SIGNED: 4}
PAD_VALUE = {T.TENSOR_FLOAT16: T.FLOAT16, T.TENSOR_FLOAT32: T.FLOAT32, T.TENSOR_QUANT8_ASYMM: T.INT32,
             T.TENSOR_QUANT8_ASYMM_SIGNED: T.INT32}
MIRROR_LEVELS = {t: 7 for t in (T.TENSOR_FLOAT16, T.TENSOR_FLOAT32, T.TENSOR_QUANT8_ASYMM,
                                T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_INT32)}
MIRROR_MODES = {0: MirrorMode.REFLECT, 1: MirrorMode.SYMMETRIC}


@signature(Op.PAD)
def pad_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, PAD_LEVELS)
    s.expect([t, T.TENSOR_INT32], [t])


@lowering(Op.PAD)
def lower_pad(c: Call) -> None:
    check_paddings(c, 1, rank_between(c, 0, 1, 4))
    same_quantization(c)
    c.emit("PAD", ops.NoAttrs(), [c.input(0), c.input(1)], [c.output(0)])


@signature(Op.PAD_V2)
def pad_v2_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, PAD_V2_LEVELS)
    s.expect([t, T.TENSOR_INT32, PAD_VALUE[t]], [t])


@lowering(Op.PAD_V2)
def lower_pad_v2(c: Call) -> None:
    check_paddings(c, 1, rank_between(c, 0, 1, 4))
    same_quantization(c)
    value = c.scalar(2)
    x = c.input(0)
    dtype = c.ir_tensor(x).dtype  # float32 for a float16 input, computed widened
    if dtype.kind in "iu":
        lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
        if not lo <= value <= hi:
            raise c.error(f"pad value {value} is outside the quantized range [{lo}, {hi}]", 2)
    c.emit("PADV2", ops.NoAttrs(), [x, c.input(1), c.const(np.array([value], dtype), what="pad value")],
           [c.output(0)])


@signature(Op.MIRROR_PAD)
def mirror_pad_signature(s: Sig) -> None:
    t = s.input_type(0)
    s.supported(t, MIRROR_LEVELS)
    s.expect([t, T.TENSOR_INT32, T.INT32], [t])


@lowering(Op.MIRROR_PAD)
def lower_mirror_pad(c: Call) -> None:
    shape = c.shape(0)
    pads = check_paddings(c, 1, rank_between(c, 0, 1, None))
    code = c.scalar(2)
    if code not in MIRROR_MODES:
        raise c.error(f"mode {code} is neither 0 (REFLECT) nor 1 (SYMMETRIC)", 2)
    mode = MIRROR_MODES[code]
    if pads is not None:
        for d, (size, (a, b)) in enumerate(zip(shape, pads.tolist())):
            limit = size - 1 if mode == MirrorMode.REFLECT else size
            if a > limit or b > limit:
                raise c.error(f"paddings ({a}, {b}) of dimension {d} (size {size}) exceed {limit}, the most "
                              f"{mode.name} mode allows", 1)
    same_quantization(c)
    c.emit("MIRROR_PAD", MirrorPadAttrs(mode), [c.input(0), c.input(1)], [c.output(0)])
