"""HASHTABLE_LOOKUP and LSH_PROJECTION: attributes, rules and shape inference.

HASHTABLE_LOOKUP finds each lookup among sorted int32 keys and copies the matching row of the
values (zeros for a miss), with a uint8 0/1 ``hits`` output. LSH_PROJECTION hashes each input row
(as bytes, after a float32 seed) with FarmHash's Fingerprint64 and takes the sign of the
(weighted) sum over rows as one bit per seed: DENSE gives the bits, SPARSE packs each hash
function's bits into one int32 (plus ``index << bits`` where ``offset``). Both are NNAPI operations
and TFLite builtins with the same semantics.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from teflon_py import ir
from teflon_py.ops.common import NoAttrs
from teflon_py.ops.registry import Inputs, Meta, define

MAX_BITS = 32


@dataclass(frozen=True)
class LshAttrs:
    """LSH_PROJECTION: ``dense`` (one int32 0/1 per bit) or sparse (one int32 per hash function,
    its bits first to last from the high end); ``offset``: a sparse signature of hash function i
    gets ``i << bits`` added (NNAPI's SPARSE and TFLite's; NNAPI's SPARSE_DEPRECATED omits it)."""

    dense: bool = False
    offset: bool = True


def _require(ins: Inputs, k: int, what: str) -> ir.Tensor:
    t = ins[k]
    if t is None:
        raise ins.error(f"input {k} ({what}) is missing")
    return t


def lsh_reason(attrs: LshAttrs, hashes: ir.Tensor, x: ir.Tensor, weight: ir.Tensor | None) -> str | None:
    """LSH_PROJECTION's rules: 2-D float32 seeds of at most 32 bits per function, an input of
    rank 1 or more, an optional 1-D float32 weight per input row."""
    if len(hashes.shape) != 2 or hashes.dtype != np.float32:
        return f"the hash seeds must be a 2-D float32 tensor, got {hashes.dtype} {list(hashes.shape)}"
    if hashes.shape[1] > MAX_BITS:
        return f"{hashes.shape[1]} bits per hash function exceed {MAX_BITS}"
    if len(x.shape) < 1:
        return "the input must have rank 1 or more"
    if weight is not None and (weight.dtype != np.float32 or tuple(weight.shape) != (x.shape[0],)):
        return (f"the weight must be a 1-D float32 tensor of {x.shape[0]} (the input's rows), got "
                f"{weight.dtype} {list(weight.shape)}")
    return None


@define("LSH_PROJECTION", attrs=LshAttrs)
def infer_lsh(attrs: LshAttrs, ins: Inputs) -> list[Meta]:
    hashes, x = _require(ins, 0, "hash seeds"), _require(ins, 1, "input")
    if not isinstance(attrs, LshAttrs):
        raise ins.unsupported("LSH_PROJECTION needs its projection type")
    reason = lsh_reason(attrs, hashes, x, ins[2])
    if reason:
        raise ins.error(reason)
    n, bits = hashes.shape
    return [Meta((n * bits,) if attrs.dense else (n,), np.dtype(np.int32))]


def hashtable_reason(lookups: ir.Tensor, keys: ir.Tensor, values: ir.Tensor, output: ir.Tensor) -> str | None:
    """HASHTABLE_LOOKUP's rules: 1-D int32 lookups and keys, one row of values per key, the
    output typed as the values."""
    for name, t in (("lookups", lookups), ("keys", keys)):
        if t.dtype != np.int32 or len(t.shape) != 1:
            return f"the {name} must be a 1-D int32 tensor, got {t.dtype} {list(t.shape)}"
    if len(values.shape) < 1 or values.shape[0] != keys.shape[0]:
        return f"the values {list(values.shape)} must have one row per key ({keys.shape[0]})"
    if output.dtype != values.dtype:
        return f"the output type {output.dtype} differs from the values' {values.dtype}"
    return None


@define("HASHTABLE_LOOKUP", attrs=NoAttrs)
def infer_hashtable(attrs: NoAttrs, ins: Inputs) -> list[Meta]:
    lookups, keys, values = (_require(ins, k, w) for k, w in enumerate(("lookups", "keys", "values")))
    if len(ins.outputs) != 2:
        raise ins.error("takes two outputs (the rows and the hits)")
    reason = hashtable_reason(lookups, keys, values, ins.outputs[0])
    if reason:
        raise ins.error(reason)
    return [Meta((lookups.shape[0],) + tuple(values.shape[1:]), np.dtype(values.dtype)),
            Meta((lookups.shape[0],), np.dtype(np.uint8))]
