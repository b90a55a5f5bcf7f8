"""Read one XNNPACK delegate payload: the ``XNNGraph`` flatbuffer and its constant data.

A payload is either a 30-byte header (bytes 4..8 ``XH00``, u16 header length, u32 flatbuffer
offset and size, u32 constant-data offset, u64 constant-data size) followed by the flatbuffer and
the constants, or a bare ``XN00``/``XN01`` flatbuffer. Constants are found through
``XNNGraph.constant_data[k]``: a byte range of the payload's constant data, or (ExecuTorch 1.x) a
``named_key`` into the program's named data. Per-channel scales stored as constant data
(``scale_buffer_idx``, ``num_scales``) are resolved here too.

The result is plain data (``XGraph``: values by id, nodes in order with their fields by schema
name), the flatbuffer verified against xnnpack.fbs first, every id, index and byte range checked; ``ModelError`` names the payload and the value or
node at fault. Only ``xnnpack.translate`` interprets node types.
"""
from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from teflon_py.errors import ModelError
from teflon_py.executorch.schema import xnn
from teflon_py.flatbuffer_verifier import load_schema, verify

HEADER_MAGIC = b"XH00"
SCHEMA_PATH = os.path.join(os.path.dirname(xnn.__file__), "xnnpack.fbs")
HEADER_SIZE = 30
IDENTIFIERS = (b"XN00", b"XN01")
NO_ID = 0xFFFFFFFF
UINT64_MAX = (1 << 64) - 1
EXTERNAL_INPUT, EXTERNAL_OUTPUT = 1, 2  # XNNTensorValue.flags
MAX_ELEMENTS = 1 << 31  # a value of more elements is a damaged payload, not a model

DATATYPE_NAMES = {v: k.removeprefix("xnn_datatype_") for k, v in vars(xnn.XNNDatatype).items()
                  if not k.startswith("_")}
#: storage dtype of each datatype's elements (bf16 is widened to float32 on read)
STORAGE: dict[str, np.dtype] = {
    "fp32": np.dtype(np.float32), "fp16": np.dtype(np.float16), "bf16": np.dtype(np.uint16),
    "qint8": np.dtype(np.int8), "quint8": np.dtype(np.uint8), "qint32": np.dtype(np.int32),
    "qcint8": np.dtype(np.int8), "qcint32": np.dtype(np.int32), "qdint8": np.dtype(np.int8),
    "int32": np.dtype(np.int32), "pfp32": np.dtype(np.float32),
}
NODE_NAMES = {v: k for k, v in vars(xnn.XNodeUnion).items() if not k.startswith("_")}
_QUANT_NAMES = {v: k for k, v in vars(xnn.XNNQuantParams).items() if not k.startswith("_")}
_VALUE_NAMES = {v: k for k, v in vars(xnn.XValueUnion).items() if not k.startswith("_")}


@dataclass(frozen=True)
class XQuant:
    """A value's quantization. ``kind``: PerTensorQuant, PerChannelQuant, PerTokenDynamicQuant
    or PerChannelGroupQuant; scales/zero points as arrays (dynamic: none, decided at run time)."""

    kind: str
    scale: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    zero_point: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    channel_dim: int = 0
    num_nonbatch_dims: int = 0
    group_size: int = 0


@dataclass(frozen=True)
class XValue:
    id: int
    datatype: str
    dims: tuple[int, ...]
    data: np.ndarray | None = None  # constants: elements in their storage dtype (bf16 as float32)
    external_id: int | None = None
    flags: int = 0
    quant: XQuant | None = None

    @property
    def is_external_input(self) -> bool:
        return bool(self.flags & EXTERNAL_INPUT)

    @property
    def is_external_output(self) -> bool:
        return bool(self.flags & EXTERNAL_OUTPUT)


@dataclass(frozen=True)
class XNode:
    index: int
    type: str  # the XNodeUnion member, e.g. "XNNConv2d"
    fields: dict[str, Any]  # the node table's fields by schema name (input1_id, perm, ...)
    output_min: float | None = None
    output_max: float | None = None
    debug_handle: int = 0

    def describe(self) -> str:
        return f"xnode {self.index} ({self.type})"


