"""Read an ExecuTorch program (``.pte``) into plain data: methods, their values and instructions,
and the bytes of every delegate payload and constant.

The container: a ``Program`` flatbuffer (identifier ``ET12`` at bytes 4..8), an optional extended
header at bytes 8..40 (``eh00``, u32 header length, then u64 ``program_size``,
``segment_base_offset`` and ``segment_data_size``), then data segments at ``segment_base_offset +
segments[i].offset``. ``named_data`` maps string keys to segments (XNNPACK's constants since 1.0);
``constant_segment`` holds the program's own constants (tensor ``data_buffer_idx`` k is its
``offsets[k]``), older writers keep them inline in ``constant_buffer``.

The ``Program`` flatbuffer is first verified against program.fbs (``flatbuffer_verifier``), then
everything is validated as it is read (identifiers, header sizes, every index and byte range);
anything broken is a ``ModelError`` naming the file and the entity at fault. Delegate payloads are
handed on as bytes, for their backend's reader (``teflon_py.executorch.xnnpack``).
"""
from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from teflon_py.errors import ModelError, UnsupportedError
from teflon_py.executorch.schema import pte
from teflon_py.flatbuffer_verifier import load_schema, verify

FILE_IDENTIFIER = b"ET12"
SCHEMA_PATH = os.path.join(os.path.dirname(pte.__file__), "program.fbs")
HEADER_MAGIC = b"eh00"
HEADER_MIN = 32  # magic, u32 length, three u64s
MAX_ELEMENTS = 1 << 31  # a tensor of more elements is a damaged file, not a model

#: ScalarType -> NumPy dtype (the types a portable kernel or a delegate boundary can carry)
DTYPES: dict[int, np.dtype] = {
    pte.ScalarType.BYTE: np.dtype(np.uint8),
    pte.ScalarType.CHAR: np.dtype(np.int8),
    pte.ScalarType.SHORT: np.dtype(np.int16),
    pte.ScalarType.INT: np.dtype(np.int32),
    pte.ScalarType.LONG: np.dtype(np.int64),
    pte.ScalarType.HALF: np.dtype(np.float16),
    pte.ScalarType.FLOAT: np.dtype(np.float32),
    pte.ScalarType.DOUBLE: np.dtype(np.float64),
    pte.ScalarType.BOOL: np.dtype(np.bool_),
    pte.ScalarType.QINT8: np.dtype(np.int8),
    pte.ScalarType.QUINT8: np.dtype(np.uint8),
    pte.ScalarType.QINT32: np.dtype(np.int32),
    pte.ScalarType.UINT16: np.dtype(np.uint16),
    pte.ScalarType.UINT32: np.dtype(np.uint32),
    pte.ScalarType.UINT64: np.dtype(np.uint64),
}
SCALAR_TYPE_NAMES = {v: k for k, v in vars(pte.ScalarType).items() if not k.startswith("_")}
_KINDS = {v: k for k, v in vars(pte.KernelTypes).items() if not k.startswith("_")}


@dataclass(frozen=True)
class TensorValue:
    """A tensor EValue: its dtype and sizes, and its data when it is a program constant."""

    dtype: np.dtype
    sizes: tuple[int, ...]
    data: np.ndarray | None = None
    #: the order of the dimensions in memory, outermost first (``(0, 2, 3, 1)``: channels last);
    #: ``sizes`` and values are logical (NCHW), a delegate payload sees the memory order
    dim_order: tuple[int, ...] = ()

    @property
    def is_constant(self) -> bool:
        return self.data is not None


@dataclass(frozen=True)
class Value:
    """One EValue: ``kind`` is the schema's union member ("Tensor", "Int", "IntList", "Null"...),
    ``value`` a ``TensorValue``, a Python scalar, a tuple, or None. The items of an IntList,
    TensorList and OptionalTensorList are EValue indices (an IntList's of Int values, so that
    sizes can be symbolic); DoubleList and BoolList hold their values."""

    kind: str
    value: Any


@dataclass(frozen=True)
class KernelCall:
    """A portable operator (``aten::add``, overload ``out``) over EValues (inputs, then outputs)."""

    operator: str
    overload: str
    args: tuple[int, ...]

    @property
    def name(self) -> str:
        return f"{self.operator}.{self.overload}" if self.overload else self.operator


@dataclass(frozen=True)
class DelegateCall:
    """A delegate payload run over EValues: its inputs, then its outputs."""

    delegate: int
    backend: str
    args: tuple[int, ...]


Instruction = KernelCall | DelegateCall


@dataclass
class Method:
    """One execution plan: values, inputs and outputs (EValue indices) and its instructions."""

    name: str
    values: list[Value]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    instructions: list[Instruction]
    payloads: list[bytes | memoryview]  # per delegate of the plan, its processed bytes


