"""Recurrent ops against LiteRT's reference kernels, over consecutive invokes (state persistence).

LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM (CIFG, peephole, projection with
and without bias, layer norm, clips, activations, time_major, merge_outputs, auxiliary input),
RNN, UNIDIRECTIONAL_SEQUENCE_RNN and SVDF (rank, activation, bias), each in float32, hybrid
(int8 weights, float32 activations; symmetric and asymmetric input quantization) and, where
LiteRT has one, the integer kernels (8x8->16 LSTM with its five intermediates, 8x8->8 LSTM with
its twelve; int8 SVDF with an int16 state). State operands are variable tensors without data;
every test runs three invokes with fresh inputs and compares every output after each.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
from ai_edge_litert.interpreter import OpResolverType

import teflon_py
from teflon_py import ir
from teflon_py.errors import UnsupportedError
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import write_model
from teflon_py.tflite.reader import read_model
from tests.harness import ModelBuilder, assert_close, check_placement, quantization, random_input

NO = ir.NO_TENSOR


def check_invokes(model: bytes, backend: str, invokes: int = 3, seed: int = 0,
                  float_tol: float = 1e-5, elem_tol: float | None = None, states: Sequence[str] = (),
                  refuses: str | Sequence[str] | None = None) -> None:
    """Run ``invokes`` invokes with fresh random inputs on LiteRT (BUILTIN_REF) and on teflon-py;
    every output of every invoke must match (variable tensors carry state between them), and so
    must the tensors named in ``states`` (variable tensors: finer than an int8 output).
    ``refuses`` (for ops a delegate lowers): pin the placement (``check_placement``) too, allowing
    the refusals it names."""
    lite = LiteRTInterpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    lite.allocate_tensors()
    delegates = [] if backend == "numpy" else [teflon_py.load_delegate(backend)]
    ours = teflon_py.Interpreter(model_content=model, experimental_delegates=delegates)
    ours.allocate_tensors()
    rng = np.random.default_rng(seed)
    for k in range(invokes):
        inputs = [random_input(d, rng) for d in lite.get_input_details()]
        for it in (lite, ours):
            for d, x in zip(it.get_input_details(), inputs):
                it.set_tensor(d["index"], x)
            it.invoke()
        for j, (d, e) in enumerate(zip(ours.get_output_details(), lite.get_output_details())):
            assert_close(ours.get_tensor(d["index"]), lite.get_tensor(e["index"]), float_tol,
                         f"invoke {k} output {j}", elem_tol=elem_tol)
        for d in lite.get_tensor_details():
            if d["name"] in states:
                assert_close(ours.get_tensor(d["index"]), lite.get_tensor(d["index"]), float_tol,
                             f"invoke {k} state {d['name']}", elem_tol=elem_tol)
    if refuses is not None and backend != "numpy":
        check_placement(ours, backend, refuses)


# -- operand factories ----------------------------------------------------------------------------

class Operands:
    """Adds the constant operands of one recurrent cell in one of three kinds: "float" (float32),
    "hybrid" (int8 weights, float32 bias / layer norm) or "int8" (the 8x8->16 integer LSTM's types)."""

    def __init__(self, g: Any, kind: str, rng: np.random.Generator, prefix: str = ""):
        self.g, self.kind, self.rng, self.prefix = g, kind, rng, prefix
        self.n = 0

    def _name(self, what: str) -> str:
        self.n += 1
        return f"{self.prefix}{what}{self.n}"

    def weight(self, shape: Sequence[int], std: float, in_scale: float = 1.0) -> tuple[int, float]:
        """A weight matrix: float32, or int8 symmetric per-tensor; (tensor, its scale)."""
        w = (self.rng.standard_normal(shape) * std).astype(np.float32)
        if self.kind == "float":
            return self.g.add_constant(self._name("w"), w), 1.0
        scale = float(np.abs(w).max()) / 127
        q = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
        return self.g.add_constant(self._name("w"), q, quantization=quantization(scale)), scale

    def vector(self, n: int, std: float, mean: float = 0.0, int_scale: float | None = None,
               int_dtype: Any = np.int32) -> int:
        """A bias-like vector: float32 (float, hybrid) or ``int_dtype`` at ``int_scale`` (int8 kind)."""
        v = (mean + self.rng.standard_normal(n) * std).astype(np.float32)
        if self.kind != "int8" or int_scale is None:
            return self.g.add_constant(self._name("b"), v)
        info = np.iinfo(int_dtype)
        q = np.clip(np.round(v / int_scale), info.min, info.max).astype(int_dtype)
        return self.g.add_constant(self._name("b"), q, quantization=quantization(int_scale))


# -- LSTM family ------------------------------------------------------------------------------------

CELL_SCALE = 2.0 ** -11  # int16 cell state, Q4.11


def _lstm_cell(ops: Operands, n_input: int, n_cell: int, n_output: int, *, cifg: bool, peephole: bool,
               projection: bool, proj_bias: bool, layer_norm: bool, in_scale: float, state_scale: float,
               hidden_scale: float) -> tuple[list[int], list[int]]:
    """The 17 weight operands of one direction (input, recurrent, peephole, bias, projection) and
    the 4 layer-norm operands, NO_TENSOR where absent."""
    gates = ("i", "f", "c", "o")
    w_x, w_h, s_x = {}, {}, {}
    for g in gates:
        if cifg and g == "i":
            w_x[g] = w_h[g] = NO
            continue
        w_x[g], s_x[g] = ops.weight((n_cell, n_input), 1.0 / np.sqrt(n_input))
        w_h[g], _ = ops.weight((n_cell, n_output), 1.0 / np.sqrt(n_output))
    w_c = {}
    for g in ("i", "f", "o"):
        if not peephole or (cifg and g == "i"):
            w_c[g] = NO
        elif ops.kind == "int8":
            w_c[g] = ops.vector(n_cell, 0.5, int_scale=1 / 16384, int_dtype=np.int16)
        else:
            w_c[g] = ops.weight((n_cell,), 0.5)[0]
    bias, ln = {}, {}
    for g in gates:
        if cifg and g == "i":
            bias[g] = ln[g] = NO
            continue
        ln_scale = 1 / 16384
        bias_scale = ln_scale / 1024 if layer_norm else in_scale * s_x[g]
        bias[g] = ops.vector(n_cell, 0.5, 1.0 if g == "f" else 0.0, int_scale=bias_scale)
        ln[g] = ops.vector(n_cell, 0.2, 1.0, int_scale=ln_scale, int_dtype=np.int16) if layer_norm else NO
    proj_w = proj_b = NO
    if projection:
        proj_w, p_scale = ops.weight((n_output, n_cell), 1.0 / np.sqrt(n_cell))
        if proj_bias:
            proj_b = ops.vector(n_output, 0.2, int_scale=hidden_scale * p_scale)
    operands = [w_x[g] for g in gates] + [w_h[g] for g in gates] + [w_c["i"], w_c["f"], w_c["o"]]
    operands += [bias[g] for g in gates] + [proj_w, proj_b]
    return operands, [ln[g] for g in gates]


def _intermediates(count: int, hidden_scale: float) -> list[tuple[type, Any]]:
    """The integer LSTM's intermediate tensors (type, quantization). 8x8->16 (5): the four gate
    matmul results (int16, read only with layer norm) and the hidden state (int8). 8x8->8 (12): per
    gate (input, forget, cell, output) the gate's sum (int16) and its input and recurrent matmul
    results (int8, zero points off 0 so that they are exercised)."""
    if count == 5:
        return [(np.int16, quantization(2.0 ** -11))] * 4 + [(np.int8, quantization(hidden_scale, 1))]
    if count != 12:
        return [(np.int16, quantization(2.0 ** -11))] * count
    per_gate = []
    for k in range(4):
        per_gate += [(np.int16, quantization(2.0 ** -11 * (1 + k / 4))),
                     (np.int8, quantization(0.1 + 0.01 * k, k - 2)), (np.int8, quantization(0.09 - 0.01 * k, 3 - k))]
    return per_gate


LSTM_FLAGS = ("cifg", "peephole", "projection", "proj_bias", "layer_norm")


def lstm_model(op: str, kind: str, batch: int, time: int, n_input: int, n_cell: int, n_output: int, *,
               cifg: bool = False, peephole: bool = False, projection: bool = False, proj_bias: bool = False,
               layer_norm: bool = False, time_major: bool = False, act: ir.Activation = ir.Activation.TANH,
               cell_clip: float = 0.0, proj_clip: float = 0.0, asymmetric: bool = False, inputs20: bool = False,
               intermediates: int = 5, seed: int = 0) -> bytes:
    """A one-op LSTM / UNIDIRECTIONAL_SEQUENCE_LSTM model; n_output must equal n_cell without projection.
    ``inputs20``: the legacy 20-operand form (no layer-norm operands)."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    g = mb.main
    ops = Operands(g, kind, rng)
    in_scale, state_scale, hidden_scale = 1 / 32, (1 / 64 if projection else 1 / 128), 1 / 128
    x_q = quantization(in_scale, 3) if kind == "int8" else None
    dtype = np.int8 if kind == "int8" else np.float32
    if op == "LSTM":
        x_shape, out_shape = (batch, n_input), (batch, n_output)
    else:
        x_shape = (time, batch, n_input) if time_major else (batch, time, n_input)
        out_shape = (*x_shape[:2], n_output)
    x = g.add_input("x", x_shape, dtype, quantization=x_q)
    cell_scale = CELL_SCALE if intermediates == 5 else 2.0 ** -15  # the 8x8->8 kernel's cell is Q0.15
    weights, ln = _lstm_cell(ops, n_input, n_cell, n_output, cifg=cifg, peephole=peephole, projection=projection,
                             proj_bias=proj_bias, layer_norm=layer_norm, in_scale=in_scale,
                             state_scale=state_scale, hidden_scale=hidden_scale if intermediates == 5 else 2.0 ** -15)
    if kind == "int8":
        state_q = quantization(state_scale if projection else hidden_scale, -2 if projection else 1)
        h = g.add_tensor("h", (batch, n_output), np.int8, quantization=state_q, is_variable=True)
        c = g.add_tensor("c", (batch, n_cell), np.int16, quantization=quantization(cell_scale), is_variable=True)
    else:
        state_q = None
        h = g.add_tensor("h", (batch, n_output), np.float32, is_variable=True)
        c = g.add_tensor("c", (batch, n_cell), np.float32, is_variable=True)
    y = g.add_tensor("y", out_shape, dtype, quantization=state_q)
    inputs = [x, *weights, h, c] + ([] if inputs20 else ln)
    if op == "LSTM":
        opts = O.LSTMOptions(fused_activation_function=act, cell_clip=cell_clip, proj_clip=proj_clip,
                             asymmetric_quantize_inputs=asymmetric)
    else:
        opts = O.UnidirectionalSequenceLSTMOptions(fused_activation_function=act, cell_clip=cell_clip,
                                                   proj_clip=proj_clip, time_major=time_major,
                                                   asymmetric_quantize_inputs=asymmetric)
    inter = [g.add_tensor(f"inter{k}", (), dt, quantization=q) for k, (dt, q) in
             enumerate(_intermediates(intermediates, hidden_scale))] if kind == "int8" else []
    g.add_op(op, inputs, [y], opts, intermediates=inter)
    g.mark_outputs(y)
    return mb.build()


#: (batch, time, n_input, n_cell, n_output with projection)
LSTM_SIZES = [(1, 3, 4, 4, 3), (2, 3, 5, 6, 4), (3, 2, 8, 5, 7)]
#: flag combinations: (cifg, peephole, projection, proj_bias, layer_norm)
LSTM_VARIANTS = [
    (False, False, False, False, False),
    (True, False, False, False, False),
    (False, True, False, False, False),
    (False, False, True, False, False),
    (False, False, True, True, False),
    (False, False, False, False, True),
    (True, True, True, True, True),
    (False, True, True, False, True),
]


def _variant_id(v: tuple[bool, ...]) -> str:
    return "+".join(name for name, on in zip(LSTM_FLAGS, v) if on) or "plain"


def lstm_refusals(kind: str) -> tuple[str, ...]:
    """What the OpenCL LSTM lowering refuses of a ``kind`` case: the hybrid kernel; the float and
    integer kernels must run on the device."""
    return ("hybrid",) if kind == "hybrid" else ()


def _lstm_kwargs(variant: tuple[bool, ...], sizes: tuple[int, ...], kind: str) -> dict[str, Any]:
    flags = dict(zip(LSTM_FLAGS, variant))
    batch, time, n_input, n_cell, n_proj = sizes
    n_output = n_proj if flags["projection"] else n_cell
    if kind == "int8" and flags["peephole"]:  # LiteRT's integer peephole walks n_output weights
        n_output = min(n_output, n_cell)
    return dict(batch=batch, time=time, n_input=n_input, n_cell=n_cell, n_output=n_output, **flags)


@pytest.mark.parametrize("kind", ["float", "hybrid", "int8"])
@pytest.mark.parametrize("variant", LSTM_VARIANTS, ids=_variant_id)
@pytest.mark.parametrize("sizes", LSTM_SIZES, ids=lambda s: "x".join(map(str, s)))
def test_unidirectional_sequence_lstm(backend: str, sizes: tuple[int, ...], variant: tuple[bool, ...],
                                      kind: str) -> None:
    kw = _lstm_kwargs(variant, sizes, kind)
    seed = LSTM_SIZES.index(sizes) * 10 + LSTM_VARIANTS.index(variant)
    time_major = seed % 2 == 1
    asymmetric = kind == "hybrid" and seed % 3 == 0
    model = lstm_model("UNIDIRECTIONAL_SEQUENCE_LSTM", kind, **kw, time_major=time_major, asymmetric=asymmetric,
                       seed=seed)
    check_invokes(model, backend, seed=seed, refuses=lstm_refusals(kind))


@pytest.mark.parametrize("kind", ["float", "hybrid", "int8"])
@pytest.mark.parametrize("variant", LSTM_VARIANTS[:2] + LSTM_VARIANTS[4:], ids=_variant_id)
def test_lstm(backend: str, variant: tuple[bool, ...], kind: str) -> None:
    """LSTM (one step per invoke); the variants without layer norm use the legacy 20-operand form."""
    index = LSTM_VARIANTS.index(variant)
    kw = _lstm_kwargs(variant, LSTM_SIZES[index % len(LSTM_SIZES)], kind)
    model = lstm_model("LSTM", kind, **kw, asymmetric=kind == "hybrid" and index % 2 == 0,
                       inputs20=not kw["layer_norm"] and index % 2 == 1, seed=7 + index)
    check_invokes(model, backend, seed=7, refuses=lstm_refusals(kind))


#: The 8x8->8 integer LSTM (LSTM op, 12 intermediates): LiteRT's kernel needs layer norm and a
#: projection with bias; it computes CIFG whatever the input-gate operands and ignores peephole
#: weights and the fused activation, so those variants must match it too. (batch, n_input,
#: n_cell, n_output); flags (cifg, peephole); (cell_clip, proj_clip): cell clips of 1 and more
#: are not applied by LiteRT; the activation.
LSTM8_CASES = [
    ((1, 4, 4, 3), (True, False), (0.0, 0.0), ir.Activation.TANH),
    ((2, 5, 6, 4), (False, False), (0.0, 0.0), ir.Activation.TANH),
    ((3, 8, 5, 7), (True, True), (0.5, 0.0), ir.Activation.TANH),
    ((2, 16, 32, 12), (False, True), (0.0, 0.2), ir.Activation.NONE),
    ((4, 9, 20, 20), (True, False), (0.3, 0.05), ir.Activation.RELU),
    ((3, 24, 128, 40), (True, False), (1.5, 0.0), ir.Activation.TANH),
    ((1, 3, 1, 2), (True, False), (0.0, 0.0), ir.Activation.TANH),
]


@pytest.mark.parametrize("case", LSTM8_CASES, ids=lambda c: "x".join(map(str, c[0])) + "-" + _variant_id(
    (*c[1], True, True, True)) + f"-clip{c[2][0]}-{c[2][1]}-{c[3].name}")
def test_lstm_8x8_8(backend: str, case: tuple) -> None:
    """The 12-intermediate 8x8->8 integer LSTM over three invokes, outputs and both states bit-exact."""
    (batch, n_input, n_cell, n_output), (cifg, peephole), (cell_clip, proj_clip), act = case
    seed = LSTM8_CASES.index(case)
    model = lstm_model("LSTM", "int8", batch, 1, n_input, n_cell, n_output, cifg=cifg, peephole=peephole,
                       projection=True, proj_bias=True, layer_norm=True, cell_clip=cell_clip, proj_clip=proj_clip,
                       act=act, intermediates=12, seed=40 + seed)
    check_invokes(model, backend, seed=seed, states=("h", "c"), refuses="8x8->8")


def _with_zeroed(model: bytes, operand: int) -> bytes:
    """The model with its first op's operand ``operand`` (a constant) set to zeros."""
    m = read_model(model)
    t = m.main.tensors[m.main.operations[0].inputs[operand]]
    t.data = np.zeros_like(t.data)
    return write_model(m)


def _litert_outputs(model: bytes, invokes: int, seed: int) -> list[np.ndarray]:
    it = LiteRTInterpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    rng = np.random.default_rng(seed)
    outs = []
    for _ in range(invokes):
        d = it.get_input_details()[0]
        it.set_tensor(d["index"], random_input(d, rng))
        it.invoke()
        outs.append(it.get_tensor(it.get_output_details()[0]["index"]).copy())
    return outs


def test_lstm_8x8_8_output_gate_has_no_recurrent_term() -> None:
    """The quirk our 8x8->8 kernel reproduces: LiteRT's outputs do not depend on the recurrent-to-
    output weights (operand 8) at all, while they do on the recurrent-to-forget ones (operand 6)."""
    model = lstm_model("LSTM", "int8", 4, 1, 9, 20, 20, cifg=True, projection=True, proj_bias=True,
                       layer_norm=True, intermediates=12, seed=3)
    reference = _litert_outputs(model, 4, 3)
    for operand, same in ((8, True), (6, False)):
        outs = _litert_outputs(_with_zeroed(model, operand), 4, 3)
        assert all(np.array_equal(a, b) for a, b in zip(outs, reference)) is same, operand


#: (what the model lacks or has, lstm_model arguments, our message): variants LiteRT cannot run
#: with 12 intermediates. The first three crash it (it dereferences the absent tensors), the last
#: fails its Prepare.
LSTM8_REFUSED = [
    ("layer norm", {"layer_norm": False}, r"needs layer norm"),
    ("projection", {"projection": False, "proj_bias": False, "n_output": 6}, r"needs projection weights, projection bias"),
    ("projection bias", {"proj_bias": False}, r"needs projection bias"),
    ("sequence op", {"op": "UNIDIRECTIONAL_SEQUENCE_LSTM"}, r"only for the LSTM op"),
]


@pytest.mark.parametrize("case", LSTM8_REFUSED, ids=lambda c: c[0])
def test_lstm_8x8_8_refused(case: tuple) -> None:
    """What LiteRT does not compute with 12 intermediates is refused with the node named."""
    _, changes, message = case
    kw: dict[str, Any] = {"op": "LSTM", "kind": "int8", "batch": 2, "time": 2, "n_input": 5, "n_cell": 6,
                          "n_output": 4, "cifg": True, "projection": True, "proj_bias": True, "layer_norm": True,
                          "intermediates": 12}
    kw.update(changes)
    model = lstm_model(**kw)
    if kw["op"] != "LSTM":  # LiteRT's sequence LSTM refuses 12 intermediates in Prepare
        with pytest.raises(RuntimeError, match="num_intermediate_tensors == 5"):
            LiteRTInterpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF
                              ).allocate_tensors()
    it = teflon_py.Interpreter(model_content=model)
    it.allocate_tensors()
    with pytest.raises(UnsupportedError, match=rf"node 0 \({kw['op']}\): .*{message}"):
        it.invoke()


