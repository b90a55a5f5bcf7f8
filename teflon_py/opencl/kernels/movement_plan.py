"""Host-side planning for ``movement.cl``: strided copies, offset tables and their kernel specs."""
from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.errors import UnsupportedError
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.specs import KernelSpec

FILES = ("movement.cl",)
#: dtype name -> suffix of the kernels for its element size
SUFFIX = {"float32": "u32", "int32": "u32", "int8": "u8", "uint8": "u8", "bool": "u8",
          "int16": "u16", "int64": "u64"}
#: the data dtypes every movement op is lowered for
KINDS = tuple(SUFFIX)
#: storage types whose tensors carry a quantization that a raw copy must preserve
QUANTIZED = frozenset({"int8", "uint8", "int16"})
RANK = 5  # index dimensions of the kernels
MAX_ELEMENTS = (1 << 31) - 1  # int index math
PAD_MARK = -(1 << 28)  # a table entry for padding: any sum that includes it stays negative
MAX_LAUNCHES = 64  # copies of more than RANK dims loop over their outer dims on the host


def elements(shape: Sequence[int]) -> int:
    """Number of elements of ``shape``."""
    return int(np.prod(shape, dtype=np.int64))


def dense_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Row-major element strides of ``shape``."""
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def dtype_name(graph: ir.Graph, tensor: int) -> str:
    """The dtype name of ``tensor`` ("float32", "int8", "bool"...)."""
    return np.dtype(graph.tensors[tensor].dtype).name


def suffix(graph: ir.Graph, tensor: int) -> str:
    """The kernel suffix for the elements of ``tensor``."""
    return SUFFIX[dtype_name(graph, tensor)]


def fill_value(value: object, dtype: str) -> np.generic:
    """``value`` in ``dtype`` as the raw bits of an unsigned scalar: a kernel's fill argument."""
    raw = np.asarray(value).astype(dtype).reshape(())
    return raw.view(f"u{raw.dtype.itemsize}")[()]


def param(graph: ir.Graph, op: ir.Operation, k: int) -> list[int]:
    """Constant operand ``k`` (the registry has checked it is constant) as Python ints."""
    return [int(v) for v in np.asarray(graph.tensors[op.inputs[k]].data).reshape(-1)]


def values(tensor: ir.Tensor | None) -> list[int]:
    """A constant operand (the registry has checked it is constant) as Python ints."""
    return [int(v) for v in np.asarray(tensor.data).reshape(-1)]


def refuse(message: str) -> UnsupportedError:
    """What a plan raises for a valid op these kernels do not compute (its check's reason)."""
    return UnsupportedError(message)


def data_reason(graph: ir.Graph, tensors: Sequence[int]) -> str | None:
    """Why raw copies between ``tensors`` would be wrong or overflow the kernels' int indices."""
    return copy_reason([graph.tensors[t] for t in tensors if t != ir.NO_TENSOR])


def copy_reason(ts: Sequence[ir.Tensor | None]) -> str | None:
    """``data_reason`` of tensors themselves (None entries: absent operands)."""
    ts = [t for t in ts if t is not None]
    for t in ts:
        if elements(t.shape) > MAX_ELEMENTS:
            return f"{t.describe()} holds 2^31 or more elements"
    quantized = [t for t in ts if np.dtype(t.dtype).name in QUANTIZED]
    if any(t.quantization != quantized[0].quantization for t in quantized[1:]):
        return "requantizing copy not supported (operands differ in quantization)"
    return None


def data_tensors(ts: Any, params: Sequence[int]) -> list[ir.Tensor]:
    """An op's input tensors that are not parameters, and its outputs (``ts``: OpTensors)."""
    return [t for k, t in enumerate(ts.inputs) if k not in params and t is not None] + list(ts.outputs)


def output_reason(ts: Any, k: int, expected: Sequence[int]) -> str | None:
    """Why output ``k`` of ``ts`` (OpTensors) cannot be the planned one: another shape."""
    actual = tuple(ts.outputs[k].shape)
    if actual == tuple(expected):
        return None
    return f"output {k} has shape {list(actual)}, expected {list(expected)}"


# -- strided copies -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Copy:
    """One strided copy: ``D[d_off + i.dst] = S[s_off + i.src]`` for every index ``i`` of ``dims``."""

    dims: tuple[int, ...]
    src: tuple[int, ...]
    dst: tuple[int, ...]
    s_off: int = 0
    d_off: int = 0


