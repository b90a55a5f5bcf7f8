"""Read a ``.tflite`` flatbuffer (memory-mapped file or bytes) into ``ir.Model``.

First verifies the whole flatbuffer against schema.fbs (``flatbuffer_verifier``: every offset,
vtable, vector and string inside the file; a fault names the path of the field), so the generated
bindings never read out of bounds. Then validates as it reads: file identifier, every tensor/buffer/opcode/subgraph index, every buffer
range (schema 3c buffers stored after the flatbuffer too) and constant sizes. Anything broken is a
``ModelError`` naming the file and the tensor, operator or buffer at fault. Constant data are
read-only NumPy views of the file (zero-copy).
"""
from __future__ import annotations

import mmap
import os
import struct
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.errors import ModelError
from teflon_py.flatbuffer_verifier import load_schema, verify
from teflon_py.tflite import options as options_mod
from teflon_py.tflite import translate
from teflon_py.tflite.schema import fb

FILE_IDENTIFIER = b"TFL3"
SCHEMA_PATH = os.path.join(os.path.dirname(fb.__file__), "schema.fbs")

#: schema TensorType -> NumPy dtype (INT4 is unpacked to int8 on read).
DTYPES: dict[int, np.dtype] = {
    fb.TensorType.FLOAT32: np.dtype(np.float32),
    fb.TensorType.FLOAT16: np.dtype(np.float16),
    fb.TensorType.FLOAT64: np.dtype(np.float64),
    fb.TensorType.INT4: np.dtype(np.int8),
    fb.TensorType.INT8: np.dtype(np.int8),
    fb.TensorType.INT16: np.dtype(np.int16),
    fb.TensorType.INT32: np.dtype(np.int32),
    fb.TensorType.INT64: np.dtype(np.int64),
    fb.TensorType.UINT8: np.dtype(np.uint8),
    fb.TensorType.UINT16: np.dtype(np.uint16),
    fb.TensorType.UINT32: np.dtype(np.uint32),
    fb.TensorType.UINT64: np.dtype(np.uint64),
    fb.TensorType.BOOL: np.dtype(np.bool_),
    fb.TensorType.COMPLEX64: np.dtype(np.complex64),
    fb.TensorType.COMPLEX128: np.dtype(np.complex128),
    fb.TensorType.STRING: np.dtype(np.object_),
    fb.TensorType.RESOURCE: np.dtype(np.int32),
    fb.TensorType.VARIANT: np.dtype(np.int32),
}
TENSOR_TYPE_NAMES = {v: k for k, v in vars(fb.TensorType).items() if not k.startswith("_")}
BUILTIN_NAMES = {v: k for k, v in vars(fb.BuiltinOperator).items() if not k.startswith("_")}