@pytest.mark.parametrize("cell_log2", [-13, -9])
def test_lstm_8x8_8_other_cell_scale(backend: str, cell_log2: int) -> None:
    """A cell state scale other than 2^-15: LiteRT's Prepare fails its check after setting all but
    the clips and goes on, so the kernel runs as for Q0.15 with neither clip applied."""
    m = read_model(lstm_model("LSTM", "int8", 3, 1, 8, 16, 6, cifg=True, projection=True, proj_bias=True,
                              layer_norm=True, cell_clip=0.3, proj_clip=0.05, intermediates=12, seed=5))
    c = next(t for t in m.main.tensors if t.name == "c")
    c.quantization = quantization(2.0 ** cell_log2)
    check_invokes(write_model(m), backend, seed=1, states=("h", "c"), refuses="8x8->8")


@pytest.mark.parametrize("kind", ["float", "hybrid", "int8"])
@pytest.mark.parametrize("clips", [(0.7, 0.0), (0.0, 0.3), (0.5, 0.25)], ids=lambda c: f"cell{c[0]}-proj{c[1]}")
def test_lstm_clipping(backend: str, clips: tuple[float, float], kind: str) -> None:
    model = lstm_model("UNIDIRECTIONAL_SEQUENCE_LSTM", kind, 2, 4, 5, 6, 3, projection=True, proj_bias=True,
                       cell_clip=clips[0], proj_clip=clips[1], seed=3)
    check_invokes(model, backend, seed=3, refuses=lstm_refusals(kind))


