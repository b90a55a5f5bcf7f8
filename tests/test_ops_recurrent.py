"""The control-flow / variables, recurrent and custom families of the op layer: TFLite translators
round-trip, and inference gives the output shapes and rejects broken models."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import ir, ops
from teflon_py.errors import ModelError
from teflon_py.ops import control_flow as C
from teflon_py.ops import custom as U
from teflon_py.ops import recurrent as R
from teflon_py.ops.common import Act, FusedActivation
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import write_model
from teflon_py.tflite.reader import read_model
from tests.harness import single_op


def _roundtrip(model_bytes: bytes) -> tuple[ir.Operation, ir.Operation]:
    m = read_model(model_bytes)
    again = read_model(write_model(m))
    return m.main.operations[0], again.main.operations[0]


def test_var_handle_roundtrip_and_infer() -> None:
    model = single_op("VAR_HANDLE", [], [{"shape": (1,), "dtype": np.int32}],
                      O.VarHandleOptions(container="c", shared_name="v"))
    a, b = _roundtrip(model)
    assert a.attrs == C.VarHandleAttrs("c", "v") == b.attrs
    assert C.resource_key(a.attrs) == ("c", "v")
    g = read_model(model).main
    (meta,) = ops.infer(g, g.operations[0])
    assert meta.shape == (1,) and meta.dtype == np.int32


def test_read_variable_needs_a_handle() -> None:
    model = single_op("READ_VARIABLE", [{"shape": (1,), "dtype": np.int32}], [{"shape": (2,), "dtype": np.float32}],
                      O.ReadVariableOptions())
    g = read_model(model).main
    (meta,) = ops.infer(g, g.operations[0])
    assert meta.dtype == np.float32


def test_subgraph_attrs() -> None:
    assert C.subgraphs(C.WhileAttrs(1, 2)) == [1, 2]
    assert C.subgraphs(C.IfAttrs(3, 4)) == [3, 4]
    assert C.subgraphs(C.CallOnceAttrs(5)) == [5]
    assert C.subgraphs(C.VarHandleAttrs()) == []
    assert C.resource_key(C.CallOnceAttrs(5)) is None


def test_call_once_roundtrip() -> None:
    model = single_op("CALL_ONCE", [], [], O.CallOnceOptions(init_subgraph_index=0))
    a, b = _roundtrip(model)
    assert a.attrs == C.CallOnceAttrs(0) == b.attrs



def _first(model: bytes) -> tuple[ir.Graph, ir.Operation]:
    g = read_model(model).main
    return g, g.operations[0]


def test_lstm_parse_roundtrip_and_infer() -> None:
    from tests.ops.test_recurrent import lstm_model

    model = lstm_model("UNIDIRECTIONAL_SEQUENCE_LSTM", "float32", 2, 3, 5, 6, 4, projection=True, time_major=True,
                       act=ir.Activation.RELU6, cell_clip=3.0, proj_clip=0.5, asymmetric=True)
    a, b = _roundtrip(model)
    assert a.attrs == R.RecurrentAttrs(FusedActivation.of(Act.RELU6), cell_clip=3.0, proj_clip=0.5, time_major=True,
                                       asymmetric_quantize_inputs=True)
    assert b.attrs == a.attrs
    g, op = _first(model)
    (meta,) = ops.infer(g, op)
    assert meta.shape == (3, 2, 4) and meta.dtype == np.float32


def test_lstm_negative_clip_is_a_model_error() -> None:
    from tests.ops.test_recurrent import lstm_model

    g, op = _first(lstm_model("LSTM", "float32", 1, 1, 4, 4, 4, cell_clip=-1.0))
    with pytest.raises(ModelError, match=r"node 0 \(LSTM\): clips must not be negative \(cell_clip -1\.0"):
        ops.infer(g, op)


def test_bidi_lstm_roundtrip() -> None:
    from tests.ops.test_recurrent import bidi_model

    a, b = _roundtrip(bidi_model("float32", 2, 3, 4, 5, 5, merge=True, time_major=False))
    assert a.attrs.merge_outputs and not a.attrs.time_major and a.attrs.activation.kind == Act.TANH
    assert b.attrs == a.attrs


@pytest.mark.parametrize("op", ["RNN", "UNIDIRECTIONAL_SEQUENCE_RNN"])
def test_rnn_roundtrip_and_infer(op: str) -> None:
    from tests.ops.test_recurrent import rnn_model

    model = rnn_model(op, "hybrid", 2, 3, 4, 5, ir.Activation.RELU, time_major=True, asymmetric=True)
    a, b = _roundtrip(model)
    assert a.attrs.activation == FusedActivation.of(Act.RELU) and a.attrs.asymmetric_quantize_inputs
    assert a.attrs.time_major == (op != "RNN")
    assert b.attrs == a.attrs
    g, op_ = _first(model)
    metas = ops.infer(g, op_)
    assert metas[0].shape == g.tensors[op_.outputs[0]].shape


def test_svdf_roundtrip() -> None:
    from tests.ops.test_recurrent import svdf_model

    a, b = _roundtrip(svdf_model("float32", 2, 5, 3, 2, 4, ir.Activation.RELU))
    assert a.attrs.rank == 2 and a.attrs.activation.kind == Act.RELU
    assert b.attrs == a.attrs


def _custom(code: str, opts: bytes | None, outs: int = 1) -> bytes:
    return single_op("CUSTOM", [{"shape": (1, 4, 4, 2), "dtype": np.float32}],
                     [{"shape": (1, 2, 2, 2), "dtype": np.float32}] * outs, custom_code=code, custom_options=opts)


def test_detection_postprocess_attrs_and_roundtrip() -> None:
    from flatbuffers import flexbuffers

    opts = {"max_detections": 3, "max_classes_per_detection": 1, "num_classes": 2, "nms_iou_threshold": 0.5,
            "nms_score_threshold": 0.25, "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0,
            "use_regular_nms": True}
    a, b = _roundtrip(_custom("TFLite_Detection_PostProcess", bytes(flexbuffers.Dumps(opts))))
    assert a.attrs == U.DetectionPostProcessAttrs(3, 1, 100, True, 0.25, 0.5, 2, 10.0, 10.0, 5.0, 5.0) == b.attrs


def test_mediapipe_pool_params_attrs_and_infer() -> None:
    import struct

    model = _custom("MaxPoolingWithArgmax2D", struct.pack("<10i", 2, 2, 2, 2, 2, 0, 0, 0, 0, 0), outs=2)
    a, b = _roundtrip(model)
    assert a.attrs == U.PoolParamsAttrs(2, 2, 2, 2, 2, 0) == b.attrs
    g = read_model(model).main
    assert [m.shape for m in ops.infer(g, g.operations[0])] == [(1, 2, 2, 2)] * 2
    assert U.pool_params_reason(U.PoolParamsAttrs(stride_w=0)) is not None


def test_mediapipe_bad_custom_options_name_the_node() -> None:
    with pytest.raises(ModelError, match=r"subgraph 0 operator 0 \(MaxUnpooling2D\): .*TfLitePoolParams"):
        read_model(_custom("MaxUnpooling2D", b"\x01\x00"))
    with pytest.raises(ModelError, match=r"subgraph 0 operator 0 \(TransformTensorBilinear\): .*FlexBuffer"):
        read_model(_custom("TransformTensorBilinear", b"\x00"))


def test_mediapipe_flex_attrs() -> None:
    from flatbuffers import flexbuffers

    a, b = _roundtrip(_custom("TransformLandmarks", bytes(flexbuffers.Dumps({"dimensions": 3, "scale": 0.5}))))
    assert a.attrs == U.FlexMapAttrs({"dimensions": 3, "scale": 0.5}) == b.attrs
    assert _roundtrip(_custom("TransformTensor", None))[0].attrs == U.FlexMapAttrs()
