"""HASHTABLE_LOOKUP and LSH_PROJECTION from the spec's text, against LiteRT's builtins of the same
names (TFLite's kernels and Android's reference compute the same), plus a hand-worked lookup.

LSH_PROJECTION hashes with FarmHash's Fingerprint64, written here from the published algorithm;
it is checked on keys of every length class the algorithm distinguishes (4-7, 8-16, 17-32, 33-64
bytes, one and several 64-byte rounds) through LiteRT's LSH_PROJECTION, whose bits are the signs
of the real Fingerprint64, and on the published value for the empty key."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py.fallback.farmhash import fingerprint64
from teflon_py.nnapi import NNAPIError, OperationType, ResultCode
from teflon_py.nnapi import OperandType as T
from teflon_py.tflite.options import LSHProjectionOptions
from teflon_py.tflite.schema import fb
from tests.harness import run_litert
from tests.nnapi.harness import DTYPES, Spec, check_vs, rng_array
from tests.nnapi.tflite_graphs import TfliteGraph

VALUE_TYPES = [T.TENSOR_FLOAT32, T.TENSOR_INT32, T.TENSOR_QUANT8_ASYMM]


def test_hashtable_lookup_by_hand(backend: str) -> None:
    """Keys [-3, 0, 5, 9]: 5 and 9 hit, 1 misses (a row of zeros, hit 0)."""
    s = Spec()
    lookups = s.input(T.TENSOR_INT32, [3])
    keys = s.const(T.TENSOR_INT32, [-3, 0, 5, 9])
    values = s.const(T.TENSOR_QUANT8_ASYMM, [[1, 2], [3, 4], [5, 6], [7, 8]], scale=0.5, zero_point=3)
    out = s.output(T.TENSOR_QUANT8_ASYMM, [3, 2], 0.5, 3)
    hits = s.output(T.TENSOR_QUANT8_ASYMM, [3], 1.0, 0)
    s.op(OperationType.HASHTABLE_LOOKUP, [lookups, keys, values], [out, hits])
    check_vs(s.model(), [np.array([9, 1, 5], np.int32)],
             [np.array([[7, 8], [0, 0], [5, 6]], np.uint8), np.array([1, 0, 1], np.uint8)], backend)


@pytest.mark.parametrize("t", VALUE_TYPES, ids=lambda t: t.name)
def test_hashtable_lookup(backend: str, t: T) -> None:
    rng = np.random.default_rng(VALUE_TYPES.index(t))
    keys = np.sort(rng.choice(np.arange(-50, 50), 9, replace=False)).astype(np.int32)
    keys[3:6] = keys[3]  # repeated keys: the row bsearch's bisection meets first
    values = rng_array(rng, t, (9, 2, 3))
    lookups = np.concatenate([rng.choice(keys, 4), [keys[3], -51, 51, 7, keys[0], keys[-1]]]).astype(np.int32)
    quant = (0.25, 7) if t == T.TENSOR_QUANT8_ASYMM else (0.0, 0)
    s = Spec()
    li = s.input(T.TENSOR_INT32, [10])
    vi = s.input(t, [9, 2, 3], *quant)
    out = s.output(t, [10, 2, 3], *quant)
    hits = s.output(T.TENSOR_QUANT8_ASYMM, [10], 1.0, 0)
    s.op(OperationType.HASHTABLE_LOOKUP, [li, s.const(T.TENSOR_INT32, keys), vi], [out, hits])
    g = TfliteGraph()
    q = (0.25, 7) if t == T.TENSOR_QUANT8_ASYMM else (None,)
    tl, tv = g.input([10], np.int32), g.input([9, 2, 3], DTYPES[t], *q)
    to, th = g.tensor([10, 2, 3], DTYPES[t], *q), g.tensor([10], np.uint8)
    g.op("HASHTABLE_LOOKUP", [tl, g.const(keys, np.int32), tv], [to, th])
    expected = run_litert(g.build(to, th), [lookups, values])
    assert expected[1].tolist()[4:] == [1, 0, 0, int(7 in keys), 1, 1]
    np.testing.assert_array_equal(expected[0][4], values[4])  # bsearch's first probe, not the first key
    check_vs(s.model(), [lookups, values], expected, backend)


def test_fingerprint64_of_the_empty_key() -> None:
    """farmhashna::Hash64 of zero bytes returns its constant k2."""
    assert int(fingerprint64(np.zeros((1, 0), np.uint8))[0]) == 0x9AE16A3B2F90404F


def litert_lsh_bits(seeds: np.ndarray, x: np.ndarray) -> np.ndarray:
    """LiteRT's DENSE LSH_PROJECTION of one input row: the sign of Fingerprint64(seed + row) per seed."""
    g = TfliteGraph()
    q = (1.0, 0) if x.dtype == np.uint8 else (None,)
    xi = g.input(list(x.shape), x.dtype, *q)
    y = g.tensor([seeds.size], np.int32)
    g.op("LSH_PROJECTION", [g.const(seeds, np.float32), xi], [y], LSHProjectionOptions(type=fb.LSHProjectionType.DENSE))
    return run_litert(g.build(y), [x])[0]