def collapse(copy: Copy) -> list[tuple[int, int, int]]:
    """(size, source stride, destination stride) per dim, size-1 dims dropped and neighbours merged
    where both sides stay linear across them."""
    merged: list[tuple[int, int, int]] = []
    for n, s, d in zip(copy.dims, copy.src, copy.dst):
        if n == 1:
            continue
        if merged and merged[-1][1] == s * n and merged[-1][2] == d * n:
            merged[-1] = (merged[-1][0] * n, s, d)
        else:
            merged.append((n, s, d))
    return merged or [(1, 1, 1)]


def launches_reason(copy: Copy) -> str | None:
    """Why ``copy`` takes too many launches (more than ``MAX_LAUNCHES``), or None."""
    outer = collapse(copy)[:-RANK]
    count = elements([n for n, _, _ in outer])
    if count > MAX_LAUNCHES:
        return f"a copy over {len(outer) + RANK} dimensions would take {count} launches"
    return None


def copy_specs(sfx: str, copy: Copy) -> list[KernelSpec]:
    """The launches of one strided copy: one, or one per index of the dims beyond five (at most
    ``MAX_LAUNCHES``; ValueError beyond)."""
    dims = collapse(copy)
    outer, dims = dims[:-RANK], dims[-RANK:]
    count = elements([n for n, _, _ in outer])
    if count > MAX_LAUNCHES:
        raise ValueError(f"a copy over {len(outer) + RANK} dimensions would take {count} launches")
    dims = [(1, 0, 0)] * (RANK - len(dims)) + dims
    specs = []
    for index in itertools.product(*(range(n) for n, _, _ in outer)):
        s_off = copy.s_off + sum(i * s for i, (_, s, _) in zip(index, outer))
        d_off = copy.d_off + sum(i * d for i, (_, _, d) in zip(index, outer))
        specs.append(transpose_spec(sfx, dims, s_off, d_off) or copy_spec(sfx, dims, s_off, d_off))
    return specs


def copy_spec(sfx: str, dims: Sequence[tuple[int, int, int]], s_off: int, d_off: int) -> KernelSpec:
    """``copy_<sfx>`` over five (size, source stride, destination stride) dims."""
    n = [d[0] for d in dims]
    rows = n[0] * n[1] * n[2] * n[3]
    global_size, rpi, chunk = kernels.row_blocks(rows, n[4])
    args = kernels.scalars(s_off=s_off, d_off=d_off, rows=rows, rpi=rpi, n4=n[4], chunk=chunk, n1=n[1],
                           n2=n[2], n3=n[3], **{f"ss{i}": d[1] for i, d in enumerate(dims)},
                           **{f"ds{i}": d[2] for i, d in enumerate(dims)})
    return KernelSpec(files=FILES, name=f"copy_{sfx}", defines={}, global_size=global_size,
                      local_size=(1, 1), args=("input", "output", *args), scalars=args)


TILE_C = 64  # transpose tiles (movement.cl): TILE_C by one cache line of source
LINE = 64  # bytes


