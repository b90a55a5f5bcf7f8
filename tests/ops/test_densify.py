"""DENSIFY against LiteRT's reference kernel, and the load-time folding of DENSIFY / float16 DEQUANTIZE.

Sparse constants are encoded here (independently of the kernel) in the layouts TFLite's
converter writes and a few more: CSR, CSC (permuted traversal), doubly compressed, 1-D, dense-only,
1x4 and 2x2 blocks, a permuted outer order with blocks, OHWI conv weights sparse in the input
channels; index arrays as int32, uint16 and uint8 vectors; float32, int8 and float16 values.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from teflon_py.fallback.constant_folding import fold_constants, is_folded
from teflon_py.tflite.builder import ModelBuilder
from teflon_py.tflite.reader import read_model
from tests.harness import assert_close, check_model, quantization, run_litert


def encode(
    dense: np.ndarray,
    order: tuple,
    block_map: tuple,
    block_sizes: tuple,
    formats: str,
    index_dtype: type = np.int32,
) -> tuple[np.ndarray, dict]:
    """(stored values, sparsity dict) of ``dense``; ``formats`` has one letter per level: D or S."""
    n = dense.ndim
    # split each blocked dimension into (outer, inner), then order the axes by the traversal order
    split_shape, axis_of = [], {}
    for d in range(n):
        if d in block_map:
            b = block_sizes[block_map.index(d)]
            axis_of[d], axis_of[n + block_map.index(d)] = len(split_shape), len(split_shape) + 1
            split_shape += [dense.shape[d] // b, b]
        else:
            axis_of[d] = len(split_shape)
            split_shape.append(dense.shape[d])
    tree = dense.reshape(split_shape).transpose([axis_of[k] for k in order])
    nodes, dims = [()], []
    for level, fmt in enumerate(formats):
        size = tree.shape[level]
        if fmt == "D":
            nodes = [p + (j,) for p in nodes for j in range(size)]
            dims.append(
                {"format": "DENSE", "dense_size": size, "array_segments": None, "array_indices": None}
            )
            continue
        segments, indices, children = [0], [], []
        for p in nodes:
            kept = [j for j in range(size) if np.any(tree[p + (j,)] != 0)]
            indices += kept
            children += [p + (j,) for j in kept]
            segments.append(len(indices))
        nodes = children
        dims.append(
            {
                "format": "SPARSE_CSR",
                "dense_size": 0,
                "array_segments": np.array(segments, index_dtype),
                "array_indices": np.array(indices, index_dtype),
            }
        )
    values = np.array([tree[p] for p in nodes], dense.dtype)
    return values, {"traversal_order": order, "block_map": block_map, "dim_metadata": dims}


#: name -> (dense shape, traversal order, block map, block sizes, level formats, index dtype)
LAYOUTS = {
    "csr": ((6, 8), (0, 1), (), (), "DS", np.int32),
    "csc": ((5, 7), (1, 0), (), (), "DS", np.int32),
    "dcsr": ((6, 5), (0, 1), (), (), "SS", np.uint16),
    "vector": ((12,), (0,), (), (), "S", np.uint8),
    "dense_only": ((3, 4), (0, 1), (), (), "DD", np.int32),
    "block_1x4": ((4, 16), (0, 1, 2), (1,), (4,), "DSD", np.uint8),
    "block_2x2": ((6, 8), (0, 1, 2, 3), (0, 1), (2, 2), "DSDD", np.int32),
    "block_col_major": ((4, 6), (1, 0, 2), (0,), (2,), "DSD", np.int32),
    "conv_ohwi": ((4, 3, 3, 5), (0, 1, 2, 3), (), (), "DDDS", np.uint16),
}
DTYPES = [np.float32, np.int8, np.float16]


def sparse_dense(shape: tuple, dtype: type, seed: int) -> np.ndarray:
    """Random values, ~60% zeros, with whole zero rows (and so zero blocks) along the first axis."""
    rng = np.random.default_rng(seed)
    if dtype == np.int8:
        dense = rng.integers(-128, 128, shape).astype(np.int8)
    else:
        dense = rng.standard_normal(shape).astype(dtype)
    dense[rng.random(shape) < 0.6] = 0
    dense[1] = 0
    return dense


def densify_model(values: np.ndarray, shape: tuple, sparsity: dict, dequantize: bool = False) -> bytes:
    mb = ModelBuilder()
    g = mb.main
    q = quantization(0.02, -3) if values.dtype == np.int8 else None
    w = g.add_constant("sparse", values, shape=shape, sparsity=sparsity, quantization=q)
    out = g.add_tensor("dense", shape, values.dtype, quantization=q)
    g.add_op("DENSIFY", [w], [out])
    if dequantize:
        f32 = g.add_tensor("dequantized", shape, np.float32)
        g.add_op("DEQUANTIZE", [out], [f32])
        out = f32
    g.mark_outputs(out)
    return mb.build()


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_densify(layout: str, dtype: type, backend: str) -> None:
    shape, order, block_map, block_sizes, formats, index_dtype = LAYOUTS[layout]
    dense = sparse_dense(shape, dtype, list(LAYOUTS).index(layout))
    values, sparsity = encode(dense, order, block_map, block_sizes, formats, index_dtype)
    model = densify_model(values, shape, sparsity)
    np.testing.assert_array_equal(run_litert(model, [])[0], dense)  # the encoder is right
    check_model(model, backend, float_tol=0.0)


@pytest.mark.parametrize("layout", ["csr", "block_1x4"])
def test_densify_float16_then_dequantize(layout: str, backend: str) -> None:
    """The float16-weights pattern: DENSIFY, then DEQUANTIZE to float32."""
    shape, order, block_map, block_sizes, formats, index_dtype = LAYOUTS[layout]
    values, sparsity = encode(
        sparse_dense(shape, np.float16, 3), order, block_map, block_sizes, formats, index_dtype
    )
    check_model(densify_model(values, shape, sparsity, dequantize=True), backend, float_tol=0.0)


@pytest.mark.parametrize("layout", ["csr", "block_1x4"])
def test_densify_int8_then_dequantize(layout: str, backend: str) -> None:
    """int8 sparse weights read by a DEQUANTIZE: the folded DENSIFY is claimed beside it."""
    shape, order, block_map, block_sizes, formats, index_dtype = LAYOUTS[layout]
    values, sparsity = encode(
        sparse_dense(shape, np.int8, 5), order, block_map, block_sizes, formats, index_dtype
    )
    check_model(densify_model(values, shape, sparsity, dequantize=True), backend, float_tol=0.0)


def test_fold_constants_densify_and_dequantize() -> None:
    """Both ops fold into one constant: exactly LiteRT's output; both nodes stay, marked folded."""
    shape, order, block_map, block_sizes, formats, index_dtype = LAYOUTS["block_2x2"]
    values, sparsity = encode(
        sparse_dense(shape, np.float16, 4), order, block_map, block_sizes, formats, index_dtype
    )
    model = densify_model(values, shape, sparsity, dequantize=True)
    graph = read_model(model).main
    folded = fold_constants(graph)
    assert len(folded.operations) == 2 and all(is_folded(folded, op) for op in folded.operations)
    assert not any(is_folded(graph, op) for op in graph.operations)  # the input graph is untouched
    out = folded.tensors[folded.outputs[0]]
    assert out.is_constant and out.dtype == np.float32
    assert_close(out.data, run_litert(model, [])[0], 0.0)


