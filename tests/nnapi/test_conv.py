"""CONV_2D, DEPTHWISE_CONV_2D, GROUPED_CONV_2D and TRANSPOSE_CONV_2D from the spec's text: both
padding forms, NCHW, dilation, every operand-type configuration the spec allows (``quant_modes``),
against LiteRT's reference kernels on the same graph (explicit padding as a PAD before a VALID
convolution; a transpose convolution's as a SLICE of the VALID one)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.nnapi import FuseCode, OperationType, PaddingCode
from teflon_py.nnapi import OperandType as T
from teflon_py.tflite.options import (
    Conv2DOptions,
    DepthwiseConv2DOptions,
    PadOptions,
    SliceOptions,
    TransposeConvOptions,
)
from tests.harness import run_litert
from tests.nnapi.harness import Spec, check_vs, expect_bad_data
from tests.nnapi.quant_modes import MODES, Mode, Twin

FUSES = {FuseCode.NONE: ir.Activation.NONE, FuseCode.RELU: ir.Activation.RELU,
         FuseCode.RELU1: ir.Activation.RELU_N1_TO_1, FuseCode.RELU6: ir.Activation.RELU6}


@dataclass(frozen=True)
class Form:
    """The window operands of one case: explicit pads (left, right, top, bottom) or a
    PaddingCode, strides and dilations (h, w), FuseCode, layout, dilation inputs given."""

    pads: tuple[int, int, int, int] | None = None
    same: bool = True
    stride: tuple[int, int] = (1, 1)
    dilation: tuple[int, int] = (1, 1)
    fuse: FuseCode = FuseCode.NONE
    nchw: bool = False

    def scalars(self, s: Spec, extra: list[int], layout: bool = False) -> list[int]:
        """NNAPI's scalar operands after the tensors (the layout flag where ``layout`` or needed)."""
        ops = [s.i32(p) for p in self.pads] if self.pads else [s.i32(PaddingCode.SAME if self.same
                                                                      else PaddingCode.VALID)]
        ops += [s.i32(self.stride[1]), s.i32(self.stride[0]), *(s.i32(e) for e in extra), s.i32(self.fuse)]
        if layout or self.nchw or self.dilation != (1, 1):
            ops.append(s.boolean(self.nchw))
        if self.dilation != (1, 1):
            ops += [s.i32(self.dilation[1]), s.i32(self.dilation[0])]
        return ops

    def out(self, size: int, k: int, axis: int) -> int:
        stride, dil = self.stride[axis], self.dilation[axis]
        if self.pads is None and self.same:
            return -(-size // stride)
        before, after = ((self.pads[2], self.pads[3]), (self.pads[0], self.pads[1]))[axis] if self.pads else (0, 0)
        return (size + before + after - (k - 1) * dil - 1) // stride + 1


FORMS = {
    "implicit_same": Form(stride=(2, 1), fuse=FuseCode.RELU),
    "implicit_valid": Form(same=False, stride=(1, 2)),
    "explicit": Form(pads=(1, 2, 0, 1), stride=(2, 1), fuse=FuseCode.RELU6),
    "nchw": Form(fuse=FuseCode.RELU1, nchw=True),
    "dilated": Form(dilation=(2, 2)),
}


def layout_dims(dims: tuple[int, int, int, int], nchw: bool) -> list[int]:
    n, h, w, c = dims
    return [n, c, h, w] if nchw else [n, h, w, c]


def compare(model, twin: Twin, out: int, xs: np.ndarray, nchw: bool, backend: str, refuses: str = "") -> None:
    """Run the twin on the NHWC form of ``xs`` and compare with the NNAPI model on ``backend``."""
    feed = twin.feed(xs.transpose(0, 2, 3, 1) if nchw else xs)
    expected = twin.back(run_litert(twin.build(out), [feed])[0])
    check_vs(model, [xs], [expected.transpose(0, 3, 1, 2) if nchw else expected], backend,
             float_tol=twin.mode.tol, refuses=refuses or ())


def twin_source(twin: Twin, form: Form, x: int, dims: tuple[int, int, int, int]) -> tuple[int, ir.Padding]:
    """The twin's convolution input (a PAD of ``x`` for explicit padding) and padding."""
    if not form.pads:
        return x, ir.Padding.SAME if form.same else ir.Padding.VALID
    left, right, top, bottom = form.pads
    n, h, w, c = dims
    padded = twin.act([n, h + top + bottom, w + left + right, c], "x")
    twin.op("PAD", [x, twin.const([[0, 0], [top, bottom], [left, right], [0, 0]], np.int32)], [padded],
            PadOptions())
    return padded, ir.Padding.VALID


def run_conv(backend: str, op: OperationType, mode: Mode, form: Form, *, cin: int, wshape: tuple[int, ...],
             channel_dim: int, extra: list[int], twin_op: str, options, layout: bool = False,
             refuses: str = "") -> None:
    """One convolution-like case: NNAPI model and twin with the same data (seeded by the case)."""
    rng = np.random.default_rng(abs(hash((op, mode, form))) % 2**32)
    n, h, w = 2, 7, 6
    cout, kh, kw = (wshape[3], wshape[1], wshape[2]) if op == OperationType.DEPTHWISE_CONV_2D else wshape[:3]
    oh, ow = form.out(h, kh, 0), form.out(w, kw, 1)
    wdata, bdata = mode.filter_data(rng, wshape), mode.bias_data(rng, cout)
    s = Spec()
    x = mode.input(s, layout_dims((n, h, w, cin), form.nchw))
    wi, bi = mode.filter(s, wdata, channel_dim), mode.bias(s, bdata, wdata, channel_dim)
    y = mode.output(s, layout_dims((n, oh, ow, cout), form.nchw))
    s.op(op, [x, wi, bi, *form.scalars(s, extra, layout)], [y])
    model = s.model()

    twin = Twin(mode)
    src, padding = twin_source(twin, form, twin.input([n, h, w, cin]), (n, h, w, cin))
    ty = twin.act([n, oh, ow, cout])
    twin.op(twin_op, [src, twin.filter(wdata, channel_dim), twin.bias(bdata, wdata, channel_dim)], [ty],
            options(padding=padding, stride_h=form.stride[0], stride_w=form.stride[1],
                    dilation_h_factor=form.dilation[0], dilation_w_factor=form.dilation[1],
                    fused_activation_function=FUSES[form.fuse]))
    compare(model, twin, ty, mode.input_data(rng, layout_dims((n, h, w, cin), form.nchw)), form.nchw, backend,
            refuses)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("form", list(FORMS))
def test_conv_2d(backend: str, mode: str, form: str) -> None:
    run_conv(backend, OperationType.CONV_2D, MODES[mode], FORMS[form], cin=4, wshape=(3, 3, 2, 4), channel_dim=0,
             extra=[], twin_op="CONV_2D", options=Conv2DOptions)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("form", list(FORMS))
def test_depthwise_conv_2d(backend: str, mode: str, form: str) -> None:
    """Depth multiplier 2: output channel ``k * 2 + q`` filters input channel ``k``."""
    def options(**kw):
        return DepthwiseConv2DOptions(depth_multiplier=2, **kw)

    run_conv(backend, OperationType.DEPTHWISE_CONV_2D, MODES[mode], FORMS[form], cin=3, wshape=(1, 3, 2, 6),
             channel_dim=3, extra=[2], twin_op="DEPTHWISE_CONV_2D", options=options)


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("form", ["implicit_same", "explicit", "nchw"])
def test_grouped_conv_2d(backend: str, mode: str, form: str) -> None:
    """Two groups of 3 input channels, 4 filters each (LiteRT's CONV_2D with a filter of depth C/2);
    the layout flag is required. OpenCL's float convolution refuses groups."""
    def options(dilation_h_factor: int, dilation_w_factor: int, **kw):
        return Conv2DOptions(**kw)

    refuses = "grouped convolution" if not MODES[mode].quantized else ""
    run_conv(backend, OperationType.GROUPED_CONV_2D, MODES[mode], FORMS[form], cin=6, wshape=(8, 3, 2, 3),
             channel_dim=0, extra=[2], twin_op="CONV_2D", options=options, layout=True, refuses=refuses)


@dataclass(frozen=True)
class TransposeForm:
    """A TRANSPOSE_CONV_2D case: explicit (left, right, top, bottom) pads, or the PaddingCode
    with an output-shape tensor; strides (h, w), FuseCode, layout."""

    pads: tuple[int, int, int, int] | None = None
    code: PaddingCode = PaddingCode.SAME
    stride: tuple[int, int] = (1, 1)
    fuse: FuseCode = FuseCode.NONE
    nchw: bool = False


TRANSPOSE_FORMS = {
    "implicit_same": TransposeForm(stride=(2, 3), fuse=FuseCode.RELU),
    "implicit_valid": TransposeForm(code=PaddingCode.VALID, stride=(2, 1)),
    "explicit": TransposeForm(pads=(1, 0, 2, 1), stride=(2, 2), fuse=FuseCode.RELU6),
    "explicit_negative_tail": TransposeForm(pads=(0, -1, 1, -2), stride=(3, 2)),
    "nchw": TransposeForm(fuse=FuseCode.RELU1, nchw=True),
}


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("form", list(TRANSPOSE_FORMS))
def test_transpose_conv_2d(backend: str, mode: str, form: str) -> None:
    """Output size ``stride * (in - 1) + filter - head - tail``. The twin: LiteRT's TRANSPOSE_CONV
    with SAME (which the PaddingCode form matches when the output shape fits the input), or VALID
    then a SLICE from ``top`` / ``left`` (the explicit form; a negative bottom / right padding
    extends the output past the scattered one, with the bias alone there)."""
    f, m = TRANSPOSE_FORMS[form], MODES[mode]
    rng = np.random.default_rng(abs(hash((mode, form))) % 2**32)
    n, h, w, cin, cout, kh, kw = 2, 4, 3, 3, 4, 3, 2
    (sh, sw), nchw = f.stride, f.nchw
    same = f.pads is None and f.code == PaddingCode.SAME
    left, right, top, bottom = f.pads or (0, 0, 0, 0)
    if same:  # the shape tensor asks for TensorFlow's SAME output size
        oh, ow = sh * h, sw * w
    else:  # explicit, or VALID: the whole scattered output
        oh, ow = sh * (h - 1) + kh - top - bottom, sw * (w - 1) + kw - left - right
    wdata, bdata = m.filter_data(rng, (cout, kh, kw, cin)), m.bias_data(rng, cout)
    s = Spec()
    x = m.input(s, layout_dims((n, h, w, cin), nchw))
    wi, bi = m.filter(s, wdata, 0), m.bias(s, bdata, wdata, 0)
    if f.pads:
        scalars = [s.i32(p) for p in f.pads]
    else:
        scalars = [s.const(T.TENSOR_INT32, layout_dims((n, oh, ow, cout), nchw)), s.i32(f.code)]
    scalars += [s.i32(sw), s.i32(sh), s.i32(f.fuse), s.boolean(nchw)]
    y = m.output(s, layout_dims((n, oh, ow, cout), nchw))
    s.op(OperationType.TRANSPOSE_CONV_2D, [x, wi, bi, *scalars], [y])
    model = s.model()

    twin = Twin(m)
    tx = twin.input([n, h, w, cin])
    # LiteRT's VALID output must be the scattered one, up to stride - 1 longer (a negative tail)
    rows, cols = (oh, ow) if same else (sh * (h - 1) + kh + max(0, -bottom), sw * (w - 1) + kw + max(0, -right))
    ty = twin.act([n, rows, cols, cout])
    twin.op("TRANSPOSE_CONV", [twin.const([n, rows, cols, cout], np.int32), twin.filter(wdata, 0), tx,
                               twin.bias(bdata, wdata, 0)], [ty],
            TransposeConvOptions(padding=ir.Padding.SAME if same else ir.Padding.VALID, stride_h=sh, stride_w=sw,
                                 fused_activation_function=FUSES[f.fuse]))
    if (rows, cols) != (oh, ow):
        cropped = twin.act([n, oh, ow, cout])
        twin.op("SLICE", [ty, twin.const([0, top, left, 0], np.int32), twin.const([n, oh, ow, cout], np.int32)],
                [cropped], SliceOptions())
        ty = cropped
    compare(model, twin, ty, m.input_data(rng, layout_dims((n, h, w, cin), nchw)), nchw, backend)


def test_transpose_conv_same_takes_padding_from_the_shape_tensor(backend: str) -> None:
    """PADDING_SAME with stride 2, filter 3 over 4 inputs: the shape tensor's output of 8 pads
    0 + 1, one of 7 pads 1 + 1 -- it picks between the two outputs, as in Android's reference
    (calculateExplicitPaddingTransposeConv). Filter (1, 2, 1) interpolates x = 1, 2, 3, 4 linearly:
    the scattered output is 1, 2, ..., 8 then a last 4."""
    for out, expected in ((8, np.arange(1, 9)), (7, np.arange(2, 9))):
        s = Spec()
        x = s.input(T.TENSOR_FLOAT32, [1, 1, 4, 1])
        w = s.const(T.TENSOR_FLOAT32, np.array([1.0, 2.0, 1.0]).reshape(1, 1, 3, 1))
        b = s.const(T.TENSOR_FLOAT32, [0.0])
        shape = s.input(T.TENSOR_INT32, [4])  # a model input: its value is read when the execution gives it
        y = s.output(T.TENSOR_FLOAT32, [1, 1, out, 1])
        s.op(OperationType.TRANSPOSE_CONV_2D, [x, w, b, shape, s.i32(PaddingCode.SAME), s.i32(2), s.i32(1),
                                               s.i32(0), s.boolean(False)], [y])
        check_vs(s.model(), [np.arange(1, 5, dtype=np.float32).reshape(1, 1, 4, 1), np.array([1, 1, out, 1])],
                 [np.asarray(expected, np.float32).reshape(1, 1, out, 1)], backend)


@pytest.mark.parametrize("mode", ["int8", "uint8_per_channel"])
def test_conv_2d_runtime_filter(backend: str, mode: str) -> None:
    """A filter that is a model input: an int8 one moves to uint8 through a QUANTIZE at run time
    (NNAPI's nonzero filter zero point), a per-channel one with a uint8 input stays int8."""
    m = MODES[mode]
    rng = np.random.default_rng(5)
    wdata, bdata = m.filter_data(rng, (3, 2, 2, 4)), m.bias_data(rng, 3)
    s = Spec()
    x = m.input(s, [1, 5, 5, 4])
    if m.per_channel:
        wi = s.input(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, [3, 2, 2, 4])
        s.m.set_operand_symm_per_channel_quant_params(wi, m.channel_scales(3), 0)
    else:
        wi = s.input(m.type, [3, 2, 2, 4], *m.w)
    y = m.output(s, [1, 4, 4, 3])
    s.op(OperationType.CONV_2D, [x, wi, m.bias(s, bdata, wdata, 0), s.i32(PaddingCode.VALID), s.i32(1), s.i32(1),
                                 s.i32(FuseCode.NONE)], [y])
    twin = Twin(m)
    ty = twin.act([1, 4, 4, 3])
    twin.op("CONV_2D", [twin.input([1, 5, 5, 4]), twin.filter(wdata, 0), twin.bias(bdata, wdata, 0)], [ty],
            Conv2DOptions(padding=ir.Padding.VALID, stride_h=1, stride_w=1))
    xs = m.input_data(rng, [1, 5, 5, 4])
    expected = twin.back(run_litert(twin.build(ty), [twin.feed(xs)])[0])
    check_vs(s.model(), [xs, wdata], [expected], backend, refuses="must be a constant")




def test_conv_bias_scale_must_be_input_times_filter_scale() -> None:
    s = Spec()
    x = s.input(T.TENSOR_QUANT8_ASYMM, [1, 3, 3, 1], 0.5, 0)
    w = s.const(T.TENSOR_QUANT8_ASYMM, np.ones((1, 2, 2, 1)), scale=0.5, zero_point=0)
    b = s.const(T.TENSOR_INT32, [0], scale=0.3)
    y = s.output(T.TENSOR_QUANT8_ASYMM, [1, 2, 2, 1], 1.0, 0)
    s.op(OperationType.CONV_2D, [x, w, b, s.i32(PaddingCode.VALID), s.i32(1), s.i32(1), s.i32(0)], [y])
    expect_bad_data(s, "operation 0 (CONV_2D): input 2: bias scale 0.3 must equal input scale x filter scale")


def test_conv_filter_depth_must_match_input() -> None:
    """CONV_2D does not group: a filter of half the input's depth is an error (GROUPED_CONV_2D's case)."""
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [1, 3, 3, 4])
    w = s.const(T.TENSOR_FLOAT32, np.ones((2, 1, 1, 2)))
    y = s.output(T.TENSOR_FLOAT32, [1, 3, 3, 2])
    s.op(OperationType.CONV_2D, [x, w, s.const(T.TENSOR_FLOAT32, [0, 0]), s.i32(PaddingCode.VALID), s.i32(1),
                                 s.i32(1), s.i32(0)], [y])
    expect_bad_data(
        s,
        "operation 0 (CONV_2D): input 1: the filter's depth 2 differs from the input's 4 channels")


