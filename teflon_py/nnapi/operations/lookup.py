"""HASHTABLE_LOOKUP and LSH_PROJECTION (op layer: the ops of the same names, see
``teflon_py.ops.lookup``; TFLite's builtins compute the same).

LSH_PROJECTION hashes the input's bytes as stored, so a float16 input reaches the op as float16
(its seeds and weight are widened to float32 exactly, as Android converts them). Its type
scalar: 1 SPARSE_DEPRECATED (no offset), 2 DENSE, 3 SPARSE (each signature offset by
``i << bits``). The spec makes the weight optional for every type; Android's reference refuses
a weight with SPARSE and its absence with DENSE, which the spec does not say, so both are taken.
"""
from __future__ import annotations

import math

import numpy as np

from teflon_py import ir, ops
from teflon_py.nnapi.enums import OperandType as T
from teflon_py.nnapi.enums import OperationType as Op
from teflon_py.nnapi.lowering import Call
from teflon_py.nnapi.registry import Sig, lowering, signature
from teflon_py.ops.lookup import MAX_BITS, LshAttrs

HASHTABLE_TYPES = {T.TENSOR_FLOAT32: 1, T.TENSOR_INT32: 1, T.TENSOR_QUANT8_ASYMM: 1}
LSH_SEED_TYPES = {T.TENSOR_FLOAT32: 1, T.TENSOR_FLOAT16: 3}
LSH_INPUT_TYPES = {T.TENSOR_FLOAT32: 1, T.TENSOR_INT32: 1, T.TENSOR_QUANT8_ASYMM: 1, T.TENSOR_FLOAT16: 3}
SPARSE_DEPRECATED, DENSE, SPARSE = 1, 2, 3
#: the projection type scalar -> (attributes, feature level)
LSH_KINDS = {SPARSE_DEPRECATED: (LshAttrs(dense=False, offset=False), 1), DENSE: (LshAttrs(dense=True), 1),
             SPARSE: (LshAttrs(dense=False, offset=True), 3)}


@signature(Op.HASHTABLE_LOOKUP)
def hashtable_signature(s: Sig) -> None:
    t = s.input_type(2)
    s.supported(t, HASHTABLE_TYPES, "input 2")
    s.expect([T.TENSOR_INT32, T.TENSOR_INT32, t], [t, T.TENSOR_QUANT8_ASYMM])


@lowering(Op.HASHTABLE_LOOKUP)
def lower_hashtable(c: Call) -> None:
    for k, what in ((0, "lookups"), (1, "keys")):
        if c.rank(k) != 1:
            raise c.error(f"the {what} must be 1-D, got shape {list(c.shape(k))}", k)
    values = c.shape(2)
    if len(values) < 1 or values[0] != c.shape(1)[0]:
        raise c.error(f"the values {list(values)} must have one row per key ({c.shape(1)[0]})", 2)
    keys = c.constant(1)
    if keys is not None and np.any(np.diff(keys.astype(np.int64)) < 0):
        raise c.error("the keys must be sorted in ascending order", 1)
    if c.type(2) == T.TENSOR_QUANT8_ASYMM:
        v, y = c.operand(2), c.out_operand(0)
        if np.float32(v.scale) != np.float32(y.scale) or v.zero_point != y.zero_point:
            raise c.error(f"scale and zero point ({y.scale}, {y.zero_point}) must equal the values' "
                          f"({v.scale}, {v.zero_point})", 0, "output")
    hits = c.out_operand(1)
    if hits.scale != 1.0 or hits.zero_point != 0:
        raise c.error(f"the hits take scale 1.0 and zero point 0, got ({hits.scale}, {hits.zero_point})", 1,
                      "output")
    c.emit("HASHTABLE_LOOKUP", ops.NoAttrs(), [c.input(0), c.input(1), c.input(2)], [c.output(0), c.output(1)])


@signature(Op.LSH_PROJECTION)
def lsh_signature(s: Sig) -> None:
    seeds, x = s.input_type(0), s.input_type(1)
    s.supported(seeds, LSH_SEED_TYPES, "input 0")
    s.supported(x, LSH_INPUT_TYPES, "input 1")
    s.expect([seeds, x, seeds, T.INT32], [T.TENSOR_INT32])


@lowering(Op.LSH_PROJECTION)
def lower_lsh(c: Call) -> None:
    kind = c.scalar(3)
    if kind not in LSH_KINDS:
        raise c.error(f"projection type {kind} is not one of 1 (SPARSE_DEPRECATED), 2 (DENSE), 3 (SPARSE)", 3)
    attrs = LSH_KINDS[kind][0]
    seeds = c.shape(0)
    if len(seeds) != 2:
        raise c.error(f"the hash seeds must be 2-D, got shape {list(seeds)}", 0)
    functions, bits = seeds
    if bits > MAX_BITS:
        raise c.error(f"{bits} bits per hash function exceed {MAX_BITS}", 0)
    if not attrs.dense and bits + math.ceil(math.log2(max(functions, 1))) > MAX_BITS:
        raise c.error(f"a sparse projection needs bits + ceil(log2(functions)) <= 32, got {bits} bits and "
                      f"{functions} functions", 0)
    rows = c.shape(1)
    if len(rows) < 1:
        raise c.error("the input must have rank 1 or more", 1)
    weight = c.optional_input(2)
    if weight != ir.NO_TENSOR and (c.rank(2) != 1 or c.shape(2)[0] != rows[0]):
        raise c.error(f"the weight must be 1-D with one value per input row ({rows[0]}), got shape "
                      f"{list(c.shape(2))}", 2)
    raw_input = c.b.operand_tensor(c.inputs[1])  # the bytes as stored: float16 stays float16
    c.emit("LSH_PROJECTION", attrs, [c.input(0), raw_input, weight], [c.output(0)])
