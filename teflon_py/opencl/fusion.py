"""Fold ops into their neighbours before lowering, so the folded ones cost no launch and no memory.

- A standalone RELU / RELU6 / RELU_N1_TO_1 whose input comes from an op that can clamp its
  output (``Lowering.fuses_activation``: conv, depthwise, FC, ADD, ...) and has no other reader
  folds into that producer: the producer writes the activation's output, clamped by the
  intersection of its own fused activation and the folded ones (chains fold repeatedly).
- A float PRELU whose slopes are a constant per channel (or one slope) and whose input comes, with
  no other reader, from an op that takes it (``Lowering.fuses_prelu``: CONV_2D on the cpu kernel
  family, after any ADD folded into that conv) folds into that op's epilogue (``plan_prelu``).
- A float32 HARD_SWISH, or a swish (LOGISTIC(x) and a MUL of x by it, in either order, with no
  fused activation), whose input x comes, with no other reader (for swish: the two ops), from an
  op that takes it (``Lowering.fuses_swish``: CONV_2D and DEPTHWISE_CONV_2D on the cpu kernel
  family) folds into that op's epilogue, applied after its clamp and any folded ADD
  (``plan_epilogue_activations``; no launch, no memory pass for x or the logistic).
- An 8-bit LOGISTIC, TANH or HARD_SWISH, or an 8-bit swish (LOGISTIC(x), then a MUL of x by it
  with no fused activation), whose input x comes, with no other reader, from an op that takes it
  (``Lowering.fuses_swish`` on its 8-bit lowering: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED), on
  the cpu kernel family, folds into that op's epilogue as one 256-entry table (``plan_table_activations``): each is a
  function of x's 8-bit code alone, and the table is their fallback kernels run on every code
  (``qelementwise.epilogue_table``), so the fold is exact by construction.
- A PAD with constant, non-negative paddings on H and W only (float PAD pads with zeros) whose
  output feeds only input 0 of an op that takes explicit padding (``Lowering.folds_pad``: conv,
  depthwise, pools) folds into that op's padding.
- On the cpu kernel family, a float32 DEPTHWISE_CONV_2D (depth multiplier 1, dilation 1) whose
  output only a 1x1 stride-1 float32 CONV_2D reads folds into that conv (``plan_depthwise_pointwise``):
  one ``dwpw.cl`` launch computes both, and the depthwise output never reaches memory.
- On the cpu kernel family, a float32 MUL y = x * g with g one value per channel of x (a
  squeeze-excite gate, [1,1,1,C]) whose output only a 1x1 stride-1 float32 CONV_2D reads folds
  into that conv (``plan_gate``): conv(x * g) = x . (diag(g) W), the gemm scaling each weight row
  by g[k] as it loads it; y never reaches memory (x stays: the block's MEAN reads it too). Only
  where that costs less than the MUL (``specs.gate_fold_reason``: maps of 16+ pixels, panels not
  too wide for the map).

A tensor is folded away only when nothing outside the partition reads it (partition outputs and
graph outputs stay materialised).
"""
from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from teflon_py import ir
from teflon_py.opencl.kernels.specs import Clamp, Pads
from teflon_py.ops.common import NO_ACTIVATION, Padding
from teflon_py.ops.unary import clamp_of

#: Standalone activations that fold into their producer (their clamp: ``ops.unary.clamp_of``).
CLAMP_OPS = ("RELU", "RELU6", "RELU_N1_TO_1")
#: Activations that fold into a float producer's epilogue (``plan_epilogue_activations``), by the
#: names ``specs.POST_CODES`` gives the kernels: HARD_SWISH, and swish (x * LOGISTIC(x)).
EPILOGUE_ACTIVATIONS = ("HARD_SWISH", "SWISH")


def op_clamp(name: str) -> Clamp:
    """The real range a standalone clamp op keeps, from the op layer."""
    lo, hi = clamp_of(name).range(np.float32)
    return (float(lo), float(hi))


@dataclass(frozen=True)
class FoldedPad:
    """A PAD folded into its consumer: the PAD's input and its H/W padding."""

    input: int
    pads: Pads


