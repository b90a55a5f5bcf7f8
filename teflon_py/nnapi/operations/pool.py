"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D (op layer: the TFLite pools of the same names, in
NHWC, with ``PoolAttrs``). A window takes only its in-bounds elements, so an average divides by
their count with explicit padding too (the spec's ``/ sum(1)``, as TFLite and Android's reference)."""
from __future__ import annotations

from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.operations.window import scalar_types, window_params
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.pool import PoolAttrs, empty_window, geometry

_QUANTIZED = {T.TENSOR_QUANT8_ASYMM: 1, T.TENSOR_QUANT8_ASYMM_SIGNED: 4}
#: the feature level that added each input type
LEVELS = {
    Op.AVERAGE_POOL_2D: {T.TENSOR_FLOAT32: 1, T.TENSOR_FLOAT16: 3, **_QUANTIZED},
    Op.MAX_POOL_2D: {T.TENSOR_FLOAT32: 1, T.TENSOR_FLOAT16: 3, **_QUANTIZED},
    Op.L2_POOL_2D: {T.TENSOR_FLOAT32: 1, T.TENSOR_FLOAT16: 3},
}


@signature(Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.L2_POOL_2D)
def pool_signature(s: Sig) -> None:
    """The input, then the window scalars with the filter width and height after the strides."""
    t = s.input_type(0)
    s.supported(t, LEVELS[s.op])
    scalars, optional = scalar_types(s.inputs, 1, 2, dilation=False)
    s.expect([t, *scalars], [t], optional=optional)


@lowering(Op.AVERAGE_POOL_2D, Op.MAX_POOL_2D, Op.L2_POOL_2D)
def lower_pool(c: Call) -> None:
    p = window_params(c, 1, extra=2)
    filter_w, filter_h = p.extra
    if filter_w < 1 or filter_h < 1:
        raise c.error(f"the filter (width {filter_w}, height {filter_h}) must be at least 1x1", p.extra_at)
    if c.rank(0) != 4:
        raise c.error(f"takes a 4-D input, got rank {c.rank(0)}", 0)
    if c.type(0) in _QUANTIZED:
        x, y = c.operand(0), c.out_operand(0)
        if (x.scale, x.zero_point) != (y.scale, y.zero_point):
            raise c.error(f"the output's scale and zero point ({y.scale}, {y.zero_point}) must be the input's "
                          f"({x.scale}, {x.zero_point})", 0, "output")
    _, height, width, _ = (c.shape(0)[i] for i in ((0, 2, 3, 1) if p.nchw else (0, 1, 2, 3)))
    g = geometry(p.padding, height, width, (filter_h, filter_w), p.strides)
    if g.out_h < 1 or g.out_w < 1:
        raise c.error(f"a {filter_h}x{filter_w} filter leaves no output over the {height}x{width} input")
    if c.op == Op.AVERAGE_POOL_2D and empty_window(g, height, width):
        # the average of no elements: Android's reference divides by zero there
        raise c.error("a window lies entirely in the padding, where the average has no elements", 1)
    attrs = PoolAttrs(filter=(filter_h, filter_w), strides=p.strides, padding=p.padding, activation=p.activation)
    c.emit(c.op.name, attrs, [c.nhwc(c.input(0), p.nchw)], [c.nhwc_output(0, p.nchw)])
