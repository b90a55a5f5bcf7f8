"""The OpenCL delegate's int8 / uint8 path: what it claims, small quantized graphs, and whole int8
MobileNets in one partition, bit-exact with LiteRT's reference kernels.

Per-op numerics run through tests/ops (every quantized op test also runs on "opencl"); here:
the registry covers the issue's ops, the convolution's machine-dependent inner loop (VNNI, portable,
int16 weights) compiles as the device's caps say and each gives LiteRT's integers, folds and constant operands work in quantized graphs, and the zoo's
int8 models with int8, uint8 and float32 edges run as a single partition.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import teflon_py
from teflon_py import ir, partitioner, zoo
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import ModelBuilder, quantization
from teflon_py.tflite.reader import read_model
from tests.harness import check_model

pytest.importorskip("pyopencl")

#: ops the int8 / uint8 path must lower (the issue's list); QUANTIZE also from float32
QUANTIZED_OPS = [
    "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "ADD", "SUB", "MUL", "AVERAGE_POOL_2D", "MAX_POOL_2D",
    "MEAN", "CONCATENATION", "RESHAPE", "SQUEEZE", "PAD", "QUANTIZE", "DEQUANTIZE", "LOGISTIC", "HARD_SWISH",
    "SOFTMAX", "RELU", "RELU6",
]
SAME, VALID = ir.Padding.SAME, ir.Padding.VALID


@pytest.mark.parametrize("kind", ["int8", "uint8"])
def test_registry_claims_every_quantized_op(kind: str) -> None:
    from teflon_py.opencl.lowerings import supported_ops

    missing = [op for op in QUANTIZED_OPS if op not in supported_ops(kind)]
    assert not missing, f"not lowered for {kind}: {missing}"
    assert "QUANTIZE" in supported_ops("float32")


def test_no_kernel_needs_fp64() -> None:
    """No kernel source uses double precision (most mobile GPUs and rusticl have no cl_khr_fp64):
    LiteRT's double-precision rules are computed in integers or correctly rounded float32."""
    import importlib.resources
    import re

    files = [f for f in importlib.resources.files("teflon_py.cl_kernels").iterdir() if f.name.endswith(".cl")]
    assert len(files) > 10
    for f in files:
        code = re.sub(r"//[^\n]*|/\*.*?\*/", "", f.read_text(encoding="utf-8"), flags=re.DOTALL)
        assert not re.search(r"\bdouble\d*\b|cl_khr_fp64", code), f.name


# -- small quantized graphs ------------------------------------------------------------------------

