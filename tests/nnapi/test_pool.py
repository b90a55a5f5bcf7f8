"""AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D from the spec's text: both padding forms, NCHW,
fused activations and every input type the spec allows, against LiteRT's reference pools (the
explicit form with SAME's paddings, so the twin can take SAME), plus asymmetric explicit paddings
against a NumPy derivation of the spec's formulas (windows take their in-bounds elements only:
an average divides by their count)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.nnapi import FuseCode, OperationType, PaddingCode
from teflon_py.nnapi import OperandType as T
from teflon_py.tflite.options import Pool2DOptions
from tests.harness import run_litert
from tests.nnapi.harness import Spec, check_vs, expect_bad_data, rng_array
from tests.nnapi.tflite_graphs import TfliteGraph

FUSES = {FuseCode.NONE: ir.Activation.NONE, FuseCode.RELU: ir.Activation.RELU,
         FuseCode.RELU1: ir.Activation.RELU_N1_TO_1, FuseCode.RELU6: ir.Activation.RELU6}
#: type and (scale, zero point), the output's the input's as the spec requires
MODES = {"float32": (T.TENSOR_FLOAT32, None), "float16": (T.TENSOR_FLOAT16, None),
         "uint8": (T.TENSOR_QUANT8_ASYMM, (0.1, 128)), "int8": (T.TENSOR_QUANT8_ASYMM_SIGNED, (0.1, -5))}
OPS = {"average": OperationType.AVERAGE_POOL_2D, "max": OperationType.MAX_POOL_2D, "l2": OperationType.L2_POOL_2D}


@dataclass(frozen=True)
class Form:
    """Explicit pads (left, right, top, bottom) or SAME / VALID, strides (h, w), FuseCode, layout."""

    pads: tuple[int, int, int, int] | None = None
    same: bool = True
    stride: tuple[int, int] = (1, 1)
    fuse: FuseCode = FuseCode.NONE
    nchw: bool = False


#: a 3x2 filter over 7x6: the explicit form's pads are the ones SAME gives there with strides 2, 1
FORMS = {
    "implicit_same": Form(stride=(2, 1), fuse=FuseCode.RELU),
    "implicit_valid": Form(same=False, stride=(1, 2)),
    "explicit": Form(pads=(0, 1, 1, 1), stride=(2, 1), fuse=FuseCode.RELU6),
    "nchw": Form(fuse=FuseCode.RELU1, nchw=True),
}
FILTER = (3, 2)  # (h, w)


def pool_model(op: OperationType, t: T, q: tuple | None, form: Form, in_dims: list[int], out_dims: list[int],
               filt: tuple[int, int] = FILTER) -> Spec:
    s = Spec()
    x = s.input(t, in_dims, *(q or (0.0, 0)))
    y = s.output(t, out_dims, *(q or (0.0, 0)))
    pad = [s.i32(p) for p in form.pads] if form.pads else [s.i32(PaddingCode.SAME if form.same else
                                                                   PaddingCode.VALID)]
    scalars = [*pad, s.i32(form.stride[1]), s.i32(form.stride[0]), s.i32(filt[1]), s.i32(filt[0]),
               s.i32(form.fuse)]
    if form.nchw:
        scalars.append(s.boolean(True))
    s.op(op, [x, *scalars], [y])
    return s


def nchw_dims(dims: tuple[int, int, int, int], nchw: bool) -> list[int]:
    n, h, w, c = dims
    return [n, c, h, w] if nchw else [n, h, w, c]


@pytest.mark.parametrize(("op", "mode"), [(op, mode) for op in OPS for mode in MODES
                                         if op != "l2" or MODES[mode][1] is None])  # L2: float only
@pytest.mark.parametrize("form", list(FORMS))
def test_pool(backend: str, op: str, mode: str, form: str) -> None:
    t, q = MODES[mode]
    f = FORMS[form]
    rng = np.random.default_rng(abs(hash((op, mode, form))) % 2**32)
    n, h, w, c = 2, 7, 6, 3
    same = f.pads is not None or f.same
    oh, ow = ((-(-h // f.stride[0]), -(-w // f.stride[1])) if same else
              ((h - FILTER[0]) // f.stride[0] + 1, (w - FILTER[1]) // f.stride[1] + 1))
    model = pool_model(OPS[op], t, q, f, nchw_dims((n, h, w, c), f.nchw), nchw_dims((n, oh, ow, c), f.nchw)).model()

    tdtype = {T.TENSOR_QUANT8_ASYMM: np.uint8, T.TENSOR_QUANT8_ASYMM_SIGNED: np.int8}.get(t, np.float32)
    g = TfliteGraph()
    tx = g.input([n, h, w, c], tdtype, *(q or (None,)))
    ty = g.tensor([n, oh, ow, c], tdtype, *(q or (None,)))
    g.op(OPS[op].name, [tx], [ty], Pool2DOptions(
        padding=ir.Padding.SAME if same else ir.Padding.VALID, stride_h=f.stride[0], stride_w=f.stride[1],
        filter_height=FILTER[0], filter_width=FILTER[1], fused_activation_function=FUSES[f.fuse]))
    xs = rng_array(rng, t, nchw_dims((n, h, w, c), f.nchw))
    expected = run_litert(g.build(ty), [(xs.transpose(0, 2, 3, 1) if f.nchw else xs).astype(tdtype)])[0]
    expected = expected.transpose(0, 3, 1, 2) if f.nchw else expected
    if t == T.TENSOR_FLOAT16:
        expected = expected.astype(np.float16)
    check_vs(model, [xs], [expected], backend, float_tol=3e-3 if t == T.TENSOR_FLOAT16 else 1e-5)


def numpy_pool(op: str, x: np.ndarray, pads: tuple[int, int, int, int], filt: tuple[int, int],
               stride: tuple[int, int]) -> np.ndarray:
    """The spec's formulas over NHWC float64, each window's in-bounds elements only."""
    left, right, top, bottom = pads
    n, h, w, c = x.shape
    oh = (h + top + bottom - filt[0]) // stride[0] + 1
    ow = (w + left + right - filt[1]) // stride[1] + 1
    out = np.empty((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            y0, x0 = i * stride[0] - top, j * stride[1] - left
            win = x[:, max(y0, 0):y0 + filt[0], max(x0, 0):x0 + filt[1]].reshape(n, -1, c).astype(np.float64)
            out[:, i, j] = {"average": lambda v: v.mean(1), "max": lambda v: v.max(1),
                            "l2": lambda v: np.sqrt((v * v).mean(1))}[op](win)
    return out


@pytest.mark.parametrize("op", list(OPS))
def test_pool_asymmetric_explicit_padding(backend: str, op: str) -> None:
    """Pads left 2, right 0, top 1, bottom 2 (no SAME has these): corner windows hold 1 to 4 of
    the 3x3 filter's elements, and the average divides by that count, not by 9."""
    pads, filt, stride = (2, 0, 1, 2), (3, 3), (2, 1)
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 5, 4, 2)).astype(np.float32)
    expected = numpy_pool(op, x, pads, filt, stride).astype(np.float32)
    model = pool_model(OPS[op], T.TENSOR_FLOAT32, None, Form(pads=pads, stride=stride), list(x.shape),
                       list(expected.shape), filt).model()
    check_vs(model, [x], [expected], backend)


