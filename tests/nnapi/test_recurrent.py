"""The recurrent operations from the spec's text: LSTM (23 and 27 inputs), UNIDIRECTIONAL_SEQUENCE_LSTM,
BIDIRECTIONAL_SEQUENCE_LSTM, QUANTIZED_LSTM, QUANTIZED_16BIT_LSTM, RNN, UNIDIRECTIONAL_SEQUENCE_RNN,
BIDIRECTIONAL_SEQUENCE_RNN and SVDF, in float32 and float16 (and their quantized types).

The twins are LiteRT's reference kernels on the same cell: TFLite's recurrent ops keep their states in
variable tensors, so the twin's variables are set to the NNAPI state inputs before the invoke and read
back after it as the expected state outputs. Where TFLite computes something else (the LSTM
activations NONE and sigmoid, layer norm in the bidirectional LSTM) a NumPy LSTM written here from the
spec's equations is the reference. QUANTIZED_16BIT_LSTM's twin is TFLite's quantized basic LSTM
kernel (one uint8 fully connected layer over [input, previous output], weights concatenated by gate:
input, cell, forget, output; each gate's row is [recurrent weights | input weights], as Android's
reference lays it out, so the input meets the first columns of the recurrent weights).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
from ai_edge_litert.interpreter import OpResolverType

from teflon_py import ir
from teflon_py.nnapi import NNAPIError, OperationType, ResultCode
from teflon_py.nnapi import OperandType as T
from teflon_py.tflite import options as O
from tests.harness import ModelBuilder, quantization
from tests.nnapi.harness import Spec, check_vs

Op = OperationType
NO = ir.NO_TENSOR
F32, F16 = T.TENSOR_FLOAT32, T.TENSOR_FLOAT16
TOL = {F32: 1e-5, F16: 3e-3}


# -- twins and references ----------------------------------------------------------------------------

def litert(model: bytes, inputs: Sequence[np.ndarray], states: dict[str, np.ndarray]
           ) -> tuple[list[np.ndarray], dict[str, np.ndarray]]:
    """LiteRT's reference kernels on ``model`` with its variable tensors set to ``states`` (by name):
    the outputs, and the variables after the invoke."""
    it = LiteRTInterpreter(model_content=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    it.allocate_tensors()
    index = {d["name"]: d["index"] for d in it.get_tensor_details()}
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    for name, v in states.items():
        it.set_tensor(index[name], v)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()], {n: it.get_tensor(index[n]) for n in states}


def as_type(t: T, a: np.ndarray) -> np.ndarray:
    """A float array in the test's type: float16 values are rounded once, and both sides use them."""
    return np.asarray(a, np.float16 if t == F16 else np.float32)


def wide(a: np.ndarray | None) -> np.ndarray | None:
    return None if a is None else np.asarray(a, np.float32)


def lstm_arrays(rng: np.random.Generator, t: T, n_in: int, n_cell: int, n_out: int, *, cifg: bool = False,
                peephole: bool = False, projection: bool = False, proj_bias: bool = False, layer_norm: bool = False,
                n_aux: int = 0) -> tuple[list, list, list]:
    """One direction's 17 weight operands in NNAPI's order, its 4 layer-norm weights and its 4 auxiliary
    weights (None: omitted)."""
    w: list[np.ndarray | None] = [None] * 17
    ln: list[np.ndarray | None] = [None] * 4
    aux: list[np.ndarray | None] = [None] * 4
    for k, g in enumerate("ifco"):
        if cifg and g == "i":
            continue
        w[k] = rng.standard_normal((n_cell, n_in)) / np.sqrt(n_in)
        w[4 + k] = rng.standard_normal((n_cell, n_out)) / np.sqrt(n_out)
        w[11 + k] = rng.standard_normal(n_cell) * 0.5 + (1.0 if g == "f" else 0.0)
        if layer_norm:
            ln[k] = 1.0 + rng.standard_normal(n_cell) * 0.2
        if n_aux:
            aux[k] = rng.standard_normal((n_cell, n_aux)) / np.sqrt(n_aux)
        if peephole and k < 3:
            w[8 + k] = rng.standard_normal(n_cell) * 0.5
    if peephole and cifg:
        w[8] = None
    if projection:
        w[15] = rng.standard_normal((n_out, n_cell)) / np.sqrt(n_cell)
        if proj_bias:
            w[16] = rng.standard_normal(n_out) * 0.2
    return ([None if a is None else as_type(t, a) for a in w], [None if a is None else as_type(t, a) for a in ln],
            [None if a is None else as_type(t, a) for a in aux])


def reference_lstm(x: np.ndarray, w: list, ln: list, h: np.ndarray, c: np.ndarray, act: str,
                   cell_clip: float = 0.0, proj_clip: float = 0.0, aux: np.ndarray | None = None,
                   aux_w: list | None = None, reverse: bool = False) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The spec's LSTM equations in float64 over time-major ``x``: (outputs, h, c)."""
    g_ = {"none": lambda v: v, "relu": lambda v: np.maximum(v, 0), "relu6": lambda v: np.clip(v, 0, 6),
          "tanh": np.tanh, "sigmoid": lambda v: 1 / (1 + np.exp(-v))}[act]
    sigma = {"i": lambda v: 1 / (1 + np.exp(-v)), "f": lambda v: 1 / (1 + np.exp(-v)),
             "o": lambda v: 1 / (1 + np.exp(-v)), "c": g_}
    f64 = [None if a is None else np.asarray(a, np.float64) for a in w]
    h, c = np.asarray(h, np.float64), np.asarray(c, np.float64)
    outs = np.zeros((x.shape[0], x.shape[1], h.shape[1]))
    for step in (range(x.shape[0] - 1, -1, -1) if reverse else range(x.shape[0])):
        gate = {}
        for k, g in enumerate("ifco"):
            if f64[k] is None:
                continue
            if g == "o":
                c = _cell_update(gate, c, cell_clip)
            acc = x[step] @ f64[k].T + h @ f64[4 + k].T
            if aux_w is not None and aux_w[k] is not None:
                acc = acc + aux[step] @ np.asarray(aux_w[k], np.float64).T
            if g != "c" and f64[8 + "ifo".index(g)] is not None:
                acc = acc + f64[8 + "ifo".index(g)] * c
            if ln[k] is not None:
                acc = (acc - acc.mean(-1, keepdims=True)) / np.sqrt(acc.var(-1, keepdims=True) + 1e-8) * ln[k]
            gate[g] = sigma[g](acc + f64[11 + k])
        hidden = gate["o"] * g_(c)
        if f64[15] is not None:
            hidden = hidden @ f64[15].T + (0 if f64[16] is None else f64[16])
            hidden = np.clip(hidden, -proj_clip, proj_clip) if proj_clip else hidden
        h = outs[step] = hidden
    return outs, h, c


