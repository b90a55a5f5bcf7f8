"""DYNAMIC_QUANTIZE and DYNAMIC_FULLY_CONNECTED (XNNPACK's qd8) on every backend, bit for bit.

No LiteRT kernel computes these, so the oracle is written here: every float32 operation of the
op layer's definition as a float64 operation rounded to float32 (for +, -, x and / that double
rounding is exact, 53 >= 2 x 24 + 2 bits), rint as Python's round-half-even on the exact
quotient, and the fully connected layer's accumulator in int64. Each backend must equal the
oracle bit for bit (zeros' signs and infinities included), the OpenCL delegate must equal the
NumPy fallback bit for bit, and on OpenCL both nodes must run on the device. Rows cover zeros,
one sign only, constants, exact rounding ties, subnormals, ranges whose width overflows to inf,
and accumulators past 2^24 (so the int -> float conversion rounds).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import teflon_py
from teflon_py import ir
from teflon_py.executor import GraphExecutor
from teflon_py.opencl.caps import Caps
from teflon_py.ops.common import Act, FusedActivation, NoAttrs
from teflon_py.ops.matmul import DynamicQuantizeAttrs, FullyConnectedAttrs

F32 = np.float32
#: rows wider than float32's range overflow to an inf scale, and 0 x inf is NaN: expected here
pytestmark = pytest.mark.filterwarnings("ignore:(overflow|invalid value) encountered:RuntimeWarning")

#: fused activations of the fully connected layer
ACTIVATIONS = {"none": FusedActivation(), "relu": FusedActivation.of(Act.RELU),
               "relu6": FusedActivation.of(Act.RELU6), "clamp": FusedActivation.clamp(-0.75, 0.5)}


# -- the oracle -------------------------------------------------------------------------------------

def f32(v: float) -> float:
    """float64 ``v`` rounded to float32, back as a Python float."""
    return float(F32(v))


def oracle_params(row: np.ndarray) -> tuple[float, int]:
    """(scale, zero point) of one row, each float32 operation done in float64 and rounded."""
    lo = min(0.0, *(float(v) for v in row))
    hi = max(0.0, *(float(v) for v in row))
    scale = f32(f32(hi - lo) / 255.0)
    if scale == 0.0:
        scale = 1.0
    lq, hq = f32(lo / scale), f32(hi / scale)
    from_min, from_max = f32(-128.0 - lq), f32(127.0 - hq)
    err_min, err_max = f32(128.0 + abs(lq)), f32(127.0 + abs(hq))
    zero = from_min if err_min < err_max else from_max
    return scale, min(127, max(-128, round(zero)))  # Python's round: halves to even


def oracle_quantize(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 values and float32 [rows, 2] parameters of a float32 [rows, depth] array."""
    q = np.zeros(rows.shape, np.int8)
    params = np.zeros((rows.shape[0], 2), F32)
    for r, row in enumerate(rows):
        scale, zp = oracle_params(row)
        params[r] = scale, zp
        for k, v in enumerate(row):
            q[r, k] = min(127, max(-128, round(f32(float(v) / scale)) + zp))
    return q, params


def oracle_fully_connected(q: np.ndarray, params: np.ndarray, w: np.ndarray, w_zp: np.ndarray,
                           w_scale: np.ndarray, bias: np.ndarray | None, act: FusedActivation) -> np.ndarray:
    """float32 [rows, units]: the exact int64 accumulator, then float32 products and bias."""
    rows = q.reshape(-1, w.shape[1]).astype(np.int64)
    zp = params[:, 1].astype(np.int64)  # integer-valued
    acc = np.einsum("rk,uk->ru", rows - zp[:, None], w.astype(np.int64) - w_zp.reshape(-1, 1))
    lo, hi = act.range(F32)
    out = np.zeros(acc.shape, F32)
    for (r, u), a in np.ndenumerate(acc):
        assert abs(int(a)) < 2**53
        v = f32(f32(f32(float(a)) * float(params[r, 0])) * float(w_scale[u]))
        if bias is not None:
            v = f32(v + float(bias[u]))
        out[r, u] = v if math.isnan(v) else min(max(v, lo), hi)
    return out


