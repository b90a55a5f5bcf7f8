"""CONV_2D from the spec's text: both padding forms, NCHW, dilation, every input type the spec
allows (float32, float16, uint8 with per-tensor or per-channel filters, int8), against LiteRT's
reference CONV_2D on the same graph (explicit padding as a PAD before a VALID conv)."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.nnapi import FuseCode, NNAPIError, OperationType, PaddingCode, ResultCode
from teflon_py.nnapi import OperandType as T
from teflon_py.tflite.options import Conv2DOptions, PadOptions
from tests.nnapi.harness import Spec, check_vs_tflite, rng_array
from tests.nnapi.tflite_graphs import TfliteGraph

FUSES = {FuseCode.NONE: ir.Activation.NONE, FuseCode.RELU: ir.Activation.RELU,
         FuseCode.RELU1: ir.Activation.RELU_N1_TO_1, FuseCode.RELU6: ir.Activation.RELU6}
#: (input type, quantization of input, filter, output); filter per-channel when its scale is a list
QUANT = {
    "float32": (T.TENSOR_FLOAT32, None, None, None),
    "float16": (T.TENSOR_FLOAT16, None, None, None),
    "uint8": (T.TENSOR_QUANT8_ASYMM, (0.05, 120), (0.02, 130), (0.25, 125)),
    "uint8_per_channel": (T.TENSOR_QUANT8_ASYMM, (0.05, 120), ([0.01, 0.02, 0.03], 0), (0.25, 125)),
    "int8_per_channel": (T.TENSOR_QUANT8_ASYMM_SIGNED, (0.05, -3), ([0.01, 0.02, 0.03], 0), (0.25, 4)),
}


def out_size(size: int, k: int, stride: int, dil: int, pads: tuple[int, int] | None) -> int:
    eff = (k - 1) * dil + 1
    if pads is None:  # SAME
        return -(-size // stride)
    return (size + pads[0] + pads[1] - eff) // stride + 1


@pytest.mark.parametrize("mode", list(QUANT))
@pytest.mark.parametrize("form", ["implicit_same", "implicit_valid", "explicit", "nchw", "dilated"])
def test_conv_2d(backend: str, mode: str, form: str) -> None:
    rng = np.random.default_rng(abs(hash((mode, form))) % 1000)
    t, xq, wq, yq = QUANT[mode]
    n, h, w, cin, cout, kh, kw = 2, 7, 6, 4, 3, 3, 2
    stride = (2, 1) if form != "dilated" else (1, 1)
    dil = (2, 2) if form == "dilated" else (1, 1)
    pads = {"explicit": (1, 2, 0, 1)}.get(form)  # left, right, top, bottom
    fuse = [FuseCode.RELU, FuseCode.NONE, FuseCode.RELU6, FuseCode.RELU1, FuseCode.NONE][
        ["implicit_same", "implicit_valid", "explicit", "nchw", "dilated"].index(form)]
    same = form in ("implicit_same", "nchw", "dilated")
    if t in (T.TENSOR_FLOAT32, T.TENSOR_FLOAT16):
        wdata = rng.standard_normal((cout, kh, kw, cin)).astype(np.float32)
        bdata = rng.standard_normal(cout).astype(np.float32)
        wtype, btype = t, t
    else:
        wdtype = np.uint8 if mode == "uint8" else np.int8
        lo, hi = (0, 255) if wdtype == np.uint8 else (-127, 127)
        wdata = rng.integers(lo, hi, (cout, kh, kw, cin), endpoint=True).astype(wdtype)
        bdata = rng.integers(-2000, 2000, cout).astype(np.int32)
        wtype = T.TENSOR_QUANT8_ASYMM if mode == "uint8" else T.TENSOR_QUANT8_SYMM_PER_CHANNEL
        btype = T.TENSOR_INT32
    oh = out_size(h, kh, stride[0], dil[0], None if same else (pads[2], pads[3]) if pads else (0, 0))
    ow = out_size(w, kw, stride[1], dil[1], None if same else (pads[0], pads[1]) if pads else (0, 0))

    s = Spec()
    nchw = form == "nchw"
    xdims = [n, cin, h, w] if nchw else [n, h, w, cin]
    x = s.input(t, xdims, *(xq or (0.0, 0)))
    if wq is not None and isinstance(wq[0], list):
        wi = s.const(wtype, wdata, channel=(wq[0], 0))
        bscale = 0.0
    elif wq is not None:
        wi = s.const(wtype, wdata, scale=wq[0], zero_point=wq[1])
        bscale = float(np.float32(xq[0]) * np.float32(wq[0]))
    else:
        wi, bscale = s.const(wtype, wdata.astype(np.float16) if t == T.TENSOR_FLOAT16 else wdata), 0.0
    bi = s.const(btype, bdata.astype(np.float16) if t == T.TENSOR_FLOAT16 else bdata, scale=bscale)
    params = ([s.i32(p) for p in pads] if pads else
              [s.i32(PaddingCode.SAME if same else PaddingCode.VALID)])
    params += [s.i32(stride[1]), s.i32(stride[0]), s.i32(fuse)]
    if nchw:
        params.append(s.boolean(True))
    if form == "dilated":
        params += [s.boolean(False), s.i32(dil[1]), s.i32(dil[0])]
    ydims = [n, cout, oh, ow] if nchw else [n, oh, ow, cout]
    y = s.output(t, ydims, *(yq or (0.0, 0)))
    s.op(OperationType.CONV_2D, [x, wi, bi, *params], [y])
    model = s.model()

    # the TFLite twin: float16 runs as float32; a uint8 input with a per-channel filter is the
    # same arithmetic as the int8 conv of the inputs shifted by 128 (NNAPI's reference computes it so)
    shifted = mode == "uint8_per_channel"
    tdtype = {T.TENSOR_FLOAT32: np.float32, T.TENSOR_FLOAT16: np.float32, T.TENSOR_QUANT8_ASYMM: np.uint8,
              T.TENSOR_QUANT8_ASYMM_SIGNED: np.int8}[t]
    tdtype = np.int8 if shifted else tdtype
    xshift = -128 if shifted else 0
    xs = rng_array(rng, t, xdims)
    g = TfliteGraph()
    tx = g.input([n, h, w, cin], tdtype, *((xq[0], xq[1] + xshift) if xq else (None,)))
    if wq is not None and isinstance(wq[0], list):
        tw = g.const(wdata, np.int8, wq[0], 0, 0)
    elif wq is not None:
        tw = g.const(wdata, np.uint8, wq[0], wq[1])
    else:
        tw = g.const(wdata, np.float32)
    tb = g.const(bdata, np.int32 if bscale or wq else np.float32,
                 *( (np.float32(xq[0]) * np.float32(np.asarray(wq[0], np.float32)), 0) if wq else (None,)))
    src = tx
    if pads:
        ph, pw = h + pads[2] + pads[3], w + pads[0] + pads[1]
        src = g.tensor([n, ph, pw, cin], tdtype, *((xq[0], xq[1] + xshift) if xq else (None,)))
        g.op("PAD", [tx, g.const([[0, 0], [pads[2], pads[3]], [pads[0], pads[1]], [0, 0]], np.int32)], [src],
             PadOptions())
    ty = g.tensor([n, oh, ow, cout], tdtype, *((yq[0], yq[1] + xshift) if yq else (None,)))
    g.op("CONV_2D", [src, tw, tb], [ty], Conv2DOptions(
        padding=ir.Padding.SAME if same else ir.Padding.VALID, stride_h=stride[0], stride_w=stride[1],
        dilation_h_factor=dil[0], dilation_w_factor=dil[1], fused_activation_function=FUSES[fuse]))
    tflite = g.build(ty)

    if t == T.TENSOR_FLOAT16:
        xs = xs.astype(np.float16)
    feed = xs.transpose(0, 2, 3, 1) if nchw else xs  # the twin is NHWC
    twin_in = feed.astype(np.int16) + xshift if shifted else feed
    from tests.harness import run_litert
    expected = run_litert(tflite, [np.asarray(twin_in, tdtype) if t != T.TENSOR_FLOAT16 else
                                   feed.astype(np.float32)])[0]
    if shifted:
        expected = (expected.astype(np.int16) + 128).astype(np.uint8)
    if nchw:
        expected = expected.transpose(0, 3, 1, 2)
    tol = 3e-3 if t == T.TENSOR_FLOAT16 else 1e-5
    if t == T.TENSOR_FLOAT16:
        expected = expected.astype(np.float16)
    from tests.nnapi.harness import check_vs
    check_vs(model, [xs], [expected], backend, float_tol=tol)
    _ = check_vs_tflite


def test_conv_bias_scale_must_be_input_times_filter_scale() -> None:
    s = Spec()
    x = s.input(T.TENSOR_QUANT8_ASYMM, [1, 3, 3, 1], 0.5, 0)
    w = s.const(T.TENSOR_QUANT8_ASYMM, np.ones((1, 2, 2, 1)), scale=0.5, zero_point=0)
    b = s.const(T.TENSOR_INT32, [0], scale=0.3)
    y = s.output(T.TENSOR_QUANT8_ASYMM, [1, 2, 2, 1], 1.0, 0)
    s.op(OperationType.CONV_2D, [x, w, b, s.i32(PaddingCode.VALID), s.i32(1), s.i32(1), s.i32(0)], [y])
    with pytest.raises(NNAPIError) as e:
        s.model()
    assert e.value.code == ResultCode.BAD_DATA
    assert "operation 0 (CONV_2D): input 2: bias scale 0.3 must equal input scale x filter scale" in str(e.value)