@dataclass
class XGraph:
    values: dict[int, XValue]
    nodes: list[XNode]
    input_ids: tuple[int, ...]
    output_ids: tuple[int, ...]
    num_externs: int
    version: str = ""


def read_payload(payload: bytes | memoryview, named_data: dict[str, memoryview], what: str) -> XGraph:
    """Parse an XNNPACK payload; ``what`` names it in errors ("<file>: delegate 0")."""
    reader = _PayloadReader(memoryview(payload), named_data, what)
    try:
        return reader.graph()
    except ModelError:
        raise
    except (struct.error, LookupError, ValueError, TypeError, AttributeError, OverflowError,
            UnicodeDecodeError, MemoryError) as e:
        raise ModelError(f"{what}: corrupted or truncated XNNPACK payload while reading {reader.where}: {e}") from e


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _fields(table: Any) -> dict[str, Any]:
    """Every field of a generated table class, by schema name: scalars, and vectors as tuples."""
    out: dict[str, Any] = {}
    cls = type(table)
    for name in dir(cls):
        if not name[:1].isupper() or name in ("Init", "GetRootAs") or name.startswith("GetRootAs"):
            continue
        if name.endswith(("Length", "AsNumpy", "IsNone")) or "BufferHasIdentifier" in name:
            continue
        getter = getattr(table, name)
        if hasattr(cls, name + "Length"):
            out[_snake(name)] = tuple(getter(i) for i in range(getattr(table, name + "Length")()))
        else:
            out[_snake(name)] = getter()
    return out