@dataclass
class Program:
    methods: dict[str, Method]
    named_data: dict[str, memoryview] = field(default_factory=dict)
    source: str = "<bytes>"


def read_program(source: str | os.PathLike | bytes | bytearray | memoryview) -> Program:
    """Read a ``.pte`` from a path (memory-mapped) or from bytes."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _Reader(bytes(source), "<bytes>").program()
    path = os.fspath(source)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            data: Any = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except OSError as e:
        raise ModelError(f"{path}: cannot read program file: {e.strerror or e}") from e
    return _Reader(data, path).program()


class _Reader:
    def __init__(self, data: Any, source: str):
        self.data = data
        self.view = memoryview(data)
        self.source = source
        self.size = len(data)
        self.where = "the program header"
        self.segment_base = 0
        self.segments: list[tuple[int, int]] = []

    def fail(self, message: str) -> ModelError:
        return ModelError(f"{self.source}: {message}")

    def program(self) -> Program:
        if self.size < 8:
            raise self.fail(f"file is {self.size} bytes, too short to be an ExecuTorch program")
        if bytes(self.data[4:8]) != FILE_IDENTIFIER:
            raise self.fail(f"not an ExecuTorch program: file identifier is {bytes(self.data[4:8])!r}, "
                            f"expected {FILE_IDENTIFIER!r}")
        try:
            return self._program()
        except ModelError:
            raise
        except (struct.error, LookupError, ValueError, TypeError, AttributeError, OverflowError,
                UnicodeDecodeError, MemoryError) as e:
            raise self.fail(f"corrupted or truncated program while reading {self.where}: {e}") from e

    # -- container --------------------------------------------------------------------------------

    def _header(self) -> int:
        """The extended header's program size (the whole file when there is none)."""
        if bytes(self.data[8:12]) != HEADER_MAGIC:
            return self.size
        if self.size < 8 + HEADER_MIN:
            raise self.fail(f"extended header is cut off: file is {self.size} bytes")
        length, program_size, base, data_size = struct.unpack_from("<IQQQ", self.data, 12)
        if length < HEADER_MIN or 8 + length > self.size:
            raise self.fail(f"extended header length {length} is invalid (at least {HEADER_MIN}, "
                            f"file is {self.size} bytes)")
        if program_size > self.size:
            raise self.fail(f"extended header: program_size {program_size} is past the end of the file "
                            f"({self.size} bytes)")
        if data_size and (base < program_size or base + data_size > self.size):
            raise self.fail(f"extended header: segment data [{base}, {base + data_size}) is not within "
                            f"the file ({self.size} bytes) after the program ({program_size} bytes)")
        self.segment_base = base
        self.segment_limit = base + data_size
        return program_size

    def _program(self) -> Program:
        self.segment_limit = self.size
        program_size = self._header()
        verify(load_schema(SCHEMA_PATH), self.data, self.source, "program", size=program_size)
        root = struct.unpack_from("<I", self.data, 0)[0]
        if root >= program_size:
            raise self.fail(f"root table offset {root} is past the program ({program_size} bytes)")
        p = pte.Program.GetRootAs(self.data, 0)
        self.where = "the segment table"
        for i in range(p.SegmentsLength()):
            s = p.Segments(i)
            start, size = self.segment_base + s.Offset(), s.Size()
            if s.Offset() > self.size or start + size > self.segment_limit:
                raise self.fail(f"segment {i}: bytes [{start}, {start + size}) are past the end of the "
                                f"segment data ({self.segment_limit} bytes into the file)")
            self.segments.append((start, size))
        self.where = "the named data"
        named: dict[str, memoryview] = {}
        for i in range(p.NamedDataLength()):
            nd = p.NamedData(i)
            key = self._str(nd.Key(), f"named data {i} key")
            named[key] = self._segment(nd.SegmentIndex(), f"named data '{key}'")
        self.where = "the program constants"
        constants = self._constants(p)
        inline = [p.BackendDelegateData(i) for i in range(p.BackendDelegateDataLength())]
        if p.ExecutionPlanLength() == 0:
            raise self.fail("program has no methods (empty execution_plan)")
        methods: dict[str, Method] = {}
        for i in range(p.ExecutionPlanLength()):
            self.where = f"execution plan {i}"
            m = self._method(p.ExecutionPlan(i), i, constants, inline)
            if m.name in methods:
                raise self.fail(f"execution plan {i}: method name '{m.name}' appears twice")
            methods[m.name] = m
        return Program(methods, named, self.source)

    def _segment(self, index: int, what: str) -> memoryview:
        if not 0 <= index < len(self.segments):
            raise self.fail(f"{what}: segment index {index} is out of range ({len(self.segments)} segments)")
        start, size = self.segments[index]
        return self.view[start:start + size]

    def _str(self, raw: bytes | None, what: str) -> str:
        if raw is None:
            raise self.fail(f"{what} is missing")
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.fail(f"{what} is not UTF-8 ({e.reason} at byte {e.start})") from None

    def _constants(self, p: Any) -> list[memoryview | None]:
        """Program constant k's bytes (k = a tensor's data_buffer_idx; 0 is 'no data'); a segment's
        constants end where the next begins."""
        cs = p.ConstantSegment()
        if cs is not None and cs.OffsetsLength():
            seg = self._segment(cs.SegmentIndex(), "the constant segment")
            offsets = [cs.Offsets(i) for i in range(cs.OffsetsLength())]
            out: list[memoryview | None] = []
            for k, off in enumerate(offsets):
                end = offsets[k + 1] if k + 1 < len(offsets) else len(seg)
                if not off <= end <= len(seg):
                    raise self.fail(f"constant {k}: offset {off} is past the constant segment "
                                    f"({len(seg)} bytes) or after the next constant's")
                out.append(seg[off:end])
            return out
        return [self._vector_bytes(p.ConstantBuffer(i)) for i in range(p.ConstantBufferLength())]

    def _vector_bytes(self, table: Any) -> memoryview:
        """The bytes of a table's first ``[ubyte]`` field (Buffer.storage, inline delegate data)."""
        n = table.StorageLength() if hasattr(table, "StorageLength") else table.DataLength()
        if n == 0:
            return self.view[0:0]
        o = table._tab.Offset(4)
        start = table._tab.Vector(o)
        if start + n > self.size:
            raise self.fail(f"a byte vector of {n} bytes at {start} runs past the end ({self.size} bytes)")
        return self.view[start:start + n]

    # -- methods ------------------------------------------------------------------------------------

    def _method(self, ep: Any, index: int, constants: list, inline: list) -> Method:
        name = self._str(ep.Name(), f"execution plan {index} name")
        self.where = f"method '{name}'"
        n = ep.ValuesLength()
        values = [self._value(ep.Values(i), i, name, constants) for i in range(n)]
        for i, v in enumerate(values):
            if v.kind in ("IntList", "TensorList", "OptionalTensorList"):
                for item in v.value:
                    if not (-1 if v.kind == "OptionalTensorList" else 0) <= item < n:
                        raise self.fail(f"method '{name}': value {i} ({v.kind}) refers to value {item}, "
                                        f"out of range ({n} values)")

        def indices(count: int, get: Any, what: str) -> tuple[int, ...]:
            out = tuple(get(i) for i in range(count))
            for i in out:
                if not 0 <= i < n:
                    raise self.fail(f"method '{name}': {what} refers to value {i}, out of range ({n} values)")
            return out

        inputs = indices(ep.InputsLength(), ep.Inputs, "an input")
        outputs = indices(ep.OutputsLength(), ep.Outputs, "an output")
        operators = []
        for i in range(ep.OperatorsLength()):
            op = ep.Operators(i)
            operators.append((self._str(op.Name(), f"method '{name}': operator {i} name"),
                              (op.Overload() or b"").decode("utf-8")))
        backends, payloads = [], []
        for i in range(ep.DelegatesLength()):
            d = ep.Delegates(i)
            backend = self._str(d.Id(), f"method '{name}': delegate {i} id")
            ref = d.Processed()
            if ref is None:
                raise self.fail(f"method '{name}': delegate {i} ({backend}) has no processed data")
            if ref.Location() == pte.DataLocation.SEGMENT:
                payload = self._segment(ref.Index(), f"method '{name}': delegate {i} ({backend})")
            elif ref.Location() == pte.DataLocation.INLINE:
                if not 0 <= ref.Index() < len(inline):
                    raise self.fail(f"method '{name}': delegate {i} ({backend}): inline data index "
                                    f"{ref.Index()} is out of range ({len(inline)} entries)")
                payload = self._vector_bytes(inline[ref.Index()])
            else:
                raise self.fail(f"method '{name}': delegate {i} ({backend}): unknown data location "
                                f"{ref.Location()}")
            backends.append(backend)
            payloads.append(payload)
        if ep.ChainsLength() != 1:
            raise self.fail(f"method '{name}': {ep.ChainsLength()} chains; teflon-py runs methods of one chain")
        chain = ep.Chains(0)
        instructions: list[Instruction] = []
        for i in range(chain.InstructionsLength()):
            what = f"method '{name}': instruction {i}"
            ins = chain.Instructions(i)
            kind, table = ins.InstrArgsType(), ins.InstrArgs()
            if table is None:
                raise self.fail(f"{what} has no arguments")
            if kind == pte.InstructionArguments.KernelCall:
                call = pte.KernelCall()
                call.Init(table.Bytes, table.Pos)
                if not 0 <= call.OpIndex() < len(operators):
                    raise self.fail(f"{what}: operator index {call.OpIndex()} is out of range "
                                    f"({len(operators)} operators)")
                args = indices(call.ArgsLength(), call.Args, f"instruction {i}")
                instructions.append(KernelCall(*operators[call.OpIndex()], args))
            elif kind == pte.InstructionArguments.DelegateCall:
                call = pte.DelegateCall()
                call.Init(table.Bytes, table.Pos)
                if not 0 <= call.DelegateIndex() < len(backends):
                    raise self.fail(f"{what}: delegate index {call.DelegateIndex()} is out of range "
                                    f"({len(backends)} delegates)")
                args = indices(call.ArgsLength(), call.Args, f"instruction {i}")
                instructions.append(DelegateCall(call.DelegateIndex(), backends[call.DelegateIndex()], args))
            elif kind in (pte.InstructionArguments.FreeCall,):
                continue  # memory planning only
            else:
                names = {v: k for k, v in vars(pte.InstructionArguments).items() if not k.startswith("_")}
                raise self.fail(f"{what}: {names.get(kind, kind)} instructions are not supported "
                                "(control flow in a method)")
        return Method(name, values, inputs, outputs, instructions, payloads)

    def _value(self, ev: Any, index: int, method: str, constants: list) -> Value:
        kind = _KINDS.get(ev.ValType())
        what = f"method '{method}': value {index}"
        if kind is None:
            raise self.fail(f"{what}: unknown value type {ev.ValType()}")
        table = ev.Val()
        if kind == "NONE" or kind == "Null" or table is None:
            return Value("Null", None)
        obj = getattr(pte, kind)()
        obj.Init(table.Bytes, table.Pos)
        if kind == "Tensor":
            return Value(kind, self._tensor(obj, what, constants))
        if kind == "Int":
            return Value(kind, int(obj.IntVal()))
        if kind == "Bool":
            return Value(kind, bool(obj.BoolVal()))
        if kind == "Double":
            return Value(kind, float(obj.DoubleVal()))
        if kind == "String":
            return Value(kind, (obj.StringVal() or b"").decode("utf-8"))
        items = tuple(obj.Items(i) for i in range(obj.ItemsLength()))
        if kind == "BoolList":
            items = tuple(bool(x) for x in items)
        return Value(kind, items)

    def _tensor(self, t: Any, what: str, constants: list) -> TensorValue:
        st = t.ScalarType()
        if st not in DTYPES:
            raise self.fail(f"{what}: tensor scalar type {SCALAR_TYPE_NAMES.get(st, st)} is not supported")
        dtype = DTYPES[st]
        sizes = tuple(int(t.Sizes(i)) for i in range(t.SizesLength()))
        if any(s < 0 for s in sizes):
            raise self.fail(f"{what}: tensor has a negative size {list(sizes)}")
        if int(np.prod(sizes, dtype=np.float64)) > MAX_ELEMENTS:
            raise self.fail(f"{what}: tensor sizes {list(sizes)} are implausibly large")
        info = t.ExtraTensorInfo()
        if info is not None and info.Location() == pte.TensorDataLocation.EXTERNAL:
            raise UnsupportedError(f"{self.source}: {what}: tensor data in an external file (.ptd) is not "
                                   "supported")
        dim_order = tuple(int(t.DimOrder(i)) for i in range(t.DimOrderLength()))
        if dim_order and sorted(dim_order) != list(range(len(sizes))):
            raise self.fail(f"{what}: tensor dim_order {list(dim_order)} is not a permutation of its "
                            f"{len(sizes)} dimensions")
        if dim_order == tuple(range(len(sizes))):
            dim_order = ()
        k = t.DataBufferIdx()
        if k == 0:
            return TensorValue(dtype, sizes, None, dim_order)
        if k >= len(constants) or constants[k] is None:
            raise self.fail(f"{what}: constant data index {k} is out of range ({len(constants)} constants)")
        nbytes = int(np.prod(sizes, dtype=np.int64)) * dtype.itemsize
        raw = constants[k]
        if len(raw) < nbytes:
            raise self.fail(f"{what}: constant {k} holds {len(raw)} bytes, the tensor {list(sizes)} "
                            f"{dtype} needs {nbytes}")
        physical = tuple(sizes[d] for d in dim_order) if dim_order else sizes
        data = np.frombuffer(raw[:nbytes], dtype).reshape(physical)
        if dim_order:
            data = data.transpose(np.argsort(dim_order))  # the logical view of the stored bytes
        return TensorValue(dtype, sizes, data, dim_order)
