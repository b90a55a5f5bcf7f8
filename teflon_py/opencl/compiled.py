"""Lower a partition to one launch list and run it: the OpenCL ``CompiledPartition``.

``compile_partition`` walks the partition's ops in order (minus those ``fusion`` folded away);
each op's emitter (``lowering``) declares kernel launches bound to graph tensors, and aliases
(RESHAPE and friends: same bytes, no kernel). Then every tensor gets its storage:

- an alias shares its source's storage (alias chains resolve to one root tensor);
- partition inputs are the caller's arrays, partition outputs arrays made per invoke, both
  wrapped zero-copy on devices whose buffers are host memory (``runtime.LaunchList``); an
  output whose root is a partition input, or already another output, gets a copy launch;
- graph constants read as data are uploaded once; weights are packed once by their specs;
- a variable tensor an op updates (an LSTM's states, ``Builder.new_state``) is read as a partition
  input and its new value returned as one more partition output, which the executor stores as
  the variable's value for the next invoke;
- everything else is a sub-buffer of one arena (``memory.plan_arena``), placed by lifetime:
  from the first launch that touches it to the last.

Before lowering, ``plan_residuals`` folds a float ADD into the CONV_2D producing one of its
operands (MobileNetV2's residual connections): the conv's epilogue adds the other operand. An int8
ADD folds into an int8 CONV_2D the same way, where ``ops_qconv.residual_reason`` allows.

Programs are built (or loaded from the disk caches) — the template kernels of the whole
partition (gemm, conv2d, depthwise blockings) as ONE program, one front-end compile — kernels
created and their arguments set once, while the build probe's children probe new programs and
warm their kernels up (``runtime.ahead``); one run at compile time JIT-compiles what is left and
commits new binaries to the cache, so ``invoke`` is one enqueue of every launch and one wait.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from teflon_py import ir
from teflon_py.delegate import CompiledPartition
from teflon_py.errors import BackendError, UnsupportedError
from teflon_py.opencl.fusion import (
    FoldedDepthwise,
    FoldedGate,
    FusionPlan,
    gate_operands,
    hoist_residual_pads,
    intersect,
    live_flow,
    plan_depthwise_pointwise,
    plan_epilogue_activations,
    plan_fusion,
    plan_gate,
    plan_prelu,
    plan_table_activations,
)
from teflon_py.opencl.kernels import gpu_small
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.kernels.specs import UNBOUNDED, Clamp, KernelSpec, Pads
from teflon_py.opencl.lowerings import lowering_for
from teflon_py.opencl.memory import Lifetime
from teflon_py.opencl.params import KernelParams, params_for
from teflon_py.opencl.registry import NewState, Ref, Scratch, folded_node
from teflon_py.opencl.runtime.device import DeviceContext
from teflon_py.opencl.runtime.launch import (
    Arena,
    ArgUse,
    ExternalTensor,
    KernelTiming,
    Launch,
    LaunchList,
    constant_buffer,
    zeros_buffer,
)
from teflon_py.opencl.runtime.programs import ProgramCache, is_template_program, merge_template_programs


def _cl() -> Any:
    import pyopencl

    return pyopencl


@dataclass(frozen=True)
class Residual:
    """An ADD folded into the epilogue of the conv producing one of its operands: the other
    operand (read by the conv's kernel), the ADD's clamp, and the ADD's op index."""

    tensor: int
    clamp: Clamp
    add: int


#: Ops whose float32 lowering can fold a following ADD into its epilogue (``Builder.residual``).
RESIDUAL_OPS = ("CONV_2D",)
#: Quantized kinds whose CONV_2D lowering folds an ADD too, where ``ops_qconv.residual_reason`` allows.
QUANTIZED_RESIDUAL_KINDS = ("int8",)


def _quantized_residual_ok(graph: ir.Graph, conv: ir.Operation, add: ir.Operation) -> bool:
    """Whether the int8 ADD ``add`` can fold into the int8 CONV_2D ``conv`` (``ops_qconv``)."""
    from teflon_py.opencl.lowerings import qconv as ops_qconv

    return ops_qconv.residual_reason(graph, conv, add) is None


def plan_residuals(graph: ir.Graph, nodes: Sequence[int], outputs: Sequence[int], plan: FusionPlan,
                   lookup: Any) -> dict[int, Residual]:
    """Fold each float ADD of two equal-shape tensors into the conv producing one of them (the
    later one), when that operand has no other reader and the other one exists by the conv's
    launch; the conv then writes the ADD's output. Updates ``plan``; returns conv -> Residual."""
    kept = set(outputs) | set(graph.outputs)
    live, readers, writer = live_flow(graph, nodes, plan)
    position = {i: k for k, i in enumerate(live)}
    residuals: dict[int, Residual] = {}
    for i in live:
        add = graph.operations[i]
        kind = getattr(lookup(add), "kind", None)
        if add.name != "ADD" or len(add.inputs) != 2 or kind not in ("float32", *QUANTIZED_RESIDUAL_KINDS):
            continue
        if kind != "float32" and i in plan.clamp:
            continue  # an activation folded into a quantized ADD: its epilogue has no place for it
        a, b = add.inputs
        shape = tuple(graph.tensors[add.outputs[0]].shape)
        if a == b or tuple(graph.tensors[a].shape) != shape or tuple(graph.tensors[b].shape) != shape:
            continue
        pairs = sorted(((a, b), (b, a)), key=lambda tr: -position.get(writer.get(tr[0], -1), -1))
        for t, r in pairs:
            p = writer.get(t)
            if p is None or p in residuals or p not in position:
                continue
            conv = graph.operations[p]
            if conv.name not in RESIDUAL_OPS or getattr(lookup(conv), "kind", None) != kind:
                continue
            if kind != "float32" and not _quantized_residual_ok(graph, conv, add):
                continue
            if t in kept or readers.get(t) != [i]:
                continue
            w = writer.get(r)
            if w is not None and position[w] >= position[p]:
                continue  # the other operand is not ready when the conv runs
            clamp = intersect(kernels.fused_clamp(add.attrs.activation), plan.clamp.get(i, UNBOUNDED))
            residuals[p] = Residual(r, clamp, i)
            plan.skip.add(i)
            plan.output[p] = plan.output.get(i, add.outputs[0])
            writer[plan.output[p]] = p
            break
    return residuals


@dataclass
class PlannedLaunch:
    """A launch as emitted: its spec, what each argument binds to, and the op it came from."""

    spec: KernelSpec
    bindings: dict[str, Ref]
    op: int


@dataclass
class Storage:
    """Where a root tensor (or scratch) lives: ``kind`` is "input", "output", "const" or "arena"."""

    kind: str
    external: ExternalTensor | None = None
    buffer: Any = None
    first: int = -1  # launches touching it, for arena lifetimes
    last: int = -1
    nbytes: int = 0


class Builder:
    """Collects one partition's launches and aliases; emitters see it through ``OpEmitter``."""

    def __init__(self, graph: ir.Graph, nodes: Sequence[int], plan: FusionPlan,
                 residuals: dict[int, Residual] | None = None, params: KernelParams | None = None):
        self.graph = graph
        self.params = params if params is not None else KernelParams()
        self.nodes = list(nodes)
        self.plan = plan
        self.residuals = residuals or {}
        self.launches: list[PlannedLaunch] = []
        self.aliases: dict[int, int] = {}  # tensor -> tensor whose bytes it shares
        self.states: dict[int, NewState] = {}  # variable tensor -> the last value an op left in it
        self.current = -1  # op being emitted

    # -- what emitters read ---------------------------------------------------------------
    def shape(self, tensor: int) -> tuple[int, ...]:
        return tuple(self.graph.tensors[tensor].shape)

    def constant(self, tensor: int) -> np.ndarray | None:
        return None if tensor == ir.NO_TENSOR else self.graph.tensors[tensor].data

    def input(self, op: ir.Operation, k: int = 0) -> int:
        """Operand ``k`` of ``op``; for input 0, the input of a PAD folded into ``op``."""
        folded = self.plan.pad.get(op.index)
        return folded.input if k == 0 and folded is not None else op.inputs[k]

    def output(self, op: ir.Operation, k: int = 0) -> int:
        """The tensor ``op`` writes: its output, or the output of an activation folded into it."""
        return self.plan.output.get(op.index, op.outputs[k]) if k == 0 else op.outputs[k]

    def clamp(self, op: ir.Operation) -> Clamp:
        """The op's fused activation (``kernels.fused_clamp``: LiteRT's bounds, finite for an op that
        has one) intersected with every activation folded into it."""
        act = getattr(op.attrs, "activation", None)
        own = kernels.fused_clamp(act) if act is not None else UNBOUNDED
        return intersect(own, self.plan.clamp.get(op.index, UNBOUNDED))

    def pads(self, op: ir.Operation) -> Pads:
        folded = self.plan.pad.get(op.index)
        return folded.pads if folded is not None else kernels.NO_PADS

    def residual(self, op: ir.Operation) -> Residual | None:
        """The ADD folded into ``op``'s epilogue (``op`` then writes the ADD's output), if any."""
        return self.residuals.get(op.index)

    def prelu(self, op: ir.Operation) -> np.ndarray | None:
        """The per-channel slopes of the PRELU folded into ``op``'s epilogue, applied last."""
        return self.plan.prelu.get(op.index)

    def post_act(self, op: ir.Operation) -> str | None:
        """The HARD_SWISH or swish folded into ``op``'s epilogue (``fusion.EPILOGUE_ACTIVATIONS``),
        applied last, if any."""
        return self.plan.post_act.get(op.index)

    def table_ops(self, op: ir.Operation) -> tuple[int, ...] | None:
        """The 8-bit ops folded into ``op``'s epilogue as one table (``fusion.plan_table_activations``),
        applied last, if any."""
        return self.plan.table.get(op.index)

    def depthwise(self, op: ir.Operation) -> FoldedDepthwise | None:
        """The depthwise conv folded into ``op`` (a 1x1 conv reading its output), if any."""
        p = self.plan.depthwise.get(op.index)
        if p is None:
            return None
        dw = self.graph.operations[p]
        bias = dw.inputs[2] if len(dw.inputs) > 2 else ir.NO_TENSOR
        return FoldedDepthwise(self.input(dw), self.constant(dw.inputs[1]), self.constant(bias),
                               tuple(dw.attrs.strides), dw.attrs.padding, self.pads(dw), self.clamp(dw))

    def gate(self, op: ir.Operation) -> FoldedGate | None:
        """The channel-wise MUL folded into ``op`` (a 1x1 conv reading its output), if any."""
        p = self.plan.gate.get(op.index)
        if p is None:
            return None
        x, g = gate_operands(self.graph, self.graph.operations[p])
        return FoldedGate(x, g)

    # -- what emitters declare ------------------------------------------------------------
    def launch(self, spec: KernelSpec, **bindings: Ref) -> None:
        if self.params.gpu:  # the small kernels' CPU work splits become GPU-style grids
            spec = gpu_small.regrid(spec, self.params)
        self.launches.append(PlannedLaunch(spec, dict(bindings), self.current))

    def alias(self, dst: int, src: int) -> None:
        self.aliases[dst] = src

    def scratch(self, nbytes: int) -> Scratch:
        return Scratch(nbytes)

    def state(self, tensor: int) -> Ref:
        """Variable ``tensor``'s value now: the partition's input, or what an earlier op left in it."""
        return self.states.get(tensor, tensor)

    def new_state(self, tensor: int) -> NewState:
        """A buffer for the value the current op leaves in variable ``tensor``; the last one is a
        partition output for ``tensor`` (the executor keeps it for the next invoke)."""
        if not self.graph.tensors[tensor].is_variable:
            raise UnsupportedError(f"{self.graph.tensors[tensor].describe()} is not a variable tensor")
        self.states[tensor] = NewState(tensor, self.nbytes(tensor))
        return self.states[tensor]

    def root(self, ref: Ref) -> Ref:
        while isinstance(ref, int) and ref in self.aliases:
            ref = self.aliases[ref]
        return ref

    def nbytes(self, tensor: int) -> int:
        return int(np.prod(self.shape(tensor), dtype=np.int64)) * self.graph.tensors[tensor].dtype.itemsize


class OpEmitter:
    """The ``registry.OpEmit`` one attrs-style emitter sees: ``Builder`` bound to its op."""

    def __init__(self, builder: Builder, op: ir.Operation):
        self.b = builder
        self.op = op
        self.graph = builder.graph
        self.params = builder.params

    def shape(self, tensor: int) -> tuple[int, ...]:
        return self.b.shape(tensor)

    def constant(self, tensor: int) -> np.ndarray | None:
        return self.b.constant(tensor)

    def operand(self, k: int) -> int:
        """Input ``k``'s graph tensor index as the model has it (``ir.NO_TENSOR`` if absent)."""
        return self.op.inputs[k] if k < len(self.op.inputs) else ir.NO_TENSOR

    def input(self, k: int = 0) -> int:
        return self.b.input(self.op, k)

    def output(self, k: int = 0) -> int:
        return self.b.output(self.op, k)

    def clamp(self) -> Clamp:
        return self.b.clamp(self.op)

    def pads(self) -> Pads:
        return self.b.pads(self.op)

    def residual(self) -> Residual | None:
        return self.b.residual(self.op)

    def prelu(self) -> np.ndarray | None:
        return self.b.prelu(self.op)

    def post_act(self) -> str | None:
        return self.b.post_act(self.op)

    def table_ops(self) -> tuple[int, ...] | None:
        return self.b.table_ops(self.op)

    def depthwise(self) -> FoldedDepthwise | None:
        return self.b.depthwise(self.op)

    def gate(self) -> FoldedGate | None:
        return self.b.gate(self.op)

    def launch(self, spec: KernelSpec, **bindings: Ref) -> None:
        self.b.launch(spec, **bindings)

    def alias(self, dst: int, src: int) -> None:
        self.b.alias(dst, src)

    def scratch(self, nbytes: int) -> Scratch:
        return self.b.scratch(nbytes)

    def state(self, k: int) -> Ref:
        """Variable operand ``k``'s value as the op reads it (``Builder.state``)."""
        return self.b.state(self.op.inputs[k])

    def new_state(self, k: int) -> NewState:
        """Where the op writes variable operand ``k``'s new value (``Builder.new_state``)."""
        return self.b.new_state(self.op.inputs[k])


def copy_spec(n: int, dtype: np.dtype | type = np.float32) -> KernelSpec:
    """A flat copy of ``n`` elements (an output that aliases an input or another output): a bit
    copy by element size (movement_plan's), right for every dtype."""
    from teflon_py.opencl.kernels.movement_plan import flat_copy_spec

    return flat_copy_spec(n, dtype)


class OpenCLPartition(CompiledPartition):
    """A compiled partition: its launch list, and the storage that must outlive it."""

    def __init__(self, inputs: Sequence[int], outputs: Sequence[int], launch_list: LaunchList,
                 stats: dict[str, Any]):
        self.inputs = tuple(inputs)
        self.outputs = tuple(outputs)
        self.launch_list: LaunchList | None = launch_list
        self.stats = stats

    def invoke(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        if self.launch_list is None:
            raise BackendError("the OpenCL partition was closed")
        try:
            outs, _ = self.launch_list.run(inputs)
        except _cl().Error as e:
            raise BackendError(f"OpenCL run failed: {e}") from e
        return outs

    def profile(self, inputs: Sequence[np.ndarray]) -> tuple[list[np.ndarray], list[KernelTiming]]:
        """Run once on a profiling queue: the outputs, and each launch's device timestamps."""
        if self.launch_list is None:
            raise BackendError("the OpenCL partition was closed")
        try:
            return self.launch_list.run_timed(inputs, profile=True)
        except _cl().Error as e:
            raise BackendError(f"OpenCL run failed: {e}") from e

    def describe(self) -> dict[str, Any]:
        """The device, kernel family and (cpu family) register tiles the partition runs with (``inspect``)."""
        out = {"device": self.stats.get("device"), "kernel_family": self.stats.get("kernel_family")}
        if "tiles" in self.stats:
            out["tiles"] = self.stats["tiles"]
        return out

    def close(self) -> None:
        self.launch_list = None


def compile_partition(dc: DeviceContext, cache: ProgramCache, graph: ir.Graph, partition: Any,
                      params: KernelParams | None = None) -> OpenCLPartition:
    """Lower, place, build and warm up one partition with ``params``'s kernel family (default:
    the device's own, ``params.params_for``); OpenCL failures raise BackendError."""
    if params is None:
        from teflon_py.opencl.caps import Caps

        params = params_for(Caps.of(dc.device))
    def lookup(op: ir.Operation) -> Any:
        return lowering_for(graph, op)

    nodes = hoist_residual_pads(graph, partition.nodes)  # launch order: a padded residual ready early
    plan = plan_fusion(graph, nodes, partition.outputs, lookup)
    if not params.gpu:  # a depthwise into the 1x1 conv after it: dwpw.cl, a cpu-family kernel
        plan_depthwise_pointwise(graph, nodes, partition.outputs, plan, lookup)
        plan_gate(graph, nodes, partition.outputs, plan, lookup)  # a SE gate MUL into its 1x1 conv
    residuals = plan_residuals(graph, nodes, partition.outputs, plan, lookup)
    if not params.gpu:  # the gpu family's kernels have no PRELU or activation epilogue
        plan_prelu(graph, nodes, partition.outputs, plan, lookup)
        plan_epilogue_activations(graph, nodes, partition.outputs, plan, lookup)
        plan_table_activations(graph, nodes, partition.outputs, plan, lookup)
    b = Builder(graph, nodes, plan, residuals, params)
    for i in nodes:
        op = graph.operations[i]
        if i in plan.skip or folded_node(graph, op):  # folded: nothing to launch
            continue
        b.current = i
        low = lowering_for(graph, op)
        try:
            low.emit(OpEmitter(b, op), op.attrs)
        except UnsupportedError as e:  # check() let through what emit refuses
            raise BackendError(f"lowering {op.describe()} failed: {e}", partition=partition.index) from e
    try:
        return _assemble(dc, cache, b, partition)
    except _cl().Error as e:
        raise BackendError(f"OpenCL build of partition {partition.index} failed: {e}",
                           partition=partition.index) from e


def _assemble(dc: DeviceContext, cache: ProgramCache, b: Builder, partition: Any) -> OpenCLPartition:
    graph = b.graph
    storage: dict[Any, Storage] = {}  # root tensor index or Scratch -> Storage
    inputs = []
    for t in partition.inputs:
        ext = ExternalTensor(b.shape(t), graph.tensors[t].dtype)
        inputs.append(ext)
        storage[t] = Storage("input", ext)
    written = {b.root(ref) for la in b.launches for name, ref in la.bindings.items() if name.startswith("output")}
    outputs = []
    for t in partition.outputs:
        ext = ExternalTensor(b.shape(t), graph.tensors[t].dtype)
        outputs.append(ext)
        r = b.root(t)
        if r in written and r not in storage:
            storage[r] = Storage("output", ext)
        else:  # same bytes as an input, a constant or another output: copy them
            n = int(np.prod(b.shape(t), dtype=np.int64))
            out_ref = _OutputSlot(ext)
            b.launches.append(PlannedLaunch(copy_spec(n, graph.tensors[t].dtype), {"input": r, "output": out_ref}, -1))
    for t, new in b.states.items():  # variables the partition updates: their new values come back too
        ext = ExternalTensor(b.shape(t), graph.tensors[t].dtype)
        outputs.append(ext)
        storage[new] = Storage("output", ext)
    # lifetimes of everything else
    for step, la in enumerate(b.launches):
        for ref in la.bindings.values():
            if isinstance(ref, _OutputSlot):
                continue
            r = b.root(ref)
            st = storage.get(r)
            if st is None:
                st = storage[r] = _new_storage(dc, b, r)
            if st.kind == "arena":
                st.first = step if st.first < 0 else st.first
                st.last = step
    arena_roots = [r for r, st in storage.items() if st.kind == "arena"]
    arena = Arena(dc, [Lifetime(storage[r].nbytes, storage[r].first, storage[r].last) for r in arena_roots],
                  [_describe(b, r) for r in arena_roots])
    for r, view in zip(arena_roots, arena.views):
        storage[r].buffer = view
    launches, keep = _make_kernels(dc, cache, b, storage)
    ll = LaunchList(dc, launches, inputs, outputs, keep=[arena, *keep], after_first_run=cache.commit)
    ll.run([np.zeros(t.shape, t.dtype) for t in inputs])  # JIT now, commit binaries, fail early
    stats = {**b.params.describe(), "launches": len(launches), "arena_bytes": arena.plan.size,
             "arena_buffers": len(arena.buffers), "io": ll.io, "folded": sorted(b.plan.skip),
             "aliases": len(b.aliases),
             "variants": sorted({(la.info["kernel"], la.info["variant"]) for la in launches if "variant" in la.info}),
             "lowerings": sorted({(op.name, low.kind) for op in (graph.operations[i] for i in b.nodes)
                                  if (low := lowering_for(graph, op)) is not None})}
    return OpenCLPartition(partition.inputs, (*partition.outputs, *b.states), ll, stats)


def _describe(b: Builder, r: Ref) -> str:
    """An arena tensor as a BackendError names it."""
    if isinstance(r, Scratch):
        return "a kernel's scratch buffer"
    return f"intermediate {b.graph.tensors[r].describe()}"


@dataclass
class _OutputSlot:
    """A copy launch's destination: a partition output (bound per invoke)."""

    external: ExternalTensor


def _new_storage(dc: DeviceContext, b: Builder, r: Ref) -> Storage:
    if isinstance(r, Scratch):
        return Storage("arena", nbytes=r.nbytes)
    t = b.graph.tensors[r]
    if t.is_constant:
        data = np.asarray(t.data, t.dtype) if t.dtype.kind == "f" else np.asarray(t.data)  # float16 and bool/int keep their bytes
        return Storage("const", buffer=constant_buffer(dc, data, f"constant {t.describe()}"))
    return Storage("arena", nbytes=b.nbytes(r))


def _make_kernels(dc: DeviceContext, cache: ProgramCache, b: Builder,
                  storage: dict[Any, Storage]) -> tuple[list[Launch], list[Any]]:
    """Build every program, create each kernel once and set the arguments that never change
    (while the probe's children probe the programs and warm the kernels up: ``ProgramCache.probe_ahead``)."""
    launches, keep = [], []
    variants: dict[tuple[Any, str], str] = {}  # (program, family) -> the variant it compiled
    templated = [(la.spec.files, la.spec.function) for la in b.launches
                 if is_template_program(la.spec.files, la.spec.defines) and not la.spec.options]
    merged = merge_template_programs(templated)

    def files_of(spec: Any) -> Any:
        return merged[spec.files[0]] if is_template_program(spec.files, spec.defines) and not spec.options else spec.files

    replays = [(files_of(la.spec), la.spec.defines, la.spec.options, _replay(b, la, storage)) for la in b.launches]
    replays += [(files_of(la.spec), la.spec.defines, la.spec.options, _variant_replay(la.spec.name))
                for la in b.launches if la.spec.variants]
    batch = cache.probe_ahead(replays)
    try:
        built = [_make_kernel(dc, cache, b, la, storage, files_of(la.spec), keep) for la in b.launches]
    finally:
        batch.wait()  # the warm-ups, before this process's first launch
    for la, (program, launch) in zip(b.launches, built):
        if la.spec.variants:
            if (program, la.spec.name) not in variants:
                variants[program, la.spec.name] = la.spec.variants[_compiled_variant(dc, program, la.spec.name)]
            launch.info["variant"] = variants[program, la.spec.name]
        launches.append(launch)
    return launches, keep


def _make_kernel(dc: DeviceContext, cache: ProgramCache, b: Builder, la: PlannedLaunch,
                 storage: dict[Any, Storage], files: Any, keep: list[Any]) -> tuple[Any, Launch]:
    """``la``'s program and its launch: the kernel with every argument that never changes set
    (each kept alive in ``keep``), the partition's inputs and outputs left for each run."""
    cl = _cl()
    spec = la.spec
    program = cache.build(files, spec.defines, spec.options)
    kernel = cl.Kernel(program, spec.function)
    moved = 0  # bytes the arguments span, for the profile's GB/s
    for i, arg in enumerate(spec.args):
        if arg == "zeros":
            value = zeros_buffer(dc, spec.zeros)
        elif arg in spec.constants:
            op = b.graph.operations[la.op] if la.op >= 0 else None
            value = constant_buffer(dc, spec.constants[arg],
                                    f"{op.describe() if op is not None else spec.name}'s packed {arg}")
            moved += spec.constants[arg].nbytes
        elif arg in spec.scalars:
            value = spec.scalars[arg]
        elif arg in la.bindings:
            st = _bound(b, storage, la.bindings[arg])
            moved += _storage_bytes(st)
            if st.kind in ("input", "output"):
                st.external.uses.append(ArgUse(kernel, i))
                continue
            value = st.buffer
        else:
            raise BackendError(f"kernel {spec.name}: argument {arg!r} is not bound")
        kernel.set_arg(i, value)
        keep.append(value)
    op = b.graph.operations[la.op] if la.op >= 0 else None
    info = {"op": la.op, "op_name": op.name if op is not None else "copy", "kernel": spec.function,
            "flops": spec.flops, "bytes": moved, "global_size": spec.global_size}
    if la.op in b.residuals:
        info["fused_add"] = b.residuals[la.op].add
    if la.op in b.plan.depthwise:
        info["fused_depthwise"] = b.plan.depthwise[la.op]
    if la.op in b.plan.gate:
        info["fused_gate"] = b.plan.gate[la.op]
    return program, Launch(kernel, spec.global_size, spec.local_size, spec.name, info=info)


def _bound(b: Builder, storage: dict[Any, Storage], ref: Any) -> Storage:
    """The storage a launch's binding refers to."""
    return storage[b.root(ref)] if not isinstance(ref, _OutputSlot) else Storage("output", ref.external)


def _replay(b: Builder, la: PlannedLaunch, storage: dict[Any, Storage]) -> dict[str, Any]:
    """``la`` as the probe's children replay it to warm it up (``probe.WarmLaunch``): each buffer
    argument by its size (they run it on zeros), each scalar by its bytes."""
    spec = la.spec
    args: list[tuple[str, object]] = []
    for arg in spec.args:
        if arg == "zeros":
            args.append(("buf", 4 * max(spec.zeros, 16)))
        elif arg in spec.constants:
            args.append(("buf", spec.constants[arg].nbytes))
        elif arg in spec.scalars:
            args.append(("raw", np.asarray(spec.scalars[arg]).tobytes().hex()))
        elif arg in la.bindings:
            args.append(("buf", _storage_bytes(_bound(b, storage, la.bindings[arg]))))
        else:
            raise BackendError(f"kernel {spec.name}: argument {arg!r} is not bound")
    local = list(spec.local_size) if spec.local_size is not None else None
    return {"kernel": spec.function, "global": list(spec.global_size), "local": local, "args": args}


def _variant_replay(name: str) -> dict[str, Any]:
    """``_compiled_variant``'s launch, as the probe's children replay it."""
    return {"kernel": f"{name}_variant", "global": [1], "local": None, "args": [("buf", 4)]}


def _compiled_variant(dc: DeviceContext, program: Any, name: str) -> int:
    """The index its ``<name>_variant`` kernel writes: which machine-dependent path ``program`` compiled."""
    cl = _cl()
    out = np.full(1, -1, np.int32)
    buf = cl.Buffer(dc.context, cl.mem_flags.WRITE_ONLY, out.nbytes)
    queue = dc.queue()
    cl.Kernel(program, f"{name}_variant")(queue, (1,), None, buf)
    cl.enqueue_copy(queue, out, buf)
    return int(out[0])


def _storage_bytes(st: Storage) -> int:
    """Bytes of a kernel argument's storage (an external tensor's from its shape)."""
    if st.external is not None:
        return int(np.prod(st.external.shape, dtype=np.int64)) * np.dtype(st.external.dtype).itemsize
    if st.kind == "const":
        return int(st.buffer.size)
    return st.nbytes