def _cell_update(gate: dict, c: np.ndarray, clip: float) -> np.ndarray:
    i = gate.get("i", 1 - gate["f"])
    c = gate["f"] * c + i * gate["c"]
    return np.clip(c, -clip, clip) if clip else c


def nn_weights(s: Spec, t: T, arrays: Sequence[np.ndarray | None]) -> list[int]:
    return [s.omitted(t) if a is None else s.const(t, a) for a in arrays]


def tfl_weights(g: Any, arrays: Sequence[np.ndarray | None], prefix: str) -> list[int]:
    return [NO if a is None else g.add_constant(f"{prefix}{k}", np.asarray(a, np.float32))
            for k, a in enumerate(arrays)]


def expect(t: T, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
    return [np.asarray(a, np.float16 if t == F16 else np.float32) for a in arrays]


def clip_scalar(s: Spec, t: T, value: float) -> int:
    return s.scalar(T.FLOAT16 if t == F16 else T.FLOAT32, value)


#: the LSTM activations whose TFLite twin computes NNAPI's cell (NONE: LiteRT multiplies the output gate
#: with the cell gate instead of the cell state)
TFL_ACT = {"relu": ir.Activation.RELU, "relu6": ir.Activation.RELU6, "tanh": ir.Activation.TANH}
NN_ACT = {"none": 0, "relu": 1, "relu6": 3, "tanh": 4, "sigmoid": 6}

#: (flags, activation, cell clip, projection clip); NONE and sigmoid against the NumPy reference
LSTM_VARIANTS = {
    "plain": ({}, "tanh", 0.0, 0.0),
    "cifg_peephole_projection": ({"cifg": True, "peephole": True, "projection": True}, "tanh", 0.0, 0.0),
    "layer_norm_peephole": ({"layer_norm": True, "peephole": True}, "relu6", 0.0, 0.0),
    "clips_projection_bias": ({"projection": True, "proj_bias": True}, "tanh", 0.4, 0.3),
    "cifg_layer_norm": ({"cifg": True, "layer_norm": True, "projection": True}, "relu", 0.0, 0.0),
    "activation_none": ({"peephole": True}, "none", 0.0, 0.0),
    "activation_sigmoid": ({"cifg": True, "projection": True}, "sigmoid", 0.6, 0.0),
}


# -- LSTM ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("t", [F32, F16], ids=["float32", "float16"])
@pytest.mark.parametrize("variant", list(LSTM_VARIANTS))
def test_lstm(backend: str, variant: str, t: T) -> None:
    flags, act, cell_clip, proj_clip = LSTM_VARIANTS[variant]
    rng = np.random.default_rng(list(LSTM_VARIANTS).index(variant))
    batch, n_in, n_cell = 2, 3, 4
    n_out = 3 if flags.get("projection") else n_cell
    w, ln, _ = lstm_arrays(rng, t, n_in, n_cell, n_out, **flags)
    layer_norm = flags.get("layer_norm", False)
    x, h, c = (as_type(t, rng.standard_normal(shape)) for shape in ((batch, n_in), (batch, n_out), (batch, n_cell)))

    s = Spec()
    xi, hi, ci = s.input(t, [batch, n_in]), s.input(t, [batch, n_out]), s.input(t, [batch, n_cell])
    ins = [xi, *nn_weights(s, t, w), hi, ci, s.i32(NN_ACT[act]), clip_scalar(s, t, cell_clip),
           clip_scalar(s, t, proj_clip)]
    if layer_norm:
        ins += nn_weights(s, t, ln)
    gates = 3 if flags.get("cifg") else 4
    outs = [s.output(t, [batch, n_cell * gates]), s.output(t, [batch, n_out]), s.output(t, [batch, n_cell]),
            s.output(t, [batch, n_out])]
    s.op(Op.LSTM, ins, outs)
    model = s.model()

    if act in TFL_ACT:
        mb = ModelBuilder()
        g = mb.main
        tx = g.add_input("x", (batch, n_in), np.float32)
        th = g.add_tensor("h", (batch, n_out), np.float32, is_variable=True)
        tc = g.add_tensor("c", (batch, n_cell), np.float32, is_variable=True)
        ty = g.add_tensor("y", (batch, n_out), np.float32)
        g.add_op("LSTM", [tx, *tfl_weights(g, w, "w"), th, tc] + (tfl_weights(g, ln, "ln") if layer_norm else []),
                 [ty], O.LSTMOptions(fused_activation_function=TFL_ACT[act], cell_clip=cell_clip, proj_clip=proj_clip))
        g.mark_outputs(ty)
        (y,), st = litert(mb.build(), [wide(x)], {"h": wide(h), "c": wide(c)})
        new_h, new_c = st["h"], st["c"]
    else:
        ys, new_h, new_c = reference_lstm(wide(x)[None], w, ln, wide(h), wide(c), act, cell_clip, proj_clip)
        y = ys[0]
    # the scratch buffer's contents are not specified (Android's tests ignore it): ours is zeros
    expected = expect(t, [np.zeros((batch, n_cell * gates)), new_h, new_c, y])
    check_vs(model, [x, h, c], expected, backend, float_tol=TOL[t] * (10 if act not in TFL_ACT else 1))


# -- UNIDIRECTIONAL_SEQUENCE_LSTM ------------------------------------------------------------------------

@pytest.mark.parametrize("t", [F32, F16], ids=["float32", "float16"])
@pytest.mark.parametrize("case", ["batch_major", "time_major_states", "layer_norm_projection_states"])
def test_unidirectional_sequence_lstm(backend: str, case: str, t: T) -> None:
    rng = np.random.default_rng(len(case))
    time_major = case != "batch_major"
    states = case.endswith("states")
    flags = {"layer_norm": True, "projection": True, "peephole": True} if case.startswith("layer_norm") else {}
    batch, time, n_in, n_cell = 2, 3, 4, 5
    n_out = 3 if flags.get("projection") else n_cell
    w, ln, _ = lstm_arrays(rng, t, n_in, n_cell, n_out, **flags)
    x_shape = (time, batch, n_in) if time_major else (batch, time, n_in)
    x, h, c = (as_type(t, rng.standard_normal(shape)) for shape in (x_shape, (batch, n_out), (batch, n_cell)))
    y_shape = [*x_shape[:2], n_out]

    s = Spec()
    xi, hi, ci = s.input(t, x_shape), s.input(t, [batch, n_out]), s.input(t, [batch, n_cell])
    ins = [xi, *nn_weights(s, t, w), hi, ci, s.i32(4), clip_scalar(s, t, 0.0), clip_scalar(s, t, 0.0),
           s.boolean(time_major), *nn_weights(s, t, ln)]
    outs = [s.output(t, y_shape)] + ([s.output(t, [batch, n_out]), s.output(t, [batch, n_cell])] if states else [])
    s.op(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, outs)
    model = s.model()

    mb = ModelBuilder()
    g = mb.main
    tx = g.add_input("x", x_shape, np.float32)
    th = g.add_tensor("h", (batch, n_out), np.float32, is_variable=True)
    tc = g.add_tensor("c", (batch, n_cell), np.float32, is_variable=True)
    ty = g.add_tensor("y", y_shape, np.float32)
    g.add_op("UNIDIRECTIONAL_SEQUENCE_LSTM", [tx, *tfl_weights(g, w, "w"), th, tc, *tfl_weights(g, ln, "ln")], [ty],
             O.UnidirectionalSequenceLSTMOptions(fused_activation_function=ir.Activation.TANH, time_major=time_major))
    g.mark_outputs(ty)
    (y,), st = litert(mb.build(), [wide(x)], {"h": wide(h), "c": wide(c)})
    check_vs(model, [x, h, c], expect(t, [y] + ([st["h"], st["c"]] if states else [])), backend, float_tol=TOL[t])


# -- BIDIRECTIONAL_SEQUENCE_LSTM -------------------------------------------------------------------------

#: (merge_outputs, time_major, aux: none / parallel / cross, state outputs, layer norm)
BIDI_LSTM_CASES = [
    (False, True, "none", False, False),
    (True, False, "cross", True, False),
    (False, False, "parallel", True, False),
    (True, True, "none", False, True),
]


@pytest.mark.parametrize("t", [F32, F16], ids=["float32", "float16"])
@pytest.mark.parametrize("case", BIDI_LSTM_CASES, ids=lambda c: f"merge{int(c[0])}-tm{int(c[1])}-{c[2]}"
                         f"{'-states' if c[3] else ''}{'-ln' if c[4] else ''}")
def test_bidirectional_sequence_lstm(backend: str, case: tuple, t: T) -> None:
    merge, time_major, aux_mode, states, layer_norm = case
    rng = np.random.default_rng(BIDI_LSTM_CASES.index(case) + 40)
    batch, time, n_in, n_aux = 2, 3, 4, 3
    n_aux = n_in if aux_mode == "parallel" else n_aux
    fw_cell, fw_out, bw_cell = 5, 3, 5  # LiteRT's twin needs one num_units for both directions
    fw, fw_ln, fw_aux = lstm_arrays(rng, t, n_in, fw_cell, fw_out, projection=True, peephole=True,
                                    layer_norm=layer_norm, n_aux=n_aux if aux_mode == "cross" else 0)
    # LiteRT's twin needs one output size for both directions; the NumPy reference (layer norm) does not
    bw_out = bw_cell if layer_norm else fw_out
    bw, bw_ln, bw_aux = lstm_arrays(rng, t, n_in, bw_cell, bw_out, cifg=True, layer_norm=layer_norm,
                                    projection=not layer_norm, n_aux=n_aux if aux_mode == "cross" else 0)
    seq = (lambda n: (time, batch, n)) if time_major else (lambda n: (batch, time, n))
    x = as_type(t, rng.standard_normal(seq(n_in)))
    aux = as_type(t, rng.standard_normal(seq(n_aux))) if aux_mode != "none" else None
    st = [as_type(t, rng.standard_normal((batch, n))) for n in (fw_out, fw_cell, bw_out, bw_cell)]

    s = Spec()
    xi = s.input(t, seq(n_in))
    w_ops = nn_weights(s, t, fw) + nn_weights(s, t, bw)
    st_ops = [s.input(t, a.shape) for a in st]
    aux_op = s.input(t, seq(n_aux)) if aux is not None else s.omitted(t)
    ins = [xi, *w_ops, *st_ops, aux_op, *nn_weights(s, t, fw_aux), *nn_weights(s, t, bw_aux), s.i32(4),
           clip_scalar(s, t, 0.0), clip_scalar(s, t, 0.0), s.boolean(merge), s.boolean(time_major),
           *nn_weights(s, t, fw_ln), *nn_weights(s, t, bw_ln)]
    outs = [s.output(t, seq(fw_out + bw_out if merge else fw_out))] + ([] if merge else [s.output(t, seq(bw_out))])
    if states:
        outs += [s.output(t, a.shape) for a in st]
    s.op(Op.BIDIRECTIONAL_SEQUENCE_LSTM, ins, outs)
    model = s.model()

    tm = (lambda a: a) if time_major else (lambda a: None if a is None else np.swapaxes(a, 0, 1))
    xs, auxs = tm(wide(x)), tm(wide(aux))
    if not layer_norm:  # the twin: LiteRT's (time-major, so that merged batch-major outputs are well defined)
        mb = ModelBuilder()
        g = mb.main
        tx = g.add_input("x", xs.shape, np.float32)
        ta = g.add_input("aux", auxs.shape, np.float32) if aux is not None else NO
        names = ["fw_h", "fw_c", "bw_h", "bw_c"]
        tst = [g.add_tensor(n, a.shape, np.float32, is_variable=True) for n, a in zip(names, st)]
        ty = [g.add_tensor("fw_y", (time, batch, fw_out), np.float32), g.add_tensor("bw_y", (time, batch, bw_out),
                                                                                     np.float32)]
        g.add_op("BIDIRECTIONAL_SEQUENCE_LSTM", [tx, *tfl_weights(g, fw, "fw"), *tfl_weights(g, bw, "bw"), *tst, ta,
                                                 *tfl_weights(g, fw_aux, "fa"), *tfl_weights(g, bw_aux, "ba")], ty,
                 O.BidirectionalSequenceLSTMOptions(fused_activation_function=ir.Activation.TANH, time_major=True))
        g.mark_outputs(*ty)
        (fy, by), after = litert(mb.build(), [xs] + ([auxs] if aux is not None else []),
                                 dict(zip(names, map(wide, st))))
        new_states = [after[n] for n in names]
    else:
        fy, fh, fc = reference_lstm(xs, fw, fw_ln, wide(st[0]), wide(st[1]), "tanh")
        by, bh, bc = reference_lstm(xs, bw, bw_ln, wide(st[2]), wide(st[3]), "tanh", reverse=True)
        new_states = [fh, fc, bh, bc]
    ys = [np.concatenate([fy, by], axis=-1)] if merge else [fy, by]
    expected = [tm(y) for y in ys] + (new_states if states else [])
    inputs = [x, *st] + ([aux] if aux is not None else [])
    check_vs(model, inputs, expect(t, expected), backend, float_tol=TOL[t] * (1 if not layer_norm else 10))


# -- QUANTIZED_LSTM ----------------------------------------------------------------------------------------

IN_Q, STATE_Q, CELL_SCALE, HIDDEN_Q = (1 / 32, 3), (1 / 64, -2), 2.0 ** -11, (1 / 128, 1)


def omitted_quant(s: Spec, t: T) -> int:
    """An omitted operand of a quantized type (which needs a scale even without a value)."""
    i = s.m.add_operand(t, None, 0.0 if t == T.TENSOR_INT32 else 1.0, 0)
    s.m.set_operand_value(i, None)
    return i


def int8_weight(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[np.ndarray, float]:
    real = rng.standard_normal(shape) / np.sqrt(shape[-1])
    scale = float(np.abs(real).max()) / 127
    return np.clip(np.round(real / scale), -127, 127).astype(np.int8), scale


@pytest.mark.parametrize("variant", ["layer_norm_projection_peephole", "plain", "cifg_layer_norm_clips"])
def test_quantized_lstm(backend: str, variant: str) -> None:
    """Bit-exact with LiteRT's integer (8x8->16) LSTM; its five intermediates carry the gate scales
    (without layer norm LiteRT's gates are always 2^-12, so the test passes that) and the hidden state."""
    rng = np.random.default_rng(len(variant))
    layer_norm = "layer_norm" in variant
    projection = "projection" in variant
    cifg, peephole = "cifg" in variant, "peephole" in variant
    cell_clip, proj_clip = (0.9, 0.0) if "clips" in variant else (0.0, 0.0)
    batch, n_in, n_cell = 2, 5, 4
    n_out = 3 if projection else n_cell
    gate_scale = 2.0 ** -11 if layer_norm else 2.0 ** -12
    ops: list[tuple | None] = [None] * 17  # (type, array, scale)
    ln: list[tuple | None] = [None] * 4
    for k, g in enumerate("ifco"):
        if cifg and g == "i":
            continue
        wx, sx = int8_weight(rng, (n_cell, n_in))
        wh, sh = int8_weight(rng, (n_cell, n_out))
        ops[k], ops[4 + k] = (T.TENSOR_QUANT8_SYMM, wx, sx), (T.TENSOR_QUANT8_SYMM, wh, sh)
        bias_scale = (1 / 16384) / 1024 if layer_norm else IN_Q[0] * sx
        real_bias = rng.standard_normal(n_cell) * 0.5 + (1.0 if g == "f" else 0.0)
        ops[11 + k] = (T.TENSOR_INT32, np.round(real_bias / bias_scale).astype(np.int32), bias_scale)
        if layer_norm:
            ln[k] = (T.TENSOR_QUANT16_SYMM, np.round((1 + rng.standard_normal(n_cell) * 0.2) * 16384)
                     .astype(np.int16), 1 / 16384)
        if peephole and k < 3:
            ops[8 + k] = (T.TENSOR_QUANT16_SYMM, np.round(rng.standard_normal(n_cell) * 0.5 * 16384)
                          .astype(np.int16), 1 / 16384)
    if projection:
        pw, ps = int8_weight(rng, (n_out, n_cell))
        ops[15] = (T.TENSOR_QUANT8_SYMM, pw, ps)
        ops[16] = (T.TENSOR_INT32, np.round(rng.standard_normal(n_out) * 0.2 / (HIDDEN_Q[0] * ps)).astype(np.int32),
                   HIDDEN_Q[0] * ps)
    x = rng.integers(-128, 128, (batch, n_in)).astype(np.int8)
    h = rng.integers(-100, 100, (batch, n_out)).astype(np.int8)
    c = rng.integers(-4000, 4000, (batch, n_cell)).astype(np.int16)

    s = Spec()
    q8s, q16 = T.TENSOR_QUANT8_ASYMM_SIGNED, T.TENSOR_QUANT16_SYMM
    xi = s.input(q8s, [batch, n_in], *IN_Q)
    hi, ci = s.input(q8s, [batch, n_out], *STATE_Q), s.input(q16, [batch, n_cell], CELL_SCALE, 0)
    types = [T.TENSOR_QUANT8_SYMM] * 8 + [q16] * 3 + [T.TENSOR_INT32] * 4 + [T.TENSOR_QUANT8_SYMM, T.TENSOR_INT32]
    w_ops = [omitted_quant(s, types[k]) if o is None else s.const(o[0], o[1], scale=o[2]) for k, o in enumerate(ops)]
    ln_ops = [omitted_quant(s, q16) if o is None else s.const(o[0], o[1], scale=o[2]) for o in ln]
    ins = [xi, *w_ops, hi, ci, *ln_ops, s.f32(cell_clip), s.f32(proj_clip), *[s.f32(gate_scale)] * 4,
           s.i32(HIDDEN_Q[1]), s.f32(HIDDEN_Q[0])]
    outs = [s.output(q8s, [batch, n_out], *STATE_Q), s.output(q16, [batch, n_cell], CELL_SCALE, 0),
            s.output(q8s, [batch, n_out], *STATE_Q)]
    s.op(Op.QUANTIZED_LSTM, ins, outs)
    model = s.model()

    mb = ModelBuilder()
    g = mb.main
    tx = g.add_input("x", (batch, n_in), np.int8, quantization=quantization(*IN_Q))
    tw = [NO if o is None else g.add_constant(f"w{k}", o[1], quantization=quantization(o[2]))
          for k, o in enumerate(ops)]
    tl = [NO if o is None else g.add_constant(f"ln{k}", o[1], quantization=quantization(o[2])) for k, o in enumerate(ln)]
    th = g.add_tensor("h", (batch, n_out), np.int8, quantization=quantization(*STATE_Q), is_variable=True)
    tc = g.add_tensor("c", (batch, n_cell), np.int16, quantization=quantization(CELL_SCALE), is_variable=True)
    ty = g.add_tensor("y", (batch, n_out), np.int8, quantization=quantization(*STATE_Q))
    inter = [g.add_tensor(f"inter{k}", (), np.int16 if k < 4 else np.int8,
                          quantization=quantization(gate_scale, 0) if k < 4 else quantization(*HIDDEN_Q))
             for k in range(5)]
    g.add_op("LSTM", [tx, *tw, th, tc, *tl], [ty],
             O.LSTMOptions(fused_activation_function=ir.Activation.TANH, cell_clip=cell_clip, proj_clip=proj_clip),
             intermediates=inter)
    g.mark_outputs(ty)
    (y,), st = litert(mb.build(), [x], {"h": h, "c": c})
    check_vs(model, [x, h, c], [st["h"], st["c"], y], backend)


# -- QUANTIZED_16BIT_LSTM --------------------------------------------------------------------------------

@pytest.mark.parametrize("sizes", [(2, 3, 4), (1, 5, 2)], ids=lambda s: "x".join(map(str, s)))
def test_quantized_16bit_lstm(backend: str, sizes: tuple[int, int, int]) -> None:
    batch, n_in, n_out = sizes
    rng = np.random.default_rng(n_in)
    w_scale, w_zp = 0.02, 120
    wx = [rng.integers(0, 256, (n_out, n_in)).astype(np.uint8) for _ in range(4)]  # i, f, c, o
    wh = [rng.integers(0, 256, (n_out, n_out)).astype(np.uint8) for _ in range(4)]
    bias = [rng.integers(-3000, 3000, n_out).astype(np.int32) for _ in range(4)]
    x = rng.integers(0, 256, (batch, n_in)).astype(np.uint8)
    h = rng.integers(0, 256, (batch, n_out)).astype(np.uint8)
    c = rng.integers(-20000, 20000, (batch, n_out)).astype(np.int16)
    u8, q16 = T.TENSOR_QUANT8_ASYMM, T.TENSOR_QUANT16_SYMM

    s = Spec()
    xi = s.input(u8, [batch, n_in], 1 / 128, 128)
    ws = [s.const(u8, a, scale=w_scale, zero_point=w_zp) for a in wx + wh]
    bs = [s.const(T.TENSOR_INT32, b, scale=w_scale / 128) for b in bias]
    ci, hi = s.input(q16, [batch, n_out], 2.0 ** -11, 0), s.input(u8, [batch, n_out], 1 / 128, 128)
    outs = [s.output(q16, [batch, n_out], 2.0 ** -11, 0), s.output(u8, [batch, n_out], 1 / 128, 128)]
    s.op(Op.QUANTIZED_16BIT_LSTM, [xi, *ws, *bs, ci, hi], outs)
    model = s.model()

    order = (0, 2, 1, 3)  # TFLite's basic cell: input gate, cell (input modulation), forget, output
    # Android's QuantizedLSTM.cpp (and the CTS): [recurrent | input] columns against [x, h]
    weights = np.concatenate([np.concatenate([wh[k], wx[k]], axis=1) for k in order])
    mb = ModelBuilder()
    g = mb.main
    aq, cq = quantization(1 / 128, 128), quantization(2.0 ** -11, 0)
    tx, th = g.add_input("x", (batch, n_in), np.uint8, quantization=aq), g.add_input("h", (batch, n_out), np.uint8,
                                                                                      quantization=aq)
    tw = g.add_constant("w", weights, quantization=quantization(w_scale, w_zp))
    tb = g.add_constant("b", np.concatenate([bias[k] for k in order]), quantization=quantization(w_scale / 128))
    tc = g.add_input("c", (batch, n_out), np.int16, quantization=cq)
    outs_t = [g.add_tensor("ho", (batch, n_out), np.uint8, quantization=aq),
              g.add_tensor("co", (batch, n_out), np.int16, quantization=cq),
              g.add_tensor("concat", (batch, n_in + n_out), np.uint8, quantization=aq),
              g.add_tensor("activ", (batch, 4 * n_out), np.int16, quantization=quantization(2.0 ** -12))]
    g.add_op("LSTM", [tx, th, tw, tb, tc], outs_t, O.LSTMOptions(fused_activation_function=ir.Activation.TANH,
                                                                 kernel_type=1))
    g.mark_outputs(outs_t[0], outs_t[1])
    (ho, co), _ = litert(mb.build(), [x, h, c], {})
    check_vs(model, [x, c, h], [co, ho], backend)


# -- RNNs --------------------------------------------------------------------------------------------------

FUSE = {0: ir.Activation.NONE, 1: ir.Activation.RELU, 2: ir.Activation.RELU_N1_TO_1, 3: ir.Activation.RELU6}


def rnn_arrays(rng: np.random.Generator, t: T, n_in: int, units: int) -> list[np.ndarray]:
    return [as_type(t, a) for a in (rng.standard_normal((units, n_in)) / np.sqrt(n_in),
                                    rng.standard_normal((units, units)) * 0.8 / np.sqrt(units),
                                    rng.standard_normal(units) * 0.3)]


@pytest.mark.parametrize("t", [F32, F16], ids=["float32", "float16"])
@pytest.mark.parametrize("fuse", [0, 1, 2, 3])
def test_rnn(backend: str, fuse: int, t: T) -> None:
    rng = np.random.default_rng(fuse)
    batch, n_in, units = 2, 4, 3
    w = rnn_arrays(rng, t, n_in, units)
    x, h = as_type(t, rng.standard_normal((batch, n_in))), as_type(t, rng.standard_normal((batch, units)))
    s = Spec()
    xi, hi = s.input(t, [batch, n_in]), s.input(t, [batch, units])
    s.op(Op.RNN, [xi, *nn_weights(s, t, w), hi, s.i32(fuse)], [s.output(t, [batch, units]), s.output(t, [batch, units])])
    model = s.model()
    mb = ModelBuilder()
    g = mb.main
    tx, th = g.add_input("x", (batch, n_in), np.float32), g.add_tensor("h", (batch, units), np.float32, is_variable=True)
    ty = g.add_tensor("y", (batch, units), np.float32)
    g.add_op("RNN", [tx, *tfl_weights(g, w, "w"), th], [ty], O.RNNOptions(fused_activation_function=FUSE[fuse]))
    g.mark_outputs(ty)
    (y,), st = litert(mb.build(), [wide(x)], {"h": wide(h)})
    check_vs(model, [x, h], expect(t, [st["h"], y]), backend, float_tol=TOL[t])


@pytest.mark.parametrize("t", [F32, F16], ids=["float32", "float16"])
@pytest.mark.parametrize("time_major,states", [(0, False), (1, True), (0, True)])
def test_unidirectional_sequence_rnn(backend: str, time_major: int, states: bool, t: T) -> None:
    rng = np.random.default_rng(time_major + 2 * states)
    batch, time, n_in, units = 2, 3, 4, 5
    w = rnn_arrays(rng, t, n_in, units)
    x_shape = (time, batch, n_in) if time_major else (batch, time, n_in)
    x, h = as_type(t, rng.standard_normal(x_shape)), as_type(t, rng.standard_normal((batch, units)))
    s = Spec()
    xi, hi = s.input(t, x_shape), s.input(t, [batch, units])
    outs = [s.output(t, [*x_shape[:2], units])] + ([s.output(t, [batch, units])] if states else [])
    s.op(Op.UNIDIRECTIONAL_SEQUENCE_RNN, [xi, *nn_weights(s, t, w), hi, s.i32(0), s.i32(time_major)], outs)
    model = s.model()
    mb = ModelBuilder()
    g = mb.main
    tx, th = g.add_input("x", x_shape, np.float32), g.add_tensor("h", (batch, units), np.float32, is_variable=True)
    ty = g.add_tensor("y", (*x_shape[:2], units), np.float32)
    g.add_op("UNIDIRECTIONAL_SEQUENCE_RNN", [tx, *tfl_weights(g, w, "w"), th], [ty],
             O.SequenceRNNOptions(time_major=bool(time_major), fused_activation_function=ir.Activation.NONE))
    g.mark_outputs(ty)
    (y,), st = litert(mb.build(), [wide(x)], {"h": wide(h)})
    check_vs(model, [x, h], expect(t, [y] + ([st["h"]] if states else [])), backend, float_tol=TOL[t])


#: (merge_outputs, time_major, aux: none / parallel / cross, state outputs)
BIDI_RNN_CASES = [(False, True, "none", False), (True, False, "cross", True), (False, False, "parallel", True),
                  (True, True, "parallel", False)]


@pytest.mark.parametrize("t", [F32, F16], ids=["float32", "float16"])
@pytest.mark.parametrize("case", BIDI_RNN_CASES, ids=lambda c: f"merge{int(c[0])}-tm{int(c[1])}-{c[2]}"
                         f"{'-states' if c[3] else ''}")
def test_bidirectional_sequence_rnn(backend: str, case: tuple, t: T) -> None:
    """Against LiteRT's BIDIRECTIONAL_SEQUENCE_RNN, run time-major (its batch-major merged output is
    only well defined for batch 1)."""
    merge, time_major, aux_mode, states = case
    rng = np.random.default_rng(BIDI_RNN_CASES.index(case) + 60)
    batch, time, n_in, fw_units, bw_units = 2, 3, 4, 3, 5
    n_aux = n_in  # LiteRT's time-major kernel steps through the auxiliary input by the input size
    fw, bw = rnn_arrays(rng, t, n_in, fw_units), rnn_arrays(rng, t, n_in, bw_units)
    aux_w = [as_type(t, rng.standard_normal((u, n_aux)) * 0.5) for u in (fw_units, bw_units)] if aux_mode == "cross" \
        else [None, None]
    seq = (lambda n: (time, batch, n)) if time_major else (lambda n: (batch, time, n))
    x = as_type(t, rng.standard_normal(seq(n_in)))
    aux = as_type(t, rng.standard_normal(seq(n_aux))) if aux_mode != "none" else None
    hs = [as_type(t, rng.standard_normal((batch, u))) for u in (fw_units, bw_units)]

    s = Spec()
    xi = s.input(t, seq(n_in))
    fh, bh = s.input(t, [batch, fw_units]), s.input(t, [batch, bw_units])
    aux_op = s.input(t, seq(n_aux)) if aux is not None else s.omitted(t)
    ins = [xi, *nn_weights(s, t, fw), fh, *nn_weights(s, t, bw), bh, aux_op, *nn_weights(s, t, aux_w), s.i32(0),
           s.boolean(time_major), s.boolean(merge)]
    outs = [s.output(t, seq(fw_units + bw_units if merge else fw_units))]
    outs += [] if merge else [s.output(t, seq(bw_units))]
    outs += [s.output(t, [batch, fw_units]), s.output(t, [batch, bw_units])] if states else []
    s.op(Op.BIDIRECTIONAL_SEQUENCE_RNN, ins, outs)
    model = s.model()

    tm = (lambda a: a) if time_major else (lambda a: None if a is None else np.swapaxes(a, 0, 1))
    xs, auxs = tm(wide(x)), tm(wide(aux))
    mb = ModelBuilder()
    g = mb.main
    tx = g.add_input("x", xs.shape, np.float32)
    ta = g.add_input("aux", auxs.shape, np.float32) if aux is not None else NO
    tfh = g.add_tensor("fw_h", (batch, fw_units), np.float32, is_variable=True)
    tbh = g.add_tensor("bw_h", (batch, bw_units), np.float32, is_variable=True)
    ty = [g.add_tensor("fw_y", (time, batch, fw_units), np.float32),
          g.add_tensor("bw_y", (time, batch, bw_units), np.float32)]
    g.add_op("BIDIRECTIONAL_SEQUENCE_RNN", [tx, *tfl_weights(g, fw, "fw"), tfh, *tfl_weights(g, bw, "bw"), tbh, ta,
                                            *tfl_weights(g, aux_w, "aux")], ty,
             O.BidirectionalSequenceRNNOptions(time_major=True, fused_activation_function=ir.Activation.NONE))
    g.mark_outputs(*ty)
    (fy, by), st = litert(mb.build(), [xs] + ([auxs] if aux is not None else []),
                          {"fw_h": wide(hs[0]), "bw_h": wide(hs[1])})
    ys = [np.concatenate([fy, by], axis=-1)] if merge else [fy, by]
    expected = [tm(y) for y in ys] + ([st["fw_h"], st["bw_h"]] if states else [])
    inputs = [x, *hs] + ([aux] if aux is not None else [])
    check_vs(model, inputs, expect(t, expected), backend, float_tol=TOL[t])


# -- SVDF -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("t", [F32, F16], ids=["float32", "float16"])
@pytest.mark.parametrize("sizes", [(2, 4, 3, 2, 4, 1, True), (1, 5, 2, 1, 3, 0, False), (3, 3, 2, 3, 1, 3, True)],
                         ids=["rank2-relu", "rank1-nobias", "rank3-memory1-relu6"])
def test_svdf(backend: str, sizes: tuple, t: T) -> None:
    """NNAPI's state is TFLite's one step later: the twin's state variable is the NNAPI state moved one
    slot to the right (its first slot, dropped by TFLite's shift, is anything), and the expected state
    output is the twin's new state moved one slot to the left with a zero appended."""
    batch, n_in, units, rank, memory, fuse, with_bias = sizes
    rng = np.random.default_rng(units * memory)
    filters = units * rank
    wf = as_type(t, rng.standard_normal((filters, n_in)) / np.sqrt(n_in))
    wt = as_type(t, rng.standard_normal((filters, memory)) * 0.5)
    bias = as_type(t, rng.standard_normal(units) * 0.3) if with_bias else None
    x = as_type(t, rng.standard_normal((batch, n_in)))
    state = as_type(t, rng.standard_normal((batch, filters * memory)))
    s = Spec()
    xi, si = s.input(t, [batch, n_in]), s.input(t, [batch, filters * memory])
    s.op(Op.SVDF, [xi, *nn_weights(s, t, [wf, wt, bias]), si, s.i32(rank), s.i32(fuse)],
         [s.output(t, [batch, filters * memory]), s.output(t, [batch, units])])
    model = s.model()
    mb = ModelBuilder()
    g = mb.main
    tx = g.add_input("x", (batch, n_in), np.float32)
    ts = g.add_tensor("state", (batch, filters * memory), np.float32, is_variable=True)
    ty = g.add_tensor("y", (batch, units), np.float32)
    g.add_op("SVDF", [tx, *tfl_weights(g, [wf, wt, bias], "w"), ts], [ty],
             O.SVDFOptions(rank=rank, fused_activation_function=FUSE[fuse]))
    g.mark_outputs(ty)
    s3 = wide(state).reshape(batch, filters, memory)
    twin_state = np.concatenate([np.full((batch, filters, 1), 7.0, np.float32), s3[:, :, :-1]], axis=2)
    (y,), st = litert(mb.build(), [wide(x)], {"state": twin_state.reshape(batch, -1)})
    after = st["state"].reshape(batch, filters, memory)
    new_state = np.concatenate([after[:, :, 1:], np.zeros((batch, filters, 1), np.float32)], axis=2)
    check_vs(model, [x, state], expect(t, [new_state.reshape(batch, -1), y]), backend, float_tol=TOL[t])


# -- the rules (BAD_DATA) ---------------------------------------------------------------------------------

def bad_data(s: Spec, inputs: Sequence[np.ndarray] | None = None) -> str:
    with pytest.raises(NNAPIError) as e:
        model = s.model()
        if inputs is not None:
            from tests.nnapi.harness import run
            run(model, inputs)
    assert e.value.code == ResultCode.BAD_DATA
    return str(e.value)


def _lstm_spec(drop: int | None = None, act: int = 4, n_out: int = 4) -> Spec:
    rng = np.random.default_rng(0)
    w, _, _ = lstm_arrays(rng, F32, 3, 4, 4)
    if drop is not None:
        w[drop] = None
    s = Spec()
    ins = [s.input(F32, [2, 3]), *nn_weights(s, F32, w), s.input(F32, [2, n_out]), s.input(F32, [2, 4]),
           s.i32(act), s.f32(0.0), s.f32(0.0)]
    s.op(Op.LSTM, ins, [s.output(F32, [2, 16]), s.output(F32, [2, 4]), s.output(F32, [2, 4]), s.output(F32, [2, 4])])
    return s


def test_lstm_rules() -> None:
    # CIFG: input-to-input, recurrent-to-input and input gate bias together or not at all
    assert "operation 0 (LSTM): input 1: the input-to-input and recurrent-to-input weights" in bad_data(_lstm_spec(4))
    assert "operation 0 (LSTM): input 20: activation 2 is not one of" in bad_data(_lstm_spec(act=2))
    assert "operation 0 (LSTM): input 18: the output state must have shape [2, 4]" in bad_data(_lstm_spec(n_out=3))


def test_lstm_signature_input_count() -> None:
    s = Spec()
    ins = [s.input(F32, [2, 3])] + [s.omitted(F32) for _ in range(19)] + [s.i32(4), s.f32(0.0), s.f32(0.0),
                                                                          s.omitted(F32)]
    with pytest.raises(NNAPIError) as e:
        s.op(Op.LSTM, ins, [s.output(F32, [2, 16]), s.output(F32, [2, 4]), s.output(F32, [2, 4]),
                            s.output(F32, [2, 4])])
    assert e.value.code == ResultCode.BAD_DATA
    assert "LSTM): takes 23 inputs (27 with layer normalization), got 24" in str(e.value)


def test_bidirectional_lstm_cross_linking_needs_input_gate_aux_weights() -> None:
    rng = np.random.default_rng(1)
    fw, _, fw_aux = lstm_arrays(rng, F32, 3, 4, 4, n_aux=2)
    bw, _, bw_aux = lstm_arrays(rng, F32, 3, 4, 4, n_aux=2)
    fw_aux[0] = None
    s = Spec()
    ins = [s.input(F32, [2, 1, 3]), *nn_weights(s, F32, fw + bw), *[s.input(F32, [1, 4]) for _ in range(4)],
           s.input(F32, [2, 1, 2]), *nn_weights(s, F32, fw_aux + bw_aux), s.i32(4), s.f32(0.0), s.f32(0.0),
           s.boolean(False), s.boolean(True), *[s.omitted(F32) for _ in range(8)]]
    s.op(Op.BIDIRECTIONAL_SEQUENCE_LSTM, ins, [s.output(F32, [2, 1, 4]), s.output(F32, [2, 1, 4])])
    assert ("operation 0 (BIDIRECTIONAL_SEQUENCE_LSTM): input 40: the auxiliary input-to-input weights are present "
            "exactly when the input gate is") in bad_data(s)


def test_bidirectional_rnn_output_count_follows_merge_outputs() -> None:
    rng = np.random.default_rng(0)
    s = Spec()
    ins = [s.input(F32, [3, 2, 4]), *nn_weights(s, F32, rnn_arrays(rng, F32, 4, 3)), s.input(F32, [2, 3]),
           *nn_weights(s, F32, rnn_arrays(rng, F32, 4, 3)), s.input(F32, [2, 3]), s.omitted(F32), s.omitted(F32),
           s.omitted(F32), s.i32(0), s.boolean(True), s.boolean(True)]
    s.op(Op.BIDIRECTIONAL_SEQUENCE_RNN, ins, [s.output(F32, [3, 2, 6]), s.output(F32, [3, 2, 3])])
    assert ("operation 0 (BIDIRECTIONAL_SEQUENCE_RNN): with merge_outputs true the operation has 1 outputs"
            in bad_data(s))


def test_svdf_rank_must_divide_filters() -> None:
    s = Spec()
    ins = [s.input(F32, [1, 3]), s.const(F32, np.ones((4, 3))), s.const(F32, np.ones((4, 2))), s.omitted(F32),
           s.input(F32, [1, 8]), s.i32(3), s.i32(0)]
    s.op(Op.SVDF, ins, [s.output(F32, [1, 8]), s.output(F32, [1, 1])])
    assert "operation 0 (SVDF): input 5: the rank must be >= 1 and divide the 4 filters" in bad_data(s)


def test_quantized_16bit_lstm_fixed_input_quantization() -> None:
    u8 = T.TENSOR_QUANT8_ASYMM
    s = Spec()
    ins = [s.input(u8, [1, 2], 1 / 64, 128)] + [s.const(u8, np.ones((2, 2)), scale=0.1) for _ in range(8)]
    ins += [s.const(T.TENSOR_INT32, [0, 0], scale=0.1 / 128) for _ in range(4)]
    ins += [s.input(T.TENSOR_QUANT16_SYMM, [1, 2], 2.0 ** -11), s.input(u8, [1, 2], 1 / 128, 128)]
    s.op(Op.QUANTIZED_16BIT_LSTM, ins, [s.output(T.TENSOR_QUANT16_SYMM, [1, 2], 2.0 ** -11),
                                        s.output(u8, [1, 2], 1 / 128, 128)])
    assert "operation 0 (QUANTIZED_16BIT_LSTM): input 0: the input takes scale 1/128 and zero point 128" in bad_data(s)
