"""The conformance harness: one op model, every backend, compared with LiteRT's reference kernels.

``check_model(model_bytes, backend)`` feeds the same random inputs to LiteRT
(``OpResolverType.BUILTIN_REF``) and to teflon-py with ``backend`` ("numpy" or a delegate name),
then asserts integer outputs bit-exact and float outputs within relative L2 ``float_tol`` and a
per-element bound (``assert_close``). For a delegate backend it then checks the placement: a node
the backend has a lowering for must run there (no silent NumPy rerun) unless the test names the
refusal it expects.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter
from ai_edge_litert.interpreter import OpResolverType

import teflon_py
from teflon_py import ir
from teflon_py.tflite.builder import ModelBuilder, quantization  # noqa: F401  (re-exported for tests)


def random_input(detail: dict, rng: np.random.Generator, extremes: bool = False) -> np.ndarray:
    """A random array for a LiteRT input detail: full range for integers, N(0,1) for floats.
    ``extremes``: integers drawn from their type's edges instead (``extreme_values``), so
    saturation, overflow and rounding at the limits are exercised, not just the bulk."""
    shape, dtype = tuple(detail["shape"]), np.dtype(detail["dtype"])
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if extremes:
            zps = detail.get("quantization_parameters", {}).get("zero_points", ())
            edges = rng.choice(extreme_values(dtype, int(zps[0]) if len(zps) else 0), shape)
            bulk = rng.integers(info.min, info.max, shape, endpoint=True)
            return np.where(rng.random(shape) < 0.75, edges, bulk).astype(dtype)
        lo, hi = max(info.min, -(1 << 20)), min(info.max, 1 << 20)
        return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def extreme_values(dtype: np.dtype, zero_point: int = 0) -> np.ndarray:
    """The edges of integer ``dtype``: min, min + 1, -1, 0, 1, max - 1, max, and, for a quantized
    tensor, its zero point and the zero point +- 1 (real 0 and the smallest steps either side)."""
    info = np.iinfo(dtype)
    edges = {info.min, info.min + 1, -1, 0, 1, info.max - 1, info.max,
             zero_point - 1, zero_point, zero_point + 1}
    return np.array(sorted(v for v in edges if info.min <= v <= info.max), np.int64)


def run_litert(model: bytes, inputs: Sequence[np.ndarray],
               resolver: OpResolverType = OpResolverType.BUILTIN_REF) -> list[np.ndarray]:
    """LiteRT's outputs; ``resolver`` is the reference kernels unless an op is missing there."""
    it = LiteRTInterpreter(model_content=model, experimental_op_resolver_type=resolver)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


def run_teflon(model: bytes, inputs: Sequence[np.ndarray], backend: str = "numpy",
               options: dict | None = None) -> tuple[list[np.ndarray], teflon_py.Interpreter]:
    delegates = [] if backend == "numpy" else [teflon_py.load_delegate(backend, options)]
    it = teflon_py.Interpreter(model_content=model, experimental_delegates=delegates)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), inputs):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()], it


def relative_l2(actual: np.ndarray, expected: np.ndarray) -> float:
    a, e = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
    return float(np.linalg.norm(a - e) / max(np.linalg.norm(e), 1e-30))