@dataclass(frozen=True)
class FoldedDepthwise:
    """A depthwise conv folded into the 1x1 conv reading its output, as that conv's emitter sees
    it (``Builder.depthwise``): the depthwise's input (a folded PAD's input), constants, geometry
    and clamp (its own activation and any folded into it)."""

    input: int
    weights: np.ndarray  # [1][KH][KW][C]
    bias: np.ndarray | None
    strides: tuple[int, int]
    padding: Padding
    pads: Pads
    clamp: Clamp


@dataclass
class FusionPlan:
    """What fusion decided for one partition (op indices are graph operation indices)."""

    skip: set[int] = field(default_factory=set)  # ops folded into a neighbour: no launch
    output: dict[int, int] = field(default_factory=dict)  # producer -> tensor it writes instead
    clamp: dict[int, Clamp] = field(default_factory=dict)  # producer -> folded activations' clamp
    pad: dict[int, FoldedPad] = field(default_factory=dict)  # consumer -> its folded PAD
    prelu: dict[int, np.ndarray] = field(default_factory=dict)  # producer -> its folded PRELU's slopes [C]
    depthwise: dict[int, int] = field(default_factory=dict)  # 1x1 conv -> the depthwise folded into it
    post_act: dict[int, str] = field(default_factory=dict)  # producer -> its folded EPILOGUE_ACTIVATIONS entry
    gate: dict[int, int] = field(default_factory=dict)  # 1x1 conv -> the gate MUL folded into it
    table: dict[int, tuple[int, ...]] = field(default_factory=dict)  # 8-bit producer -> ops folded as a table


@dataclass(frozen=True)
class FoldedGate:
    """A MUL y = x * g folded into the 1x1 conv reading y: x (read instead of y) and the gate g
    (one value per channel of x, read by the conv's gemm at run time)."""

    input: int
    gate: int


def intersect(a: Clamp, b: Clamp) -> Clamp:
    """Clamping by ``a`` then ``b`` (the ReLU ranges always overlap, all contain [0, 1])."""
    return (max(a[0], b[0]), min(a[1], b[1]))


def plan_fusion(graph: ir.Graph, nodes: Sequence[int], outputs: Sequence[int],
                lookup: Callable[[ir.Operation], object]) -> FusionPlan:
    """Decide the folds for the partition of ``nodes`` whose ``outputs`` are read outside it."""
    plan = FusionPlan()
    kept = set(outputs) | set(graph.outputs)
    readers: dict[int, list[int]] = defaultdict(list)  # tensor -> ops reading it (once per use)
    for i in nodes:
        for t in graph.operations[i].inputs:
            if t != ir.NO_TENSOR:
                readers[t].append(i)
    writer: dict[int, int] = {}  # tensor -> producing op, after redirections
    for i in nodes:
        op = graph.operations[i]
        for t in op.outputs:
            writer[t] = i

    def private(t: int, reader: int) -> bool:
        return t not in kept and readers.get(t) == [reader]

    for i in nodes:
        op = graph.operations[i]
        if op.name in CLAMP_OPS:
            x = op.inputs[0]
            p = writer.get(x)
            if p is None or p in plan.skip or not private(x, i):
                continue
            producer = graph.operations[p]
            low = lookup(producer)
            if low is None or not getattr(low, "fuses_activation", False) or len(producer.outputs) != 1:
                continue
            plan.skip.add(i)
            plan.output[p] = op.outputs[0]
            plan.clamp[p] = intersect(plan.clamp.get(p, (-math.inf, math.inf)), op_clamp(op.name))
            writer[op.outputs[0]] = p
        elif op.name == "PAD":
            _fold_pad(graph, op, readers, private, lookup, plan)
    return plan