def test_quantized_average_pool_explicit_padding_rounds_half_away(backend: str) -> None:
    """uint8 and int8: the in-bounds mean of the raw values, rounded half away from zero (TFLite's
    ``(sum +- count / 2) / count``), at the input's scale and zero point."""
    pads, filt, stride = (1, 1, 0, 1), (2, 3), (1, 2)
    rng = np.random.default_rng(3)
    for t in (T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT8_ASYMM_SIGNED):
        x = rng_array(rng, t, (2, 4, 5, 3))
        mean = numpy_pool("average", x, pads, filt, stride)  # k / count in float64: a half is exact
        expected = (np.sign(mean) * np.floor(np.abs(mean) + 0.5)).astype(x.dtype)
        model = pool_model(OperationType.AVERAGE_POOL_2D, t, (0.5, 3), Form(pads=pads, stride=stride),
                           list(x.shape), list(expected.shape), filt).model()
        check_vs(model, [x], [expected], backend)




def test_quantized_pool_output_keeps_the_input_quantization() -> None:
    s = Spec()
    x = s.input(T.TENSOR_QUANT8_ASYMM, [1, 4, 4, 1], 0.5, 10)
    y = s.output(T.TENSOR_QUANT8_ASYMM, [1, 2, 2, 1], 0.25, 10)
    s.op(OperationType.MAX_POOL_2D, [x, s.i32(PaddingCode.VALID), s.i32(2), s.i32(2), s.i32(2), s.i32(2),
                                     s.i32(0)], [y])
    expect_bad_data(s, "operation 0 (MAX_POOL_2D): output 0: the output's scale and zero point (0.25, 10) must be "
                        "the input's (0.5, 10)")


def test_average_pool_window_in_the_padding_is_an_error() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [1, 2, 2, 1])
    y = s.output(T.TENSOR_FLOAT32, [1, 4, 2, 1])
    s.op(OperationType.AVERAGE_POOL_2D, [x, s.i32(0), s.i32(0), s.i32(3), s.i32(0), s.i32(1), s.i32(1), s.i32(1),
                                         s.i32(1), s.i32(0)], [y])
    expect_bad_data(s, "operation 0 (AVERAGE_POOL_2D): input 1: a window lies entirely in the padding")


def test_pool_filter_must_be_positive() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [1, 4, 4, 1])
    y = s.output(T.TENSOR_FLOAT32, [1, 4, 4, 1])
    s.op(OperationType.L2_POOL_2D, [x, s.i32(PaddingCode.SAME), s.i32(1), s.i32(1), s.i32(0), s.i32(2), s.i32(0)],
         [y])
    expect_bad_data(s,
                    "operation 0 (L2_POOL_2D): input 4: the filter (width 0, height 2) must be at least 1x1")