def test_fold_constants_keeps_node_numbers() -> None:
    """A float16 weight's DEQUANTIZE folds; the int8 DEQUANTIZE and the ADDs stay; nodes keep their numbers."""
    rng = np.random.default_rng(1)
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (2, 3), np.float32)
    w16 = g.add_constant("w16", rng.standard_normal((2, 3)).astype(np.float16))
    w32 = g.add_tensor("w32", (2, 3), np.float32)
    g.add_op("DEQUANTIZE", [w16], [w32])
    q8 = g.add_constant(
        "q8", rng.integers(-128, 128, (2, 3)).astype(np.int8), quantization=quantization(0.1, 2)
    )
    f8 = g.add_tensor("f8", (2, 3), np.float32)
    g.add_op("DEQUANTIZE", [q8], [f8])
    mid = g.add_tensor("mid", (2, 3), np.float32)
    g.add_op("ADD", [x, w32], [mid])
    out = g.add_tensor("out", (2, 3), np.float32)
    g.add_op("ADD", [mid, f8], [out])
    g.mark_outputs(out)
    graph = read_model(mb.build()).main
    folded = fold_constants(graph)
    assert [op.index for op in folded.operations] == [0, 1, 2, 3]
    assert [is_folded(folded, op) for op in folded.operations] == [True, False, False, False]
    np.testing.assert_array_equal(folded.tensors[w32].data, graph.tensors[w16].data.astype(np.float32))
    assert not graph.tensors[w32].is_constant
    assert fold_constants(folded) is folded  # nothing left to fold


