"""FULLY_CONNECTED and BATCH_MATMUL from the spec's text, against LiteRT's reference kernels on
the same graph (FULLY_CONNECTED's input of rank 2 to 4 flattened to [batch_size, input_size]
rows; BATCH_MATMUL's adj_x / adj_y given, left off or omitted), and TENSOR_INT32 BATCH_MATMUL,
which TFLite lacks, against a NumPy derivation (int32 arithmetic, wrapping)."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.nnapi import FuseCode, OperationType
from teflon_py.nnapi import OperandType as T
from teflon_py.tflite.options import BatchMatMulOptions, FullyConnectedOptions
from tests.harness import run_litert
from tests.nnapi.harness import Spec, check_vs, expect_bad_data, rng_array
from tests.nnapi.tflite_graphs import TfliteGraph

FUSES = {FuseCode.NONE: ir.Activation.NONE, FuseCode.RELU: ir.Activation.RELU,
         FuseCode.RELU1: ir.Activation.RELU_N1_TO_1, FuseCode.RELU6: ir.Activation.RELU6}
#: type, then (scale, zero point) of input, weights and output
FC_MODES = {
    "float32": (T.TENSOR_FLOAT32, None, None, None),
    "float16": (T.TENSOR_FLOAT16, None, None, None),
    "uint8": (T.TENSOR_QUANT8_ASYMM, (0.05, 120), (0.02, 131), (0.4, 125)),
    "int8": (T.TENSOR_QUANT8_ASYMM_SIGNED, (0.05, -3), (0.02, 6), (0.4, 4)),
}
NUMPY = {T.TENSOR_FLOAT32: np.float32, T.TENSOR_FLOAT16: np.float32, T.TENSOR_QUANT8_ASYMM: np.uint8,
         T.TENSOR_QUANT8_ASYMM_SIGNED: np.int8, T.TENSOR_INT32: np.int32}
#: input shape, units, FuseCode: rank 2, and ranks 3 and 4 whose flattening regroups the rows
FC_SHAPES = {"rank2": ((3, 8), 5, FuseCode.RELU), "rank3": ((2, 3, 4), 5, FuseCode.NONE),
             "rank4": ((2, 2, 2, 3), 4, FuseCode.RELU6)}


def _q(q: tuple | None) -> tuple:
    return q or (None,)


@pytest.mark.parametrize("mode", list(FC_MODES))
@pytest.mark.parametrize("shape", list(FC_SHAPES))
def test_fully_connected(backend: str, mode: str, shape: str) -> None:
    t, xq, wq, yq = FC_MODES[mode]
    dims, units, fuse = FC_SHAPES[shape]
    depth = {"rank2": 8, "rank3": 6, "rank4": 12}[shape]  # input_size: a divisor of the element count
    rows = int(np.prod(dims)) // depth
    rng = np.random.default_rng(abs(hash((mode, shape))) % 2**32)
    w = rng_array(rng, t, (units, depth))
    b = rng_array(rng, T.TENSOR_FLOAT32 if xq is None else T.TENSOR_INT32, (units,))
    bscale = 0.0 if xq is None else float(np.float32(xq[0]) * np.float32(wq[0]))
    s = Spec()
    x = s.input(t, dims, *(xq or (0.0, 0)))
    wi = s.const(t, w, scale=wq[0] if wq else 0.0, zero_point=wq[1] if wq else 0)
    bi = s.const(T.TENSOR_INT32 if xq else t, b, scale=bscale)
    y = s.output(t, [rows, units], *(yq or (0.0, 0)))
    s.op(OperationType.FULLY_CONNECTED, [x, wi, bi, s.i32(fuse)], [y])
    model = s.model()

    dtype = NUMPY[t]
    g = TfliteGraph()
    tx = g.input(dims, dtype, *_q(xq))
    ty = g.tensor([rows, units], dtype, *_q(yq))
    g.op("FULLY_CONNECTED", [tx, g.const(w.astype(dtype), dtype, *_q(wq)),
                             g.const(b, np.int32 if xq else np.float32, *((bscale, 0) if xq else (None,)))],
         [ty], FullyConnectedOptions(fused_activation_function=FUSES[fuse]))
    xs = rng_array(rng, t, dims)
    expected = run_litert(g.build(ty), [xs.astype(dtype)])[0]
    if t == T.TENSOR_FLOAT16:
        expected = expected.astype(np.float16)
    check_vs(model, [xs], [expected], backend, float_tol=3e-3 if t == T.TENSOR_FLOAT16 else 1e-5)


#: (lhs, rhs) shapes, adj_x, adj_y (None: the flag left off; "omitted": given no value)
MATMUL_CASES = {
    "rank2": ((3, 4), (4, 5), None, None),
    "rank3_adj_y": ((2, 3, 4), (2, 5, 4), False, True),
    "rank4_adj_x": ((2, 1, 4, 3), (2, 1, 4, 5), True, "omitted"),
    "rank3_adj_both": ((2, 4, 3), (2, 5, 4), True, True),
}
MATMUL_MODES = {"float32": (T.TENSOR_FLOAT32, None), "float16": (T.TENSOR_FLOAT16, None),
                "int8": (T.TENSOR_QUANT8_ASYMM_SIGNED, ((0.05, -3), (0.03, 9), (0.5, 2)))}


def matmul_model(t: T, q: tuple | None, a: tuple, b: tuple, adj_x, adj_y, out: tuple) -> Spec:
    s = Spec()
    qa, qb, qy = q or ((0.0, 0),) * 3
    x0, x1 = s.input(t, a, *qa), s.input(t, b, *qb)
    flags = []
    if adj_x is not None or adj_y is not None:
        flags = [s.omitted(T.BOOL) if f == "omitted" else s.boolean(bool(f)) for f in (adj_x, adj_y)]
    y = s.output(t, out, *qy)
    s.op(OperationType.BATCH_MATMUL, [x0, x1, *flags], [y])
    return s


def matmul_out(a: tuple, b: tuple, adj_x, adj_y) -> tuple:
    return (*a[:-2], a[-1] if adj_x is True else a[-2], b[-2] if adj_y is True else b[-1])


@pytest.mark.parametrize("mode", list(MATMUL_MODES))
@pytest.mark.parametrize("case", list(MATMUL_CASES))
def test_batch_matmul(backend: str, mode: str, case: str) -> None:
    t, q = MATMUL_MODES[mode]
    a, b, adj_x, adj_y = MATMUL_CASES[case]
    out = matmul_out(a, b, adj_x, adj_y)
    model = matmul_model(t, q, a, b, adj_x, adj_y, out).model()
    rng = np.random.default_rng(abs(hash((mode, case))) % 2**32)
    xs = [rng_array(rng, t, a), rng_array(rng, t, b)]

    dtype = NUMPY[t]
    qa, qb, qy = q or ((None,),) * 3
    g = TfliteGraph()
    ta, tb = g.input(a, dtype, *qa), g.input(b, dtype, *qb)
    ty = g.tensor(out, dtype, *qy)
    g.op("BATCH_MATMUL", [ta, tb], [ty], BatchMatMulOptions(adj_x=adj_x is True, adj_y=adj_y is True))
    expected = run_litert(g.build(ty), [x.astype(dtype) for x in xs])[0]
    if t == T.TENSOR_FLOAT16:
        expected = expected.astype(np.float16)
    check_vs(model, xs, [expected], backend, float_tol=3e-3 if t == T.TENSOR_FLOAT16 else 1e-5)


@pytest.mark.parametrize("case", ["rank2", "rank3_adj_both"])
def test_batch_matmul_int32(backend: str, case: str) -> None:
    """int32 sums of int32 products, wrapping at 2^32 (Android's reference accumulates in int32):
    entries near 2^16 make some products and sums overflow."""
    a, b, adj_x, adj_y = MATMUL_CASES[case]
    out = matmul_out(a, b, adj_x, adj_y)
    rng = np.random.default_rng(11)
    xs = [rng.integers(-70000, 70000, a).astype(np.int32), rng.integers(-70000, 70000, b).astype(np.int32)]
    lhs, rhs = (np.swapaxes(x, -1, -2) if adj is True else x for x, adj in zip(xs, (adj_x, adj_y)))
    exact = np.matmul(lhs.astype(object), rhs.astype(object))  # Python integers: no overflow
    expected = ((exact + 2**31) % 2**32 - 2**31).astype(np.int32)
    assert (exact != expected).any()  # the case does wrap
    check_vs(matmul_model(T.TENSOR_INT32, None, a, b, adj_x, adj_y, out).model(), xs, [expected], backend)




def test_fully_connected_bias_scale_must_be_input_times_weights_scale() -> None:
    s = Spec()
    x = s.input(T.TENSOR_QUANT8_ASYMM, [2, 4], 0.5, 0)
    w = s.const(T.TENSOR_QUANT8_ASYMM, np.ones((3, 4)), scale=0.25, zero_point=0)
    b = s.const(T.TENSOR_INT32, [0, 0, 0], scale=0.5)
    y = s.output(T.TENSOR_QUANT8_ASYMM, [2, 3], 1.0, 0)
    s.op(OperationType.FULLY_CONNECTED, [x, w, b, s.i32(0)], [y])
    expect_bad_data(
        s,
        "operation 0 (FULLY_CONNECTED): input 2: bias scale 0.5 must equal input scale x filter scale")


def test_fully_connected_input_must_split_into_rows() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [2, 5])
    w = s.const(T.TENSOR_FLOAT32, np.ones((3, 4)))
    y = s.output(T.TENSOR_FLOAT32, [2, 3])
    s.op(OperationType.FULLY_CONNECTED, [x, w, s.const(T.TENSOR_FLOAT32, np.zeros(3)), s.i32(0)], [y])
    expect_bad_data(s, "operation 0 (FULLY_CONNECTED): input 0: the input's 10 values do not split into rows of "
                        "input_size 4")


def test_batch_matmul_batch_dimensions_must_match() -> None:
    """The spec's "same batch size": no broadcasting of a batch of 1."""
    s = matmul_model(T.TENSOR_FLOAT32, None, (1, 3, 4), (2, 4, 5), None, None, (2, 3, 5))
    expect_bad_data(s, "operation 0 (BATCH_MATMUL): input 1: the batch dimensions [1] and [2] differ")


def test_batch_matmul_inner_dimensions_must_match() -> None:
    s = matmul_model(T.TENSOR_FLOAT32, None, (3, 4), (3, 5), True, False, (4, 5))
    s2 = matmul_model(T.TENSOR_FLOAT32, None, (3, 4), (3, 5), False, False, (3, 5))
    s.model()  # adj_x: [4, 3] x [3, 5]
    expect_bad_data(s2, "operation 0 (BATCH_MATMUL): input 1: inner dimensions 4 and 3 differ")
