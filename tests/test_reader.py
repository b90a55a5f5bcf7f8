"""The reader: builder round trips, zero-copy constants, schema corners, and corrupt files.

Every malformed file must raise ``teflon_py.ModelError`` naming what is wrong, never an
IndexError, struct.error or a crash, whatever the damage.
"""
from __future__ import annotations

import mmap
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
from ai_edge_litert.interpreter import OpResolverType
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from teflon_py import ModelError, ir
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import ModelBuilder, _pack, quantization
from teflon_py.tflite.reader import read_model
from teflon_py.tflite.schema import fb


def small_model(*, signature: bool = True) -> ModelBuilder:
    """input -> ADD(const, RELU) -> CONV_2D(per-channel int8 weights kept as metadata) -> output."""
    mb = ModelBuilder("reader test")
    g = mb.main
    x = g.add_input("x", (1, 4, 4, 2), np.float32, shape_signature=(-1, 4, 4, 2))
    c = g.add_constant("c", np.arange(32, dtype=np.float32).reshape(1, 4, 4, 2) / 10)
    y = g.add_tensor("y", (1, 4, 4, 2), np.float32)
    g.add_op("ADD", [x, c], [y], O.AddOptions(fused_activation_function=ir.Activation.RELU))
    w = g.add_constant("w", np.linspace(-1, 1, 3 * 3 * 3 * 2, dtype=np.float32).reshape(3, 3, 3, 2))
    b = g.add_constant("b", np.array([0.5, -0.5, 0.25], np.float32))
    z = g.add_tensor("z", (1, 4, 4, 3), np.float32)
    g.add_op("CONV_2D", [y, w, b], [z], O.Conv2DOptions(padding=ir.Padding.SAME, stride_w=1, stride_h=1,
                                                        dilation_w_factor=1, dilation_h_factor=1))
    q = g.add_constant("q", np.array([[1, -2], [3, -4], [5, 6]], np.int8),
                       quantization=quantization([0.1, 0.2, 0.3], 0, 0))
    g.mark_outputs(z)
    del q
    if signature:
        mb.add_signature("serving_default", {"x": x}, {"z": z})
    return mb


def repack(model: bytes, edit: Callable[[Any], None]) -> bytes:
    """Unpack with the object API, let ``edit`` damage it, pack it again."""
    m = fb.ModelT.InitFromPackedBuf(model, 0)
    edit(m)
    return _pack(m)


def assert_model_error(data: Any, *words: str) -> ModelError:
    with pytest.raises(ModelError) as info:
        read_model(data)
    message = str(info.value)
    for w in words:
        assert w.lower() in message.lower(), f"{w!r} not in {message!r}"
    return info.value


# -- round trips --------------------------------------------------------------------------------
@pytest.mark.parametrize("external", [False, True], ids=["inline", "external-buffers"])
def test_round_trip(external: bool) -> None:
    mb = small_model()
    want = mb.model()
    got = read_model(mb.build(external_buffers=external))
    assert len(got.graphs) == 1
    g, w = got.main, want.main
    assert [t.name for t in g.tensors] == [t.name for t in w.tensors]
    for a, b in zip(g.tensors, w.tensors):
        assert a.shape == b.shape and a.dtype == b.dtype and a.shape_signature == b.shape_signature
        assert a.quantization == b.quantization
        assert (a.data is None) == (b.data is None)
        if a.data is not None:
            np.testing.assert_array_equal(a.data, b.data)
            assert a.data.dtype == b.dtype
    assert [(o.opcode, o.inputs, o.outputs, o.attrs) for o in g.operations] == \
        [(o.opcode, o.inputs, o.outputs, o.attrs) for o in w.operations]
    assert g.inputs == w.inputs and g.outputs == w.outputs
    assert got.signatures == want.signatures
    assert got.description == "reader test"