def _fold_pad(graph: ir.Graph, op: ir.Operation, readers: Mapping[int, list[int]],
              private: Callable[[int, int], bool], lookup: Callable[[ir.Operation], object],
              plan: FusionPlan) -> None:
    """Fold ``op`` (a PAD) into its only reader when that reader takes explicit padding."""
    y = op.outputs[0]
    consumers = readers.get(y, [])
    if len(consumers) != 1 or not private(y, consumers[0]):
        return
    consumer = graph.operations[consumers[0]]
    low = lookup(consumer)
    if low is None or not getattr(low, "folds_pad", False) or consumer.inputs[0] != y:
        return
    if len(op.inputs) < 2 or graph.tensors[op.inputs[1]].data is None:
        return
    paddings = np.asarray(graph.tensors[op.inputs[1]].data).reshape(-1, 2)
    if paddings.shape[0] != 4 or (paddings < 0).any() or paddings[0].any() or paddings[3].any():
        return
    pads = ((int(paddings[1, 0]), int(paddings[1, 1])), (int(paddings[2, 0]), int(paddings[2, 1])))
    plan.skip.add(op.index)
    plan.pad[consumer.index] = FoldedPad(op.inputs[0], pads)


def hoist_residual_pads(graph: ir.Graph, nodes: Sequence[int]) -> list[int]:
    """``nodes`` with each PAD whose only reader is an ADD moved up to just after the ops writing
    its inputs. BlazeFace-style blocks (MediaPipe's face, palm and hand detectors) pad the block's
    input with zero channels and ADD it to the block's last conv; the graph lists the PAD after
    that conv, so the ADD could not fold into the conv's epilogue (``compiled.plan_residuals``
    needs the other operand written before the conv runs). Moving a PAD earlier changes no
    value: it reads only what is written before it."""
    ops = graph.operations
    readers: dict[int, list[int]] = defaultdict(list)
    writer: dict[int, int] = {}
    for i in nodes:
        for t in ops[i].inputs:
            if t != ir.NO_TENSOR:
                readers[t].append(i)
        for t in ops[i].outputs:
            writer[t] = i
    order = list(nodes)
    for i in nodes:
        op = ops[i]
        if op.name != "PAD" or len(op.outputs) != 1:
            continue
        users = readers.get(op.outputs[0], [])
        if len(users) != 1 or ops[users[0]].name != "ADD":
            continue
        order.remove(i)
        deps = [order.index(writer[t]) for t in op.inputs if t in writer]
        order.insert(max(deps, default=-1) + 1, i)
    return order


def live_flow(graph: ir.Graph, nodes: Sequence[int], plan: FusionPlan) -> tuple[
        list[int], dict[int, list[int]], dict[int, int]]:
    """The ops of ``nodes`` that still launch (not folded away), in order; tensor -> the live ops
    reading it (once per use); tensor -> the live op writing it, after ``plan``'s redirections
    (a producer writes the output of what was folded into it)."""
    live = [i for i in nodes if i not in plan.skip]
    readers: dict[int, list[int]] = defaultdict(list)
    writer: dict[int, int] = {}
    for i in live:
        op = graph.operations[i]
        for t in op.inputs:
            if t != ir.NO_TENSOR:
                readers[t].append(i)
        for k, t in enumerate(op.outputs):
            writer[plan.output.get(i, t) if k == 0 else t] = i
    return live, readers, writer


def prelu_slopes(graph: ir.Graph, op: ir.Operation) -> np.ndarray | None:
    """A float PRELU's slopes as one per channel of its input (float32 [C]), when they are a
    constant that varies along the last axis only (or a single value); else None."""
    if op.name != "PRELU" or len(op.inputs) != 2 or graph.tensors[op.inputs[0]].dtype != np.float32:
        return None
    alpha = graph.tensors[op.inputs[1]]
    if alpha.dtype != np.float32:
        return None
    return channel_slopes(alpha.data, tuple(graph.tensors[op.inputs[0]].shape))


def channel_slopes(alpha: np.ndarray | None, shape: tuple[int, ...]) -> np.ndarray | None:
    """Constant PRELU slopes ``alpha`` as one per channel of an input of ``shape`` (float32 [C]),
    when they vary along the last axis only (or are a single value); else None."""
    if alpha is None or not shape:
        return None
    a = np.asarray(alpha, np.float32)
    channels = shape[-1]
    if a.size == 1:
        return np.full(channels, a.reshape(-1)[0], np.float32)
    if a.size != channels or a.shape[-1] != channels or a.ndim > len(shape):
        return None
    return np.ascontiguousarray(a.reshape(channels))