def test_fingerprint64_signs_against_litert() -> None:
    rng = np.random.default_rng(7)
    for row_bytes in (1, 3, 4, 8, 12, 13, 28, 29, 44, 60, 61, 100, 124, 125, 200, 300):
        seeds = rng.standard_normal((8, 16)).astype(np.float32)
        row = rng.integers(0, 256, (1, row_bytes)).astype(np.uint8)
        keys = np.concatenate([seeds.reshape(-1, 1).view(np.uint8), np.repeat(row, seeds.size, 0)], axis=1)
        ours = (fingerprint64(keys).view(np.int64) > 0).astype(np.int32)
        np.testing.assert_array_equal(ours, litert_lsh_bits(seeds, row), err_msg=f"keys of {4 + row_bytes} bytes")


#: NNAPI input type -> (input shape, seed type): keys of 24, 84, 7 and 40 bytes
LSH_INPUTS = {T.TENSOR_FLOAT32: ((3, 5), T.TENSOR_FLOAT32), T.TENSOR_INT32: ((4, 20), T.TENSOR_FLOAT16),
              T.TENSOR_QUANT8_ASYMM: ((5, 3), T.TENSOR_FLOAT32), T.TENSOR_FLOAT16: ((2, 6, 3), T.TENSOR_FLOAT16)}
LSH_KINDS = {1: "sparse_deprecated", 2: "dense", 3: "sparse"}


@pytest.mark.parametrize("weighted", [False, True], ids=["no_weight", "weight"])
@pytest.mark.parametrize("kind", list(LSH_KINDS), ids=list(LSH_KINDS.values()))
@pytest.mark.parametrize("t", list(LSH_INPUTS), ids=lambda t: t.name)
def test_lsh_projection(backend: str, t: T, kind: int, weighted: bool) -> None:
    shape, seed_type = LSH_INPUTS[t]
    functions, bits = 4, 6
    rng = np.random.default_rng(list(LSH_INPUTS).index(t) * 10 + kind)
    seeds = rng.standard_normal((functions, bits)).astype(DTYPES[seed_type])
    weight = rng.standard_normal(shape[0]).astype(DTYPES[seed_type])
    xs = rng_array(rng, t, shape)
    out_shape = [functions * bits] if kind == 2 else [functions]
    s = Spec()
    x = s.input(t, shape, *((1.0, 0) if t == T.TENSOR_QUANT8_ASYMM else (0.0, 0)))
    w = s.const(seed_type, weight) if weighted else s.omitted(seed_type, [shape[0]])
    y = s.output(T.TENSOR_INT32, out_shape)
    s.op(OperationType.LSH_PROJECTION, [s.const(seed_type, seeds), x, w, s.i32(kind)], [y])
    # the twin: TFLite's DENSE, or its SPARSE (which adds the offset NNAPI's SPARSE_DEPRECATED leaves off)
    g = TfliteGraph()
    xi = g.input(list(shape), xs.dtype, *((1.0, 0) if t == T.TENSOR_QUANT8_ASYMM else (None,)))
    ins = [g.const(seeds.astype(np.float32), np.float32), xi]
    if weighted:
        ins.append(g.const(weight.astype(np.float32), np.float32))
    yo = g.tensor(out_shape, np.int32)
    tkind = fb.LSHProjectionType.DENSE if kind == 2 else fb.LSHProjectionType.SPARSE
    g.op("LSH_PROJECTION", ins, [yo], LSHProjectionOptions(type=tkind))
    expected = run_litert(g.build(yo), [xs])[0]
    if kind == 1:
        expected = expected - np.arange(functions, dtype=np.int32) * (1 << bits)
    check_vs(s.model(), [xs], [expected], backend)