def test_external_buffers_layout_and_litert_reads_them() -> None:
    """Schema 3c: constants after the flatbuffer, 16-byte aligned; LiteRT computes the same."""
    mb = small_model()
    inline, external = mb.build(), mb.build(external_buffers=True)
    m = fb.Model.GetRootAs(external, 0)
    offsets = [m.Buffers(i).Offset() for i in range(m.BuffersLength()) if m.Buffers(i).Size()]
    assert offsets and all(o % 16 == 0 and o > 1 for o in offsets)
    assert all(m.Buffers(i).DataLength() == 0 for i in range(m.BuffersLength()))
    x = np.random.default_rng(0).standard_normal((1, 4, 4, 2)).astype(np.float32)
    outs = []
    for data in (inline, external):
        it = LiteRTInterpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
        it.allocate_tensors()
        it.set_tensor(it.get_input_details()[0]["index"], x)
        it.invoke()
        outs.append(it.get_tensor(it.get_output_details()[0]["index"]))
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.parametrize("external", [False, True], ids=["inline", "external-buffers"])
def test_constants_are_zero_copy_read_only_views_of_the_mapped_file(tmp_path, external: bool) -> None:
    path = tmp_path / "m.tflite"
    path.write_bytes(small_model().build(external_buffers=external))
    model = read_model(path)
    constants = [t for t in model.main.tensors if t.is_constant]
    assert len(constants) == 4
    for t in constants:
        assert not t.data.flags.writeable
        with pytest.raises(ValueError):
            t.data.reshape(-1)[0] = 0
        base = t.data
        while isinstance(base, (np.ndarray, memoryview)):
            base = base.obj if isinstance(base, memoryview) else base.base
        assert isinstance(base, mmap.mmap), f"{t.describe()} is a copy, not a view of the mapped file"
        assert np.shares_memory(t.data, np.frombuffer(base, np.uint8))


def test_constants_from_bytes_are_views_of_the_bytes() -> None:
    data = small_model().build()
    model = read_model(data)
    whole = np.frombuffer(data, np.uint8)
    for t in model.main.tensors:
        if t.is_constant:
            assert np.shares_memory(t.data, whole) and not t.data.flags.writeable


def test_reading_from_a_path_or_bytes_gives_the_same_model(tmp_path) -> None:
    data = small_model().build()
    path = tmp_path / "m.tflite"
    path.write_bytes(data)
    a, b = read_model(str(path)), read_model(data)
    assert a.source == str(path) and b.source == "<bytes>"
    assert [t.shape for t in a.main.tensors] == [t.shape for t in b.main.tensors]