def _conv(g, x: int, name: str, oc: int, k: int, rng: np.random.Generator, out_q: ir.Quantization,
          stride: int = 1, padding: ir.Padding = SAME, act: ir.Activation = ir.Activation.NONE,
          groups: int = 1) -> int:
    """An int8 per-channel CONV_2D with random weights and int32 bias."""
    xt = g.graph.tensors[x]
    n, h, w, c = xt.shape
    ws = rng.uniform(0.002, 0.006, oc).astype(np.float32)
    wt = g.add_constant(f"{name}/w", rng.integers(-127, 128, (oc, k, k, c // groups)).astype(np.int8),
                        quantization=quantization(ws, 0, 0))
    bt = g.add_constant(f"{name}/b", rng.integers(-3000, 3000, oc).astype(np.int32),
                        quantization=quantization(np.float32(xt.scale) * ws, 0, 0))
    oh = -(-h // stride) if padding == SAME else (h - k) // stride + 1
    ow = -(-w // stride) if padding == SAME else (w - k) // stride + 1
    y = g.add_tensor(name, (n, oh, ow, oc), np.int8, quantization=out_q)
    g.add_op("CONV_2D", [x, wt, bt], [y], O.Conv2DOptions(padding=padding, stride_w=stride, stride_h=stride,
                                                          fused_activation_function=act))
    return y


def _two_convs() -> bytes:
    """Two int8 convolutions: 7 input channels (a tail quad), stride 2, then 1x1 with RELU6."""
    rng = np.random.default_rng(3)
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 9, 9, 7), np.int8, quantization=quantization(0.05, -4))
    y = _conv(g, x, "c1", 20, 3, rng, quantization(0.4, 3), stride=2)
    y = _conv(g, y, "c2", 8, 1, rng, quantization(0.3, -2), act=ir.Activation.RELU6)
    g.mark_outputs(y)
    return mb.build()


def _one_conv(shape: tuple[int, ...], dtype: type, qx: tuple[float, int], w: np.ndarray, qw: tuple[float, int],
              bias: np.ndarray, qy: tuple[float, int]) -> bytes:
    """One 3x3 SAME CONV_2D of ``dtype`` (input ``shape``, weights ``w``), quantized as given."""
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", shape, dtype, quantization=quantization(*qx))
    wt = g.add_constant("w", w, quantization=quantization(*qw))
    b = g.add_constant("b", np.asarray(bias, np.int32), quantization=quantization(qx[0] * qw[0], 0))
    y = g.add_tensor("y", (*shape[:3], w.shape[0]), dtype, quantization=quantization(*qy))
    g.add_op("CONV_2D", [x, wt, b], [y], O.Conv2DOptions(padding=SAME, stride_w=1, stride_h=1))
    g.mark_outputs(y)
    return mb.build()


def _device_caps():
    from teflon_py.opencl.caps import Caps
    from teflon_py.opencl.runtime import device as dev

    return Caps.of(dev.get_context().device)


def _compiled_variants(it: teflon_py.Interpreter) -> list:
    (step,) = [s for s in it._runnable(0).steps if getattr(s, "compiled", None) is not None]
    return step.compiled.stats["variants"]


def test_conv_compiles_the_variant_the_caps_say(device) -> None:
    """The int8 convolution's inner loop is machine-dependent: the partition reports the one that
    compiled, and it is the one the device's caps promise (VNNI where the compiler targets it, else
    AVX2's vpmaddwd)."""
    it = check_model(_two_convs(), "opencl")
    caps = _device_caps()
    expected = ("vnni" if caps.vnni else "avx2 madd" if caps.avx2 else
                "portable" if caps.clang_vectors else "standard")
    assert _compiled_variants(it) == [("qconv", expected)]


def test_vnni_conv_path_matches(device) -> None:
    """AVX-512 VNNI's vpdpbusd path, bit-exact with LiteRT, where the device compiles it."""
    if not _device_caps().vnni:
        pytest.skip(f"{_device_caps().name}: its compiler does not target AVX-512 VNNI, so the vpdpbusd "
                    "path cannot compile here (the portable path is tested on its own)")
    it = check_model(_two_convs(), "opencl")
    assert _compiled_variants(it) == [("qconv", "vnni")]


def test_avx2_madd_conv_path_matches(device) -> None:
    """AVX2's vpmaddwd path (a CPU without VNNI), bit-exact with LiteRT, where the device compiles it;
    weights at the int8 extremes and inputs over all 256 codes exercise the pair sums' range."""
    caps = _device_caps()
    if caps.vnni or not caps.avx2:
        pytest.skip(f"{caps.name}: compiles the {'VNNI' if caps.vnni else 'non-AVX2'} path instead")
    it = check_model(_two_convs(), "opencl")
    assert _compiled_variants(it) == [("qconv", "avx2 madd")]
    rng = np.random.default_rng(11)
    model = _one_conv((1, 16, 16, 13), np.int8, (0.02, -128), rng.choice(np.array([-128, -127, 127, 0, 1], np.int8),
                                                                        (19, 3, 3, 13)),
                      (0.003, 0), rng.integers(-9000, 9000, 19), (0.9, 5))
    inputs = [np.arange(16 * 16 * 13).reshape(1, 16, 16, 13).astype(np.uint8).view(np.int8)]
    it = check_model(model, "opencl", inputs=inputs)
    assert _compiled_variants(it) == [("qconv", "avx2 madd")]


@pytest.mark.parametrize("table", ["avx512", "avx2", "narrow"])
def test_conv_tiles_of_every_simd_width_match(device, monkeypatch: pytest.MonkeyPatch, table: str) -> None:
    """Each SIMD width's int8 convolution tiles (``cpu_tiles``: 1-4 channel vectors, 4-14 pixels)
    give LiteRT's integers; the partition reports the table it was built with."""
    from teflon_py.opencl.kernels import cpu_tiles

    monkeypatch.setenv(cpu_tiles.ENV, table)
    it = check_model(_two_convs(), "opencl")
    (step,) = [s for s in it._runnable(0).steps if getattr(s, "compiled", None) is not None]
    assert step.compiled.stats["tiles"] == table


def test_avx2_madd_conv_with_common_weight_layout_matches(device, monkeypatch: pytest.MonkeyPatch) -> None:
    """The vpmaddwd loop also takes weights in the common quad layout (a host that does not know
    the path): it gathers the pairs by shuffles, same integers."""
    from teflon_py.opencl.kernels import qspecs as qkernels

    if not _device_caps().avx2 or _device_caps().vnni:
        pytest.skip(f"{_device_caps().name}: does not compile the AVX2 vpmaddwd loop")
    real = qkernels.qconv_spec
    layouts = []

    def common_layout(*args: object, **kw: object):
        spec = real(*args, **{**kw, "madd": False})
        layouts.append("QCONV_MADD_LAYOUT" in spec.defines)
        return spec

    monkeypatch.setattr(qkernels, "qconv_spec", common_layout)
    it = check_model(_two_convs(), "opencl")
    assert _compiled_variants(it) == [("qconv", "avx2 madd")] and layouts == [False, False]


def test_portable_conv_path_matches(device, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shuffle-based path of devices without VNNI: same integers (forced on every device), and
    the partition reports the portable loop compiled, not VNNI (the standard OpenCL C one on a
    device without clang's vector extensions)."""
    from teflon_py.opencl.kernels import qspecs as qkernels

    real = qkernels.qconv_spec

    def portable(*args: object, **kw: object):
        spec = real(*args, **{**kw, "madd": False})  # weights in the common layout
        return dataclasses.replace(spec, defines={**spec.defines, "QCONV_PORTABLE": True})

    monkeypatch.setattr(qkernels, "qconv_spec", portable)
    it = check_model(_two_convs(), "opencl")
    assert _compiled_variants(it) == [("qconv", "portable" if _device_caps().clang_vectors else "standard")]


def test_int16_weight_conv_reports_its_loop(device) -> None:
    """uint8 weights whose zero point leaves them outside int8 take the int16-weight loop."""
    rng = np.random.default_rng(4)
    model = _one_conv((1, 5, 5, 8), np.uint8, (0.05, 120), rng.integers(0, 256, (6, 3, 3, 8)).astype(np.uint8),
                      (0.004, 3), rng.integers(-2000, 2000, 6), (0.3, 100))
    it = check_model(model, "opencl")
    assert _compiled_variants(it) == [("qconv", "int16 weights")]


def test_int8_graph_with_folds_and_constant_operands(device) -> None:
    """PAD (zero point fill) folded into a conv, a standalone requantizing RELU, ADD with a constant
    operand, MEAN, FULLY_CONNECTED, SOFTMAX and DEQUANTIZE of the result: one partition, bit-exact."""
    rng = np.random.default_rng(5)
    mb = ModelBuilder()
    g = mb.main
    xq = quantization(0.04, 7)
    x = g.add_input("x", (1, 8, 8, 6), np.int8, quantization=xq)
    pads = g.add_constant("pads", np.array([[0, 0], [1, 1], [2, 0], [0, 0]], np.int32))
    p = g.add_tensor("padded", (1, 10, 10, 6), np.int8, quantization=xq)
    g.add_op("PAD", [x, pads], [p])
    c = _conv(g, p, "conv", 16, 3, rng, quantization(0.3, -10), padding=VALID)
    r = g.add_tensor("relu", (1, 8, 8, 16), np.int8, quantization=quantization(0.2, -128))
    g.add_op("RELU", [c], [r])
    k = g.add_constant("k", rng.integers(-128, 128, (16,)).astype(np.int8),
                       quantization=quantization(0.05, 2))
    a = g.add_tensor("add", (1, 8, 8, 16), np.int8, quantization=quantization(0.25, -100))
    g.add_op("ADD", [r, k], [a], O.AddOptions())
    axes = g.add_constant("axes", np.array([1, 2], np.int32))
    m = g.add_tensor("mean", (1, 16), np.int8, quantization=quantization(0.1, -60))
    g.add_op("MEAN", [a, axes], [m], O.ReducerOptions(keep_dims=False))
    ws = rng.uniform(0.005, 0.01, 10).astype(np.float32)
    w = g.add_constant("fc/w", rng.integers(-127, 128, (10, 16)).astype(np.int8),
                       quantization=quantization(ws, 0, 0))
    b = g.add_constant("fc/b", rng.integers(-500, 500, 10).astype(np.int32),
                       quantization=quantization(np.float32(0.1) * ws, 0, 0))
    f = g.add_tensor("fc", (1, 10), np.int8, quantization=quantization(0.08, 3))
    g.add_op("FULLY_CONNECTED", [m, w, b], [f], O.FullyConnectedOptions())
    s = g.add_tensor("softmax", (1, 10), np.int8, quantization=quantization(1 / 256, -128))
    g.add_op("SOFTMAX", [f], [s], O.SoftmaxOptions(beta=1.0))
    out = g.add_tensor("probabilities", (1, 10), np.float32)
    g.add_op("DEQUANTIZE", [s], [out])
    g.mark_outputs(out)
    model = mb.build()
    it = check_model(model, "opencl")
    assert placed(it) == [{"index": 0, "backend": "opencl", "nodes": list(range(8))}]
    graph = read_model(model).main
    delegate = teflon_py.load_delegate("opencl")
    (part,) = partitioner.partition(graph, {op.index for op in graph.operations if delegate.check(graph, op)})
    assert delegate.compile(graph, part).stats["folded"] == [0]  # the PAD


@pytest.mark.parametrize("dtype", [np.int8, np.uint8], ids=["i8", "u8"])
def test_quantize_from_float_rounds_halves_away(device, dtype: type) -> None:
    """Exact ties of x / scale (a power-of-two scale) round away from zero, as TfLiteRound."""
    zp = 0 if dtype == np.int8 else 128
    x = (np.arange(-300, 300, dtype=np.float32) + 0.5) * np.float32(0.125)
    mb = ModelBuilder()
    g = mb.main
    xi = g.add_input("x", (600,), np.float32)
    y = g.add_tensor("y", (600,), dtype, quantization=quantization(0.125, zp))
    g.add_op("QUANTIZE", [xi], [y])
    g.mark_outputs(y)
    check_model(mb.build(), "opencl", inputs=[x])


# -- whole networks ----------------------------------------------------------------------------------

@pytest.mark.model
@pytest.mark.parametrize("io", ["int8", "uint8", "float32"])
@pytest.mark.parametrize("name", ["mobilenet_v1", "mobilenet_v2"])
def test_int8_mobilenet_is_one_opencl_partition(device, name: str, io: str) -> None:
    model = zoo.build(name, dtype="int8", io=io)
    rng = np.random.default_rng(0)
    shape = (1, 96, 96, 3)
    if io == "float32":
        x = rng.uniform(-1.0, 1.0, shape).astype(np.float32)
    else:
        info = np.iinfo(np.int8 if io == "int8" else np.uint8)
        x = rng.integers(info.min, info.max, shape, endpoint=True).astype(info.dtype)
    it = check_model(model, "opencl", inputs=[x])
    placements = it.placements()
    assert placed(it) == [{"index": 0, "backend": "opencl", "nodes": list(range(len(placements)))}]


def test_concatenation_requantize_table(device) -> None:
    """The table (and ``qlut`` kernel) ops_shape can use for uint8 CONCATENATION inputs on another grid
    gives the fallback's ConcatenationWithScaling values for every code."""
    import pyopencl as cl

    from teflon_py.fallback.registry import KERNELS, Node
    from teflon_py.opencl.lowerings.qelementwise import concat_requantize_table, lut_spec
    from teflon_py.opencl.runtime import device as dev
    from teflon_py.opencl.runtime import programs

    mb = ModelBuilder()
    g = mb.main
    a = g.add_input("a", (256,), np.uint8, quantization=quantization(0.013, 255))
    b = g.add_input("b", (256,), np.uint8, quantization=quantization(0.03, 90))
    y = g.add_tensor("y", (512,), np.uint8, quantization=quantization(0.03, 90))
    g.add_op("CONCATENATION", [a, b], [y], O.ConcatenationOptions(axis=0))
    graph = read_model(mb.build()).main
    op = graph.operations[0]
    assert concat_requantize_table(graph, op, 1) is None
    table = concat_requantize_table(graph, op, 0)
    codes = np.arange(256, dtype=np.uint8)
    want = KERNELS["CONCATENATION"](Node.of(graph, op), [codes, codes])[:256]
    dc = dev.get_context()
    mf = cl.mem_flags
    xb = cl.Buffer(dc.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=codes)
    yb = cl.Buffer(dc.context, mf.WRITE_ONLY, 256)
    spec = lut_spec(256, np.dtype(np.uint8), table)
    launch = spec.launch(dc, programs.program_cache(dc), {"input": xb, "output": yb})
    queue = dc.queue()
    cl.enqueue_nd_range_kernel(queue, launch.kernel, launch.global_size, launch.local_size)
    got = np.empty(256, np.uint8)
    cl.enqueue_copy(queue, got, yb)
    queue.finish()
    np.testing.assert_array_equal(got, want)


def test_uint8_concatenation_of_rescaled_branches_is_one_partition(device) -> None:
    """uint8 CONCATENATION of branches on four grids (the output's: a raw copy; two others through
    ``qlut`` into a scratch buffer; a constant requantized on the host), then RELU: one OpenCL
    partition, bit-exact with LiteRT's ConcatenationWithScaling."""
    rng = np.random.default_rng(11)
    mb = ModelBuilder()
    g = mb.main
    yq = quantization(0.06, 128)
    x = g.add_input("x", (1, 6, 5, 4), np.uint8, quantization=quantization(0.05, 120))
    a = g.add_tensor("add", (1, 6, 5, 4), np.uint8, quantization=yq)
    g.add_op("ADD", [x, x], [a], O.AddOptions())
    s = g.add_tensor("logistic", (1, 6, 5, 4), np.uint8, quantization=quantization(1 / 256, 0))
    g.add_op("LOGISTIC", [x], [s])
    k = g.add_constant("k", rng.integers(0, 256, (1, 6, 5, 3)).astype(np.uint8),
                       quantization=quantization(0.02, 50))
    c = g.add_tensor("concat", (1, 6, 5, 15), np.uint8, quantization=yq)
    g.add_op("CONCATENATION", [a, s, x, k], [c], O.ConcatenationOptions(axis=3))
    r = g.add_tensor("relu", (1, 6, 5, 15), np.uint8, quantization=quantization(0.05, 0))
    g.add_op("RELU", [c], [r])
    g.mark_outputs(r)
    it = check_model(mb.build(), "opencl")
    assert placed(it) == [{"index": 0, "backend": "opencl", "nodes": [0, 1, 2, 3]}]


@pytest.mark.parametrize("axis", [0, 1])
def test_uint8_concatenation_rescale_along_outer_and_inner_axes(device, axis: int) -> None:
    """Every uint8 code of an input on another grid, concatenated along the outer or an inner
    axis with an input on the output's grid: fully delegated, bit-exact."""
    mb = ModelBuilder()
    g = mb.main
    yq = quantization(0.031, 77)
    a = g.add_input("a", (16, 16), np.uint8, quantization=quantization(0.0123, 201))
    b = g.add_input("b", (16, 16), np.uint8, quantization=yq)
    y = g.add_tensor("y", (32, 16) if axis == 0 else (16, 32), np.uint8, quantization=yq)
    g.add_op("CONCATENATION", [a, b], [y], O.ConcatenationOptions(axis=axis))
    g.mark_outputs(y)
    codes = np.arange(256, dtype=np.uint8).reshape(16, 16)
    it = check_model(mb.build(), "opencl", inputs=[codes, codes[::-1].copy()])
    assert [p["backend"] for p in it.partitions()] == ["opencl"]


def test_int8_concatenation_rescale_stays_refused() -> None:
    """LiteRT refuses int8 CONCATENATION across grids: the delegate does not claim it either."""
    from teflon_py.opencl.lowerings import check_op

    mb = ModelBuilder()
    g = mb.main
    a = g.add_input("a", (2, 3), np.int8, quantization=quantization(0.04, 1))
    b = g.add_input("b", (2, 3), np.int8, quantization=quantization(0.02, 1))
    y = g.add_tensor("y", (4, 3), np.int8, quantization=quantization(0.04, 1))
    g.add_op("CONCATENATION", [a, b], [y], O.ConcatenationOptions(axis=0))
    g.mark_outputs(y)
    graph = read_model(mb.build()).main
    verdict = check_op(graph, graph.operations[0], teflon_py.load_delegate("opencl").caps)
    assert not verdict.supported and "requantizing copy" in verdict.reason


#: (ADD operand order, conv activation, ADD activation, output channels, seed)
FOLD_CASES = [(0, ir.Activation.NONE, ir.Activation.NONE, 24, 1),
              (1, ir.Activation.RELU6, ir.Activation.RELU, 20, 2),
              (1, ir.Activation.NONE, ir.Activation.NONE, 37, 3),
              (0, ir.Activation.RELU, ir.Activation.RELU6, 16, 4)]


@pytest.mark.parametrize("case", range(len(FOLD_CASES)))
def test_int8_residual_add_folds_into_the_1x1_conv(device, case: int) -> None:
    """The int8 ADD after a 1x1 conv rides in the conv's epilogue (TFLite's quantized ADD applied
    to the conv's int8 output in registers): bit-exact either operand order, with activations on
    either op and output channels off the vector width."""
    order, act, add_act, oc, seed = FOLD_CASES[case]
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 7, 9, 8), np.int8, quantization=quantization(0.05, 3))
    skip = _conv(g, x, "skip", oc, 3, rng, quantization(0.11, -7))
    c = _conv(g, skip, "proj", oc, 1, rng, quantization(0.07 * (1 + case), 5 - 9 * case), act=act)
    a = g.add_tensor("add", (1, 7, 9, oc), np.int8, quantization=quantization(0.15, -20 + 11 * case))
    g.add_op("ADD", [c, skip] if order == 0 else [skip, c], [a], O.AddOptions(fused_activation_function=add_act))
    g.mark_outputs(a)
    model = mb.build()
    for _ in range(3):
        check_model(model, "opencl", inputs=[rng.integers(-128, 128, (1, 7, 9, 8)).astype(np.int8)])
    graph = read_model(model).main
    delegate = teflon_py.load_delegate("opencl")
    (part,) = partitioner.partition(graph, {op.index for op in graph.operations if delegate.check(graph, op)})
    add = next(op.index for op in graph.operations if op.name == "ADD")
    assert add in delegate.compile(graph, part).stats["folded"]


def placed(it) -> list[dict]:
    """Each partition's index, backend and nodes (leaving out where it runs: device, kernel family)."""
    return [{k: p[k] for k in ("index", "backend", "nodes")} for p in it.partitions()]


@pytest.mark.model
def test_int8_depthwise_of_every_stride_and_the_reductions_share_one_program(device) -> None:
    """qdepthwise.cl is a template and qreduce.cl a template with no macros: a partition's
    depthwise kernels (stride 1 and 2, their own register blockings) and its MEAN (qmean_mid: the
    average over H and W) and SOFTMAX are kernels of one program, one front-end compile (results
    checked against LiteRT as ever)."""
    import pyopencl as cl

    model = zoo.build("mobilenet_v2", dtype="int8", io="int8")
    x = np.random.default_rng(1).integers(-128, 127, (1, 96, 96, 3), endpoint=True).astype(np.int8)
    it = check_model(model, "opencl", inputs=[x])
    (step,) = [s for s in it._runnable(0).steps if getattr(s, "compiled", None) is not None]
    launches = step.compiled.launch_list.launches
    names = {la.kernel.function_name for la in launches}
    depthwise = {n for n in names if n.startswith("qdepthwise_")}
    assert any("s1" in n for n in depthwise) and any("s2" in n for n in depthwise) and "qmean_mid" in names, names
    shared = {la.kernel.get_info(cl.kernel_info.PROGRAM).int_ptr for la in launches
              if la.kernel.function_name in depthwise | {"qmean_mid", "qsoftmax"}}
    assert len(shared) == 1


# -- 8-bit activations folded into the producer as one table -----------------------------------------

#: output quantization LiteRT requires (LOGISTIC, TANH) or that the case picks, by activation and type
ACT_QUANT = {("logistic", np.int8): (1 / 256, -128), ("logistic", np.uint8): (1 / 256, 0),
             ("tanh", np.int8): (1 / 128, 0), ("tanh", np.uint8): (1 / 128, 128)}


def _producer(g, x: int, producer: str, dtype: type, rng: np.random.Generator) -> int:
    """An 8-bit conv (3x3), 1x1 conv + residual ADD, depthwise (3x3, multiplier 2) or
    FULLY_CONNECTED over the rows of ``x`` [1, 7, 9, 8]; int8 weights per channel, uint8 per tensor."""
    signed = dtype == np.int8
    xs = float(g.graph.tensors[x].scale)
    zp_y = -9 if signed else 119

    def weights(name: str, shape: tuple, per: int, axis: int = 0):
        if signed:
            ws = rng.uniform(0.002, 0.006, per).astype(np.float32)
            w = g.add_constant(name, rng.integers(-127, 128, shape).astype(np.int8),
                               quantization=quantization(ws, 0, axis))
        else:
            ws = np.full(per, 0.004, np.float32)
            w = g.add_constant(name, rng.integers(0, 256, shape).astype(np.uint8), quantization=quantization(0.004, 131))
        b = g.add_constant(name + "/b", rng.integers(-3000, 3000, per).astype(np.int32),
                           quantization=quantization(np.float32(xs) * ws, 0, 0))
        return w, b

    if producer in ("conv", "residual"):
        oc, k = (20, 3) if producer == "conv" else (8, 1)
        w, b = weights("conv/w", (oc, k, k, 8), oc)
        y = g.add_tensor("conv", (1, 7, 9, oc), dtype, quantization=quantization(0.3, zp_y))
        g.add_op("CONV_2D", [x, w, b], [y], O.Conv2DOptions(padding=SAME, stride_w=1, stride_h=1))
        if producer == "residual":
            s = g.add_tensor("sum", (1, 7, 9, 8), dtype, quantization=quantization(0.35, zp_y + 4))
            g.add_op("ADD", [y, x], [s], O.AddOptions())
            y = s
        return y
    if producer == "depthwise":
        w, b = weights("dw/w", (1, 3, 3, 16), 16, axis=3)
        y = g.add_tensor("dw", (1, 7, 9, 16), dtype, quantization=quantization(0.3, zp_y))
        g.add_op("DEPTHWISE_CONV_2D", [x, w, b], [y],
                 O.DepthwiseConv2DOptions(padding=SAME, stride_w=1, stride_h=1, depth_multiplier=2))
        return y
    w, b = weights("fc/w", (24, 8), 24)
    y = g.add_tensor("fc", (63, 24), dtype, quantization=quantization(0.3, zp_y))
    g.add_op("FULLY_CONNECTED", [x, w, b], [y], O.FullyConnectedOptions())
    return y


def table_block(producer: str, act: str, dtype: type, case: str = "") -> bytes:
    """x -> ``_producer`` -> ``act`` ("logistic", "tanh", "hard_swish", "swish": LOGISTIC then MUL
    of the producer's output by it, "swish-swapped": the MUL's operands the other way round).
    ``case``: "shared" (the producer's output is also a graph output), "mul-relu" (the swish's MUL
    clamps), "logistic-out" (the swish's logistic is a graph output)."""
    rng = np.random.default_rng(len(producer) + len(act))
    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 7, 9, 8), dtype, quantization=quantization(0.05, -4 if dtype == np.int8 else 124))
    y = _producer(g, x, producer, dtype, rng)
    shape = g.graph.tensors[y].shape
    signed = dtype == np.int8
    outputs = []
    if act in ("logistic", "tanh", "hard_swish"):
        out = g.add_tensor("out", shape, dtype, quantization=quantization(*ACT_QUANT.get((act, dtype), (0.02, -30 if signed else 90))))
        g.add_op(act.upper(), [y], [out])
    else:
        s = g.add_tensor("sigmoid", shape, dtype, quantization=quantization(*ACT_QUANT["logistic", dtype]))
        g.add_op("LOGISTIC", [y], [s])
        out = g.add_tensor("out", shape, dtype, quantization=quantization(0.04, -50 if signed else 70))
        g.add_op("MUL", [s, y] if act == "swish-swapped" else [y, s], [out],
                 O.MulOptions(fused_activation_function=ir.Activation.RELU if case == "mul-relu" else ir.Activation.NONE))
        if case == "logistic-out":
            outputs.append(s)
    if case == "shared":
        outputs.append(y)
    g.mark_outputs(out, *outputs)
    return mb.build()