def assert_bits(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, \
        f"{what}: {actual.dtype}{actual.shape} != {expected.dtype}{expected.shape}"
    a, e = actual.reshape(-1), expected.reshape(-1)
    if a.dtype.kind == "f":
        a, e = a.view(np.uint32), e.view(np.uint32)
    bad = np.flatnonzero(a != e)
    assert bad.size == 0, (f"{what}: {bad.size} of {a.size} differ; first at {bad[0]}: "
                           f"{actual.reshape(-1)[bad[0]]!r} != {expected.reshape(-1)[bad[0]]!r}")


# -- inputs -----------------------------------------------------------------------------------------

def rows_of(kind: str, rows: int, depth: int, seed: int) -> np.ndarray:
    """float32 [rows, depth] of one content ``kind``; the last row's kind varies with ``seed``."""
    rng = np.random.default_rng(seed)
    normal = rng.standard_normal((rows, depth)).astype(F32)
    if kind == "normal":
        return normal * F32(3.0)
    if kind == "zeros":
        return np.zeros((rows, depth), F32)
    if kind == "positive":
        return np.abs(normal) + F32(0.25)
    if kind == "negative":
        return -np.abs(normal) - F32(1e-3)
    if kind == "constant":  # one value per row, of either sign
        return np.repeat(rng.choice(np.array([-3.5, 2.25, 1e-3, -7e5], F32), (rows, 1)), depth, axis=1)
    if kind == "ties":  # scale 1 (range [0, 255]): x.5 values round half to even
        x = rng.integers(0, 255, (rows, depth)).astype(F32) + F32(0.5)
        x[:, 0] = 255.0
        return x
    if kind == "tiny":  # subnormal and near-subnormal values: subnormal or underflowing scales
        return normal * rng.choice(np.array([1e-45, 1e-42, 1e-39, 1e-36], F32), (rows, 1))
    if kind == "huge":  # some ranges wider than float32: the scale is inf
        return rng.uniform(-1, 1, (rows, depth)).astype(F32) * rng.choice(np.array([3.4e38, 1e30, 1.7e38], F32),
                                                                          (rows, 1))
    if kind == "mixed":  # one large value among small ones
        x = normal * F32(1e-4)
        x[np.arange(rows), rng.integers(0, depth, rows)] = rng.choice(np.array([-1e6, 5e4, 1e20], F32), rows)
        return x
    raise ValueError(kind)


KINDS = ("normal", "zeros", "positive", "negative", "constant", "ties", "tiny", "huge", "mixed")
DEPTHS = (1, 7, 64, 129)


# -- graphs -----------------------------------------------------------------------------------------

class G:
    """A graph under construction."""

    def __init__(self) -> None:
        self.tensors: list[ir.Tensor] = []
        self.ops: list[ir.Operation] = []

    def tensor(self, shape: tuple[int, ...], dtype: type, quant: ir.Quantization | None = None,
               data: np.ndarray | None = None) -> int:
        self.tensors.append(ir.Tensor(len(self.tensors), f"t{len(self.tensors)}", tuple(shape), np.dtype(dtype),
                                      quant, data))
        return len(self.tensors) - 1

    def op(self, opcode: str, ins: tuple[int, ...], outs: tuple[int, ...], attrs: object) -> None:
        self.ops.append(ir.Operation(len(self.ops), opcode, ins, outs, attrs))

    def graph(self, inputs: tuple[int, ...], outputs: tuple[int, ...]) -> ir.Graph:
        return ir.Graph(self.tensors, self.ops, inputs, outputs)


def run(graph: ir.Graph, backend: str, feeds: list[np.ndarray]) -> tuple[list[np.ndarray], GraphExecutor]:
    delegates = [] if backend == "numpy" else [teflon_py.load_delegate(backend)]
    ex = GraphExecutor(ir.Model([graph]), graph, delegates)
    for i, x in zip(graph.inputs, feeds):
        ex.values[i] = x
    ex.run()
    return [np.array(ex.values[i]) for i in graph.outputs], ex


def _device_fp32_reason() -> str | None:
    """Why the default OpenCL device cannot give bit-exact float32 (subnormals flushed), or None."""
    from teflon_py.opencl.runtime import device

    return Caps.of(device.select_device()).exact_fp32_reason()


def run_checked(graph: ir.Graph, backend: str, feeds: list[np.ndarray]) -> list[np.ndarray]:
    """The outputs on ``backend``; on a delegate, every node placed there (unless the device's caps
    rule bit-exact float32 out, e.g. llvmpipe flushes subnormals, and that is the reason given)
    and every output equal bit for bit to the NumPy fallback's."""
    outs, ex = run(graph, backend, feeds)
    if backend != "numpy":
        excused = _device_fp32_reason() if backend == "opencl" else None
        wrong = [(op.describe(), ex.placements[op.index]) for op in graph.operations
                 if ex.placements[op.index].backend != backend
                 and not (excused and excused in (ex.placements[op.index].reason or ""))]
        assert not wrong, f"not run on {backend}: {wrong}"
        ref, _ = run(graph, "numpy", feeds)
        for k, (a, e) in enumerate(zip(outs, ref)):
            assert_bits(a, e, f"output {k} against the NumPy fallback")
    return outs


def weights(mode: str, units: int, depth: int, seed: int) -> tuple[np.ndarray, ir.Quantization]:
    """int8 [units, depth] and their quantization: per tensor (zero point 0, or 5: the kernel's
    int16 path) or per unit."""
    rng = np.random.default_rng(seed + 1000)
    w = rng.integers(-128, 128, (units, depth), endpoint=False).astype(np.int8)
    n = units if mode == "channel" else 1
    scale = (rng.random(n) * 0.02 + 1e-4).astype(F32)
    zp = np.full(n, 5 if mode == "tensor_zp" else 0, np.int64)
    return w, ir.Quantization(scale, zp, 0)


def qd8_graph(x_shape: tuple[int, ...], units: int, mode: str, bias: bool, act: FusedActivation,
              seed: int, keep: bool = False, runtime_bias: bool = False, w: np.ndarray | None = None,
              ) -> tuple[ir.Graph, np.ndarray, np.ndarray | None]:
    """x -> DYNAMIC_QUANTIZE -> DYNAMIC_FULLY_CONNECTED; outputs (y, q, params). ``w`` replaces
    the random weights' values."""
    depth = x_shape[-1]
    rows = int(np.prod(x_shape)) // depth
    w0, wq = weights(mode, units, depth, seed)
    w = w0 if w is None else w
    b = np.random.default_rng(seed + 7).standard_normal(units).astype(F32) if bias else None
    g = G()
    x = g.tensor(x_shape, F32)
    q = g.tensor(x_shape, np.int8)
    p = g.tensor((rows, 2), F32)
    wt = g.tensor(w.shape, np.int8, wq, w)
    bt = ir.NO_TENSOR if b is None else g.tensor((units,), F32, None, None if runtime_bias else b)
    y = g.tensor((*x_shape[:-1], units) if keep else (rows, units), F32)
    g.op("DYNAMIC_QUANTIZE", (x,), (q, p), DynamicQuantizeAttrs(1))
    g.op("DYNAMIC_FULLY_CONNECTED", (q, p, wt, bt), (y,), FullyConnectedAttrs(activation=act, keep_num_dims=keep))
    return g.graph((x, bt) if runtime_bias else (x,), (y, q, p)), w, b


# -- DYNAMIC_QUANTIZE -------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("dims", [1, 2])
@pytest.mark.parametrize("depth", DEPTHS)
def test_dynamic_quantize(backend: str, depth: int, dims: int, kind: str) -> None:
    """Row counts 1 to 33, rows of ``depth`` values in the last one or two axes."""
    split = {1: (1, 1), 7: (1, 7), 64: (8, 8), 129: (3, 43)}[depth]
    for rows in (1, 2, 5, 16, 33):
        seed = rows * 31 + depth
        x = rows_of(kind, rows, depth, seed)
        if kind == "normal":  # the other kinds in some rows
            x[-1] = rows_of(KINDS[seed % len(KINDS)], 1, depth, seed)[0]
        shape = (rows, depth) if dims == 1 else (rows, *split)
        g = G()
        xt = g.tensor(shape, F32)
        q = g.tensor(shape, np.int8)
        p = g.tensor((rows, 2), F32)
        g.op("DYNAMIC_QUANTIZE", (xt,), (q, p), DynamicQuantizeAttrs(dims))
        got_q, got_p = run_checked(g.graph((xt,), (q, p)), backend, [x.reshape(shape)])
        want_q, want_p = oracle_quantize(x)
        assert_bits(got_p, want_p, f"params ({rows} rows)")
        assert_bits(got_q, want_q.reshape(shape), f"values ({rows} rows)")
        # where the scale is a normal float (a subnormal one has lost precision), every value
        # dequantizes to within half a step (plus x / scale's rounding)
        finite = np.isfinite(want_p[:, 0]) & (want_p[:, 0] >= np.finfo(F32).tiny)
        real = (got_q.reshape(rows, depth).astype(np.float64) - want_p[:, 1:]) * want_p[:, :1]
        err = np.abs(real - x.astype(np.float64))[finite]
        assert np.all(err <= np.broadcast_to(want_p[finite, :1] * (0.5 + 2**-14), err.shape)), \
            "a value does not dequantize to within half a step"


# -- DYNAMIC_FULLY_CONNECTED ------------------------------------------------------------------------

#: (input shape, units, keep_num_dims)
FC_CASES = [((1, 1), 1, False), ((1, 7), 16, False), ((3, 64), 17, False), ((33, 129), 40, False),
            ((2, 5, 7), 100, True), ((4, 3, 64), 33, False), ((1, 129), 5, True), ((6, 1), 31, False)]


@pytest.mark.parametrize("act", ACTIVATIONS)
@pytest.mark.parametrize("bias", [True, False], ids=["bias", "nobias"])
@pytest.mark.parametrize("mode", ["tensor", "tensor_zp", "channel"])
@pytest.mark.parametrize("case", range(len(FC_CASES)), ids=lambda i: f"{FC_CASES[i][0]}-u{FC_CASES[i][1]}")
def test_dynamic_fully_connected(backend: str, case: int, mode: str, bias: bool, act: str) -> None:
    shape, units, keep = FC_CASES[case]
    seed = case * 13 + len(mode)
    g, w, b = qd8_graph(shape, units, mode, bias, ACTIVATIONS[act], seed, keep)
    depth = shape[-1]
    rows = int(np.prod(shape)) // depth
    x = rows_of("normal", rows, depth, seed)
    x[:: 3] = rows_of(KINDS[seed % len(KINDS)], x[:: 3].shape[0], depth, seed)  # other kinds too
    y, q, p = run_checked(g, backend, [x.reshape(shape)])
    want_q, want_p = oracle_quantize(x)
    assert_bits(p, want_p, "params")
    assert_bits(q, want_q.reshape(shape), "values")
    wq = g.tensors[g.operations[1].inputs[2]].quantization
    scale = np.broadcast_to(wq.scale, (units,))
    want = oracle_fully_connected(want_q, want_p, w, wq.zero_point, scale, b, ACTIVATIONS[act])
    assert_bits(y, want.reshape(y.shape), "output")


@pytest.mark.parametrize("kind", KINDS)
def test_dynamic_fully_connected_rows(backend: str, kind: str) -> None:
    """Every row kind through the layer, per-unit weights, bias and RELU6."""
    g, w, b = qd8_graph((9, 64), 24, "channel", True, ACTIVATIONS["relu6"], 3)
    x = rows_of(kind, 9, 64, 5)
    y, q, p = run_checked(g, backend, [x])
    wq = g.tensors[g.operations[1].inputs[2]].quantization
    assert_bits(y, oracle_fully_connected(q, p, w, wq.zero_point, wq.scale, b, ACTIVATIONS["relu6"]), "output")
    assert_bits(p, oracle_quantize(x)[1], "params")


def test_dynamic_fully_connected_large_accumulators(backend: str) -> None:
    """Accumulators up to 255 x 127 x 2048 (past 2^24: the conversion to float32 rounds, to even)."""
    rng = np.random.default_rng(11)
    sign = rng.choice([-1, 1], (20, 2048))
    sign[:, :1024] = 1  # a same-sign half: large sums
    w = (rng.integers(100, 128, (20, 2048)) * sign).astype(np.int8)
    g, w, _ = qd8_graph((3, 2048), 20, "tensor", False, ACTIVATIONS["none"], 11, w=w)
    x = np.stack([np.full(2048, 2.0, F32), np.full(2048, -1.5, F32), rng.uniform(0.9, 1.0, 2048).astype(F32)])
    y, q, p = run_checked(g, backend, [x])
    wq = g.tensors[g.operations[1].inputs[2]].quantization
    want = oracle_fully_connected(q, p, w, wq.zero_point, np.broadcast_to(wq.scale, (20,)), None,
                                  ACTIVATIONS["none"])
    acc = np.abs(y.astype(np.float64) / p[:, :1] / wq.scale[0])
    assert np.count_nonzero(acc > 2**24) >= 20, "the case does not reach past 2^24"
    assert_bits(y, want, "output")


def test_dynamic_fully_connected_given_params(backend: str) -> None:
    """Values and parameters as graph inputs, zero points far outside int8 (the 64-bit fold of
    zp x sum of weights, past int32), runtime bias."""
    rng = np.random.default_rng(4)
    rows, depth, units = 7, 129, 19
    w, wq = weights("channel", units, depth, 4)
    g = G()
    q = g.tensor((rows, depth), np.int8)
    p = g.tensor((rows, 2), F32)
    wt = g.tensor(w.shape, np.int8, wq, w)
    bt = g.tensor((units,), F32)
    y = g.tensor((rows, units), F32)
    g.op("DYNAMIC_FULLY_CONNECTED", (q, p, wt, bt), (y,), FullyConnectedAttrs())
    graph = g.graph((q, p, bt), (y,))
    qv = rng.integers(-128, 128, (rows, depth)).astype(np.int8)
    pv = np.stack([rng.random(rows).astype(F32) * F32(0.1),
                   rng.choice(np.array([-20000000, -129, 0, 127, 3000, 5000000], F32), rows)], axis=1).astype(F32)
    bv = rng.standard_normal(units).astype(F32)
    (got,) = run_checked(graph, backend, [qv, pv, bv])
    assert_bits(got, oracle_fully_connected(qv, pv, w, wq.zero_point, wq.scale, bv, ACTIVATIONS["none"]), "output")


def test_dynamic_fully_connected_runtime_bias_and_folded_relu(backend: str) -> None:
    """A bias fed at run time, and a RELU after the layer (on OpenCL, folded into its epilogue)."""
    g0, w, b = qd8_graph((5, 7), 18, "tensor_zp", True, ACTIVATIONS["none"], 2, runtime_bias=True)
    g = G()
    g.tensors, g.ops = list(g0.tensors), list(g0.operations)
    r = g.tensor((5, 18), F32)
    g.op("RELU", (g0.outputs[0],), (r,), NoAttrs())
    graph = g.graph(g0.inputs, (r,))
    x = rows_of("normal", 5, 7, 9)
    (got,) = run_checked(graph, backend, [x, b])
    if backend == "opencl" and not _device_fp32_reason():  # a device that refuses has no layer
        _, ex = run(graph, backend, [x, b])
        stats = [s.compiled.stats for s in ex.steps if getattr(s, "compiled", None) is not None]
        assert [(st["launches"], st["folded"]) for st in stats] == [(2, [2])], "RELU not folded into the layer"
    q, p = oracle_quantize(x)
    wq = g.tensors[g.ops[1].inputs[2]].quantization
    want = oracle_fully_connected(q, p, w, wq.zero_point, np.broadcast_to(wq.scale, (18,)), b, ACTIVATIONS["relu"])
    assert_bits(got, want, "output")


def test_opencl_refusals() -> None:
    """What the OpenCL check refuses, with the reason a user reads."""
    from teflon_py.opencl.caps import Caps
    from teflon_py.opencl.lowerings import check_op

    def verdict(zp: int, depth: int = 8, runtime_weights: bool = False, act: FusedActivation | None = None,
                caps: Caps | None = None) -> str:
        w = np.full((4, depth), 127, np.int8)
        g = G()
        q = g.tensor((2, depth), np.int8)
        p = g.tensor((2, 2), F32)
        wt = g.tensor(w.shape, np.int8, ir.Quantization(np.ones(1, F32), np.array([zp])),
                      None if runtime_weights else w)
        y = g.tensor((2, 4), F32)
        g.op("DYNAMIC_FULLY_CONNECTED", (q, p, wt, ir.NO_TENSOR), (y,),
             FullyConnectedAttrs(activation=act or FusedActivation()))
        graph = g.graph((q, p), (y,))
        return check_op(graph, graph.operations[0], caps or Caps()).reason or ""

    assert verdict(0) == ""
    assert verdict(-40000) == "DYNAMIC_FULLY_CONNECTED: weights less their zero point do not fit int16"
    assert "int32 accumulator could overflow" in verdict(-127, depth=70000)
    assert "must be a constant" in verdict(0, runtime_weights=True)
    assert "TANH not supported" in verdict(0, act=FusedActivation.of(Act.TANH))
    assert "flushes float32 subnormals" in verdict(0, caps=Caps(fp32_denorms=False))

    g = G()
    x = g.tensor((2, 3), F32)
    g.op("DYNAMIC_QUANTIZE", (x,), (g.tensor((2, 3), np.int8), g.tensor((2, 2), F32)), DynamicQuantizeAttrs(1))
    graph = g.graph((x,), (1, 2))
    assert check_op(graph, graph.operations[0], Caps()).supported
    assert "no correctly rounded float32 division" in check_op(
        graph, graph.operations[0], Caps(fp32_correct_divide=False)).reason
