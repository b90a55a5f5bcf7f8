"""The elementwise and unary families of the op layer: TFLite translators round trip, inference
gives the broadcast shapes and dtypes, broken rules are ModelErrors, the quantized ADD/SUB/MUL
maths is public in ``teflon_py.quant``."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir, quant
from teflon_py.errors import ModelError
from teflon_py.ops import Act, FusedActivation, NoAttrs, infer
from teflon_py.ops.elementwise import BinaryAttrs, broadcast_reason, select_layout
from teflon_py.ops.unary import GeluAttrs, LeakyReluAttrs, clamp_of
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import quantization, write_model
from teflon_py.tflite.reader import read_model
from tests.harness import single_op

F32 = np.float32


def _model(op: str, ins: list[dict], outs: list[dict], options: object = None) -> bytes:
    return single_op(op, [{"quant": None, **i} for i in ins], outs, options)


def _op(model: bytes) -> tuple[ir.Graph, ir.Operation]:
    graph = read_model(model).main
    return graph, graph.operations[0]


BIN = [{"shape": (2, 1, 3), "dtype": F32}, {"shape": (4, 1), "dtype": F32}]


@pytest.mark.parametrize(("op", "options", "attrs"), [
    ("ADD", O.AddOptions(fused_activation_function=ir.Activation.RELU6, pot_scale_int16=False),
     BinaryAttrs(FusedActivation.of(Act.RELU6), False)),
    ("SUB", O.SubOptions(fused_activation_function=ir.Activation.RELU, pot_scale_int16=True),
     BinaryAttrs(FusedActivation.of(Act.RELU), True)),
    ("MUL", O.MulOptions(fused_activation_function=ir.Activation.RELU_N1_TO_1),
     BinaryAttrs(FusedActivation.of(Act.RELU_N1_TO_1))),
    ("DIV", O.DivOptions(), BinaryAttrs()),
    ("ADD", None, BinaryAttrs()),  # absent options: TFLite zero-initialises them (no pot_scale_int16)
    ("MAXIMUM", O.MaximumMinimumOptions(), NoAttrs()),
])
def test_binary_translators_round_trip(op: str, options: object, attrs: object) -> None:
    model = _model(op, BIN, [{"shape": (2, 4, 3), "dtype": F32}], options)
    _, parsed = _op(model)
    assert parsed.attrs == attrs
    again = read_model(write_model(read_model(model))).main.operations[0]
    assert again.attrs == attrs


def test_unary_translators_round_trip() -> None:
    x = [{"shape": (3,), "dtype": F32}]
    leaky = _model("LEAKY_RELU", x, x, O.LeakyReluOptions(alpha=0.25))
    gelu = _model("GELU", x, x, O.GeluOptions(approximate=True))
    for model, attrs in ((leaky, LeakyReluAttrs(0.25)), (gelu, GeluAttrs(True)), (_model("ABS", x, x), NoAttrs())):
        assert _op(model)[1].attrs == attrs
        assert read_model(write_model(read_model(model))).main.operations[0].attrs == attrs


def test_unknown_activation_code_is_a_model_error() -> None:
    with pytest.raises(ModelError, match=r"subgraph 0 operator 0 \(ADD\): unknown fused activation 17"):
        read_model(_model("ADD", BIN, [{"shape": (2, 4, 3), "dtype": F32}],
                          O.AddOptions(fused_activation_function=17)))


def test_infer_shapes_and_dtypes() -> None:
    graph, op = _op(_model("ADD", BIN, [{"shape": (2, 4, 3), "dtype": F32}], O.AddOptions()))
    (meta,) = infer(graph, op)
    assert meta.shape == (2, 4, 3) and meta.dtype == F32
    graph, op = _op(_model("LESS", BIN, [{"shape": (2, 4, 3), "dtype": np.bool_}]))
    assert infer(graph, op)[0].dtype == np.bool_
    graph, op = _op(_model("SELECT", [{"shape": (2,), "dtype": np.bool_}, {"shape": (2, 3), "dtype": F32},
                                      {"shape": (2, 3), "dtype": F32}], [{"shape": (2, 3), "dtype": F32}]))
    assert infer(graph, op)[0].shape == (2, 3)
    graph, op = _op(_model("GELU", [{"shape": (5, 2), "dtype": F32}], [{"shape": (5, 2), "dtype": F32}]))
    assert infer(graph, op)[0].shape == (5, 2)


def test_infer_rejects_broken_rules() -> None:
    graph, op = _op(_model("MUL", [{"shape": (2, 3), "dtype": F32}, {"shape": (4,), "dtype": F32}],
                           [{"shape": (2, 3), "dtype": F32}], O.MulOptions()))
    with pytest.raises(ModelError, match=r"node 0 \(MUL\): input shapes \[2, 3\], \[4\] do not broadcast"):
        infer(graph, op)
    graph, op = _op(_model("ATAN2", [{"shape": (2, 3), "dtype": F32}, {"shape": (3,), "dtype": F32}],
                           [{"shape": (2, 3), "dtype": F32}]))
    with pytest.raises(ModelError, match=r"node 0 \(ATAN2\): .*ATAN2 does not broadcast"):
        infer(graph, op)
    graph, op = _op(_model("SELECT_V2", [{"shape": (3,), "dtype": F32}] * 3, [{"shape": (3,), "dtype": F32}]))
    with pytest.raises(ModelError, match=r"node 0 \(SELECT_V2\): condition type float32 must be bool"):
        infer(graph, op)
    graph, op = _op(_model("ADD", [{"shape": (3,), "dtype": np.int8}] * 2, [{"shape": (3,), "dtype": np.int8}]))
    with pytest.raises(ModelError, match=r"node 0 \(ADD\): tensor 0 'input0' of type int8 has no quantization"):
        infer(graph, op)


def test_shared_rules() -> None:
    assert broadcast_reason([(2, 1), (1, 3)], (2, 3)) is None
    assert "broadcast" in broadcast_reason([(2, 1), (1, 3)], (2, 2))
    assert select_layout("SELECT", (2,), (2, 3), (2, 3), (2, 3)) == ([(2, 1), (2, 3), (2, 3)], (2, 3))
    assert isinstance(select_layout("SELECT", (3,), (2, 3), (2, 3), (2, 3)), str)
    assert clamp_of("RELU6") == FusedActivation.of(Act.RELU6)
    assert clamp_of("RELU_0_TO_1").range(F32) == (0.0, 1.0)
    assert clamp_of("TANH") is None


def test_quantized_binary_params_are_public() -> None:
    q = quantization
    graph, op = _op(_model("ADD", [{"shape": (3,), "dtype": np.int8, "quant": q(0.5, 1)},
                                   {"shape": (3,), "dtype": np.int8, "quant": q(0.25, -2)}],
                           [{"shape": (3,), "dtype": np.int8, "quant": q(0.5, 0)}],
                           O.AddOptions(fused_activation_function=ir.Activation.RELU)))
    a, b, y = (graph.tensors[t] for t in (*op.inputs, *op.outputs))
    p = quant.add_sub_params(a, b, y, op.attrs.activation)
    assert p["left_shift"] == 20 and (p["off1"], p["off2"], p["out_off"]) == (-1, 2, 0)
    assert (p["lo"], p["hi"]) == (0, 127)
    m = quant.mul_params(a, b, y, op.attrs.activation)
    assert (m["off1"], m["off2"], m["lo"]) == (-1, 2, 0)
    x = quant.scale_input(np.array([-128, 0, 127]), p["off1"], p["left_shift"], p["m1"], p["e1"])
    assert x.shape == (3,) and x[1] < 0 < x[2]