def _act_ops(graph: ir.Graph) -> set[int]:
    return {op.index for op in graph.operations if op.name in ("LOGISTIC", "TANH", "HARD_SWISH", "MUL")}


def _folded(model: bytes) -> tuple[set[int], int]:
    """(the ops folded, the launches) of ``model``'s one OpenCL partition."""
    graph = read_model(model).main
    delegate = teflon_py.load_delegate("opencl")
    (part,) = partitioner.partition(graph, {op.index for op in graph.operations if delegate.check(graph, op)})
    stats = delegate.compile(graph, part).stats
    return set(stats["folded"]), stats["launches"]


@pytest.mark.parametrize("producer, act, dtype", [
    (p, a, t) for p, a in [("conv", "swish"), ("conv", "logistic"), ("conv", "hard_swish"), ("conv", "tanh"),
                           ("depthwise", "swish"), ("depthwise", "hard_swish"), ("depthwise", "tanh"),
                           ("fc", "swish"), ("fc", "logistic")]
    for t in (np.int8, np.uint8)] + [("residual", "swish-swapped", np.int8), ("residual", "tanh", np.int8)],
    ids=lambda v: {np.int8: "i8", np.uint8: "u8"}.get(v, v))
def test_activation_table_folds_into_the_producer(family: str, producer: str, act: str, dtype: type) -> None:
    """An 8-bit LOGISTIC, TANH, HARD_SWISH or swish after a conv (after the int8 ADD folded into
    it), depthwise or FULLY_CONNECTED runs in that op's epilogue on the cpu family, as one lookup
    in the 256-entry table the ops' fallback kernels give every code: one launch, LiteRT's integers
    (bit-exact, at the types' extremes too); the gpu family keeps the ops apart."""
    model = table_block(producer, act, dtype)
    check_model(model, "opencl")
    check_model(model, "opencl", extremes=True)
    folded, launches = _folded(model)
    acts = _act_ops(read_model(model).main)
    assert (acts <= folded) == (family == "cpu")
    if family == "cpu":
        assert launches == 1


@pytest.mark.parametrize("case", ["shared", "mul-relu", "logistic-out"])
def test_activation_table_whose_input_is_read_elsewhere_does_not_fold(family: str, case: str) -> None:
    """The swish stays its own launches when the conv's output or the logistic is a graph output,
    or when its MUL clamps (the LOGISTIC alone cannot fold: the MUL reads its input too)."""
    model = table_block("conv", "swish", np.int8, case)
    check_model(model, "opencl")
    folded, _ = _folded(model)
    assert not _act_ops(read_model(model).main) & folded
