"""The schema-driven flatbuffer verifier: the schema compiles to the generated bindings' layout,
valid files pass, each kind of damage is a ModelError naming the field path; the memory budget
refuses tensors before anything is allocated."""
from __future__ import annotations

import re
import struct
from pathlib import Path

import numpy as np
import pytest

import teflon_py
from teflon_py import flatbuffer_verifier as fv
from teflon_py import memory_budget
from teflon_py.errors import ModelError
from teflon_py.executorch.program import SCHEMA_PATH as PTE_SCHEMA
from teflon_py.executorch.program import read_program
from teflon_py.executorch.xnnpack.payload import SCHEMA_PATH as XNN_SCHEMA
from teflon_py.tflite.reader import SCHEMA_PATH as TFLITE_SCHEMA
from teflon_py.tflite.reader import read_model
from tests.hostile import corpus


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


@pytest.mark.parametrize("fbs", [TFLITE_SCHEMA, PTE_SCHEMA, XNN_SCHEMA])
def test_compiled_layout_matches_flatc_bindings(fbs: str) -> None:
    """Every field's vtable offset is the one flatc's generated Python reads."""
    generated = Path(fbs.removesuffix(".fbs") + "_generated.py").read_text()
    offsets: dict[tuple[str, str], int] = {}
    cls = method = None
    for line in generated.splitlines():
        if m := re.match(r"class (\w+)\(object\)", line):
            cls = m.group(1)
        elif m := re.match(r"    def (\w+)\(self", line):
            method = m.group(1)
        elif (m := re.search(r"self\._tab\.Offset\((\d+)\)", line)) and cls and method:
            offsets.setdefault((cls, method), int(m.group(1)))
    schema = fv.load_schema(fbs)
    checked = 0
    for table, fields in schema.tables.items():
        for f in fields:
            if (table, _camel(f.name)) in offsets:
                assert offsets[table, _camel(f.name)] == f.voffset, (table, f.name)
                checked += 1
    assert checked > 20


def _model() -> bytearray:
    return bytearray(corpus.seeds()["float_graph"][1])


def _layout_of(data: bytes) -> corpus.Layout:
    return corpus.trace(bytes(data), TFLITE_SCHEMA)


def test_valid_models_and_programs_pass() -> None:
    for name, (kind, data) in corpus.seeds().items():
        if kind == "tflite":
            fv.verify(fv.load_schema(TFLITE_SCHEMA), data, name)
        else:
            read_program(data)


def test_vector_length_past_the_end_names_the_field() -> None:
    data = _model()
    schema = fv.load_schema(TFLITE_SCHEMA)
    # the first operator's inputs vector: found by following the fields with the compiled schema
    at = _field_position(data, ["subgraphs", 0, "operators", 0, "inputs"])
    vec = at + struct.unpack_from("<I", data, at)[0]
    struct.pack_into("<I", data, vec, 0x3FFFFFFF)
    with pytest.raises(ModelError, match=r"at subgraphs\[0\]\.operators\[0\]\.inputs: vector of 1073741823"):
        fv.verify(schema, data, "m")
    with pytest.raises(ModelError, match=r"subgraphs\[0\]\.operators\[0\]\.inputs"):
        read_model(bytes(data))


def test_offsets_strings_vtables_and_unions() -> None:
    schema = fv.load_schema(TFLITE_SCHEMA)
    data = _model()
    at = _field_position(data, ["buffers", 1, "data"])
    struct.pack_into("<I", data, at, 0)
    with pytest.raises(ModelError, match=r"at buffers\[1\]\.data: vector offset at byte \d+ is 0"):
        fv.verify(schema, data, "m")
    data = _model()
    at = _field_position(data, ["subgraphs", 0, "tensors", 2, "name"])
    s = at + struct.unpack_from("<I", data, at)[0]
    n = struct.unpack_from("<I", data, s)[0]
    data[s + 4 + n] = ord("x")
    with pytest.raises(ModelError, match=r"subgraphs\[0\]\.tensors\[2\]\.name: string of \d+ bytes is not NUL"):
        fv.verify(schema, data, "m")
    data = _model()
    at = _field_position(data, ["subgraphs", 0, "operators", 0, "builtin_options_type"])
    data[at] = 250
    with pytest.raises(ModelError, match=r"operators\[0\]\.builtin_options: BuiltinOptions value present with "
                                         r"unknown type 250"):
        fv.verify(schema, data, "m")
    data = _model()
    table = _table_position(data, ["subgraphs", 0, "tensors", 1])
    vt = table - struct.unpack_from("<i", data, table)[0]
    struct.pack_into("<H", data, vt, 0xFFFF)  # odd vtable size
    with pytest.raises(ModelError, match=r"at subgraphs\[0\]\.tensors\[1\]: Tensor vtable of 65535 bytes"):
        fv.verify(schema, data, "m")
    with pytest.raises(ModelError, match="too short"):
        fv.verify(schema, b"\x08\x00", "m")


def test_depth_and_table_count_are_bounded() -> None:
    schema = fv.parse_schema("table Node { next: Node; items: [Node]; } root_type Node;")

    def chain(depth: int) -> bytes:
        import flatbuffers

        b = flatbuffers.Builder(0)
        child = None
        for _ in range(depth):
            b.StartObject(2)
            if child is not None:
                b.PrependUOffsetTRelativeSlot(0, child, 0)
            child = b.EndObject()
        b.Finish(child)
        return bytes(b.Output())

    fv.verify(schema, chain(fv.MAX_DEPTH), "m")
    with pytest.raises(ModelError, match="nested deeper than 64"):
        fv.verify(schema, chain(fv.MAX_DEPTH + 1), "m")