def transpose_spec(sfx: str, dims: Sequence[tuple[int, int, int]], s_off: int,
                   d_off: int) -> KernelSpec | None:
    """``transpose_<sfx>`` for a copy whose innermost dim reads strided while another dim reads
    contiguously (moved next to the innermost), else None."""
    n4, ss4, ds4 = dims[4]
    k = next((k for k in range(3, -1, -1) if dims[k][1] == 1 and dims[k][0] >= 4), None)
    if k is None or ss4 == 1 or ds4 != 1 or n4 < 4:
        return None
    outer = [d for i, d in enumerate(dims[:4]) if i != k]
    (n0, ss0, ds0), (n1, ss1, ds1), (n2, ss2, ds2), (n3, _, ds3) = *outer, dims[k]
    tj = LINE * 8 // int(sfx[1:])  # elements of one cache line: the suffix counts bits
    args = kernels.scalars(s_off=s_off, d_off=d_off, n4=n4, n1=n1, n2=n2, n3=n3, ss0=ss0, ss1=ss1, ss2=ss2,
                           ss4=ss4, ds0=ds0, ds1=ds1, ds2=ds2, ds3=ds3, tj=tj)
    global_size = (-(-n4 // TILE_C), n0 * n1 * n2 * -(-n3 // tj))
    return KernelSpec(files=FILES, name=f"transpose_{sfx}", defines={}, global_size=global_size,
                      local_size=(1, 1), args=("input", "output", *args), scalars=args)


def flat_copy_spec(n: int, dtype: np.dtype | str) -> KernelSpec:
    """A contiguous copy of ``n`` elements of ``dtype``: bits by element size, so any dtype (a
    float16 constant that a check run keeps as a partition output too)."""
    sfx = f"u{8 * np.dtype(dtype).itemsize}"
    return copy_spec(sfx, [(1, 0, 0)] * 4 + [(n, 1, 1)], 0, 0)


def permute(shape: Sequence[int], perm: Sequence[int]) -> Copy:
    """A dense tensor of ``shape`` transposed by ``perm`` into a dense output."""
    out = [shape[p] for p in perm]
    strides = dense_strides(shape)
    return Copy(tuple(out), tuple(strides[p] for p in perm), dense_strides(out))


@dataclass
class Moves:
    """A copy-based op: copies (copy, source tensor, output number) and each output's shape."""

    copies: list[tuple[Copy, int, int]]
    shapes: dict[int, tuple[int, ...]]


def split_moves(x: int, shape: tuple[int, ...], axis: int, sizes: Sequence[int]) -> Moves:
    """Output k is the k-th run of ``sizes[k]`` indices along ``axis``."""
    strides = dense_strides(shape)
    moves = Moves([], {})
    offset = 0
    for k, size in enumerate(sizes):
        part = shape[:axis] + (size,) + shape[axis + 1:]
        moves.copies.append((Copy(part, strides, dense_strides(part), offset * strides[axis]), x, k))
        moves.shapes[k] = part
        offset += size
    return moves


# -- table gathers ------------------------------------------------------------------------------


def shift_table(t: np.ndarray, offset: int) -> np.ndarray:
    """``t + offset``, padding entries (and everything, for a padding offset) kept as padding."""
    return np.where(t < 0, PAD_MARK, t + offset) if offset >= 0 else np.full_like(t, PAD_MARK)


def merge_tables(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One table for two neighbouring axes (``a`` outer)."""
    return np.where((a[:, None] < 0) | (b[None, :] < 0), PAD_MARK, a[:, None] + b[None, :]).reshape(-1)


def fold_tables(tables: Sequence[np.ndarray]) -> tuple[list[np.ndarray], bool]:
    """Per-axis offset tables reduced to five (size-1 axes folded into the innermost, outer axes
    merged) and whether the innermost is the identity (after moving its offset outwards)."""
    tabs = [np.asarray(t, np.int64).reshape(-1) for t in tables]
    keep = [t for t in tabs if t.size > 1] or [np.zeros(1, np.int64)]
    for t in tabs:
        if t.size == 1:
            keep[-1] = shift_table(keep[-1], int(t[0]))
    while len(keep) > RANK:
        keep[:2] = [merge_tables(keep[0], keep[1])]
    keep = [np.zeros(1, np.int64)] * (RANK - len(keep)) + keep
    inner = keep[-1]
    start = int(inner[0])
    linear = start >= 0 and bool(np.array_equal(inner - start, np.arange(inner.size)))
    if linear and start:
        keep[-2] = shift_table(keep[-2], start)
        keep[-1] = inner - start
    return keep, linear


def table_spec(sfx: str, tables: Sequence[np.ndarray], value: np.generic) -> KernelSpec:
    """``table_<sfx>``: output index i reads input offset sum(tables[k][i_k]), or ``value``."""
    tabs, linear = fold_tables(tables)
    n = [t.size for t in tabs]
    rows = n[0] * n[1] * n[2] * n[3]
    global_size, rpi, chunk = kernels.row_blocks(rows, n[4])
    args = {**kernels.scalars(rows=rows, rpi=rpi, n4=n[4], chunk=chunk, n0=n[0], n1=n[1], n2=n[2], n3=n[3],
                              lin=int(linear)), "value": value}
    return KernelSpec(files=FILES, name=f"table_{sfx}", defines={}, global_size=global_size,
                      local_size=(1, 1), args=("input", "tab", "output", *args), scalars=args,
                      constants={"tab": np.concatenate(tabs).astype(np.int32)})


def table_reason(graph: ir.Graph, x: int) -> str | None:
    """Table offsets stay above the padding mark: inputs of fewer than 2^28 elements."""
    return tensor_table_reason(graph.tensors[x])


def tensor_table_reason(t: ir.Tensor) -> str | None:
    """``table_reason`` of the tensor itself."""
    if elements(t.shape) >= -PAD_MARK:
        return f"{t.describe()} holds 2^28 or more elements"
    return None


@dataclass
class Gather:
    """A table-gather op: the per-output-axis offset tables into its input and its output shape."""

    tables: list[np.ndarray]
    shape: tuple[int, ...]
