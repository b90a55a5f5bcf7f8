"""Write ``.tflite`` flatbuffers: from an ``ir.Model`` (``write_model``) or op by op (``ModelBuilder``).

Tests use it to make single-op models with random shapes, parameters and quantization; the demo
networks use it too. Constant buffers are 16-byte aligned; ``external_buffers=True`` stores them
after the flatbuffer with ``offset``/``size`` (schema 3c), as large converted models do.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import flatbuffers
import numpy as np

from teflon_py import ir
from teflon_py.tflite import options as options_mod
from teflon_py.tflite import translate
from teflon_py.tflite.reader import FILE_IDENTIFIER
from teflon_py.tflite.schema import fb

_TENSOR_TYPES = {
    np.dtype(np.float32): fb.TensorType.FLOAT32,
    np.dtype(np.float16): fb.TensorType.FLOAT16,
    np.dtype(np.float64): fb.TensorType.FLOAT64,
    np.dtype(np.int8): fb.TensorType.INT8,
    np.dtype(np.int16): fb.TensorType.INT16,
    np.dtype(np.int32): fb.TensorType.INT32,
    np.dtype(np.int64): fb.TensorType.INT64,
    np.dtype(np.uint8): fb.TensorType.UINT8,
    np.dtype(np.uint16): fb.TensorType.UINT16,
    np.dtype(np.uint32): fb.TensorType.UINT32,
    np.dtype(np.uint64): fb.TensorType.UINT64,
    np.dtype(np.bool_): fb.TensorType.BOOL,
    np.dtype(np.complex64): fb.TensorType.COMPLEX64,
    np.dtype(np.complex128): fb.TensorType.COMPLEX128,
}
_PLACEHOLDER_FOR_GREATER_OP_CODES = 127
_BUFFER_ALIGNMENT = 16


def quantization(scale: Any, zero_point: Any = 0, dim: int = 0) -> ir.Quantization:
    """An ``ir.Quantization`` from scalars or per-channel sequences."""
    s = np.atleast_1d(np.asarray(scale, np.float32))
    z = np.atleast_1d(np.asarray(zero_point, np.int64))
    if z.size == 1 and s.size > 1:
        z = np.full(s.size, z[0], np.int64)
    return ir.Quantization(s, z, dim)


class GraphBuilder:
    """Accumulates the tensors and operations of one subgraph."""

    def __init__(self, name: str = "main", index: int = 0):
        self.graph = ir.Graph([], [], (), (), name, index)
        #: op index -> the TFLite options table to write, exactly as given (tests write invalid ones)
        self.options: dict[int, Any] = {}

    def add_tensor(
        self,
        name: str,
        shape: Sequence[int],
        dtype: Any,
        *,
        data: np.ndarray | None = None,
        quantization: ir.Quantization | None = None,
        shape_signature: Sequence[int] | None = None,
        is_variable: bool = False,
        sparsity: dict | None = None,
    ) -> int:
        """Add a tensor; returns its index.

        A sparse constant (``sparsity`` in the reader's form, see ``reader._sparsity``) keeps
        ``data`` as the flat array of its stored values; ``shape`` is the dense shape.
        """
        index = len(self.graph.tensors)
        dt = np.dtype(dtype)
        if data is not None:
            data = np.ascontiguousarray(data, dtype=dt)
            data = data.reshape(-1) if sparsity is not None else data.reshape(tuple(shape))
        self.graph.tensors.append(
            ir.Tensor(
                index, name, tuple(int(d) for d in shape), dt, quantization, data,
                tuple(shape_signature) if shape_signature is not None else None, is_variable,
                sparsity,
            )
        )
        return index

    def add_input(self, name: str, shape: Sequence[int], dtype: Any, **kw: Any) -> int:
        """Add a graph input tensor."""
        t = self.add_tensor(name, shape, dtype, **kw)
        self.graph.inputs = self.graph.inputs + (t,)
        return t

    def add_constant(self, name: str, data: Any, dtype: Any = None, *, shape: Sequence[int] | None = None,
                     **kw: Any) -> int:
        """Add a constant tensor holding ``data`` (for a sparse one: its stored values, and ``shape``)."""
        arr = np.asarray(data, dtype=dtype)
        return self.add_tensor(name, arr.shape if shape is None else shape, arr.dtype, data=arr, **kw)

    def add_op(
        self,
        opcode: str,
        inputs: Iterable[int],
        outputs: Iterable[int],
        options: Any = None,
        *,
        custom_code: str | None = None,
        custom_options: bytes | None = None,
        version: int = 1,
        intermediates: Iterable[int] = (),
    ) -> ir.Operation:
        """Append an operation (``opcode`` is a builtin name, or ``"CUSTOM"``) with its TFLite
        ``options`` table (a ``teflon_py.tflite.options`` dataclass), written as given."""
        if opcode not in vars(fb.BuiltinOperator):
            raise ValueError(f"unknown builtin operator {opcode!r}")
        op = ir.Operation(
            len(self.graph.operations), opcode, tuple(inputs), tuple(outputs), None, version,
            custom_code, custom_options, tuple(intermediates),
        )
        self.options[op.index] = options
        self.graph.operations.append(op)
        return op

    def parsed(self) -> ir.Graph:
        """The graph as the reader would see it: every op's attributes translated from its options."""
        ops = []
        for op in self.graph.operations:
            src = translate.Source(
                op.opcode, op.name, self.options.get(op.index), op.custom_options, op.version,
                tuple(self.graph.input_tensors(op)), tuple(self.graph.output_tensors(op)), op.describe())
            ops.append(dataclasses.replace(op, attrs=translate.to_attrs(src)))
        return dataclasses.replace(self.graph, operations=ops)

    def mark_outputs(self, *tensors: int) -> None:
        self.graph.outputs = self.graph.outputs + tuple(tensors)


class ModelBuilder:
    """Builds a whole model: subgraph 0 is ``main``; more via ``add_graph``."""

    def __init__(self, description: str = "teflon-py builder"):
        self.main = GraphBuilder()
        self.graphs = [self.main]
        self.signatures: list[ir.Signature] = []
        self.description = description

    def add_graph(self, name: str) -> GraphBuilder:
        g = GraphBuilder(name, len(self.graphs))
        self.graphs.append(g)
        return g

    def add_signature(self, key: str, inputs: dict[str, int], outputs: dict[str, int], graph: int = 0) -> None:
        self.signatures.append(ir.Signature(key, graph, dict(inputs), dict(outputs)))

    def model(self) -> ir.Model:
        """The model as the reader would return it (attributes translated from the options)."""
        return ir.Model([g.parsed() for g in self.graphs], list(self.signatures), self.description)

    def build(self, *, external_buffers: bool = False) -> bytes:
        """The ``.tflite`` bytes, with each operator's options table as ``add_op`` was given it."""
        tables = {id(g.graph): g.options for g in self.graphs}
        raw = ir.Model([g.graph for g in self.graphs], list(self.signatures), self.description)
        return write_model(raw, external_buffers=external_buffers,
                           options=lambda graph, op: tables[id(graph)].get(op.index))


class _AlignedBufferT(fb.BufferT):
    """A buffer whose bytes are written 16-byte aligned in one copy (not byte by byte)."""

    def Pack(self, builder: flatbuffers.Builder) -> int:
        data = None
        if self.data is not None and self.data.size:
            raw = self.data.tobytes()
            builder.StartVector(1, len(raw), _BUFFER_ALIGNMENT)
            builder.head -= len(raw)
            builder.Bytes[builder.head:builder.head + len(raw)] = raw
            builder.vectorNumElems = len(raw)
            data = builder.EndVector()
        fb.BufferStart(builder)
        if data is not None:
            fb.BufferAddData(builder, data)
        fb.BufferAddOffset(builder, self.offset)
        fb.BufferAddSize(builder, self.size)
        return fb.BufferEnd(builder)


def _raw_bytes(t: ir.Tensor) -> np.ndarray:
    return np.frombuffer(np.ascontiguousarray(t.data).astype(t.dtype.newbyteorder("<")).tobytes(), np.uint8)


def write_model(model: ir.Model, *, external_buffers: bool = False,
                options: Callable[[ir.Graph, ir.Operation], Any] | None = None) -> bytes:
    """Serialise ``model`` as a ``.tflite`` flatbuffer. Each operator's options table comes from
    its attributes (``translate.to_options``), or from ``options(graph, op)`` where given (the
    ``ModelBuilder``, which writes the tables it was handed, valid or not)."""
    options_of = options or (lambda g, op: translate.to_options(op, g))
    opcodes: dict[tuple[str, str | None, int], int] = {}
    buffers = [_AlignedBufferT()]
    payloads: list[tuple[_AlignedBufferT, np.ndarray]] = []
    subgraphs = []
    for g in model.graphs:
        sg = fb.SubGraphT()
        sg.name = g.name
        sg.inputs = list(g.inputs)
        sg.outputs = list(g.outputs)
        sg.tensors = []
        for t in g.tensors:
            tt = fb.TensorT()
            tt.name = t.name
            tt.shape = np.array(t.shape, np.int32)
            if t.shape_signature is not None:
                tt.shapeSignature = np.array(t.shape_signature, np.int32)
            tt.type = _TENSOR_TYPES[np.dtype(t.dtype)]
            tt.isVariable = t.is_variable
            if t.quantization is not None:
                q = fb.QuantizationParametersT()
                q.scale = [float(s) for s in t.quantization.scale]
                q.zeroPoint = [int(z) for z in t.quantization.zero_point]
                q.quantizedDimension = t.quantization.quantized_dimension
                tt.quantization = q
            if t.sparsity is not None:
                tt.sparsity = _sparsity_parameters(t.sparsity)
            tt.buffer = 0
            if t.data is not None:
                buf = _AlignedBufferT()
                raw = _raw_bytes(t)
                if external_buffers:
                    buf.offset, buf.size = 1 << 40, raw.size  # placeholder, same width as final
                    payloads.append((buf, raw))
                else:
                    buf.data = raw
                tt.buffer = len(buffers)
                buffers.append(buf)
            sg.tensors.append(tt)
        sg.operators = []
        for op in g.operations:
            key = (op.opcode, op.custom_code, op.version)
            if key not in opcodes:
                opcodes[key] = len(opcodes)
            o = fb.OperatorT()
            o.opcodeIndex = opcodes[key]
            o.inputs = list(op.inputs)
            o.outputs = list(op.outputs)
            if op.intermediates:
                o.intermediates = list(op.intermediates)
            opts = options_of(g, op)
            if opts is not None:
                code, second = options_mod.union_type_of(opts)
                if second:
                    o.builtinOptions2Type, o.builtinOptions2 = code, options_mod.encode(opts)
                else:
                    o.builtinOptionsType, o.builtinOptions = code, options_mod.encode(opts)
            if op.custom_options is not None:
                o.customOptions = np.frombuffer(op.custom_options, np.uint8)
            sg.operators.append(o)
        subgraphs.append(sg)

    m = fb.ModelT()
    m.version = 3
    m.description = model.description
    m.subgraphs = subgraphs
    m.buffers = buffers
    m.operatorCodes = []
    for (name, custom, version), _ in sorted(opcodes.items(), key=lambda kv: kv[1]):
        oc = fb.OperatorCodeT()
        code = getattr(fb.BuiltinOperator, name)
        oc.builtinCode = code
        oc.deprecatedBuiltinCode = min(code, _PLACEHOLDER_FOR_GREATER_OP_CODES)
        oc.customCode = custom
        oc.version = version
        m.operatorCodes.append(oc)
    m.signatureDefs = []
    for s in model.signatures:
        sd = fb.SignatureDefT()
        sd.signatureKey = s.key
        sd.subgraphIndex = s.subgraph_index
        sd.inputs = [_tensor_map(k, v) for k, v in s.inputs.items()]
        sd.outputs = [_tensor_map(k, v) for k, v in s.outputs.items()]
        m.signatureDefs.append(sd)

    data = _pack(m)
    if not payloads:
        return data
    # schema 3c: buffers after the flatbuffer, offsets from the file start, 16-byte aligned
    pos = len(data)
    for buf, raw in payloads:
        pos = -(-pos // _BUFFER_ALIGNMENT) * _BUFFER_ALIGNMENT
        buf.offset = pos
        pos += raw.size
    head = _pack(m)
    assert len(head) == len(data), "external buffer offsets changed the flatbuffer size"
    out = bytearray(head)
    for buf, raw in payloads:
        out.extend(b"\0" * (buf.offset - len(out)))
        out.extend(raw.tobytes())
    return bytes(out)


_INDEX_VECTORS = {
    np.dtype(np.uint8): (fb.SparseIndexVector.Uint8Vector, fb.Uint8VectorT),
    np.dtype(np.uint16): (fb.SparseIndexVector.Uint16Vector, fb.Uint16VectorT),
}


def _index_vector(values: Any) -> tuple[int, Any]:
    """(union type, vector object) for a sparse index array: uint8/uint16 arrays keep their width."""
    if values is None:
        return fb.SparseIndexVector.NONE, None
    arr = np.asarray(values)
    code, cls = _INDEX_VECTORS.get(arr.dtype, (fb.SparseIndexVector.Int32Vector, fb.Int32VectorT))
    vec = cls()
    vec.values = [int(v) for v in arr.reshape(-1)]
    return code, vec


def _sparsity_parameters(sparsity: dict) -> Any:
    """The schema's SparsityParametersT from the reader's plain-data form."""
    sp = fb.SparsityParametersT()
    sp.traversalOrder = [int(v) for v in sparsity.get("traversal_order", ())]
    block_map = sparsity.get("block_map", ())
    sp.blockMap = [int(v) for v in block_map] if len(block_map) else None
    sp.dimMetadata = []
    for d in sparsity.get("dim_metadata", ()):
        dm = fb.DimensionMetadataT()
        sparse = d.get("format", "DENSE") == "SPARSE_CSR"
        dm.format = fb.DimensionType.SPARSE_CSR if sparse else fb.DimensionType.DENSE
        dm.denseSize = int(d.get("dense_size", 0) or 0)
        dm.arraySegmentsType, dm.arraySegments = _index_vector(d.get("array_segments"))
        dm.arrayIndicesType, dm.arrayIndices = _index_vector(d.get("array_indices"))
        sp.dimMetadata.append(dm)
    return sp


def _tensor_map(name: str, index: int) -> Any:
    tm = fb.TensorMapT()
    tm.name = name
    tm.tensorIndex = index
    return tm


def _pack(m: Any) -> bytes:
    builder = flatbuffers.Builder(1024)
    builder.Finish(m.Pack(builder), file_identifier=FILE_IDENTIFIER)
    return bytes(builder.Output())