def test_depthwise_filter_must_be_depth_in_times_multiplier() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [1, 3, 3, 2])
    w = s.const(T.TENSOR_FLOAT32, np.ones((1, 2, 2, 6)))
    y = s.output(T.TENSOR_FLOAT32, [1, 2, 2, 6])
    s.op(OperationType.DEPTHWISE_CONV_2D, [x, w, s.const(T.TENSOR_FLOAT32, np.zeros(6)), s.i32(PaddingCode.VALID),
                                           s.i32(1), s.i32(1), s.i32(2), s.i32(0)], [y])
    expect_bad_data(s, "operation 0 (DEPTHWISE_CONV_2D): input 1: the filter's depth_out 6 is not the input's 2 "
                        "channels x depth multiplier 2")


def test_depthwise_per_channel_filter_runs_along_dimension_3() -> None:
    s = Spec()
    x = s.input(T.TENSOR_QUANT8_ASYMM_SIGNED, [1, 3, 3, 2], 0.5, 0)
    w = s.const(T.TENSOR_QUANT8_SYMM_PER_CHANNEL, np.ones((1, 2, 2, 2)), channel=([0.5], 0))
    y = s.output(T.TENSOR_QUANT8_ASYMM_SIGNED, [1, 2, 2, 2], 1.0, 0)
    s.op(OperationType.DEPTHWISE_CONV_2D, [x, w, s.const(T.TENSOR_INT32, [0, 0]), s.i32(PaddingCode.VALID),
                                           s.i32(1), s.i32(1), s.i32(1), s.i32(0)], [y])
    expect_bad_data(s, "operation 0 (DEPTHWISE_CONV_2D): input 1: a per-channel filter's channel dimension must "
                        "be 3, got 0")


