"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR from the spec's text: the output size by INT32
width and height or by scale factors (FLOAT32, FLOAT16 for a float16 input: floor(size * scale)),
NHWC and NCHW, align_corners and half_pixel_centers, every input type, against LiteRT's reference
kernels on the same graph (in NHWC between TRANSPOSEs for NCHW), and the rules as BAD_DATA."""
from __future__ import annotations

import math

import numpy as np
import pytest

from teflon_py.nnapi import NNAPIError, OperationType, ResultCode
from teflon_py.nnapi import OperandType as T
from teflon_py.tflite import options as O
from tests.nnapi.harness import Spec, expect_bad_data
from tests.nnapi.twin_case import NCHW_FROM_NHWC, NHWC_FROM_NCHW, Twin

OPTIONS = {"RESIZE_BILINEAR": O.ResizeBilinearOptions, "RESIZE_NEAREST_NEIGHBOR": O.ResizeNearestNeighborOptions}
IN_HW = (4, 5)
#: form -> (output size given as, NCHW, align_corners, half_pixel_centers)
FORMS = {"size": ("int", False, None, None), "scale": ("scale", False, None, None), "nchw": ("int", True, None, None),
         "align": ("scale", False, True, False), "half": ("int", True, False, True)}
WIDTH_SCALE, HEIGHT_SCALE = 1.5, 0.75  # exact in float16 too: 5 * 1.5 = 7.5 -> 7, 4 * 0.75 = 3


@pytest.mark.parametrize("mode", ["float32", "float16", "uint8", "int8"])
@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("op", list(OPTIONS))
def test_resize(backend: str, op: str, form: str, mode: str) -> None:
    by, nchw, align, half = FORMS[form]
    tw = Twin(mode, seed=len(form) + len(op))
    n, c = 2, 3
    h, w = IN_HW
    if by == "int":
        oh, ow = 7, 3
        size = [tw.s.i32(ow), tw.s.i32(oh)]
    else:
        oh, ow = math.floor(h * HEIGHT_SCALE), math.floor(w * WIDTH_SCALE)
        scale = T.FLOAT16 if mode == "float16" else T.FLOAT32
        size = [tw.s.scalar(scale, WIDTH_SCALE), tw.s.scalar(scale, HEIGHT_SCALE)]
    x_nhwc, y_nhwc = [n, h, w, c], [n, oh, ow, c]
    x_dims = [x_nhwc[i] for i in NCHW_FROM_NHWC] if nchw else x_nhwc
    x = tw.input(x_dims)
    y = tw.output([y_nhwc[i] for i in NCHW_FROM_NHWC] if nchw else y_nhwc)
    flags = []  # the layout flag may be left off for bilinear only; the corner flags after it
    if nchw or align is not None or op == "RESIZE_NEAREST_NEIGHBOR":
        flags.append(tw.s.boolean(nchw))
    if align is not None:
        flags += [tw.s.boolean(align), tw.s.boolean(half)]
    tw.s.op(OperationType[op], [x[0], *size, *flags], [y[0]])

    src = tw.transposed(x[1], x_dims, NHWC_FROM_NCHW) if nchw else x[1]
    dst = tw.tensor(y_nhwc) if nchw else y[1]
    options = OPTIONS[op](align_corners=bool(align), half_pixel_centers=bool(half))
    tw.g.op(op, [src, tw.g.const(np.array([oh, ow], np.int32), np.int32)], [dst], options)
    if nchw:
        tw.transpose_to(dst, y[1], NCHW_FROM_NHWC)
    tw.check(backend)


def test_scale_becomes_a_size_in_float32() -> None:
    """floor(float32(5) * float32(1.4)) as Android's reference: 1.4 is 1.39999998 in float32, whose
    product with 5 rounds to 7.0 in float32 (in float64 it stays below 7: the size would be 6)."""
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [1, 5, 5, 1])
    y = s.output(T.TENSOR_FLOAT32, [1, 7, 7, 1])
    s.op(OperationType.RESIZE_NEAREST_NEIGHBOR, [x, s.f32(1.4), s.f32(1.4), s.boolean(False)], [y])
    s.model()  # the declared [1, 3, 3, 1] is what the lowering computes (else BAD_DATA)




def test_align_corners_with_half_pixel_centers_is_refused() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [1, 2, 2, 1])
    y = s.output(T.TENSOR_FLOAT32, [1, 4, 4, 1])
    s.op(OperationType.RESIZE_BILINEAR, [x, s.i32(4), s.i32(4), s.boolean(False), s.boolean(True),
                                         s.boolean(True)], [y])
    expect_bad_data(s, "operation 0 (RESIZE_BILINEAR): input 5: half_pixel_centers takes align_corners false")


def test_scale_giving_no_pixels_is_refused() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [1, 2, 2, 1])
    y = s.output(T.TENSOR_FLOAT32, [1, 0, 0, 1])
    s.op(OperationType.RESIZE_BILINEAR, [x, s.f32(0.25), s.f32(1.0)], [y])
    expect_bad_data(s, "operation 0 (RESIZE_BILINEAR): input 1: gives an output size of 0")


def test_quantized_output_keeps_the_input_quantization() -> None:
    s = Spec()
    x = s.input(T.TENSOR_QUANT8_ASYMM, [1, 2, 2, 1], 0.5, 3)
    y = s.output(T.TENSOR_QUANT8_ASYMM, [1, 4, 4, 1], 0.25, 3)
    s.op(OperationType.RESIZE_NEAREST_NEIGHBOR, [x, s.i32(4), s.i32(4), s.boolean(False)], [y])
    expect_bad_data(s, "operation 0 (RESIZE_NEAREST_NEIGHBOR): output 0: scale 0.25 and zero point 3 must be")


def test_scale_type_follows_the_input() -> None:
    """A float16 input takes FLOAT16 scales; FLOAT32 ones are refused when the operation is added,
    as is RESIZE_NEAREST_NEIGHBOR without its layout flag."""
    s = Spec()
    x = s.input(T.TENSOR_FLOAT16, [1, 2, 2, 1])
    y = s.output(T.TENSOR_FLOAT16, [1, 4, 4, 1])
    with pytest.raises(NNAPIError) as e:
        s.op(OperationType.RESIZE_BILINEAR, [x, s.f32(2.0), s.f32(2.0)], [y])
    assert e.value.code == ResultCode.BAD_DATA and "input 1 has type FLOAT32" in str(e.value)
    with pytest.raises(NNAPIError) as e:
        s.op(OperationType.RESIZE_NEAREST_NEIGHBOR, [x, s.i32(4), s.i32(4)], [y])
    assert e.value.code == ResultCode.BAD_DATA and "takes 4 to 6 inputs, got 3" in str(e.value)