class _PayloadReader:
    def __init__(self, data: memoryview, named: dict[str, memoryview], what: str):
        self.data = data
        self.named = named
        self.what = what
        self.where = "the payload header"
        self.constants: memoryview = data[0:0]

    def fail(self, message: str) -> ModelError:
        return ModelError(f"{self.what}: {message}")

    def graph(self) -> XGraph:
        size = len(self.data)
        if size < 8:
            raise self.fail(f"XNNPACK payload is {size} bytes, too short")
        if bytes(self.data[4:8]) == HEADER_MAGIC:
            if size < HEADER_SIZE:
                raise self.fail(f"XNNPACK header is cut off: payload is {size} bytes")
            hlen, fb_off, fb_size, c_off, c_size = struct.unpack_from("<HIIIQ", self.data, 8)
            if hlen < HEADER_SIZE:
                raise self.fail(f"XNNPACK header length {hlen} is less than {HEADER_SIZE}")
            if fb_off + fb_size > size or fb_size < 8:
                raise self.fail(f"XNNPACK flatbuffer [{fb_off}, {fb_off + fb_size}) is not within the "
                                f"payload ({size} bytes)")
            if c_off + c_size > size:
                raise self.fail(f"XNNPACK constant data [{c_off}, {c_off + c_size}) runs past the end of "
                                f"the payload ({size} bytes)")
            fb_bytes = bytes(self.data[fb_off:fb_off + fb_size])
            self.constants = self.data[c_off:c_off + c_size]
        else:
            fb_bytes = bytes(self.data)
        if fb_bytes[4:8] not in IDENTIFIERS:
            raise self.fail(f"not an XNNPACK graph: identifier {fb_bytes[4:8]!r}, expected b'XN01' or b'XN00'")
        verify(load_schema(SCHEMA_PATH), fb_bytes, self.what, "XNNPACK payload")
        root = struct.unpack_from("<I", fb_bytes, 0)[0]
        if root >= len(fb_bytes):
            raise self.fail(f"XNNGraph root offset {root} is past the flatbuffer ({len(fb_bytes)} bytes)")
        g = xnn.XNNGraph.GetRootAs(fb_bytes, 0)
        self.where = "the constant data table"
        table = [g.ConstantData(i) for i in range(g.ConstantDataLength())]
        self.table = [(c.Offset(), c.Size(), (c.NamedKey() or b"").decode("utf-8")) for c in table]
        values: dict[int, XValue] = {}
        for i in range(g.XvaluesLength()):
            self.where = f"xvalue {i}"
            v = self._value(g.Xvalues(i), i)
            if v.id in values:
                raise self.fail(f"xvalue {i}: value id {v.id} is defined twice")
            values[v.id] = v
        nodes = []
        for i in range(g.XnodesLength()):
            self.where = f"xnode {i}"
            nodes.append(self._node(g.Xnodes(i), i, values))
        self.where = "the graph inputs and outputs"
        ins = tuple(g.InputIds(i) for i in range(g.InputIdsLength()))
        outs = tuple(g.OutputIds(i) for i in range(g.OutputIdsLength()))
        for kind, ids in (("input", ins), ("output", outs)):
            for vid in ids:
                if vid not in values:
                    raise self.fail(f"graph {kind} id {vid} names no xvalue")
        return XGraph(values, nodes, ins, outs, g.NumExterns(), (g.Version() or b"").decode("utf-8"))

    def _constant(self, idx: int, what: str) -> memoryview:
        if not 0 < idx < len(self.table):
            raise self.fail(f"{what}: constant buffer index {idx} is out of range "
                            f"({len(self.table)} entries, 0 reserved)")
        offset, size, key = self.table[idx]
        if key:
            if key not in self.named:
                raise self.fail(f"{what}: constant '{key}' is not in the program's named data")
            raw = self.named[key]
            if size > len(raw):
                raise self.fail(f"{what}: constant '{key}' is {len(raw)} bytes, the graph expects {size}")
            return raw[:size]
        if offset == UINT64_MAX or offset + size > len(self.constants):
            raise self.fail(f"{what}: constant {idx} bytes [{offset}, {offset + size}) are past the end of "
                            f"the payload's constant data ({len(self.constants)} bytes)")
        return self.constants[offset:offset + size]

    def _value(self, xv: Any, index: int) -> XValue:
        kind = _VALUE_NAMES.get(xv.XvalueUnionType())
        raw = xv.XvalueUnion()
        if kind is None or raw is None:
            raise self.fail(f"xvalue {index}: unknown or missing value type {xv.XvalueUnionType()}")
        quant = None
        if kind == "XNNQuantizedTensorValue":
            qt = xnn.XNNQuantizedTensorValue()
            qt.Init(raw.Bytes, raw.Pos)
            tv = qt.TensorValue()
            if tv is None:
                raise self.fail(f"xvalue {index}: quantized value without a tensor value")
            quant = self._quant(qt, index)
        else:
            tv = xnn.XNNTensorValue()
            tv.Init(raw.Bytes, raw.Pos)
        dt = DATATYPE_NAMES.get(tv.Datatype(), str(tv.Datatype()))
        dims = tuple(int(tv.Dims(i)) for i in range(tv.DimsLength()))
        if tv.NumDims() != len(dims):
            raise self.fail(f"xvalue {index}: num_dims {tv.NumDims()} but {len(dims)} dims")
        if int(np.prod(dims, dtype=np.float64)) > MAX_ELEMENTS:
            raise self.fail(f"xvalue {index}: dims {list(dims)} are implausibly large")
        vid = tv.IdOut()
        data = None
        if tv.ConstantBufferIdx():
            if dt not in STORAGE:
                raise self.fail(f"xvalue {index} (id {vid}): constant of datatype {dt} is not supported")
            raw_bytes = self._constant(tv.ConstantBufferIdx(), f"xvalue {index} (id {vid})")
            storage = STORAGE[dt]
            n = int(np.prod(dims, dtype=np.int64))
            if len(raw_bytes) < n * storage.itemsize:
                raise self.fail(f"xvalue {index} (id {vid}): constant holds {len(raw_bytes)} bytes, dims "
                                f"{list(dims)} of {dt} need {n * storage.itemsize}")
            data = np.frombuffer(raw_bytes[:n * storage.itemsize], storage).reshape(dims)
            if dt == "bf16":
                data = (data.astype(np.uint32) << 16).view(np.float32)
        ext = tv.ExternalId()
        return XValue(vid, dt, dims, data, None if ext == NO_ID else ext, tv.Flags(), quant)

    def _quant(self, qt: Any, index: int) -> XQuant:
        kind = _QUANT_NAMES.get(qt.QuantParamsType())
        raw = qt.QuantParams()
        if kind is None or raw is None:
            raise self.fail(f"xvalue {index}: unknown quantization type {qt.QuantParamsType()}")
        q = getattr(xnn, kind)()
        q.Init(raw.Bytes, raw.Pos)
        if kind == "PerTensorQuant":
            return XQuant(kind, np.array([q.Scale()], np.float32), np.array([q.ZeroPoint()], np.int64))
        if kind == "PerTokenDynamicQuant":
            return XQuant(kind, num_nonbatch_dims=q.NumNonbatchDims())
        scales = np.array([q.Scale(i) for i in range(q.ScaleLength())], np.float32)
        if q.ScaleBufferIdx():
            raw_scales = self._constant(q.ScaleBufferIdx(), f"xvalue {index} scales")
            if len(raw_scales) < 4 * q.NumScales():
                raise self.fail(f"xvalue {index}: {q.NumScales()} scales need {4 * q.NumScales()} bytes, "
                                f"the constant holds {len(raw_scales)}")
            scales = np.frombuffer(raw_scales[:4 * q.NumScales()], np.float32).copy()
        if kind == "PerChannelQuant":
            return XQuant(kind, scales, np.zeros(scales.size, np.int64), q.ChannelDim())
        return XQuant(kind, scales, np.zeros(scales.size, np.int64), q.ChannelDim(), group_size=q.GroupSize())

    def _node(self, xn: Any, index: int, values: dict[int, XValue]) -> XNode:
        kind = NODE_NAMES.get(xn.XnodeUnionType())
        raw = xn.XnodeUnion()
        if kind is None or raw is None:
            raise self.fail(f"xnode {index}: unknown node type {xn.XnodeUnionType()}")
        cls_name = _NODE_TABLES.get(kind, kind)
        table = getattr(xnn, cls_name)()
        table.Init(raw.Bytes, raw.Pos)
        fields = _fields(table)
        for name, vid in fields.items():
            if name.endswith("_id") and isinstance(vid, int) and vid != NO_ID and vid not in values:
                raise self.fail(f"xnode {index} ({kind}): {name} {vid} names no xvalue")
        mm = xn.OutputMinMax()
        return XNode(index, kind, fields, mm.OutputMin() if mm else None, mm.OutputMax() if mm else None,
                     xn.DebugHandle())