def test_encoder_layouts_round_trip() -> None:
    """Every layout above reads back through the reader with its sparsity intact."""
    for layout, dtype in itertools.product(["dcsr", "block_2x2"], DTYPES):
        shape, order, block_map, block_sizes, formats, index_dtype = LAYOUTS[layout]
        values, sparsity = encode(
            sparse_dense(shape, dtype, 0), order, block_map, block_sizes, formats, index_dtype
        )
        t = read_model(densify_model(values, shape, sparsity)).main.tensors[0]
        assert t.shape == shape and t.sparsity["traversal_order"] == order
        np.testing.assert_array_equal(t.data, values)


def test_interpreter_folds_float16_weights_at_load() -> None:
    """The Interpreter folds a float16 weight's DEQUANTIZE once: that node runs no kernel at invoke."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (2, 3), np.float32)
    w16 = g.add_constant("w16", np.arange(6, dtype=np.float16).reshape(2, 3) / 4)
    w32 = g.add_tensor("w32", (2, 3), np.float32)
    g.add_op("DEQUANTIZE", [w16], [w32])
    out = g.add_tensor("out", (2, 3), np.float32)
    g.add_op("ADD", [x, w32], [out])
    g.mark_outputs(out)
    it = check_model(mb.build(), "numpy")
    assert it.placements()[0].reason == "folded into a constant at load time"
    assert len(it._state(0).executor.steps) == 1  # only the ADD


def test_float16_constants_kept_whole_on_opencl_with_every_tensor_preserved() -> None:
    """With every tensor preserved (``teflon-py check``), a partition's outputs include the folded
    float16 DENSIFY result: the OpenCL partition hands back its bits (it once keyed its copy kernel
    by dtype name and had none for float16, then converted the constant to float32)."""
    pytest.importorskip("pyopencl")
    import teflon_py

    shape, order, block_map, block_sizes, formats, index_dtype = LAYOUTS["dcsr"]
    dense = sparse_dense(shape, np.float16, 1)
    values, sparsity = encode(dense, order, block_map, block_sizes, formats, index_dtype)
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", shape, np.float32)
    w = g.add_constant("sparse", values, shape=shape, sparsity=sparsity)
    w16 = g.add_tensor("dense", shape, np.float16)
    g.add_op("DENSIFY", [w], [w16])
    w32 = g.add_tensor("dequantized", shape, np.float32)
    g.add_op("DEQUANTIZE", [w16], [w32])
    out = g.add_tensor("out", shape, np.float32)
    g.add_op("ADD", [x, w32], [out])
    g.mark_outputs(out)
    it = teflon_py.Interpreter(model_content=mb.build(), experimental_delegates=[teflon_py.load_delegate("opencl")],
                               experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    xv = np.ones(shape, np.float32)
    it.set_tensor(it.get_input_details()[0]["index"], xv)
    it.invoke()
    np.testing.assert_array_equal(it.get_tensor(w16), dense)
    np.testing.assert_array_equal(it.get_tensor(out), xv + dense.astype(np.float32))
