"""LSTM and UNIDIRECTIONAL_SEQUENCE_LSTM on OpenCL: the float kernel (``lstm.cl``) and the
integer 8x8->16 kernel (``qlstm.cl``), computing what ``fallback/lstm.py`` computes.

The check and the emitter run the fallback's own Prepare (``fallback.lstm.read_cell``: the
weights in the fallback's form, the integer kernel's multipliers and effective biases from
``lstm_integer``), so the constants cannot drift from the NumPy kernel's. Launches: the input
term of every time step at once, then per step the recurrent term, the cell (gates, update,
hidden state) and, with a projection, the projection. The states are variable tensors: the first
step reads ``ctx.state``, the last writes ``ctx.new_state`` (the partition returns them, the
executor keeps them for the next invoke); the steps between ping-pong through scratch buffers.

Refused: hybrid kernels (int8 weights, float32 activations), diagonal recurrent weights, the
12-intermediate (8x8->8) integer kernel, states that are not variable tensors,
BIDIRECTIONAL_SEQUENCE_LSTM, the BASIC kernel.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from teflon_py.errors import UnsupportedError
from teflon_py.fallback import lstm as fallback_lstm
from teflon_py.fallback.registry import Node
from teflon_py.opencl.caps import Caps
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.specs import KernelSpec
from teflon_py.opencl.registry import OpEmit, OpTensors, Ref, register
from teflon_py.ops.common import Act
from teflon_py.ops.recurrent import RecurrentAttrs

FILES = ("lstm.cl",)
QFILES = ("quant.cl", "fixedpoint16.cl", "qlstm.cl")
#: lstm.cl's ACT codes
ACT_CODES = {Act.NONE: 0, Act.RELU: 1, Act.RELU6: 2, Act.RELU_N1_TO_1: 3, Act.TANH: 4, Act.SIGN_BIT: 5,
             Act.CLAMP: 6}
WEIGHTS = tuple(range(1, 18))  # the weight, peephole, bias and projection operands
LAYER_NORM = (20, 21, 22, 23)


@dataclass(frozen=True)
class Geometry:
    """One op's sizes and layout: ``time`` steps of ``batch`` rows; row r of step t of the input
    and the output is ``t * row_t + r * row_b``."""

    time: int
    batch: int
    n_input: int
    n_cell: int
    n_output: int
    time_major: bool

    @property
    def row_t(self) -> int:
        return self.batch if self.time_major else 1

    @property
    def row_b(self) -> int:
        return 1 if self.time_major else self.time


def _node(tensors: OpTensors) -> Node:
    return Node.of(tensors.graph, tensors.op)


def _constants(node: Node) -> list[np.ndarray | None]:
    return [None if t is None else t.data for t in node.inputs]


def read(node: Node) -> tuple[Any, Geometry]:
    """The fallback's Prepare of ``node`` (its ``_Cell``) and the op's geometry; UnsupportedError
    for what the OpenCL kernels do not compute."""
    op = node.op
    attrs: RecurrentAttrs = node.attrs
    if len(op.inputs) not in (20, 24) or len(node.outputs) != 1:
        raise node.error("the full LSTM kernel takes 20 or 24 inputs and one output")
    if op.name == "LSTM" and attrs.kernel_type != 0:
        raise node.error("the BASIC LSTM kernel (kernel_type 1) is not supported")
    x = node.inputs[0]
    rank = 2 if op.name == "LSTM" else 3
    if len(x.shape) != rank:
        raise node.error(f"input must be {rank}-D, got {list(x.shape)}")
    slots = fallback_lstm.slots_for(len(op.inputs))
    for k in (slots.h, slots.c):
        t = node.inputs[k]
        if t is None or not t.is_variable or t.is_constant:
            raise node.error(f"state operand {k} must be a variable tensor on OpenCL")
    cell = fallback_lstm.read_cell(node, _constants(node), slots)
    if cell.kind == "hybrid":
        raise node.error("hybrid (int8 weights, float32 activations) LSTM not supported on OpenCL")
    if cell.kind == "integer8":
        raise node.error("the 12-intermediate 8x8->8 integer LSTM is not supported on OpenCL")
    if cell.diagonal:
        raise node.error("diagonal (1-D) recurrent weights not supported on OpenCL")
    time_major = op.name == "LSTM" or attrs.time_major
    if rank == 2:
        time, batch = 1, x.shape[0]
    else:
        time, batch = (x.shape[0], x.shape[1]) if time_major else (x.shape[1], x.shape[0])
    geo = Geometry(time, batch, x.shape[-1], cell.n_cell, cell.n_output, time_major)
    h, c = node.inputs[slots.h], node.inputs[slots.c]
    if int(np.prod(h.shape)) != batch * cell.n_output or int(np.prod(c.shape)) != batch * cell.n_cell:
        raise node.error(f"state sizes must be batch x n_output ({batch} x {cell.n_output}) and "
                         f"batch x n_cell ({batch} x {cell.n_cell})")
    if cell.kind == "float" and attrs.activation.kind not in ACT_CODES:
        raise node.error(f"activation {attrs.activation.kind.name} not supported on OpenCL")
    return cell, geo


def check_lstm(attrs: RecurrentAttrs, tensors: OpTensors, caps: Caps) -> str | None:
    """What ``read`` accepts (the fallback's Prepare, then the OpenCL kernels' own limits)."""
    node = _node(tensors)
    try:
        read(node)
    except UnsupportedError as e:  # the registry names the op itself
        return str(e).removeprefix(f"{node.op.describe()}: ")
    return None


# -- shared step plumbing -----------------------------------------------------------------------

@dataclass
class Steps:
    """Where step t reads and writes the output state h and the cell state c: the op's state
    operands at the ends, ping-pong scratch rows between."""

    ctx: OpEmit
    geo: Geometry
    h_in: Ref
    h_out: Ref
    c_in: Ref
    c_out: Ref
    h_mid: Ref | None
    c_mid: Ref | None

    @classmethod
    def of(cls, ctx: OpEmit, geo: Geometry, slots: Any, itemsize_h: int, itemsize_c: int) -> Steps:
        many = geo.time > 1
        h_rows = geo.batch * geo.n_output
        return cls(ctx, geo, ctx.state(slots.h), ctx.new_state(slots.h), ctx.state(slots.c), ctx.new_state(slots.c),
                   ctx.scratch(2 * h_rows * itemsize_h) if many else None,
                   ctx.scratch(geo.batch * geo.n_cell * itemsize_c) if many else None)

    def h_read(self, t: int) -> tuple[Ref, int]:
        """The previous output state of step t: (buffer, element offset)."""
        if t == 0:
            return self.h_in, 0
        return self.h_mid, ((t - 1) % 2) * self.geo.batch * self.geo.n_output

    def h_write(self, t: int) -> tuple[Ref, int]:
        if t == self.geo.time - 1:
            return self.h_out, 0
        return self.h_mid, (t % 2) * self.geo.batch * self.geo.n_output

    def c_read(self, t: int) -> Ref:
        return self.c_in if t == 0 else self.c_mid

    def c_write(self, t: int) -> Ref:
        return self.c_out if t == self.geo.time - 1 else self.c_mid


def _spec(files: tuple[str, ...], name: str, defines: dict[str, object], global_size: tuple[int, ...],
          args: tuple[str, ...], constants: dict[str, np.ndarray] | None = None, flops: int = 0,
          **values: float) -> KernelSpec:
    scalars = kernels.scalars(**values)
    return KernelSpec(files=files, name=name, defines=defines, global_size=global_size,
                      local_size=(1,) * len(global_size), args=(*args, *scalars), constants=constants or {},
                      scalars=scalars, flops=flops)


def _gate_matrix(parts: dict[str, np.ndarray], gates: tuple[str, ...], dtype: Any) -> np.ndarray:
    return np.ascontiguousarray(np.concatenate([np.asarray(parts[g]) for g in gates], axis=0), dtype)


def _gate_defines(cell: Any, opts: RecurrentAttrs | None = None) -> dict[str, object]:
    d: dict[str, object] = {"G": len(cell.gates)}
    d.update({f"G{g.upper()}": cell.gates.index(g) for g in cell.gates})
    if cell.cifg:
        d["CIFG"] = 1
    if cell.w_c:
        d["PEEPHOLE"] = 1
    if cell.ln:
        d["LAYER_NORM"] = 1
    if opts is not None:
        d["ACT"] = ACT_CODES[opts.activation.kind]
    return d


def _peephole(cell: Any, dtype: Any) -> np.ndarray:
    """[3][n_cell]: the i, f, o peephole weights (zeros where absent)."""
    return np.stack([np.asarray(cell.w_c.get(g, np.zeros(cell.n_cell)), dtype).reshape(cell.n_cell)
                     for g in ("i", "f", "o")]).astype(dtype)


# -- float --------------------------------------------------------------------------------------

@register("LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM", check=check_lstm, dtypes=("float32", "int8"),
          constants=WEIGHTS + LAYER_NORM)
def lstm(ctx: OpEmit, attrs: RecurrentAttrs) -> None:
    """The float kernel: one input launch, then per step gates, cell and (projection) project."""
    node = Node.of(ctx.graph, ctx.op)
    cell, geo = read(node)
    slots = fallback_lstm.slots_for(len(ctx.op.inputs))
    f32 = np.float32
    units = len(cell.gates) * geo.n_cell
    rows = geo.time * geo.batch
    bias = np.zeros(units, f32) if cell.ln else _gate_matrix(cell.bias, cell.gates, f32)
    pre = ctx.scratch(4 * rows * units)
    ctx.launch(_spec(FILES, "lstm_input", {}, (rows, units), ("input", "weights", "bias", "output"),
                     {"weights": _gate_matrix(cell.w_x, cell.gates, f32), "bias": bias},
                     2 * rows * units * geo.n_input, n_in=geo.n_input, units=units), input=ctx.input(), output=pre)
    steps = Steps.of(ctx, geo, slots, 4, 4)
    acc = ctx.scratch(4 * geo.batch * units)
    m = ctx.scratch(4 * geo.batch * geo.n_cell) if cell.proj_w is not None else None
    defines = _gate_defines(cell, attrs)
    if m is None:
        defines["WRITE_Y"] = 1
    chunk = geo.n_cell if cell.ln else 1
    lo, hi = (float(attrs.activation.lo), float(attrs.activation.hi)) if attrs.activation.kind == Act.CLAMP else (0.0, 0.0)
    zeros = np.zeros(units, f32)
    cell_consts = {"peep": _peephole(cell, f32),
                   "ln_w": _gate_matrix(cell.ln, cell.gates, f32) if cell.ln else zeros,
                   "ln_b": _gate_matrix(cell.bias, cell.gates, f32) if cell.ln else zeros}
    y = ctx.output()
    for t in range(geo.time):
        h_prev, h_off = steps.h_read(t)
        ctx.launch(_spec(FILES, "lstm_gates", {}, (geo.batch, units), ("pre", "h", "weights", "output"),
                         {"weights": _gate_matrix(cell.w_h, cell.gates, f32)}, 2 * geo.batch * units * geo.n_output,
                         pre_row0=t * geo.row_t, pre_bstride=geo.row_b, h_off=h_off, n_out=geo.n_output,
                         units=units), pre=pre, h=h_prev, output=acc)
        h_next, h_next_off = steps.h_write(t)
        hidden, m_off = (h_next, h_next_off) if m is None else (m, 0)
        ctx.launch(_spec(FILES, "lstm_cell", defines, (geo.batch, geo.n_cell // chunk),
                         ("acc", "c", "output_c", "peep", "ln_w", "ln_b", "output_m", "output"), cell_consts,
                         n_cell=geo.n_cell, chunk=chunk, m_off=m_off,
                         y_row0=t * geo.row_t, y_bstride=geo.row_b, cell_clip=float(f32(attrs.cell_clip)),
                         act_lo=lo, act_hi=hi),
                   acc=acc, c=steps.c_read(t), output_c=steps.c_write(t), output_m=hidden, output=y)
        if m is not None:
            proj_b = np.zeros(geo.n_output, f32) if cell.proj_b is None else np.asarray(cell.proj_b, f32)
            ctx.launch(_spec(FILES, "lstm_project", {}, (geo.batch, geo.n_output),
                             ("m", "weights", "bias", "output_h", "output"),
                             {"weights": np.ascontiguousarray(cell.proj_w, f32), "bias": proj_b},
                             2 * geo.batch * geo.n_output * geo.n_cell, n_cell=geo.n_cell, n_out=geo.n_output,
                             h_off=h_next_off, y_row0=t * geo.row_t, y_bstride=geo.row_b,
                             proj_clip=float(f32(attrs.proj_clip))),
                       m=m, output_h=h_next, output=y)



# -- integer (8x8 -> 16) ------------------------------------------------------------------------

def _wrap32(values: Any, n: int) -> np.ndarray:
    """An effective bias (int64, or a scalar 0) as the int32 the kernels add: wrapped, since
    their sums wrap too."""
    from teflon_py import quant

    return quant.wrap_int(np.broadcast_to(np.asarray(values, np.int64), (n,))).astype(np.int32)


def _qparams(cell: Any) -> np.ndarray:
    """qlstm.cl's QP: per gate slot the x, h, peephole and layer-norm (multiplier, shift) pairs
    and the layer norm's guard, from the fallback's ``_integer_params``."""
    p = cell.integer
    rows = [[*p["x", g], *p["h", g], *p.get(("c", g), (0, 0)), *p.get(("ln", g), (0, 0)), p.get(("guard", g), 1)]
            for g in cell.gates]
    return np.asarray(rows, np.int32)


@register("LSTM", "UNIDIRECTIONAL_SEQUENCE_LSTM", kind="int8", check=check_lstm, dtypes=("int8", "int16", "int32"),
          constants=WEIGHTS + LAYER_NORM)
def qlstm(ctx: OpEmit, attrs: RecurrentAttrs) -> None:
    """The integer kernel: one input launch, then per step gates, cell and (projection) project."""
    node = Node.of(ctx.graph, ctx.op)
    cell, geo = read(node)
    p = cell.integer
    slots = fallback_lstm.slots_for(len(ctx.op.inputs))
    i8, i16 = np.int8, np.int16
    n = geo.n_cell
    units = len(cell.gates) * n
    rows = geo.time * geo.batch
    qp = _qparams(cell)
    pre = ctx.scratch(4 * rows * units)
    bias_x = np.concatenate([_wrap32(p["bias_x", g], n) for g in cell.gates])
    ctx.launch(_spec(QFILES, "qlstm_input", {}, (rows, units), ("input", "weights", "bias", "qp", "output"),
                     {"weights": _gate_matrix(cell.w_x, cell.gates, i8), "bias": bias_x, "qp": qp},
                     2 * rows * units * geo.n_input, n_in=geo.n_input, n_cell=n, units=units),
               input=ctx.input(), output=pre)
    steps = Steps.of(ctx, geo, slots, 1, 2)
    acc = ctx.scratch(4 * geo.batch * units)
    m = ctx.scratch(geo.batch * n) if cell.proj_w is not None else None
    defines = _gate_defines(cell)
    if m is None:
        defines["WRITE_Y"] = 1
    chunk = n if cell.ln else 1
    gates_consts = {"weights": _gate_matrix(cell.w_h, cell.gates, i8),
                    "bias": np.concatenate([_wrap32(p["bias_h", g], n) for g in cell.gates]), "qp": qp}
    cell_consts = {"peep": _peephole(cell, i16),
                   "ln_w": _gate_matrix(cell.ln, cell.gates, i16) if cell.ln else np.zeros(units, i16),
                   "ln_b": _gate_matrix(cell.bias, cell.gates, np.int32) if cell.ln else np.zeros(units, np.int32),
                   "qp": qp}
    y = ctx.output()
    for t in range(geo.time):
        h_prev, h_off = steps.h_read(t)
        ctx.launch(_spec(QFILES, "qlstm_gates", {}, (geo.batch, units), ("pre", "h", "weights", "bias", "qp", "output"),
                         gates_consts, 2 * geo.batch * units * geo.n_output, pre_row0=t * geo.row_t,
                         pre_bstride=geo.row_b, h_off=h_off, n_out=geo.n_output, n_cell=n, units=units),
                   pre=pre, h=h_prev, output=acc)
        h_next, h_next_off = steps.h_write(t)
        hidden, m_off = (h_next, h_next_off) if m is None else (m, 0)
        ctx.launch(_spec(QFILES, "qlstm_cell", defines, (geo.batch, n // chunk),
                         ("acc", "c", "output_c", "peep", "ln_w", "ln_b", "qp", "output_m", "output"), cell_consts,
                         n_cell=n, n_out=geo.n_output, batch=geo.batch, chunk=chunk, m_off=m_off,
                         y_row0=t * geo.row_t, y_bstride=geo.row_b, peep_flat=int(geo.time_major),
                         cell_scale=p["cell_scale"], cell_clip=p["cell_clip"], hidden_m=p["hidden"][0],
                         hidden_s=p["hidden"][1], hidden_zp=p["hidden_zp"]),
                   acc=acc, c=steps.c_read(t), output_c=steps.c_write(t), output_m=hidden, output=y)
        if m is not None:
            ctx.launch(_spec(QFILES, "qlstm_project", {}, (geo.batch, geo.n_output),
                             ("m", "weights", "bias", "output_h", "output"),
                             {"weights": np.ascontiguousarray(cell.proj_w, i8),
                              "bias": _wrap32(p["bias_proj"], geo.n_output)},
                             2 * geo.batch * geo.n_output * n, n_cell=n, n_out=geo.n_output, h_off=h_next_off,
                             y_row0=t * geo.row_t, y_bstride=geo.row_b, proj_m=p["proj"][0], proj_s=p["proj"][1],
                             state_zp=p["state_zp"], proj_clip=p["proj_clip"]),
                       m=m, output_h=h_next, output=y)