def plan_prelu(graph: ir.Graph, nodes: Sequence[int], outputs: Sequence[int], plan: FusionPlan,
               lookup: Callable[[ir.Operation], object]) -> None:
    """Fold each float PRELU with per-channel constant slopes into the op that writes its input
    (after the other folds: a conv that took an ADD writes the ADD's output), when that op's
    lowering ``fuses_prelu`` and nothing else reads the tensor. Updates ``plan``."""
    kept = set(outputs) | set(graph.outputs)
    live, readers, writer = live_flow(graph, nodes, plan)
    for i in live:
        op = graph.operations[i]
        slopes = prelu_slopes(graph, op)
        if slopes is None or i in plan.clamp:  # a PRELU with a folded activation stays (epilogues end at the slopes)
            continue
        x = op.inputs[0]
        p = writer.get(x)
        if p is None or p in plan.prelu or p in plan.post_act or x in kept or readers.get(x) != [i]:
            continue
        producer = graph.operations[p]
        low = lookup(producer)
        if low is None or not getattr(low, "fuses_prelu", False) or getattr(low, "kind", None) != "float32":
            continue
        if tuple(graph.tensors[x].shape) != tuple(graph.tensors[op.outputs[0]].shape):
            continue
        plan.skip.add(i)
        plan.prelu[p] = slopes
        plan.output[p] = op.outputs[0]
        writer[op.outputs[0]] = p


def plan_depthwise_pointwise(graph: ir.Graph, nodes: Sequence[int], outputs: Sequence[int], plan: FusionPlan,
                             lookup: Callable[[ir.Operation], object]) -> None:
    """Fold each float32 DEPTHWISE_CONV_2D (depth multiplier 1, constant weights, any folded
    activation or PAD) into the 1x1 stride-1 float32 CONV_2D that is the only reader of its
    output (no PAD folded into the conv), where ``dwpw_specs.fold_reason`` allows. Run after
    ``plan_fusion`` (a RELU folded into the depthwise is its clamp) and before the residual and
    PRELU folds (which then land on the conv). Updates ``plan``."""
    from teflon_py.opencl.kernels.dwpw_specs import fold_reason
    from teflon_py.ops import conv as ops_conv

    kept = set(outputs) | set(graph.outputs)
    live, readers, writer = live_flow(graph, nodes, plan)
    for i in live:
        conv = graph.operations[i]
        if conv.name != "CONV_2D" or getattr(lookup(conv), "kind", None) != "float32" or i in plan.pad:
            continue
        t = conv.inputs[0]
        p = writer.get(t)
        if p is None or t in kept or readers.get(t) != [i] or p in plan.prelu:
            continue
        dw = graph.operations[p]
        if dw.name != "DEPTHWISE_CONV_2D" or getattr(lookup(dw), "kind", None) != "float32":
            continue
        x, dw_w, pw_w = (graph.tensors[dw.inputs[0]], graph.tensors[dw.inputs[1]], graph.tensors[conv.inputs[1]])
        if dw_w.data is None or pw_w.data is None or len(x.shape) != 4 or len(pw_w.shape) != 4:
            continue
        c = x.shape[3]
        if tuple(dw_w.shape) != (1, *dw_w.shape[1:3], c) or tuple(pw_w.shape[1:]) != (1, 1, c):
            continue  # a depth multiplier, or a pointwise conv that is not 1x1 over c channels
        h, w = graph.tensors[t].shape[1:3]
        wh, ww = ops_conv.windows(conv.attrs, h, w, 1, 1)
        if tuple(conv.attrs.strides) != (1, 1) or (wh.out, ww.out, wh.before, ww.before) != (h, w, 0, 0):
            continue
        if fold_reason(tuple(x.shape[1:3]), c, tuple(dw_w.shape[1:3]), tuple(dw.attrs.dilations)) is not None:
            continue
        plan.skip.add(p)
        plan.depthwise[i] = p