def test_grouped_conv_groups_must_divide_channels() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [1, 3, 3, 6])
    w = s.const(T.TENSOR_FLOAT32, np.ones((4, 1, 1, 2)))
    y = s.output(T.TENSOR_FLOAT32, [1, 3, 3, 4])
    s.op(OperationType.GROUPED_CONV_2D, [x, w, s.const(T.TENSOR_FLOAT32, np.zeros(4)), s.i32(PaddingCode.SAME),
                                         s.i32(1), s.i32(1), s.i32(2), s.i32(0), s.boolean(False)], [y])
    expect_bad_data(s, "operation 0 (GROUPED_CONV_2D): input 1: the input's 6 channels are not 2 groups of the "
                        "filter's depth 2")


def test_transpose_conv_rejects_negative_left_padding() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [1, 3, 3, 1])
    w = s.const(T.TENSOR_FLOAT32, np.ones((1, 2, 2, 1)))
    y = s.output(T.TENSOR_FLOAT32, [1, 4, 5, 1])
    s.op(OperationType.TRANSPOSE_CONV_2D, [x, w, s.const(T.TENSOR_FLOAT32, [0.0]), s.i32(-1), s.i32(0), s.i32(0),
                                           s.i32(0), s.i32(1), s.i32(1), s.i32(0), s.boolean(False)], [y])
    expect_bad_data(s, "operation 0 (TRANSPOSE_CONV_2D): input 3: the left and top paddings must be >= 0")