def bad(build) -> str:
    with pytest.raises(NNAPIError) as e:
        build()
    assert e.value.code == ResultCode.BAD_DATA
    return str(e.value)


def hashtable(keys, hits_grid=(1.0, 0), out_grid=(0.5, 3)) -> None:
    s = Spec()
    lookups = s.input(T.TENSOR_INT32, [2])
    values = s.const(T.TENSOR_QUANT8_ASYMM, np.zeros((len(keys), 2)), scale=0.5, zero_point=3)
    out = s.output(T.TENSOR_QUANT8_ASYMM, [2, 2], *out_grid)
    hits = s.output(T.TENSOR_QUANT8_ASYMM, [2], *hits_grid)
    s.op(OperationType.HASHTABLE_LOOKUP, [lookups, s.const(T.TENSOR_INT32, keys), values], [out, hits])
    s.model()


def test_hashtable_hits_grid() -> None:
    assert "operation 0 (HASHTABLE_LOOKUP): output 1: the hits take scale 1.0 and zero point 0" in bad(
        lambda: hashtable([1, 2], hits_grid=(0.5, 0)))


def test_hashtable_keys_must_be_sorted() -> None:
    assert "operation 0 (HASHTABLE_LOOKUP): input 1: the keys must be sorted in ascending order" in bad(
        lambda: hashtable([2, 1]))


def test_hashtable_output_keeps_the_values_grid() -> None:
    assert "output 0: scale and zero point (0.5, 4) must equal the values' (0.5, 3)" in bad(
        lambda: hashtable([1, 2], out_grid=(0.5, 4)))


def lsh(kind: int, seeds_shape=(2, 3), weight_rows: int | None = None) -> None:
    s = Spec()
    x = s.input(T.TENSOR_INT32, [3, 2])
    w = s.omitted(T.TENSOR_FLOAT32, [3]) if weight_rows is None else s.const(T.TENSOR_FLOAT32, np.ones(weight_rows))
    y = s.output(T.TENSOR_INT32, [0])
    s.op(OperationType.LSH_PROJECTION, [s.const(T.TENSOR_FLOAT32, np.ones(seeds_shape)), x, w, s.i32(kind)], [y])
    s.model()


def test_lsh_unknown_type() -> None:
    assert "operation 0 (LSH_PROJECTION): input 3: projection type 4 is not one of" in bad(lambda: lsh(4))


def test_lsh_sparse_signature_must_fit_32_bits() -> None:
    assert "input 0: a sparse projection needs bits + ceil(log2(functions)) <= 32, got 31 bits and 4" in bad(
        lambda: lsh(3, seeds_shape=(4, 31)))


def test_lsh_weight_per_input_row() -> None:
    assert "input 2: the weight must be 1-D with one value per input row (3)" in bad(lambda: lsh(2, weight_rows=2))




@pytest.mark.parametrize("kind", [fb.LSHProjectionType.SPARSE, fb.LSHProjectionType.DENSE], ids=["sparse", "dense"])
def test_tflite_lsh_projection_and_hashtable_lookup(kind: int) -> None:
    """The TFLite frontend reads both builtins into the same op-layer ops."""
    from tests.harness import run_teflon

    rng = np.random.default_rng(kind)
    count = 5 * 3 if kind == fb.LSHProjectionType.DENSE else 5
    g = TfliteGraph()
    x = g.input([3, 4], np.float32)
    lsh = g.tensor([count], np.int32)
    g.op("LSH_PROJECTION", [g.const(rng.standard_normal((5, 3)), np.float32), x,
                            g.const(rng.standard_normal(3), np.float32)], [lsh], LSHProjectionOptions(type=kind))
    rows, hits = g.tensor([count, 2], np.float32), g.tensor([count], np.uint8)
    keys = np.arange(0, 400, 3, dtype=np.int32)
    g.op("HASHTABLE_LOOKUP", [lsh, g.const(keys, np.int32), g.const(rng.standard_normal((keys.size, 2)), np.float32)],
         [rows, hits])
    model = g.build(lsh, rows, hits)
    xs = rng.standard_normal((3, 4)).astype(np.float32)
    expected = run_litert(model, [xs])
    actual = run_teflon(model, [xs])[0]
    for a, e in zip(actual, expected):
        np.testing.assert_array_equal(a, e)
