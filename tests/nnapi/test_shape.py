"""The shape operations from the spec's text: RESHAPE (a -1 resolved; the shape a constant or a
model input), SQUEEZE (dimensions listed, negative, omitted, none, all: shape [1]), EXPAND_DIMS,
RANK (every operand type it allows), FILL (each output type; the shape a constant or a model
input), against LiteRT's reference kernels on the same graph, and the rules as BAD_DATA."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py.nnapi import OperandType as T
from teflon_py.nnapi import OperationType
from teflon_py.tflite import options as O
from tests.nnapi.harness import DTYPES, Spec, expect_bad_data, rng_array
from tests.nnapi.twin_case import MODES, Twin

FOUR = ["float32", "float16", "uint8", "int8"]
FIVE = [*FOUR, "int32"]




@pytest.mark.parametrize("mode", FIVE)
def test_reshape(backend: str, mode: str) -> None:
    """[2, 3, 4] as [4, -1] (TENSOR_INT32 since feature level 6)."""
    tw = Twin(mode, seed=1)
    x = tw.input([2, 3, 4])
    shape = tw.ints([4, -1])
    y = tw.output([4, 6])
    tw.s.op(OperationType.RESHAPE, [x[0], shape[0]], [y[0]])
    tw.g.op("RESHAPE", [x[1], shape[1]], [y[1]], O.ReshapeOptions())
    tw.check(backend)


def test_reshape_to_a_shape_given_at_run_time(backend: str) -> None:
    """The shape as a model input: passed to the op layer as a run-time tensor."""
    tw = Twin("float32", seed=2)
    x = tw.input([2, 6])
    s_nn = tw.s.input(T.TENSOR_INT32, [3])
    s_tf = tw.g.input([3], np.int32)
    tw.feeds.append(np.array([3, -1, 2], np.int32))
    y = tw.output([0, 0, 0])
    tw.s.op(OperationType.RESHAPE, [x[0], s_nn], [y[0]])
    tw.g.op("RESHAPE", [x[1], s_tf], [y[1]], O.ReshapeOptions())
    tw.check(backend, refuses="must be a constant")


@pytest.mark.parametrize("mode", FOUR)
@pytest.mark.parametrize("case", ["listed", "negative", "omitted", "all", "none"])
def test_squeeze(backend: str, mode: str, case: str) -> None:
    """Dimensions listed; listed from the end; omitted (every size-1 one); every dimension squeezed
    (NNAPI: shape [1], the twin a RESHAPE); an empty list (nothing squeezed, the twin a RESHAPE)."""
    tw = Twin(mode, seed=3)
    shape = [1, 1, 1] if case == "all" else [1, 3, 1, 2]
    x = tw.input(shape)
    dims = {"listed": [0], "negative": [-2], "omitted": None, "all": None, "none": []}[case]
    out = {"listed": [3, 1, 2], "negative": [1, 3, 2], "omitted": [3, 2], "all": [1], "none": shape}[case]
    y = tw.output(out)
    if dims is None:
        nn_dims = tw.s.omitted(T.TENSOR_INT32, [1])
    elif not dims:  # a constant cannot be empty (a 0 dimension is an unknown one): a model input
        nn_dims = tw.nn_input(T.TENSOR_INT32, [0], np.zeros(0, np.int32))
    else:
        nn_dims = tw.s.const(T.TENSOR_INT32, np.array(dims, np.int32))
    tw.s.op(OperationType.SQUEEZE, [x[0], nn_dims], [y[0]])
    if case in ("all", "none"):
        tw.g.op("RESHAPE", [x[1], tw.g.const(np.array(out, np.int32), np.int32)], [y[1]], O.ReshapeOptions())
    else:
        tw.g.op("SQUEEZE", [x[1]], [y[1]], O.SqueezeOptions(squeeze_dims=tuple(dims or ())))
    tw.check(backend)


@pytest.mark.parametrize("mode", FIVE)
@pytest.mark.parametrize("axis", [1, -1])
def test_expand_dims(backend: str, mode: str, axis: int) -> None:
    tw = Twin(mode, seed=4)
    x = tw.input([2, 3])
    y = tw.output([2, 1, 3] if axis == 1 else [2, 3, 1])
    tw.s.op(OperationType.EXPAND_DIMS, [x[0], tw.s.i32(axis)], [y[0]])
    tw.g.op("EXPAND_DIMS", [x[1], tw.g.const(np.array([axis], np.int32), np.int32)], [y[1]],
            O.ExpandDimsOptions())
    tw.check(backend)


#: RANK's input types, with the quantization each needs
RANK_TYPES = {T.TENSOR_FLOAT16: None, T.TENSOR_FLOAT32: None, T.TENSOR_INT32: None,
              T.TENSOR_QUANT8_ASYMM: (0.5, 3), T.TENSOR_QUANT16_SYMM: (0.25, 0), T.TENSOR_BOOL8: None,
              T.TENSOR_QUANT8_SYMM_PER_CHANNEL: "channel", T.TENSOR_QUANT16_ASYMM: (0.5, 100),
              T.TENSOR_QUANT8_SYMM: (0.5, 0), T.TENSOR_QUANT8_ASYMM_SIGNED: (0.5, -1)}


@pytest.mark.parametrize("type_", list(RANK_TYPES), ids=lambda t: t.name)
def test_rank(backend: str, type_: T) -> None:
    """The INT32 scalar rank of a 3-D input of every type the spec lists, against LiteRT's RANK."""
    rng = np.random.default_rng(5)
    s = Spec()
    q = RANK_TYPES[type_]
    if q == "channel":
        x = s.operand(type_, [3, 2, 2], channel=([0.5, 0.25, 0.125], 0))
        s.inputs.append(x)
    else:
        x = s.input(type_, [3, 2, 2], *(q or (0.0, 0)))
    y = s.output(T.INT32, None)
    s.op(OperationType.RANK, [x], [y])
    xs = rng_array(rng, type_, [3, 2, 2])
    tw = Twin("float32")
    t_in = tw.g.input([3, 2, 2], np.float32 if type_ == T.TENSOR_FLOAT16 else DTYPES[type_])
    t_out = tw.g.tensor([], np.int32)
    tw.g.op("RANK", [t_in], [t_out], O.RankOptions())
    tw.s, tw.feeds, tw.twin_outputs = s, [xs], [t_out]
    tw.mode = MODES["int32"]  # the output: int32, compared exactly
    tw.check(backend)


