"""DENSIFY: a sparse constant tensor (TACO-style sparsity parameters) laid out dense, as TFLite.

The sparsity parameters (``ir.Tensor.sparsity``, decoded by the reader) describe a tree: one level
per dimension in ``traversal_order`` -- the ``n`` tensor dimensions, then the ``k`` dimensions
inside a block, each block dimension mapping to the tensor dimension it splits (``block_map``).
A DENSE level has ``dense_size`` children under every node; a SPARSE_CSR level lists the children
of node ``p`` as ``array_indices[array_segments[p]:array_segments[p + 1]]``, and the position of a
child in that array is its node id one level down. The leaves, in depth-first order, take the
stored values one by one. TFLite's FormatConverter walks this tree recursively; here it is
expanded one level at a time over all nodes at once, which keeps the same depth-first order.
LiteRT computes DENSIFY once (its input must be constant): so does ``node.memo``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from teflon_py.fallback.registry import Node, register

_TYPES = (np.dtype(np.float32), np.dtype(np.int8), np.dtype(np.float16))


def _expand_dense(pos: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(parent of each child, child's node id, child's index) for a DENSE level of ``size``."""
    parent = np.repeat(np.arange(pos.size), size)
    index = np.tile(np.arange(size, dtype=np.int64), pos.size)
    return parent, pos[parent] * size + index, index


def _expand_sparse(
    pos: np.ndarray, segments: np.ndarray, indices: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same for a SPARSE_CSR level; nodes or entries past the arrays are skipped, as TFLite does."""
    valid = np.flatnonzero(pos + 1 < segments.size)
    start, end = segments[pos[valid]], segments[pos[valid] + 1]
    counts = np.maximum(end - start, 0)
    parent = np.repeat(valid, counts)
    first = np.repeat(start - (np.cumsum(counts) - counts), counts)
    child = first + np.arange(parent.size, dtype=np.int64)
    keep = child < indices.size
    parent, child = parent[keep], child[keep]
    return parent, child, indices[child]


def _dense_positions(shape: tuple[int, ...], sparsity: dict[str, Any]) -> np.ndarray:
    """Flat dense position of every stored value, in storage order (FormatConverter::SparseToDense)."""
    order = tuple(sparsity.get("traversal_order", ()))
    block_map = tuple(sparsity.get("block_map", ()))
    dims = sparsity["dim_metadata"]
    n = len(shape)
    if (
        len(order) != len(dims)
        or len(order) != n + len(block_map)
        or sorted(order) != list(range(len(order)))
    ):
        raise ValueError(
            f"traversal order {order} does not fit {len(dims)} dimension metadata, rank {n} "
            f"and {len(block_map)} block dimensions"
        )
    block_size = [int(dims[order[n + j]]["dense_size"]) for j in range(len(block_map))]
    pos = np.zeros(1, np.int64)
    levels: list[np.ndarray] = []
    for d in dims:
        if d["format"] == "DENSE":
            parent, pos, index = _expand_dense(pos, int(d["dense_size"]))
        else:
            segments, indices = d["array_segments"], d["array_indices"]
            if segments is None or indices is None:
                raise ValueError("a SPARSE_CSR dimension without array_segments / array_indices")
            parent, pos, index = _expand_sparse(
                pos, np.asarray(segments, np.int64), np.asarray(indices, np.int64)
            )
        levels = [level[parent] for level in levels] + [index]
    coords: list[np.ndarray] = [np.zeros(pos.size, np.int64)] * n
    for i in range(n):
        coords[order[i]] = levels[i]
    for i in range(n, len(order)):
        block = order[i] - n
        dim = block_map[block]
        coords[dim] = coords[dim] * block_size[block] + levels[i]
    return np.ravel_multi_index(coords, shape) if n else np.zeros(pos.size, np.int64)


def densify_values(values: np.ndarray, shape: tuple[int, ...], sparsity: dict[str, Any]) -> np.ndarray:
    """The dense ``shape`` array whose nonzero layout ``sparsity`` describes, filled from ``values``."""
    positions = _dense_positions(tuple(shape), sparsity)
    flat = np.asarray(values).reshape(-1)
    if flat.size < positions.size:
        raise ValueError(
            f"the sparsity parameters address {positions.size} values, the tensor stores {flat.size}"
        )
    dense = np.zeros(int(np.prod(shape, dtype=np.int64)), flat.dtype)
    dense[positions] = flat[: positions.size]
    dense = dense.reshape(shape)
    dense.flags.writeable = False
    return dense


@register("DENSIFY")
def densify(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """The constant sparse input, dense; computed once per node."""
    t, out = node.inputs[0], node.outputs[0]
    if t is None or t.sparsity is None or not t.is_constant:
        raise node.error("input must be a constant tensor with sparsity parameters")
    if np.dtype(t.dtype) not in _TYPES or out.dtype != t.dtype:
        raise node.error(f"type {t.dtype} -> {out.dtype} is not supported (float32, int8, float16)")

    def build() -> np.ndarray:
        try:
            return densify_values(inputs[0], t.shape, t.sparsity)
        except ValueError as e:
            raise node.error(f"invalid sparsity parameters of {t.describe()}: {e}") from e

    return node.memo("dense", build)