@pytest.mark.parametrize("kind", ["float", "hybrid"])
@pytest.mark.parametrize("act", [ir.Activation.NONE, ir.Activation.RELU, ir.Activation.RELU6,
                                 ir.Activation.RELU_N1_TO_1, ir.Activation.SIGN_BIT], ids=lambda a: a.name)
def test_lstm_activations(backend: str, act: ir.Activation, kind: str) -> None:
    model = lstm_model("UNIDIRECTIONAL_SEQUENCE_LSTM", kind, 2, 3, 4, 5, 5, peephole=True, act=act, seed=5)
    check_invokes(model, backend, seed=5, refuses=lstm_refusals(kind))


@pytest.mark.parametrize("time_major", [False, True])
@pytest.mark.parametrize("variant", [(False, False), (True, True)], ids=["plain", "cifg+peephole"])
def test_lstm_diagonal_recurrent(backend: str, variant: tuple[bool, bool], time_major: bool) -> None:
    """UNIDIRECTIONAL_SEQUENCE_LSTM with 1-D (diagonal) recurrent weights, float32."""
    model = lstm_model("UNIDIRECTIONAL_SEQUENCE_LSTM", "float", 2, 3, 4, 5, 5, cifg=variant[0],
                       peephole=variant[1], time_major=time_major, seed=11)
    check_invokes(_diagonalize(model), backend, seed=11, refuses="diagonal")


