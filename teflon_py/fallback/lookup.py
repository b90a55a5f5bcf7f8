"""HASHTABLE_LOOKUP and LSH_PROJECTION, as Android's and TFLite's reference kernels compute them.

HASHTABLE_LOOKUP: each lookup is searched among the keys with C's ``bsearch`` (the bisection
glibc runs: the probe is the middle of [lo, hi), so with repeated keys the one found is the first
the bisection meets); a hit copies that row of the values and sets its hit byte to 1, a miss writes
a row of zero bytes (0, not the zero point, for uint8) and a 0.

LSH_PROJECTION: for each seed (a float32, its 4 bytes) and each input row (its bytes as stored),
``Fingerprint64(seed bytes + row bytes)`` read as an int64 and converted to double; the bit is
``sum over rows (weight[row] * hash) > 0`` summed in order in double (no weight: 1). DENSE writes
the bits as int32; sparse shifts each hash function's bits into one int32, first bit highest, and
adds ``i << bits`` where ``offset`` (wrapping as int32).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from teflon_py.fallback.farmhash import fingerprint64
from teflon_py.fallback.registry import Node, register
from teflon_py.ops.lookup import hashtable_reason, lsh_reason


def bsearch(keys: np.ndarray, lookups: np.ndarray) -> np.ndarray:
    """The index glibc's ``bsearch`` returns for each lookup among sorted ``keys``, or -1."""
    lo = np.zeros(lookups.shape, np.int64)
    hi = np.full(lookups.shape, keys.shape[0], np.int64)
    found = np.full(lookups.shape, -1, np.int64)
    while True:
        active = (lo < hi) & (found < 0)
        if not active.any():
            return found
        mid = (lo + hi) // 2
        probe = keys[np.minimum(mid, keys.shape[0] - 1)]  # an active search has mid < len(keys)
        less, greater = lookups < probe, lookups > probe
        hi = np.where(active & less, mid, hi)
        lo = np.where(active & greater, mid + 1, lo)
        found = np.where(active & ~less & ~greater, mid, found)


@register("HASHTABLE_LOOKUP")
def hashtable_lookup(node: Node, inputs: Sequence[np.ndarray | None]) -> list[np.ndarray]:
    """The values' row of each lookup's key (zeros where absent), and a 1/0 hit per lookup."""
    lookups, keys, values = inputs[0], inputs[1], inputs[2]
    reason = hashtable_reason(node.inputs[0], node.inputs[1], node.inputs[2], node.outputs[0])
    if reason:
        raise node.invalid(reason)
    index = bsearch(np.asarray(keys, np.int32), np.asarray(lookups, np.int32))
    hit = index >= 0
    rows = np.zeros((lookups.shape[0],) + values.shape[1:], values.dtype)
    rows[hit] = values[index[hit]]
    return [rows, hit.astype(np.uint8)]


def sign_bits(seeds: np.ndarray, x: np.ndarray, weight: np.ndarray | None) -> np.ndarray:
    """One 0/1 per seed: the sign of the (weighted) sum of the rows' Fingerprint64s."""
    rows = x.shape[0]
    seed_bytes = np.ascontiguousarray(seeds.reshape(-1), "<f4").view(np.uint8).reshape(-1, 4)
    if rows == 0:
        return np.zeros(seed_bytes.shape[0], np.int32)
    row_bytes = np.ascontiguousarray(x).view(np.uint8).reshape(rows, -1)
    count = seed_bytes.shape[0]
    keys = np.concatenate([np.repeat(seed_bytes, rows, axis=0), np.tile(row_bytes, (count, 1))], axis=1)
    hashes = fingerprint64(keys).view(np.int64).astype(np.float64).reshape(count, rows)
    if weight is not None:
        hashes = weight.astype(np.float64) * hashes
    score = np.cumsum(hashes, axis=1)[:, -1]  # sequential double sum, as the row loop adds
    return (score > 0).astype(np.int32)


@register("LSH_PROJECTION")
def lsh_projection(node: Node, inputs: Sequence[np.ndarray | None]) -> np.ndarray:
    """The sign bits of each hash function's seeds over the input rows, dense or packed."""
    seeds, x = inputs[0], inputs[1]
    weight = inputs[2] if len(inputs) > 2 else None
    attrs = node.attrs
    reason = lsh_reason(attrs, node.inputs[0], node.inputs[1], node.inputs[2] if len(node.inputs) > 2 else None)
    if reason:
        raise node.invalid(reason)
    functions, nbits = seeds.shape
    bits = sign_bits(seeds, x, weight)
    if attrs.dense:
        return bits
    weights = (1 << np.arange(nbits - 1, -1, -1, dtype=np.int64))
    signatures = (bits.reshape(functions, nbits).astype(np.int64) * weights).sum(axis=1)
    if attrs.offset:
        signatures = signatures + np.arange(functions, dtype=np.int64) * (1 << nbits)
    return (signatures & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