#: union member -> the table type it is stored as (the schema's ``XNNAdd: _XNNNode2x1`` aliases);
#: the other members are stored as the table of their own name
_NODE_TABLES: dict[str, str] = {
    **dict.fromkeys(("XNNAdd", "XNNDiv", "XNNMinimum", "XNNMaximum", "XNNMultiply", "XNNSubtract",
                     "XNNPReLU", "XNNBatchMatrixMultiply"), "_XNNNode2x1"),
    **dict.fromkeys(("XNNSoftmax", "XNNSigmoid", "XNNClamp", "XNNFloor", "XNNConvert",
                     "XNNGlobalAvgPooling2d", "XNNSquareRoot", "XNNCeiling", "XNNHardswish", "XNNNegate",
                     "XNNSquare", "XNNAbs", "XNNReciprocalSquareRoot", "XNNLog", "XNNGelu", "XNNTanh",
                     "XNNExp", "XNNSin", "XNNCopy", "XNNCos"), "_XNNNode1x1"),
    **dict.fromkeys(("XNNConv2d", "XNNDepthwiseConv2d", "XNNConvTranspose2d"), "_XNNNodeConv"),
    **dict.fromkeys(("XNNAvgPooling2d", "XNNMaxPooling2d"), "_XNNPooling2D"),
    **dict.fromkeys(("XNNConcatenate2", "XNNConcatenate3", "XNNConcatenate4", "XNNConcatenate5"), "_XNNCat"),
}