def _diagonalize(model: bytes) -> bytes:
    """The model with its recurrent weights (operands 5-8) replaced by their diagonals."""
    m = read_model(model)
    g = m.main
    op = g.operations[0]
    for k in range(5, 9):
        i = op.inputs[k]
        if i != NO:
            t = g.tensors[i]
            t.data = np.ascontiguousarray(np.diagonal(t.data))
            t.shape = t.data.shape
    return write_model(m)


def bidi_model(kind: str, batch: int, time: int, n_input: int, n_cell: int, n_output: int, *,
               merge: bool, time_major: bool, aux: str = "none", cifg: bool = False, peephole: bool = False,
               projection: bool = False, asymmetric: bool = False, seed: int = 0) -> bytes:
    """A BIDIRECTIONAL_SEQUENCE_LSTM model; ``aux``: "none", "cross" (aux input + aux weights) or
    "bw_input" (aux input only: the backward cell's input)."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    g = mb.main
    x_shape = (time, batch, n_input) if time_major else (batch, time, n_input)
    x = g.add_input("x", x_shape, np.float32)
    aux_in = g.add_input("aux", x_shape, np.float32) if aux != "none" else NO
    cells = []
    for prefix in ("fw_", "bw_"):
        ops = Operands(g, kind, rng, prefix)
        w, _ = _lstm_cell(ops, n_input, n_cell, n_output, cifg=cifg, peephole=peephole, projection=projection,
                          proj_bias=projection, layer_norm=False, in_scale=1.0, state_scale=1.0, hidden_scale=1.0)
        cells.append((ops, w))
    states = [g.add_tensor(f"s{k}", (batch, n_output if k % 2 == 0 else n_cell), np.float32, is_variable=True)
              for k in range(4)]
    aux_w = []
    for ops, _ in cells:
        for gate in ("i", "f", "c", "o"):
            if aux != "cross" or (cifg and gate == "i"):
                aux_w.append(NO)
            else:
                aux_w.append(ops.weight((n_cell, n_input), 1.0 / np.sqrt(n_input))[0])
    inputs = [x, *cells[0][1], *cells[1][1], *states, aux_in, *aux_w]
    out_shape = (*x_shape[:2], 2 * n_output if merge else n_output)
    outs = [g.add_tensor("fw_y", out_shape, np.float32)]
    if not merge:
        outs.append(g.add_tensor("bw_y", out_shape, np.float32))
    opts = O.BidirectionalSequenceLSTMOptions(fused_activation_function=ir.Activation.TANH, merge_outputs=merge,
                                              time_major=time_major, asymmetric_quantize_inputs=asymmetric)
    g.add_op("BIDIRECTIONAL_SEQUENCE_LSTM", inputs, outs, opts)
    g.mark_outputs(*outs)
    return mb.build()


#: (kind, merge, time_major, aux, batch); LiteRT's batch-major merged output indexes the state by
#: the merged width, so batch-major merge_outputs is only well defined with batch 1.
BIDI_CASES = [
    ("float", False, True, "none", 2),
    ("float", True, True, "none", 3),
    ("float", False, False, "none", 2),
    ("float", True, False, "none", 1),
    ("float", False, True, "cross", 2),
    ("float", True, True, "bw_input", 2),
    ("hybrid", False, True, "none", 2),
    ("hybrid", True, False, "none", 1),
    ("hybrid", False, False, "cross", 2),
    ("hybrid", True, True, "bw_input", 2),
]


@pytest.mark.parametrize("variant", [(False, False, False), (True, True, True)], ids=["plain", "cifg+peep+proj"])
@pytest.mark.parametrize("case", BIDI_CASES, ids=lambda c: f"{c[0]}-merge{int(c[1])}-tm{int(c[2])}-{c[3]}-b{c[4]}")
def test_bidirectional_sequence_lstm(backend: str, case: tuple, variant: tuple[bool, bool, bool]) -> None:
    kind, merge, time_major, aux, batch = case
    cifg, peephole, projection = variant
    seed = BIDI_CASES.index(case) + 20 * cifg
    model = bidi_model(kind, batch, 3, 4, 5, 3 if projection else 5, merge=merge, time_major=time_major, aux=aux,
                       cifg=cifg, peephole=peephole, projection=projection, asymmetric=seed % 2 == 0, seed=seed)
    check_invokes(model, backend, seed=seed)


# -- RNN ----------------------------------------------------------------------------------------------

def rnn_model(op: str, kind: str, batch: int, time: int, n_input: int, units: int, act: ir.Activation,
              time_major: bool = False, asymmetric: bool = False, seed: int = 0) -> bytes:
    """A one-op RNN / UNIDIRECTIONAL_SEQUENCE_RNN model (float32 or hybrid int8 weights)."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    g = mb.main
    ops = Operands(g, kind, rng)
    if op == "RNN":
        x_shape, out_shape = (batch, n_input), (batch, units)
        opts = O.RNNOptions(fused_activation_function=act, asymmetric_quantize_inputs=asymmetric)
    else:
        x_shape = (time, batch, n_input) if time_major else (batch, time, n_input)
        out_shape = (*x_shape[:2], units)
        opts = O.SequenceRNNOptions(time_major=time_major, fused_activation_function=act,
                                    asymmetric_quantize_inputs=asymmetric)
    x = g.add_input("x", x_shape, np.float32)
    w, _ = ops.weight((units, n_input), 1.0 / np.sqrt(n_input))
    r, _ = ops.weight((units, units), 0.8 / np.sqrt(units))
    b = ops.vector(units, 0.3)
    h = g.add_tensor("h", (batch, units), np.float32, is_variable=True)
    y = g.add_tensor("y", out_shape, np.float32)
    g.add_op(op, [x, w, r, b, h], [y], opts)
    g.mark_outputs(y)
    return mb.build()