def assert_close(actual: np.ndarray, expected: np.ndarray, float_tol: float, what: str = "output", *,
                 elem_tol: float | None = None) -> None:
    """Integers bit-exact; floats: the same NaN positions and infinities, relative L2 error within
    ``float_tol`` over the finite elements, and every finite element within
    ``|ours - LiteRT| <= elem_tol * (|LiteRT| + rms(LiteRT))`` (``elem_tol`` defaults to ``float_tol``).
    L2 alone lets one element of N be off by sqrt(N) times the tolerance; the per-element bound
    does not (the RMS term keeps near-zero elements of a cancelling sum from demanding ulps). A test
    whose case needs a looser per-element bound passes ``elem_tol`` and says why."""
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != LiteRT's {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != LiteRT's {expected.shape}"
    if expected.dtype.kind in "fc":
        a, e = actual.reshape(-1), expected.reshape(-1)
        _first_difference(np.isnan(a) != np.isnan(e), a, e, what, "NaN positions differ")
        finite = np.isfinite(e)
        _first_difference((np.isinf(a) | np.isinf(e)) & (a != e), a, e, what, "infinities differ")
        err = relative_l2(a[finite], e[finite])
        assert err <= float_tol, f"{what}: relative L2 error {err:.3g} > {float_tol:g}"
        tol = float_tol if elem_tol is None else elem_tol
        a64, e64 = a.astype(np.float64), e.astype(np.float64)
        rms = float(np.sqrt(np.mean(e64[finite] ** 2))) if finite.any() else 0.0
        with np.errstate(invalid="ignore"):  # inf - inf at the (already compared) non-finite elements
            excess = np.where(finite, np.abs(a64 - e64) - tol * (np.abs(e64) + rms), -np.inf)
        worst = int(np.argmax(excess)) if excess.size else 0
        assert excess.size == 0 or excess[worst] <= 0, (
            f"{what}: element {worst} (flat) ours {a[worst].item()!r}, LiteRT {e[worst].item()!r}: |difference| "
            f"{abs(a64[worst] - e64[worst]):.3g} > {tol:g} * (|LiteRT| + rms {rms:.3g}); "
            f"{int(np.count_nonzero(excess > 0))} of {e.size} elements over the per-element bound"
        )
    else:
        _first_difference(actual.reshape(-1) != expected.reshape(-1), actual.reshape(-1), expected.reshape(-1),
                          what, "elements differ from LiteRT's reference kernels")


def _first_difference(bad: np.ndarray, actual: np.ndarray, expected: np.ndarray, what: str, message: str) -> None:
    diff = np.flatnonzero(bad)
    assert diff.size == 0, (
        f"{what}: {diff.size} of {expected.size} {message}; first at flat index {diff[0]}: "
        f"ours {actual[diff[0]].item()!r}, LiteRT {expected[diff[0]].item()!r}"
    )


def check_model(model: bytes, backend: str = "numpy", *, inputs: Sequence[np.ndarray] | None = None,
                seed: int = 0, float_tol: float = 1e-5, elem_tol: float | None = None,
                refuses: str | Sequence[str] = (), options: dict | None = None,
                resolver: OpResolverType = OpResolverType.BUILTIN_REF, extremes: bool = False
                ) -> teflon_py.Interpreter:
    """Run ``model`` on LiteRT's reference kernels and on teflon-py's ``backend``; assert a match
    (``compare_with_litert``), then the placement (``check_placement``): ``refuses`` names the
    refusals the case expects; ``extremes`` draws integer inputs from their types' edges
    (``random_input``)."""
    it = compare_with_litert(model, backend, inputs=inputs, seed=seed, float_tol=float_tol, elem_tol=elem_tol,
                             options=options, resolver=resolver, extremes=extremes)
    if backend != "numpy":
        check_placement(it, backend, refuses)
    return it


def compare_with_litert(model: bytes, backend: str = "numpy", *, inputs: Sequence[np.ndarray] | None = None,
                        seed: int = 0, float_tol: float = 1e-5, elem_tol: float | None = None,
                        options: dict | None = None,
                        resolver: OpResolverType = OpResolverType.BUILTIN_REF,
                        extremes: bool = False) -> teflon_py.Interpreter:
    """The numeric half of ``check_model`` alone, for tests that assert the placement themselves
    (a deliberate fallback to NumPy)."""
    if inputs is None:
        probe = LiteRTInterpreter(model_content=model)
        rng = np.random.default_rng(seed)
        inputs = [random_input(d, rng, extremes=extremes) for d in probe.get_input_details()]
    expected = run_litert(model, inputs, resolver)
    actual, it = run_teflon(model, inputs, backend, options)
    for k, (a, e) in enumerate(zip(actual, expected)):
        assert_close(a, e, float_tol, f"output {k}", elem_tol=elem_tol)
    return it


#: placements that are no refusal: the node is gone before any backend sees it
NOT_A_REFUSAL = ("folded into a constant at load time",)


