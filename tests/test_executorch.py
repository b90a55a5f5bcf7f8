"""ExecuTorch programs against ExecuTorch's own runtime: every committed fixture
(``tests/fixtures/executorch``, made by its ``make_fixtures.py`` with ExecuTorch 1.5.1) runs on
every backend and matches the outputs ExecuTorch recorded; on a delegate, every XNode with a
registered lowering runs there (pinned as in the op tests)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import teflon_py
from teflon_py.executorch import Runtime
from tests.harness import registered_lowering, relative_l2

FIXTURES = Path(__file__).parent / "fixtures" / "executorch"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())["fixtures"]
#: relative L2 bound per precision: float32 programs as the op tests; quantized programs against
#: ExecuTorch's dequantized outputs (XNNPACK requantizes in fp32, teflon-py in TFLite's fixed point)
TOLERANCE = {"fp32": 1e-5, "int8": 2e-2, "qd8": 2e-2}
#: (fixture, substring of the refusal reason) pairs a delegate is expected to refuse
REFUSALS: dict[str, tuple[str, ...]] = {"conv2d_groups": ("grouped convolution",)}


def load(name: str, backend: str):
    delegates = [] if backend == "numpy" else [teflon_py.load_delegate(backend)]
    return Runtime.get().load_program(FIXTURES / f"{name}.pte", experimental_delegates=delegates).load_method("forward")


def recorded(name: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    data = np.load(FIXTURES / f"{name}.npz")
    count = {kind: sum(k.startswith(kind) for k in data.files) for kind in ("input_", "output_")}
    return ([data[f"input_{k}"] for k in range(count["input_"])],
            [data[f"output_{k}"] for k in range(count["output_"])])


@pytest.mark.parametrize("fixture", MANIFEST, ids=lambda f: f["name"])
def test_fixture_matches_executorch(backend: str, fixture: dict) -> None:
    name = fixture["name"]
    method = load(name, backend)
    inputs, expected = recorded(name)
    actual = method.execute(inputs)
    assert len(actual) == len(expected)
    tol = TOLERANCE[fixture["precision"]]
    for k, (a, e) in enumerate(zip(actual, expected)):
        assert a.dtype == e.dtype and a.shape == e.shape, f"output {k}: {a.dtype}{a.shape} vs {e.dtype}{e.shape}"
        if e.dtype.kind == "f":
            err = relative_l2(a, e)
            assert err <= tol, f"output {k}: relative L2 {err:.3g} > {tol:g}"
        else:
            assert np.array_equal(a, e), f"output {k}: integer outputs differ"
        if fixture.get("classifier"):
            assert np.array_equal(a.reshape(a.shape[0], -1).argmax(-1), e.reshape(e.shape[0], -1).argmax(-1))
    if backend != "numpy":
        expected_refusals = REFUSALS.get(name, ())
        unexpected = [f"{label}: {p.reason}" for label, graph, op, p in method.node_placements()
                      if p.backend != backend and registered_lowering(backend, graph, op)
                      and not any(r in (p.reason or "") for r in expected_refusals)]
        assert not unexpected, f"XNodes not run on {backend}: {unexpected}"


def test_manifest_covers_what_it_says() -> None:
    """The manifest's XNode types are the ones the payloads hold (read by our own reader)."""
    from teflon_py.executorch.program import read_program
    from teflon_py.executorch.xnnpack.payload import read_payload

    for fixture in MANIFEST:
        program = read_program(FIXTURES / f"{fixture['name']}.pte")
        method = program.methods["forward"]
        types = {n.type for k, p in enumerate(method.payloads)
                 for n in read_payload(p, program.named_data, f"delegate {k}").nodes}
        assert sorted(types) == fixture["xnode_types"], fixture["name"]


def test_api_mirrors_executorch_runtime() -> None:
    """program.method_names, load_method, method.metadata and execute, as executorch.runtime."""
    program = Runtime.get().load_program((FIXTURES / "net_split_layernorm_fp32.pte").read_bytes())
    assert program.method_names == {"forward"}
    method = program.load_method("forward")
    meta = method.metadata
    inputs, expected = recorded("net_split_layernorm_fp32")
    assert meta.num_inputs() == len(inputs) and meta.num_outputs() == len(expected)
    assert meta.input_tensor_meta(0).sizes() == inputs[0].shape
    assert meta.output_tensor_meta(0).dtype == expected[0].dtype
    out = method.execute(inputs)
    assert isinstance(out, list) and isinstance(out[0], np.ndarray)