RNN_ACTS = [ir.Activation.TANH, ir.Activation.RELU, ir.Activation.RELU_N1_TO_1, ir.Activation.NONE]
RNN_SIZES = [(1, 3, 4, 5), (2, 4, 6, 3), (3, 2, 9, 8)]


@pytest.mark.parametrize("kind", ["float", "hybrid"])
@pytest.mark.parametrize("act", RNN_ACTS, ids=lambda a: a.name)
@pytest.mark.parametrize("sizes", RNN_SIZES, ids=lambda s: "x".join(map(str, s)))
def test_unidirectional_sequence_rnn(backend: str, sizes: tuple[int, ...], act: ir.Activation, kind: str) -> None:
    seed = RNN_SIZES.index(sizes) * 4 + RNN_ACTS.index(act)
    model = rnn_model("UNIDIRECTIONAL_SEQUENCE_RNN", kind, *sizes, act, time_major=seed % 2 == 0,
                      asymmetric=seed % 3 == 0, seed=seed)
    check_invokes(model, backend, seed=seed)


@pytest.mark.parametrize("asymmetric", [False, True])
@pytest.mark.parametrize("kind", ["float", "hybrid"])
@pytest.mark.parametrize("sizes", RNN_SIZES, ids=lambda s: "x".join(map(str, s)))
def test_rnn(backend: str, sizes: tuple[int, ...], kind: str, asymmetric: bool) -> None:
    seed = RNN_SIZES.index(sizes) + 10 * asymmetric
    model = rnn_model("RNN", kind, *sizes, RNN_ACTS[seed % 4], asymmetric=asymmetric, seed=seed)
    check_invokes(model, backend, seed=seed)