def swish_mul(graph: ir.Graph, op: ir.Operation, readers: Mapping[int, list[int]]) -> ir.Operation | None:
    """The MUL completing a swish with ``op`` (a LOGISTIC of x): the only reader of the logistic,
    multiplying it by x (either order) with no fused activation; else None."""
    if op.name != "LOGISTIC" or len(op.inputs) != 1:
        return None
    x, s = op.inputs[0], op.outputs[0]
    users = readers.get(s, [])
    if len(users) != 1:
        return None
    mul = graph.operations[users[0]]
    if mul.name != "MUL" or sorted(mul.inputs) != sorted((x, s)) or x == s:
        return None
    if getattr(mul.attrs, "activation", NO_ACTIVATION) != NO_ACTIVATION:
        return None
    return mul


def _epilogue_fold(graph: ir.Graph, i: int, names: Sequence[str], kept: set[int], plan: FusionPlan,
                   readers: Mapping[int, list[int]], writer: Mapping[int, int],
                   lookup: Callable[[ir.Operation], object]) -> tuple[list[int], int, int, object] | None:
    """The epilogue fold that op ``i`` starts, shared by the float and 8-bit plans: op ``i`` one of
    ``names`` alone, or a LOGISTIC with the MUL completing its swish. Returns (the ops folded, the
    last one's output y, the op p writing their input x, p's lowering) when nothing else reads x
    nor the logistic, no partition or graph output is among them, no RELU is folded into them
    (that clamp is not an epilogue's), y is shaped as x, and p's lowering ``fuses_swish`` with no
    PRELU, float activation or table folded into p yet; else None. Types are the caller's check."""
    op = graph.operations[i]
    if i in plan.skip or len(op.inputs) != 1:  # skip: the MUL of a swish folded above
        return None
    x = op.inputs[0]
    mul = swish_mul(graph, op, readers)
    if mul is not None:
        folded, inner = [i, mul.index], [x, op.outputs[0]]
    elif op.name in names:
        folded, inner = [i], [x]
    else:
        return None
    y = graph.operations[folded[-1]].outputs[0]
    if sorted(readers.get(x, [])) != sorted(folded) or any(t in kept for t in inner):
        return None
    if any(f in plan.clamp for f in folded) or tuple(graph.tensors[x].shape) != tuple(graph.tensors[y].shape):
        return None
    p = writer.get(x)
    if p is None or p in plan.prelu or p in plan.post_act or p in plan.table:
        return None
    low = lookup(graph.operations[p])
    if low is None or not getattr(low, "fuses_swish", False):
        return None
    return folded, y, p, low


def _fold_into(plan: FusionPlan, writer: dict[int, int], folded: list[int], y: int, p: int) -> None:
    """Record ``folded`` as gone into producer ``p``, which then writes their output ``y``."""
    plan.skip.update(folded)
    plan.output[p] = y
    writer[y] = p


def plan_epilogue_activations(graph: ir.Graph, nodes: Sequence[int], outputs: Sequence[int], plan: FusionPlan,
                              lookup: Callable[[ir.Operation], object]) -> None:
    """Fold each float32 HARD_SWISH, and each swish (LOGISTIC of x, then MUL of x by it), into the
    op that writes x (after the other folds: a conv that took an ADD writes the ADD's output),
    when that op's float lowering ``fuses_swish`` and nothing else reads x nor, for a swish, the
    logistic (``_epilogue_fold``'s conditions). Updates ``plan``: the producer then writes the
    activation's output."""
    kept = set(outputs) | set(graph.outputs)
    live, readers, writer = live_flow(graph, nodes, plan)
    for i in live:
        fold = _epilogue_fold(graph, i, ("HARD_SWISH",), kept, plan, readers, writer, lookup)
        if fold is None:
            continue
        folded, y, p, low = fold
        x = graph.operations[i].inputs[0]
        if getattr(low, "kind", None) != "float32" or graph.tensors[x].dtype != np.float32:
            continue
        plan.post_act[p] = "SWISH" if len(folded) == 2 else "HARD_SWISH"
        _fold_into(plan, writer, folded, y, p)


#: 8-bit ops that fold alone into an 8-bit producer's epilogue as a table (``plan_table_activations``;
#: a LOGISTIC whose only reader is a swish's MUL folds with it)
TABLE_OPS = ("LOGISTIC", "TANH", "HARD_SWISH")