def read_model(source: str | os.PathLike | bytes | bytearray | memoryview) -> ir.Model:
    """Read a model from a path (memory-mapped) or from bytes."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _Reader(bytes(source) if isinstance(source, bytearray) else source, "<bytes>").model()
    path = os.fspath(source)
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            data: Any = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except OSError as e:
        raise ModelError(f"{path}: cannot read model file: {e.strerror or e}") from e
    return _Reader(data, path).model()


class _Reader:
    """One pass over the flatbuffer; ``where`` tracks what is being read for error messages."""

    def __init__(self, data: Any, source: str):
        self.data = data
        self.source = source
        self.size = len(data)
        self.where = "the model header"

    def fail(self, message: str) -> ModelError:
        return ModelError(f"{self.source}: {message}")

    def model(self) -> ir.Model:
        if self.size < 8:
            raise self.fail(f"file is {self.size} bytes, too short to be a TFLite model")
        if bytes(self.data[4:8]) != FILE_IDENTIFIER:
            raise self.fail(
                f"not a TFLite model: file identifier is {bytes(self.data[4:8])!r}, expected b'TFL3'"
            )
        verify(load_schema(SCHEMA_PATH), self.data, self.source, "model")
        try:
            return self._model()
        except ModelError:
            raise
        except (struct.error, LookupError, ValueError, TypeError, AttributeError, OverflowError, MemoryError) as e:
            raise self.fail(f"corrupted or truncated flatbuffer while reading {self.where}: {e}") from e

    def _model(self) -> ir.Model:
        root_offset = struct.unpack_from("<I", self.data, 0)[0]
        if root_offset >= self.size:
            raise self.fail(f"root table offset {root_offset} is past the end ({self.size} bytes)")
        m = fb.Model.GetRootAs(self.data, 0)
        self.where = "the operator codes"
        opcodes = [self._opcode(m.OperatorCodes(i), i) for i in range(m.OperatorCodesLength())]
        self.where = "the buffer table"
        buffers = [m.Buffers(i) for i in range(m.BuffersLength())]
        if m.SubgraphsLength() == 0:
            raise self.fail("model has no subgraphs")
        graphs = [
            self._graph(m.Subgraphs(g), g, opcodes, buffers) for g in range(m.SubgraphsLength())
        ]
        self.where = "the signature defs"
        signatures = [self._signature(m.SignatureDefs(i), i, graphs) for i in range(m.SignatureDefsLength())]
        description = (m.Description() or b"").decode("utf-8", "replace")
        return ir.Model(graphs, signatures, description, m.Version(), self.source)

    def _opcode(self, oc: Any, index: int) -> tuple[str, int, str | None]:
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        if code not in BUILTIN_NAMES or code == fb.BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES:
            raise self.fail(f"operator code {index}: unknown builtin code {code}")
        custom = oc.CustomCode()
        return BUILTIN_NAMES[code], oc.Version(), custom.decode("utf-8") if custom is not None else None

    def _graph(self, sg: Any, g: int, opcodes: list, buffers: list) -> ir.Graph:
        self.where = f"subgraph {g}"
        n = sg.TensorsLength()
        tensors = [self._tensor(sg.Tensors(t), g, t, buffers) for t in range(n)]
        operations = [self._operation(sg.Operators(i), g, i, tensors, opcodes) for i in range(sg.OperatorsLength())]
        inputs = self._indices(sg.InputsAsNumpy(), n, f"subgraph {g} inputs", optional=False)
        outputs = self._indices(sg.OutputsAsNumpy(), n, f"subgraph {g} outputs", optional=False)
        name = (sg.Name() or b"").decode("utf-8", "replace")
        return ir.Graph(tensors, operations, inputs, outputs, name, g)

    def _indices(self, arr: Any, n: int, what: str, optional: bool) -> tuple[int, ...]:
        values = tuple(int(v) for v in arr) if not isinstance(arr, int) else ()
        low = ir.NO_TENSOR if optional else 0
        for v in values:
            if not low <= v < n:
                raise self.fail(f"{what}: tensor index {v} out of range (subgraph has {n} tensors)")
        return values

    def _tensor(self, t: Any, g: int, index: int, buffers: list) -> ir.Tensor:
        self.where = f"subgraph {g} tensor {index}"
        name = (t.Name() or b"").decode("utf-8", "replace")
        label = f"subgraph {g} tensor {index} '{name}'"
        ttype = t.Type()
        if ttype not in DTYPES:
            raise self.fail(f"{label}: unknown tensor type {ttype}")
        dtype = DTYPES[ttype]
        shape = tuple(int(d) for d in t.ShapeAsNumpy()) if t.ShapeLength() else ()
        if any(d < 0 for d in shape):
            raise self.fail(f"{label}: negative dimension in shape {shape}")
        if int(np.prod([1, *shape], dtype=object)) * dtype.itemsize >= 1 << 48:
            raise self.fail(f"{label}: shape {shape} is implausibly large ({dtype} elements past 256 TiB)")
        signature = tuple(int(d) for d in t.ShapeSignatureAsNumpy()) if t.ShapeSignatureLength() else None
        quant = self._quantization(t.Quantization(), label, shape)
        b = t.Buffer()
        if not 0 <= b < max(len(buffers), 1):
            raise self.fail(f"{label}: buffer index {b} out of range ({len(buffers)} buffers)")
        sparsity = _sparsity(t.Sparsity()) if t.Sparsity() is not None else None
        data = self._constant(buffers[b], b, label, shape, dtype, ttype, sparsity is not None) if buffers else None
        return ir.Tensor(index, name, shape, dtype, quant, data, signature, bool(t.IsVariable()), sparsity)

    def _quantization(self, q: Any, label: str, shape: tuple[int, ...]) -> ir.Quantization | None:
        if q is None or q.ScaleLength() == 0:
            return None
        scale = np.array(q.ScaleAsNumpy(), dtype=np.float32)
        zp = np.array(q.ZeroPointAsNumpy(), dtype=np.int64) if q.ZeroPointLength() else np.zeros(scale.size, np.int64)
        if zp.size != scale.size:
            if zp.size == 1:
                zp = np.full(scale.size, zp[0], np.int64)
            else:
                raise self.fail(f"{label}: {scale.size} scales but {zp.size} zero points")
        dim = q.QuantizedDimension()
        if scale.size > 1 and not (0 <= dim < len(shape) and shape[dim] == scale.size):
            raise self.fail(
                f"{label}: {scale.size} per-channel scales do not match dimension {dim} of shape {shape}"
            )
        return ir.Quantization(scale, zp, dim)

    def _buffer_bytes(self, buf: Any, b: int, label: str) -> np.ndarray | None:
        offset, size = buf.Offset(), buf.Size()
        if offset > 1:  # schema 3c: data stored after the flatbuffer, addressed from file start
            if offset + size > self.size:
                raise self.fail(
                    f"{label}: buffer {b} spans bytes {offset}..{offset + size}, past the end of the "
                    f"file ({self.size} bytes)"
                )
            return np.frombuffer(self.data, np.uint8, size, offset)
        if buf.DataLength() == 0:
            return None
        start = buf._tab.Vector(buf._tab.Offset(4))
        length = buf.DataLength()
        if start + length > self.size:
            raise self.fail(f"{label}: buffer {b} data runs past the end of the file")
        return np.frombuffer(self.data, np.uint8, length, start)

    def _constant(self, buf: Any, b: int, label: str, shape, dtype, ttype, sparse: bool = False) -> np.ndarray | None:
        raw = self._buffer_bytes(buf, b, label)
        if sparse and raw is not None and ttype not in (fb.TensorType.STRING, fb.TensorType.INT4):
            # a sparse constant stores only its values (flat); DENSIFY lays them out
            if raw.size % dtype.itemsize:
                raise self.fail(f"{label}: sparse buffer {b} holds {raw.size} bytes, not whole {dtype} values")
            values = raw.view(dtype) if raw.size else np.zeros(0, dtype)
            values.flags.writeable = False
            return values
        count = int(np.prod(shape, dtype=np.int64))
        if raw is None:  # no data: a constant only when it has no elements (and a real buffer)
            if b == 0 or count != 0 or ttype == fb.TensorType.STRING:
                return None
            empty = np.zeros(shape, dtype)
            empty.flags.writeable = False
            return empty
        if ttype == fb.TensorType.STRING:
            return raw
        if ttype == fb.TensorType.INT4:
            if raw.size != (count + 1) // 2:
                raise self.fail(f"{label}: buffer {b} holds {raw.size} bytes, int4 shape {shape} needs {(count + 1) // 2}")
            low = (raw.astype(np.int8) << 4) >> 4
            high = raw.astype(np.int8) >> 4
            return np.stack([low, high], -1).reshape(-1)[:count].reshape(shape)
        need = count * dtype.itemsize
        if raw.size != need:
            raise self.fail(
                f"{label}: buffer {b} holds {raw.size} bytes but shape {shape} of "
                f"{TENSOR_TYPE_NAMES.get(ttype, ttype)} needs {need}"
            )
        arr = raw.view(dtype) if raw.size else np.zeros(0, dtype)
        arr = arr.reshape(shape)
        arr.flags.writeable = False
        return arr

    def _operation(self, op: Any, g: int, index: int, tensors: list[ir.Tensor], opcodes: list) -> ir.Operation:
        ntensors = len(tensors)
        self.where = f"subgraph {g} operator {index}"
        oi = op.OpcodeIndex()
        if not 0 <= oi < len(opcodes):
            raise self.fail(f"subgraph {g} operator {index}: opcode index {oi} out of range ({len(opcodes)} codes)")
        opname, version, custom = opcodes[oi]
        label = f"subgraph {g} operator {index} ({custom or opname})"
        inputs = self._indices(op.InputsAsNumpy(), ntensors, f"{label} inputs", optional=True)
        outputs = self._indices(op.OutputsAsNumpy(), ntensors, f"{label} outputs", optional=True)
        intermediates = self._indices(op.IntermediatesAsNumpy(), ntensors, f"{label} intermediates", optional=True)
        options = options_mod.decode(op.BuiltinOptionsType(), op.BuiltinOptions())
        if options is None:
            options = options_mod.decode(op.BuiltinOptions2Type(), op.BuiltinOptions2(), second=True)
        custom_options = None
        if op.CustomOptionsLength():
            custom_options = op.CustomOptionsAsNumpy().tobytes()
        elif op.LargeCustomOptionsSize():
            start, size = op.LargeCustomOptionsOffset(), op.LargeCustomOptionsSize()
            if start + size > self.size:
                raise self.fail(f"{label}: custom options run past the end of the file")
            custom_options = bytes(self.data[start:start + size])
        src = translate.Source(opname, custom if opname == "CUSTOM" and custom else opname, options,
                               custom_options, version,
                               tuple(None if i == ir.NO_TENSOR else tensors[i] for i in inputs),
                               tuple(tensors[i] for i in outputs if i != ir.NO_TENSOR), label)
        return ir.Operation(
            index, opname, inputs, outputs, translate.to_attrs(src), version, custom, custom_options,
            intermediates,
        )

    def _signature(self, s: Any, i: int, graphs: list[ir.Graph]) -> ir.Signature:
        key = (s.SignatureKey() or b"").decode("utf-8")
        g = s.SubgraphIndex()
        if not 0 <= g < len(graphs):
            raise self.fail(f"signature {i} '{key}': subgraph index {g} out of range")
        n = len(graphs[g].tensors)

        def tensor_map(get, length) -> dict[str, int]:
            out = {}
            for j in range(length):
                tm = get(j)
                t = tm.TensorIndex()
                if not 0 <= t < n:
                    raise self.fail(f"signature '{key}': tensor index {t} out of range")
                out[(tm.Name() or b"").decode("utf-8")] = t
            return out

        return ir.Signature(
            key, g, tensor_map(s.Inputs, s.InputsLength()), tensor_map(s.Outputs, s.OutputsLength())
        )


def _sparsity(sp: Any) -> dict:
    """Sparse tensor description as plain data (decoded later by DENSIFY)."""

    def index_vector(union_type: int, table: Any) -> np.ndarray | None:
        if table is None or union_type == fb.SparseIndexVector.NONE:
            return None
        cls = {
            fb.SparseIndexVector.Int32Vector: fb.Int32Vector,
            fb.SparseIndexVector.Uint16Vector: fb.Uint16Vector,
            fb.SparseIndexVector.Uint8Vector: fb.Uint8Vector,
        }[union_type]
        vec = cls()
        vec.Init(table.Bytes, table.Pos)
        return np.array(vec.ValuesAsNumpy(), dtype=np.int64) if vec.ValuesLength() else np.zeros(0, np.int64)

    dims = []
    for i in range(sp.DimMetadataLength()):
        d = sp.DimMetadata(i)
        dims.append({
            "format": "SPARSE_CSR" if d.Format() == fb.DimensionType.SPARSE_CSR else "DENSE",
            "dense_size": d.DenseSize(),
            "array_segments": index_vector(d.ArraySegmentsType(), d.ArraySegments()),
            "array_indices": index_vector(d.ArrayIndicesType(), d.ArrayIndices()),
        })
    return {
        "traversal_order": tuple(int(v) for v in sp.TraversalOrderAsNumpy()) if sp.TraversalOrderLength() else (),
        "block_map": tuple(int(v) for v in sp.BlockMapAsNumpy()) if sp.BlockMapLength() else (),
        "dim_metadata": dims,
    }