# -- SVDF -----------------------------------------------------------------------------------------------

def svdf_model(kind: str, batch: int, n_input: int, units: int, rank: int, memory: int, act: ir.Activation,
               bias: bool = True, asymmetric: bool = False, seed: int = 0) -> bytes:
    """A one-op SVDF model: float32, hybrid (int8 weights) or int8 (int16 weights_time and state)."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    g = mb.main
    filters = units * rank
    ops = Operands(g, "float" if kind == "float" else "hybrid", rng)
    in_scale, state_scale, wt_scale, out_scale = 1 / 32, 1 / 1024, 1 / 16384, 1 / 16
    x = g.add_input("x", (batch, n_input), np.int8 if kind == "int8" else np.float32,
                    quantization=quantization(in_scale, -3) if kind == "int8" else None)
    wf, _ = ops.weight((filters, n_input), 1.0 / np.sqrt(n_input))
    wt_real = (rng.standard_normal((filters, memory)) * 0.5).astype(np.float32)
    if kind == "int8":
        wt = g.add_constant("wt", np.clip(np.round(wt_real / wt_scale), -32768, 32767).astype(np.int16),
                            quantization=quantization(wt_scale))
        b_real = rng.standard_normal(units) * 0.3
        b = g.add_constant("b", np.round(b_real / (state_scale * wt_scale)).astype(np.int32),
                           quantization=quantization(state_scale * wt_scale)) if bias else NO
        state = g.add_tensor("state", (batch, filters * memory), np.int16, quantization=quantization(state_scale),
                             is_variable=True)
        y = g.add_tensor("y", (batch, units), np.int8, quantization=quantization(out_scale, 2))
    else:
        wt = ops.weight((filters, memory), 0.5)[0]
        b = ops.vector(units, 0.3) if bias else NO
        state = g.add_tensor("state", (batch, filters * memory), np.float32, is_variable=True)
        y = g.add_tensor("y", (batch, units), np.float32)
    opts = O.SVDFOptions(rank=rank, fused_activation_function=act, asymmetric_quantize_inputs=asymmetric)
    g.add_op("SVDF", [x, wf, wt, b, state], [y], opts)
    g.mark_outputs(y)
    return mb.build()


#: (batch, n_input, units, rank, memory)
SVDF_SIZES = [(1, 4, 3, 1, 4), (2, 6, 4, 2, 3), (3, 5, 2, 3, 6), (2, 10, 5, 1, 1)]


@pytest.mark.parametrize("kind", ["float", "hybrid", "int8"])
@pytest.mark.parametrize("sizes", SVDF_SIZES, ids=lambda s: "x".join(map(str, s)))
def test_svdf(backend: str, sizes: tuple[int, ...], kind: str) -> None:
    seed = SVDF_SIZES.index(sizes)
    act = ir.Activation.RELU if kind == "int8" or seed % 2 else ir.Activation.NONE
    model = svdf_model(kind, *sizes, act, bias=seed != 2, asymmetric=kind == "hybrid" and seed % 2 == 1, seed=seed)
    check_invokes(model, backend, invokes=4, seed=seed)


@pytest.mark.parametrize("kind", ["float", "hybrid"])
@pytest.mark.parametrize("act", [ir.Activation.TANH, ir.Activation.RELU6, ir.Activation.SIGN_BIT],
                         ids=lambda a: a.name)
def test_svdf_activations(backend: str, act: ir.Activation, kind: str) -> None:
    check_invokes(svdf_model(kind, 2, 5, 3, 2, 4, act, seed=9), backend, seed=9)


# -- hybrid: float activations through int8 weights, over invokes ----------------------------------

HYBRID_CASES = [
    ("lstm", lambda: lstm_model("UNIDIRECTIONAL_SEQUENCE_LSTM", "hybrid", 3, 4, 7, 5, 5, peephole=True, seed=31)),
    ("lstm-ln-batch-major", lambda: lstm_model("UNIDIRECTIONAL_SEQUENCE_LSTM", "hybrid", 2, 3, 9, 6, 3, cifg=True,
                                               projection=True, layer_norm=True, asymmetric=True, seed=32)),
    ("lstm-time-major", lambda: lstm_model("UNIDIRECTIONAL_SEQUENCE_LSTM", "hybrid", 3, 3, 5, 7, 7, time_major=True,
                                           asymmetric=True, seed=33)),
    ("bidi", lambda: bidi_model("hybrid", 2, 3, 6, 5, 5, merge=False, time_major=True, aux="cross", seed=34)),
    ("rnn", lambda: rnn_model("UNIDIRECTIONAL_SEQUENCE_RNN", "hybrid", 3, 4, 10, 7, ir.Activation.TANH, seed=35)),
    ("svdf", lambda: svdf_model("hybrid", 3, 9, 5, 2, 6, ir.Activation.NONE, asymmetric=True, seed=36)),
]

#: The hybrid kernels' tolerance, from their arithmetic. Per step, the float input and state are
#: quantized to int8 (scale max|x| / 127), multiplied by int8 weights in int32 (exact: the integer
#: part of the computation is bit-exact whatever the libm), and scaled back; the float rest (gate
#: sums, sigmoid/tanh, cell update, layer norm) differs between libms by a few ulp, |d| <= 4 * 2^-24
#: relative per op. Through T <= 5 steps of ~6 float ops each, with gains <= 1 (sigmoid' <= 1/4,
#: tanh' <= 1, the forget gate < 1) but the output projection's and layer norm's up to ~10, that is
#: <= 5 * 6 * 10 * 4 * 2^-24 ~= 7e-5 relative per element in the worst case, and ~1e-6 in L2 on
#: random signs, so: relative L2 1e-5, per element 1e-4. One case the bound cannot cover: a few-ulp
#: difference that moves a value across an int8 rounding boundary (probability ~127 * 2^-22 ~= 3e-5
#: per quantized value, ~1% for a case's few hundred) changes that step by a whole quantization
#: level; the kernels reproduce Eigen's and glibc's arithmetic step for step so that it does not
#: happen on x86 (these cases currently match bit for bit), and the fixed seeds keep it reproducible.
HYBRID_TOL, HYBRID_ELEM_TOL = 1e-5, 1e-4


@pytest.mark.parametrize("case", HYBRID_CASES, ids=lambda c: c[0])
def test_hybrid_over_invokes(backend: str, case: tuple) -> None:
    """Hybrid LSTM / bidirectional LSTM / RNN / SVDF over four invokes: each step's float results
    decide the next step's input quantization, so an error would compound; it must stay within the
    bound argued above (integer outputs, had the case any, stay bit-exact: ``assert_close``)."""
    check_invokes(case[1](), backend, invokes=4, seed=1, float_tol=HYBRID_TOL, elem_tol=HYBRID_ELEM_TOL)


# -- a converter-made model -------------------------------------------------------------------------

CONVERTED_LSTM = Path(__file__).parents[1] / "fixtures" / "tflite" / "lstm_int8.tflite"


def test_converted_int8_lstm(backend: str) -> None:
    """A Keras LSTM the TFLite converter quantized to full integer (``make_lstm_int8.py``): the
    8x8->16 UNIDIRECTIONAL_SEQUENCE_LSTM with the converter's unquantized gate intermediates (LiteRT
    reads them only with layer norm), bit-exact with LiteRT over three invokes, states included."""
    model = CONVERTED_LSTM.read_bytes()
    g = read_model(model).main
    (op,) = g.operations
    assert op.name == "UNIDIRECTIONAL_SEQUENCE_LSTM" and len(op.intermediates) == 5
    assert [g.tensors[i].quantization is None for i in op.intermediates] == [True] * 4 + [False]
    h, c = (g.tensors[op.inputs[k]].name for k in (18, 19))
    for seed in range(3):
        check_invokes(model, backend, seed=seed, states=(h, c), refuses=())