def test_deprecated_builtin_code_is_resolved_like_tflite() -> None:
    """Old files set only ``deprecated_builtin_code``; new ops set 127 there and the real code in
    ``builtin_code``. TFLite takes the larger of the two; so do we (checked against LiteRT)."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (2, 3), np.float32)
    y = g.add_tensor("y", (2, 3), np.float32)
    z = g.add_tensor("z", (2, 3), np.float32)
    g.add_op("RELU", [x], [y])
    g.add_op("GELU", [y], [z], O.GeluOptions(approximate=False))  # builtin code 150 > 127
    g.mark_outputs(z)

    def old_style(m: Any) -> None:
        for oc in m.operatorCodes:
            if oc.builtinCode < 127:
                oc.deprecatedBuiltinCode, oc.builtinCode = oc.builtinCode, 0  # as pre-2.4 files
            else:
                assert oc.deprecatedBuiltinCode == 127

    data = repack(mb.build(), old_style)
    raw = fb.Model.GetRootAs(data, 0)
    assert raw.OperatorCodes(0).BuiltinCode() == 0 and raw.OperatorCodes(0).DeprecatedBuiltinCode() == 19
    ours = [op.opcode for op in read_model(data).main.operations]
    assert ours == ["RELU", "GELU"]
    lite = LiteRTInterpreter(model_content=data)
    assert [d["op_name"] for d in lite._get_ops_details()] == ours


def test_signature_defs_and_multiple_subgraphs() -> None:
    mb = ModelBuilder()
    for k, g in enumerate([mb.main, mb.add_graph("second")]):
        x = g.add_input(f"x{k}", (2, 2), np.float32)
        y = g.add_tensor(f"y{k}", (2, 2), np.float32)
        g.add_op("RELU" if k == 0 else "RELU6", [x], [y])
        g.mark_outputs(y)
        mb.add_signature(f"sig{k}", {"input": x}, {"output": y}, graph=k)
    model = read_model(mb.build())
    assert [g.name for g in model.graphs] == ["main", "second"]
    assert [g.index for g in model.graphs] == [0, 1]
    assert [op.opcode for op in model.graphs[1].operations] == ["RELU6"]
    assert model.signatures == [
        ir.Signature("sig0", 0, {"input": 0}, {"output": 1}),
        ir.Signature("sig1", 1, {"input": 0}, {"output": 1}),
    ]
    lite = LiteRTInterpreter(model_content=mb.build())
    assert list(lite.get_signature_list()) == ["sig0", "sig1"]


def test_int4_constants_are_unpacked() -> None:
    mb = small_model(signature=False)

    def to_int4(m: Any) -> None:
        t = next(t for t in m.subgraphs[0].tensors if t.name == b"q")
        t.type = fb.TensorType.INT4
        m.buffers[t.buffer].data = np.array([0x21 & 0xFF, 0xE3, 0x0F], np.uint8)  # 1,2,3,-2,-1,0

    t = next(t for t in read_model(repack(mb.build(), to_int4)).main.tensors if t.name == "q")
    np.testing.assert_array_equal(t.data, [[1, 2], [3, -2], [-1, 0]])


# -- corruption -----------------------------------------------------------------------------------
def test_missing_and_empty_files(tmp_path) -> None:
    assert_model_error(tmp_path / "nope.tflite", "nope.tflite", "cannot read")
    assert_model_error(tmp_path, "cannot read")
    (tmp_path / "empty.tflite").write_bytes(b"")
    assert_model_error(tmp_path / "empty.tflite", "0 bytes")


def test_bad_identifier() -> None:
    data = bytearray(small_model().build())
    data[4:8] = b"ONNX"
    assert_model_error(bytes(data), "not a TFLite model", "ONNX")


def test_truncated_at_every_cut_point() -> None:
    for external in (False, True):
        data = small_model().build(external_buffers=external)
        for cut in range(len(data) - 1, -1, -1):
            with pytest.raises(ModelError):
                read_model(data[:cut])


def _tensor(m: Any, name: bytes) -> Any:
    return next(t for t in m.subgraphs[0].tensors if t.name == name)


CORRUPTIONS: dict[str, tuple[Callable[[Any], None], tuple[str, ...]]] = {
    "tensor-buffer-index": (lambda m: setattr(_tensor(m, b"c"), "buffer", 999), ("tensor 1 'c'", "buffer index 999")),
    "opcode-index": (lambda m: setattr(m.subgraphs[0].operators[1], "opcodeIndex", 7), ("operator 1", "opcode index 7")),
    "operator-input": (lambda m: setattr(m.subgraphs[0].operators[0], "inputs", [0, 42]), ("operator 0", "index 42")),
    "operator-output": (lambda m: setattr(m.subgraphs[0].operators[1], "outputs", [-7]), ("operator 1", "index -7")),
    "graph-input": (lambda m: setattr(m.subgraphs[0], "inputs", [99]), ("subgraph 0 inputs", "99")),
    "graph-output": (lambda m: setattr(m.subgraphs[0], "outputs", [-1]), ("subgraph 0 outputs", "-1")),
    "signature-tensor": (lambda m: setattr(m.signatureDefs[0].inputs[0], "tensorIndex", 77), ("signature", "77")),
    "signature-subgraph": (lambda m: setattr(m.signatureDefs[0], "subgraphIndex", 3), ("signature", "subgraph index 3")),
    "buffer-too-short": (lambda m: setattr(m.buffers[_tensor(m, b"w").buffer], "data", np.zeros(12, np.uint8)),
                         ("tensor 3 'w'", "holds 12 bytes", "needs 216")),
    "buffer-too-long": (lambda m: setattr(m.buffers[_tensor(m, b"b").buffer], "data", np.zeros(16, np.uint8)),
                        ("'b'", "16 bytes", "needs 12")),
    "shape-vs-data": (lambda m: setattr(_tensor(m, b"c"), "shape", np.array([1, 4, 4, 3], np.int32)),
                      ("'c'", "needs 192")),
    "negative-dimension": (lambda m: setattr(_tensor(m, b"y"), "shape", np.array([1, -4, 4, 2], np.int32)),
                           ("'y'", "negative dimension")),
    "huge-shape": (lambda m: setattr(_tensor(m, b"y"), "shape", np.array([1 << 30, 1 << 30, 1 << 20], np.int32)),
                   ("'y'", "implausibly large")),
    "tensor-type": (lambda m: setattr(_tensor(m, b"y"), "type", 77), ("'y'", "unknown tensor type 77")),
    "builtin-code": (lambda m: setattr(m.operatorCodes[0], "builtinCode", 4000), ("operator code 0", "4000")),
    "per-channel-scales": (lambda m: (setattr(_tensor(m, b"q").quantization, "scale", [0.1, 0.2]),
                                      setattr(_tensor(m, b"q").quantization, "zeroPoint", [0, 0])),
                           ("'q'", "2 per-channel scales do not match dimension 0")),
    "zero-points": (lambda m: setattr(_tensor(m, b"q").quantization, "zeroPoint", [0, 0]),
                    ("'q'", "3 scales but 2 zero points")),
    "quantized-dimension": (lambda m: setattr(_tensor(m, b"q").quantization, "quantizedDimension", 5),
                            ("'q'", "dimension 5")),
    "no-subgraphs": (lambda m: setattr(m, "subgraphs", []), ("no subgraphs",)),
}


@pytest.mark.parametrize("name", list(CORRUPTIONS))
def test_corruption_names_what_is_wrong(name: str) -> None:
    edit, words = CORRUPTIONS[name]
    assert_model_error(repack(small_model().build(), edit), *words)


def test_external_buffer_past_the_end() -> None:
    data = small_model().build(external_buffers=True)
    assert_model_error(data[:-8], "past the end")

    def far(m: Any) -> None:
        buf = m.buffers[_tensor(m, b"w").buffer]
        buf.offset = 1 << 40

    damaged = repack(data, far)
    damaged += data[len(damaged):]  # same-size flatbuffer, original payloads after it
    assert_model_error(damaged, "'w'", "past the end")


def test_root_offset_past_the_end() -> None:
    data = bytearray(small_model().build())
    data[0:4] = (len(data) + 100).to_bytes(4, "little")
    assert_model_error(bytes(data), "root table offset")


_SEED_MODELS = [small_model().build(), small_model().build(external_buffers=True)]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(which=st.sampled_from([0, 1]), flips=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)),
                                                     min_size=1, max_size=6))
def test_random_byte_flips_never_crash(which: int, flips: list[tuple[int, int]]) -> None:
    """Any damage reads as a model or raises ModelError: nothing else escapes."""
    data = bytearray(_SEED_MODELS[which])
    for pos, value in flips:
        data[pos % len(data)] = value
    try:
        model = read_model(bytes(data))
    except ModelError:
        return
    for g in model.graphs:  # what is read is consistent
        for op in g.operations:
            assert all(-1 <= i < len(g.tensors) for i in op.inputs + op.outputs)
        for t in g.tensors:
            if t.data is not None and t.dtype != np.object_:
                assert t.data.shape == t.shape