def plan_table_activations(graph: ir.Graph, nodes: Sequence[int], outputs: Sequence[int], plan: FusionPlan,
                           lookup: Callable[[ir.Operation], object]) -> None:
    """Fold each 8-bit ``TABLE_OPS`` op, and each 8-bit swish (its LOGISTIC and MUL), into the op
    that writes its input x as one table (``FusionPlan.table``: the producer then writes the last
    folded op's output), when that op's 8-bit lowering ``fuses_swish``, x and the output are of
    that one 8-bit type, and ``_epilogue_fold``'s conditions hold."""
    kept = set(outputs) | set(graph.outputs)
    live, readers, writer = live_flow(graph, nodes, plan)
    for i in live:
        fold = _epilogue_fold(graph, i, TABLE_OPS, kept, plan, readers, writer, lookup)
        if fold is None:
            continue
        folded, y, p, low = fold
        xt, yt = graph.tensors[graph.operations[i].inputs[0]], graph.tensors[y]
        if xt.dtype not in (np.int8, np.uint8) or yt.dtype != xt.dtype or getattr(low, "kind", None) != xt.dtype.name:
            continue
        plan.table[p] = tuple(folded)
        _fold_into(plan, writer, folded, y, p)


def gate_operands(graph: ir.Graph, mul: ir.Operation) -> tuple[int, int] | None:
    """(x, g) when the float32 MUL ``mul`` scales x channel-wise by a gate g: no fused activation,
    x the output's shape and g one value per channel of it (every dimension 1 but the last, which
    is x's channel count; x's batch may be any size, the gate is shared); else None."""
    if mul.name != "MUL" or len(mul.inputs) != 2 or mul.attrs.activation != NO_ACTIVATION:
        return None
    y = graph.tensors[mul.outputs[0]]
    if y.dtype != np.float32 or len(y.shape) != 4:
        return None
    for x, g in (mul.inputs, mul.inputs[::-1]):
        xt, gt = graph.tensors[x], graph.tensors[g]
        if x == g or xt.dtype != np.float32 or gt.dtype != np.float32 or tuple(xt.shape) != tuple(y.shape):
            continue
        gs = tuple(gt.shape)
        if gs and gs[-1] == y.shape[3] and all(d == 1 for d in gs[:-1]) and len(gs) <= 4:
            return x, g
    return None


def plan_gate(graph: ir.Graph, nodes: Sequence[int], outputs: Sequence[int], plan: FusionPlan,
              lookup: Callable[[ir.Operation], object]) -> None:
    """Fold each channel-wise float32 MUL (``gate_operands``) into the 1x1 stride-1 float32
    CONV_2D (constant weights, no folded PAD or depthwise) that is the only reader of its output,
    when no activation was folded into the MUL and the gated gemm pays (``specs.gate_fold_reason``).
    Run after ``plan_fusion`` (a RELU folded into the MUL keeps it) and ``plan_depthwise_pointwise``.
    Updates ``plan``."""
    from teflon_py.opencl.kernels.specs import gate_fold_reason
    from teflon_py.ops import conv as ops_conv

    kept = set(outputs) | set(graph.outputs)
    live, readers, writer = live_flow(graph, nodes, plan)
    for i in live:
        conv = graph.operations[i]
        if (conv.name != "CONV_2D" or getattr(lookup(conv), "kind", None) != "float32" or i in plan.pad
                or i in plan.depthwise):
            continue
        t = conv.inputs[0]
        p = writer.get(t)
        if p is None or t in kept or readers.get(t) != [i] or p in plan.clamp or p in plan.output:
            continue
        mul = graph.operations[p]
        operands = gate_operands(graph, mul) if getattr(lookup(mul), "kind", None) == "float32" else None
        w = graph.tensors[conv.inputs[1]]
        if operands is None or w.data is None or len(w.shape) != 4 or tuple(w.shape[1:3]) != (1, 1):
            continue
        n, h, wd, c = graph.tensors[t].shape
        wh, ww = ops_conv.windows(conv.attrs, h, wd, 1, 1)
        if tuple(conv.attrs.strides) != (1, 1) or (wh.out, ww.out, wh.before, ww.before) != (h, wd, 0, 0):
            continue
        if gate_fold_reason(n * h * wd, c, w.shape[0]) is not None:
            continue
        plan.skip.add(p)
        plan.gate[i] = p
