"""Verify a flatbuffer against its ``.fbs`` schema before any field of it is read.

The checks are those of FlatBuffers' C++ ``Verifier``: every uoffset and soffset inside the buffer
and aligned, vtables of even size inside the buffer, every field inside its table and aligned,
vector lengths times element size inside the buffer, strings NUL-terminated inside the buffer,
nesting depth (64) and table count (1,000,000) bounded. Stricter in two places: a union value
must come with a known, non-NONE type, and a field must lie inside its table's inline size.
Deprecated fields are skipped, as flatc's generated verifiers skip them.

The schema is read from the ``.fbs`` file itself (tables, structs, enums, unions; field ids in
declaration order or from ``(id: n)``), compiled once into per-table field lists. Byte vectors
(constants) are checked by their length only, never element by element.

A fault raises ``ModelError`` naming the path of the field at fault, e.g.
``subgraphs[0].operators[12].inputs`` or ``buffers[7].data``.
"""
from __future__ import annotations

import functools
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from teflon_py.errors import ModelError

MAX_DEPTH = 64
MAX_TABLES = 1_000_000
MAX_BUFFER_SIZE = (1 << 31) - 1  # FLATBUFFERS_MAX_BUFFER_SIZE: no uoffset may reach past it

SCALAR_SIZES = {
    "bool": 1, "byte": 1, "ubyte": 1, "int8": 1, "uint8": 1,
    "short": 2, "ushort": 2, "int16": 2, "uint16": 2,
    "int": 4, "uint": 4, "int32": 4, "uint32": 4, "float": 4, "float32": 4,
    "long": 8, "ulong": 8, "int64": 8, "uint64": 8, "double": 8, "float64": 8,
}

# field kinds of a compiled table
SCALAR, STRING, TABLE, VECTOR, VECTOR_STRING, VECTOR_TABLE, UNION = range(7)

_u8 = struct.Struct("<B").unpack_from
_u16 = struct.Struct("<H").unpack_from
_u16x2 = struct.Struct("<HH").unpack_from
_u32 = struct.Struct("<I").unpack_from
_i32 = struct.Struct("<i").unpack_from


@dataclass(frozen=True)
class Field:
    """One field of a compiled table: its vtable offset, name, kind and what the kind needs
    (a scalar's or struct's size and alignment, a vector's element size, a table's or union's
    name, a union's type-field vtable offset)."""

    voffset: int
    name: str
    kind: int
    size: int = 4  # inline size in the table
    align: int = 4
    elem: int = 0  # a vector's element size
    ref: str = ""
    type_voffset: int = 0
    required: bool = False


@dataclass
class Schema:
    """A compiled schema: fields per table (by vtable offset), union members by type value."""

    tables: dict[str, tuple[Field, ...]]
    unions: dict[str, dict[int, str]]
    root: str
    identifier: bytes | None


_COMMENT = re.compile(r"//[^\n]*")
_DECL = re.compile(
    r"\b(table|struct|enum|union)\s+(\w+)\s*(?::\s*(\w+))?\s*(?:\([^)]*\))?\s*\{([^}]*)\}", re.DOTALL
)
_FIELD = re.compile(
    r"^(\w+)\s*:\s*(\[\s*[\w.]+\s*(?::\s*\d+)?\s*\]|[\w.]+)\s*(?:=\s*([^()]*?))?\s*(?:\(([^)]*)\))?$", re.DOTALL
)


def parse_schema(text: str) -> Schema:
    """Compile the tables, structs, enums and unions of a ``.fbs`` schema text."""
    text = _COMMENT.sub("", text)
    enums: dict[str, int] = {}  # enum -> size of its underlying type
    unions: dict[str, dict[int, str]] = {}
    structs: dict[str, list[tuple[str, str]]] = {}
    tables: dict[str, list[tuple[str, str, str]]] = {}
    for m in _DECL.finditer(text):
        kind, name, base, body = m.group(1), m.group(2), m.group(3), m.group(4)
        if kind == "enum":
            enums[name] = SCALAR_SIZES[base or "int"]
        elif kind == "union":
            members: dict[int, str] = {}
            value = 0
            for entry in (e.strip() for e in body.split(",")):
                if not entry:
                    continue
                entry, _, explicit = entry.partition("=")
                value = int(explicit.strip(), 0) if explicit.strip() else value + 1
                alias, _, target = entry.partition(":")
                members[value] = _short(target.strip() or alias.strip())
            unions[name] = members
        else:
            fields = []
            for decl in (d.strip() for d in body.split(";")):
                if not decl:
                    continue
                f = _FIELD.match(decl)
                if f is None:
                    raise ValueError(f"cannot parse field {decl!r} of {name}")
                fields.append((f.group(1), re.sub(r"\s", "", f.group(2)), f.group(4) or ""))
            if kind == "struct":
                structs[name] = [(fname, ftype) for fname, ftype, _ in fields]
            else:
                tables[name] = fields
    root = re.search(r"\broot_type\s+([\w.]+)\s*;", text)
    ident = re.search(r'\bfile_identifier\s+"([^"]*)"\s*;', text)
    return _compile(tables, structs, enums, unions, _short(root.group(1)) if root else "",
                    ident.group(1).encode() if ident else None)


