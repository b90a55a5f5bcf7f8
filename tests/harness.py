"""The conformance harness: one op model, every backend, compared with LiteRT's reference kernels.

``check_model(model_bytes, backend)`` feeds the same random inputs to LiteRT
(``OpResolverType.BUILTIN_REF``) and to teflon-py with ``backend`` ("numpy" or a delegate name),
then asserts integer outputs bit-exact and float outputs within relative L2 ``float_tol``. For a
delegate backend it then checks the placement: a node the backend has a lowering for must run
there (no silent NumPy rerun) unless the test names the refusal it expects.
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


def random_input(detail: dict, rng: np.random.Generator) -> np.ndarray:
    """A random array for a LiteRT input detail: full range for integers, N(0,1) for floats."""
    shape, dtype = tuple(detail["shape"]), np.dtype(detail["dtype"])
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        lo, hi = max(info.min, -(1 << 20)), min(info.max, 1 << 20)
        return rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


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


def assert_close(actual: np.ndarray, expected: np.ndarray, float_tol: float, what: str = "output") -> None:
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != LiteRT's {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != LiteRT's {expected.shape}"
    if expected.dtype.kind in "fc":
        assert np.array_equal(np.isnan(actual), np.isnan(expected)), f"{what}: NaN positions differ"
        finite = np.isfinite(expected)
        assert np.array_equal(actual[~finite], expected[~finite], equal_nan=True), f"{what}: inf values differ"
        err = relative_l2(actual[finite], expected[finite])
        assert err <= float_tol, f"{what}: relative L2 error {err:.3g} > {float_tol:g}"
    else:
        diff = np.flatnonzero(actual.reshape(-1) != expected.reshape(-1))
        assert diff.size == 0, (
            f"{what}: {diff.size} of {expected.size} elements differ from LiteRT's reference kernels; "
            f"first at flat index {diff[0]}: ours {actual.reshape(-1)[diff[0]]}, LiteRT {expected.reshape(-1)[diff[0]]}"
        )


def check_model(model: bytes, backend: str = "numpy", *, inputs: Sequence[np.ndarray] | None = None,
                seed: int = 0, float_tol: float = 1e-5, refuses: str | Sequence[str] = (),
                options: dict | None = None,
                resolver: OpResolverType = OpResolverType.BUILTIN_REF) -> teflon_py.Interpreter:
    """Run ``model`` on LiteRT's reference kernels and on teflon-py's ``backend``; assert a match
    (``compare_with_litert``), then the placement (``check_placement``): ``refuses`` names the
    refusals the case expects."""
    it = compare_with_litert(model, backend, inputs=inputs, seed=seed, float_tol=float_tol,
                             options=options, resolver=resolver)
    if backend != "numpy":
        check_placement(it, backend, refuses)
    return it


def compare_with_litert(model: bytes, backend: str = "numpy", *, inputs: Sequence[np.ndarray] | None = None,
                        seed: int = 0, float_tol: float = 1e-5, options: dict | None = None,
                        resolver: OpResolverType = OpResolverType.BUILTIN_REF) -> teflon_py.Interpreter:
    """The numeric half of ``check_model`` alone, for tests that assert the placement themselves
    (a deliberate fallback to NumPy)."""
    if inputs is None:
        probe = LiteRTInterpreter(model_content=model)
        rng = np.random.default_rng(seed)
        inputs = [random_input(d, rng) for d in probe.get_input_details()]
    expected = run_litert(model, inputs, resolver)
    actual, it = run_teflon(model, inputs, backend, options)
    for k, (a, e) in enumerate(zip(actual, expected)):
        assert_close(a, e, float_tol, f"output {k}")
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