def test_truncations_are_refused_with_a_path() -> None:
    data = bytes(_model())
    for cut in range(16, len(data) - 8, 97):
        with pytest.raises(ModelError, match="corrupt model"):
            read_model(data[:cut])


def test_memory_budget_refuses_a_huge_tensor_before_allocating(monkeypatch: pytest.MonkeyPatch) -> None:
    from teflon_py.tflite.builder import ModelBuilder

    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 192, 2147483647, 3), np.float32)
    y = g.add_tensor("y", (1, 192, 2147483647, 3), np.float32)
    g.add_op("RELU", [x], [y])
    g.mark_outputs(y)
    data = mb.build()
    interp = teflon_py.Interpreter(model_content=data)
    with pytest.raises(ModelError, match=r"tensor 0 'x': shape \[1, 192, 2147483647, 3\] of float32 needs "
                                         r"4.50 TiB, more than the memory budget"):
        interp.allocate_tensors()
    with pytest.raises(ModelError, match=r"memory budget of 512 bytes"):
        teflon_py.Interpreter(model_content=corpus.seeds()["float_graph"][1], memory_budget=512).allocate_tensors()
    monkeypatch.setenv(memory_budget.ENV, "1K")
    with pytest.raises(ModelError, match=r"need 1.\d\d KiB together, more than the memory budget of 1.00 KiB"):
        teflon_py.Interpreter(model_content=corpus.seeds()["float_graph"][1]).allocate_tensors()
    monkeypatch.setenv(memory_budget.ENV, "1G")
    teflon_py.Interpreter(model_content=corpus.seeds()["float_graph"][1]).allocate_tensors()


def test_shape_products_overflowing_int64_are_refused() -> None:
    from teflon_py import ir

    t = ir.Tensor(0, "big", (1 << 40, 1 << 30), np.dtype(np.float32), None, None)
    with pytest.raises(ModelError, match=r"big.*overflows int64"):
        memory_budget.tensor_bytes(t, "tensor 0 'big'")
    assert memory_budget.parse_size("4G") == 4 << 30
    assert memory_budget.parse_size("512MiB") == 512 << 20


# -- finding fields in a valid buffer, for the tests above -----------------------------------------

def _table_position(data: bytes, path: list) -> int:
    return _walk(data, path, want_table=True)


def _field_position(data: bytes, path: list) -> int:
    return _walk(data, path, want_table=False)


def _walk(data: bytes, path: list, want_table: bool) -> int:
    schema = fv.load_schema(TFLITE_SCHEMA)
    u32 = struct.Struct("<I").unpack_from
    pos, tname = u32(data, 0)[0], schema.root
    steps = list(path)
    while steps:
        name = steps.pop(0)
        vt = pos - struct.unpack_from("<i", data, pos)[0]
        f = next(f for f in schema.tables[tname] if f.name == name)
        at = pos + struct.unpack_from("<H", data, vt + f.voffset)[0]
        if not steps:
            return at
        if f.kind == fv.VECTOR_TABLE:
            vec = at + u32(data, at)[0]
            elem = vec + 4 + 4 * steps.pop(0)
            pos, tname = elem + u32(data, elem)[0], f.ref
            if not steps and want_table:
                return pos
        else:
            pos, tname = at + u32(data, at)[0], f.ref
    return pos


def test_program_and_payload_faults_name_their_field() -> None:
    from teflon_py.executorch import Runtime

    data = corpus.seeds()["pte_conv2d"][1]
    program_layout, payload_layout = corpus.layouts("pte_conv2d")[:2]
    at, _, _ = program_layout.lengths[0]  # the first vector or string of the Program table
    bad = bytearray(data)
    struct.pack_into("<I", bad, at, 0x7FFFFFF0)
    with pytest.raises(ModelError, match=r"corrupt program at [a-z_]+(\[\d+\])?(\.[a-z_]+(\[\d+\])?)*: "):
        read_program(bytes(bad))
    at, _, _ = payload_layout.lengths[-1]
    bad = bytearray(data)
    struct.pack_into("<I", bad, at, 0x7FFFFFF0)
    with pytest.raises(ModelError, match=r"delegate 0: corrupt XNNPACK payload at [a-z_]+"):
        Runtime.get().load_program(bytes(bad)).load_method("forward")


def test_schema_layouts_of_structs_unions_and_ids() -> None:
    schema = fv.parse_schema("""
        namespace t;
        enum Color : ubyte { Red, Green = 4 }
        struct Vec { x: float; y: short; c: Color; pad: [ubyte:3]; }
        table A { a: int; }
        union U { A, Alias: A = 5 }
        table T { v: Vec (id: 3); vs: [Vec] (id: 0); u: U (id: 2); old: long (deprecated, id: 4); s: [string] (id: 5); }
        root_type T;""")
    fields = {f.name: f for f in schema.tables["T"]}
    assert (fields["v"].voffset, fields["v"].size, fields["v"].align) == (4 + 2 * 3, 12, 4)
    assert (fields["vs"].voffset, fields["vs"].kind, fields["vs"].elem) == (4, fv.VECTOR, 12)
    assert (fields["u_type"].voffset, fields["u"].voffset, fields["u"].type_voffset) == (6, 8, 6)
    assert "old" not in fields and fields["s"].kind == fv.VECTOR_STRING
    assert schema.unions["U"] == {1: "A", 5: "A"} and schema.root == "T"