def _short(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _compile(tables, structs, enums, unions, root, identifier) -> Schema:
    struct_layout: dict[str, tuple[int, int]] = {}

    def scalar_layout(t: str) -> tuple[int, int] | None:
        """(size, alignment) of a scalar, enum or struct type; None for others."""
        if t in SCALAR_SIZES:
            return SCALAR_SIZES[t], SCALAR_SIZES[t]
        if t in enums:
            return enums[t], enums[t]
        if t in structs:
            if t not in struct_layout:
                size, align = 0, 1
                for _, ftype in structs[t]:
                    count = 1
                    array = re.fullmatch(r"\[([\w.]+):(\d+)\]", ftype)
                    if array:
                        ftype, count = _short(array.group(1)), int(array.group(2))
                    fsize, falign = scalar_layout(_short(ftype))
                    size = (size + falign - 1) // falign * falign + fsize * count
                    align = max(align, falign)
                struct_layout[t] = ((size + align - 1) // align * align, align)
            return struct_layout[t]
        return None

    compiled: dict[str, tuple[Field, ...]] = {}
    for tname, fields in tables.items():
        out: list[Field] = []
        slot = 0
        for fname, ftype, attrs in fields:
            attr = {
                k.strip(): v.strip() for k, _, v in (a.partition(":") for a in attrs.split(",") if a.strip())
            }
            is_union = _short(ftype) in unions
            if "id" in attr:
                slot = int(attr["id"]) - (1 if is_union else 0)
            voffset = 4 + 2 * slot
            required = "required" in attr
            if "deprecated" in attr:  # never read, and not verified (as flatc's C++ Verify)
                slot += 2 if is_union else 1
                continue
            if ftype.startswith("["):
                elem = _short(ftype[1:-1])
                layout = scalar_layout(elem)
                if layout is not None:
                    out.append(Field(voffset, fname, VECTOR, elem=layout[0], required=required))
                elif elem == "string":
                    out.append(Field(voffset, fname, VECTOR_STRING, required=required))
                elif elem in tables:
                    out.append(Field(voffset, fname, VECTOR_TABLE, ref=elem, required=required))
                else:
                    raise ValueError(f"{tname}.{fname}: unsupported vector element type {elem}")
            elif is_union:
                out.append(Field(voffset, f"{fname}_type", SCALAR, size=1, align=1))
                slot += 1
                out.append(Field(voffset + 2, fname, UNION, ref=_short(ftype),
                                 type_voffset=voffset, required=required))
            else:
                t = _short(ftype)
                layout = scalar_layout(t)
                if layout is not None:
                    out.append(Field(voffset, fname, SCALAR, size=layout[0], align=layout[1], required=required))
                elif t == "string":
                    out.append(Field(voffset, fname, STRING, required=required))
                elif t in tables:
                    out.append(Field(voffset, fname, TABLE, ref=t, required=required))
                else:
                    raise ValueError(f"{tname}.{fname}: unknown type {ftype}")
            slot += 1
        compiled[tname] = tuple(sorted(out, key=lambda f: f.voffset))
    return Schema(compiled, unions, root, identifier)


@functools.cache
def load_schema(path: str) -> Schema:
    """The compiled schema of a ``.fbs`` file (compiled once per process)."""
    return parse_schema(Path(path).read_text(encoding="utf-8"))


def verify(schema: Schema, data: Any, source: str, what: str = "flatbuffer", root: str | None = None,
           start: int = 0, size: int | None = None) -> None:
    """Verify the flatbuffer at ``data[start:start + size]`` (a buffer; ``size`` defaults to all of
    it) against ``schema``; raise ``ModelError`` naming ``source`` and the path of the first bad
    field. ``what`` names the buffer in messages ("model", "XNNPACK payload")."""
    _Verifier(schema, data, source, what, start, len(data) - start if size is None else size).run(
        root or schema.root)


class _Verifier:
    def __init__(self, schema: Schema, data: Any, source: str, what: str, start: int, size: int):
        self.tables = schema.tables
        self.unions = schema.unions
        self.data = data
        self.source = source
        self.what = what
        self.base = start
        self.end = start + size  # absolute end of the flatbuffer inside data
        self.count = 0

    def fail(self, path: str, message: str) -> ModelError:
        where = f" at {path}" if path else ""
        return ModelError(f"{self.source}: corrupt {self.what}{where}: {message}")

    def run(self, root: str) -> None:
        size = self.end - self.base
        if size < 8:
            raise self.fail("", f"{size} bytes, too short to hold a root table offset and identifier")
        if size > MAX_BUFFER_SIZE:
            # TFLite's > 2 GiB models keep their buffers after the flatbuffer: offsets still
            # cannot reach past 2 GiB, which the per-offset checks enforce
            self.end = self.base + MAX_BUFFER_SIZE
        table = self.offset(self.base, "", "root table")
        self.table(table, root, "", 1)

    def offset(self, at: int, path: str, what: str) -> int:
        """Follow the uoffset stored at ``at`` (already known to be inside the buffer)."""
        o = _u32(self.data, at)[0]
        if o == 0:
            raise self.fail(path, f"{what} offset at byte {at - self.base} is 0")
        if o >= 1 << 31:
            raise self.fail(path, f"{what} offset {o} at byte {at - self.base} wraps around")
        target = at + o
        if target >= self.end:
            raise self.fail(path, f"{what} offset {o} at byte {at - self.base} points past the end "
                                  f"({self.end - self.base} bytes)")
        return target

    def vector(self, at: int, elem_size: int, path: str, what: str = "vector") -> tuple[int, int]:
        """Check the vector whose uoffset is at ``at``: (first element, length)."""
        v = self.offset(at, path, what)
        if v & 3:
            raise self.fail(path, f"{what} at byte {v - self.base} is not 4-byte aligned")
        if v + 4 > self.end:
            raise self.fail(path, f"{what} length at byte {v - self.base} runs past the end")
        n = _u32(self.data, v)[0]
        if n >= MAX_BUFFER_SIZE // elem_size or v + 4 + n * elem_size > self.end:
            raise self.fail(path, f"{what} of {n} elements of {elem_size} bytes at byte {v - self.base} "
                                  f"runs past the end ({self.end - self.base} bytes)")
        return v + 4, n

    def string(self, at: int, path: str) -> None:
        first, n = self.vector(at, 1, path, "string")
        if first + n >= self.end:
            raise self.fail(path, f"string of {n} bytes has no terminating NUL inside the buffer")
        if self.data[first + n] != 0:
            raise self.fail(path, f"string of {n} bytes is not NUL-terminated")

    def table(self, pos: int, tname: str, path: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise self.fail(path, f"tables nested deeper than {MAX_DEPTH}")
        self.count += 1
        if self.count > MAX_TABLES:
            raise self.fail(path, f"more than {MAX_TABLES} tables")
        data, end = self.data, self.end
        if pos & 3 or pos + 4 > end:
            raise self.fail(path, f"{tname} table at byte {pos - self.base} is misaligned or past the end")
        vt = pos - _i32(data, pos)[0]
        if vt & 1 or vt < self.base or vt + 4 > end:
            raise self.fail(path, f"{tname} vtable at byte {vt - self.base} is misaligned or outside the buffer")
        vsize, tsize = _u16x2(data, vt)
        if vsize & 1 or vsize < 4 or vt + vsize > end:
            raise self.fail(path, f"{tname} vtable of {vsize} bytes at byte {vt - self.base} is odd-sized "
                                  f"or runs past the end")
        if tsize < 4 or pos + tsize > end:
            raise self.fail(path, f"{tname} table of {tsize} bytes at byte {pos - self.base} runs past the end")
        for f in self.tables[tname]:
            fo = _u16(data, vt + f.voffset)[0] if f.voffset < vsize else 0
            if not fo:
                if f.required:
                    raise self.fail(_join(path, f.name), "required field is missing")
                continue
            at = pos + fo
            if fo < 4 or fo + f.size > tsize:
                raise self.fail(_join(path, f.name), f"field at table offset {fo} lies outside its "
                                                     f"{tsize}-byte {tname} table")
            if (at - self.base) % f.align:
                raise self.fail(_join(path, f.name), f"field at byte {at - self.base} is not "
                                                     f"{f.align}-byte aligned")
            kind = f.kind
            if kind == SCALAR:
                continue
            fpath = _join(path, f.name)
            if kind == VECTOR:
                self.vector(at, f.elem, fpath)
            elif kind == TABLE:
                self.table(self.offset(at, fpath, "table"), f.ref, fpath, depth + 1)
            elif kind == STRING:
                self.string(at, fpath)
            elif kind == VECTOR_TABLE:
                first, n = self.vector(at, 4, fpath)
                for i in range(n):
                    epath = f"{fpath}[{i}]"
                    self.table(self.offset(first + 4 * i, epath, "table"), f.ref, epath, depth + 1)
            elif kind == VECTOR_STRING:
                first, n = self.vector(at, 4, fpath)
                for i in range(n):
                    self.string(first + 4 * i, f"{fpath}[{i}]")
            else:  # UNION
                to = _u16(data, vt + f.type_voffset)[0] if f.type_voffset < vsize else 0
                utype = _u8(data, pos + to)[0] if to else 0
                member = self.unions[f.ref].get(utype)
                if member is None:
                    why = "type NONE" if utype == 0 else f"unknown type {utype}"
                    raise self.fail(fpath, f"{f.ref} value present with {why}")
                self.table(self.offset(at, fpath, "table"), member, fpath, depth + 1)


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name