def check_placement(it: teflon_py.Interpreter, backend: str, refuses: str | Sequence[str] = ()) -> None:
    """Pinned delegation. Every node for which ``backend`` registers a lowering (its op and the
    dtype of its data operand) must run on it, unless its refusal reason contains one of the
    substrings in ``refuses``, which a test states for the cases it expects refused (runtime
    shape operands, int16 tensors...). A lowering whose check regresses to a refusal therefore
    fails its tests. When the backend ran no node at all, the case (already compared above) is
    recorded as skipped with the reasons, so the summary counts real device coverage."""
    expected = (refuses,) if isinstance(refuses, str) else tuple(refuses)
    placements = it.placements()
    unexpected, reasons = [], []
    for op in it.graph.operations:
        place = placements[op.index]
        if place.backend == backend or place.reason in NOT_A_REFUSAL:
            continue
        reasons.append(f"{op.describe()}: {place.reason}")
        if registered_lowering(backend, it.graph, op) and not any(r in (place.reason or "") for r in expected):
            unexpected.append(f"{op.describe()}: {place.reason}")
    assert not unexpected, f"pinned nodes not run on {backend}: {unexpected}"
    if not any(p.backend == backend for p in placements):
        pytest.skip(f"{backend} ran no node (compared on NumPy): " + ("; ".join(reasons) or "every node folded"))


def registered_lowering(backend: str, graph: ir.Graph, op: ir.Operation) -> bool:
    """Whether ``backend`` registers a lowering for ``op`` (so the case is pinned to it)."""
    if backend != "opencl":
        return False
    from teflon_py.opencl.lowerings import lowering_for

    return lowering_for(graph, op) is not None


def single_op(opcode: str, inputs: Sequence[dict], outputs: Sequence[dict], options: Any = None,
              **op_kw: Any) -> bytes:
    """A one-op model. Each operand is a dict: shape, dtype, and optionally ``data`` (a constant),
    ``quant`` (an ``ir.Quantization``) or ``none=True`` for an absent optional operand."""
    mb = ModelBuilder()
    g = mb.main
    ins = []
    for k, spec in enumerate(inputs):
        if spec.get("none"):
            ins.append(ir.NO_TENSOR)
        elif spec.get("data") is not None:
            data = np.asarray(spec["data"], spec.get("dtype"))
            ins.append(g.add_constant(spec.get("name", f"const{k}"), data, quantization=spec.get("quant")))
        else:
            ins.append(g.add_input(spec.get("name", f"input{k}"), spec["shape"], spec["dtype"],
                                   quantization=spec.get("quant")))
    outs = [g.add_tensor(spec.get("name", f"output{k}"), spec["shape"], spec["dtype"],
                         quantization=spec.get("quant")) for k, spec in enumerate(outputs)]
    g.add_op(opcode, ins, outs, options, **op_kw)
    g.mark_outputs(*outs)
    return mb.build()


def int32_kernel_runner(files: tuple[str, ...], defines: dict[str, object]) -> Any:
    """For tests of integer helper functions in ``cl_kernels``: the program of ``files`` under
    ``defines`` (which switch on the file's test kernels) on the default device, as
    ``run(kernel, *int32 inputs, outputs=1, per_item=1)`` -> int32 output arrays (one work-item
    per ``per_item`` values). Skips the test without an OpenCL device."""
    import pyopencl as cl

    from teflon_py.errors import BackendError
    from teflon_py.opencl.runtime import device, programs

    try:
        dc = device.get_context()
    except BackendError as e:
        pytest.skip(f"no OpenCL device: {e}")
    program = programs.program_cache(dc).build(files, defines)

    def run(name: str, *inputs: np.ndarray, outputs: int = 1, per_item: int = 1) -> list[np.ndarray]:
        mf = cl.mem_flags
        arrays = [np.ascontiguousarray(x, np.int32) for x in inputs]
        n = arrays[0].size
        bufs = [cl.Buffer(dc.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a) for a in arrays]
        outs = [np.empty(n, np.int32) for _ in range(outputs)]
        obufs = [cl.Buffer(dc.context, mf.WRITE_ONLY, o.nbytes) for o in outs]
        kernel = cl.Kernel(program, name)
        kernel.set_args(*bufs, *obufs)
        queue = dc.queue()
        cl.enqueue_nd_range_kernel(queue, kernel, (n // per_item,), None)
        for o, b in zip(outs, obufs):
            cl.enqueue_copy(queue, o, b)
        queue.finish()
        return outs

    return run