@pytest.mark.parametrize("mode", ["float32", "float16", "int32"])
@pytest.mark.parametrize("shape_from", ["constant", "input"])
def test_fill(backend: str, mode: str, shape_from: str) -> None:
    """A [2, 3] tensor of the value scalar (FLOAT16 / FLOAT32 / INT32 by the output type)."""
    tw = Twin(mode, seed=6)
    m = MODES[mode]
    if shape_from == "constant":
        dims = tw.ints([2, 3])
    else:
        dims = tw.s.input(T.TENSOR_INT32, [2]), tw.g.input([2], np.int32)
        tw.feeds.append(np.array([2, 3], np.int32))
    value = {"float32": 2.25, "float16": -0.5, "int32": 7}[mode]
    scalar = {"float32": T.FLOAT32, "float16": T.FLOAT16, "int32": T.INT32}[mode]
    y = tw.output([2, 3] if shape_from == "constant" else [0, 0])
    tw.s.op(OperationType.FILL, [dims[0], tw.s.scalar(scalar, value)], [y[0]])
    tw.g.op("FILL", [dims[1], tw.g.const(np.array(value, m.twin), m.twin)], [y[1]], O.FillOptions())
    # a shape known only at run time: the float16 rounding CAST after it stays on NumPy
    tw.check(backend, refuses="empty or unknown dimension" if shape_from == "input" else ())


# -- the rules ---------------------------------------------------------------------------------------------

def test_reshape_shape_must_hold_the_elements() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [2, 3])
    y = s.output(T.TENSOR_FLOAT32, [4, 0])
    s.op(OperationType.RESHAPE, [x, s.const(T.TENSOR_INT32, [4, -1])], [y])
    expect_bad_data(s, "operation 0 (RESHAPE): input 1: shape [4, -1] does not hold the input's 6 elements")


def test_squeeze_dimension_must_be_one() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [1, 3])
    y = s.output(T.TENSOR_FLOAT32, [1])
    s.op(OperationType.SQUEEZE, [x, s.const(T.TENSOR_INT32, [1])], [y])
    expect_bad_data(s, "operation 0 (SQUEEZE): input 1: dimension 1 cannot be squeezed from shape [1, 3]")


def test_expand_dims_axis_range() -> None:
    s = Spec()
    x = s.input(T.TENSOR_FLOAT32, [2, 3])
    y = s.output(T.TENSOR_FLOAT32, [2, 3, 1])
    s.op(OperationType.EXPAND_DIMS, [x, s.i32(3)], [y])
    expect_bad_data(s, "operation 0 (EXPAND_DIMS): input 1: axis 3 is outside [-3, 3)")


def test_fill_value_type_follows_the_output() -> None:
    """A FLOAT32 value for a TENSOR_INT32 output: refused when the operation is added."""
    s = Spec()
    dims = s.const(T.TENSOR_INT32, [2])
    y = s.output(T.TENSOR_INT32, [2])
    expect_bad_data(lambda: s.op(OperationType.FILL, [dims, s.f32(1.0)], [y]),
                    "(FILL): input 1 has type FLOAT32, the operation takes INT32 there")
