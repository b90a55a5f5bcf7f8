"""No silent fallback when a device was asked for: the ``fallback`` policy ("warn" | "error", delegate
option or ``TEFLON_FALLBACK``), the fallbacks an interpreter records, and what the CLI says: one
line and exit status 2 when an explicit ``--delegate`` can run nothing, one warning line when part
of the graph fell back, one line naming the device that ran, honest ``bench`` labels.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import teflon_py
from teflon_py import cli, ir, zoo
from teflon_py.delegate import CompiledPartition
from teflon_py.errors import BackendError, FallbackWarning, fallback_policy
from teflon_py.executorch import Runtime
from teflon_py.executorch.interpreter import ProgramInterpreter
from tests.echo_delegate import EchoDelegate

ROOT = Path(__file__).resolve().parents[1]
PTE = ROOT / "tests" / "fixtures" / "executorch"


class Breaking(EchoDelegate):
    """Echo, but the partitions whose index is in ``broken`` fail to build, or at every run."""

    name = "breaking"

    def __init__(self, ops: Sequence[str], broken: Sequence[int] = (), at: str = "build",
                 fallback: str | None = None):
        super().__init__(ops)
        self.broken, self.at, self.fallback = set(broken), at, fallback

    def compile(self, graph: ir.Graph, partition: Any) -> CompiledPartition:
        if self.at == "build" and partition.index in self.broken:
            raise BackendError(f"partition {partition.index} broken by the test\nsecond line of its log")
        compiled = super().compile(graph, partition)
        if self.at == "run" and partition.index in self.broken:
            def fail(inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
                raise BackendError("run broken by the test")

            compiled.invoke = fail  # type: ignore[method-assign]
        return compiled


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def subprocess_cli(*argv: str, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "TEFLON_STRICT": "0", **env}
    full.pop("TEFLON_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "teflon_py.cli", *argv], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=300, check=False)


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err and ".py:" not in err, err
    return lines[0]


# -- the policy -----------------------------------------------------------------------------------
def test_policy_from_option_environment_and_strict_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEFLON_STRICT", "0")
    monkeypatch.delenv("TEFLON_FALLBACK", raising=False)
    assert fallback_policy() == "warn" and fallback_policy("error") == "error"
    monkeypatch.setenv("TEFLON_FALLBACK", "Error")
    assert fallback_policy() == "error" and fallback_policy("warn") == "warn"  # the option wins
    monkeypatch.setenv("TEFLON_FALLBACK", "sometimes")
    with pytest.raises(ValueError, match="TEFLON_FALLBACK must be one of warn, error"):
        fallback_policy()
    monkeypatch.setenv("TEFLON_STRICT", "1")
    assert fallback_policy("warn") == "error"  # the test suite's strict mode overrides


def test_opencl_delegate_takes_the_fallback_option() -> None:
    assert teflon_py.load_delegate("opencl", {"fallback": "ERROR"}).fallback == "error"
    assert teflon_py.load_delegate("opencl").fallback is None
    with pytest.raises(ValueError, match="fallback must be one of warn, error"):
        teflon_py.load_delegate("opencl", {"fallback": "quietly"})


def relu_model() -> bytes:
    return zoo.build("demo")


def test_missing_device_with_fallback_error_raises(lenient) -> None:
    delegate = teflon_py.load_delegate("opencl", {"device": "no-such-device", "fallback": "error"})
    it = teflon_py.Interpreter(model_content=relu_model(), experimental_delegates=[delegate])
    with pytest.raises(BackendError, match="no OpenCL device matches 'no-such-device'"):
        it.allocate_tensors()


def test_missing_device_with_fallback_warn_is_recorded(lenient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEFLON_CL_DEVICE", "bogus")
    it = teflon_py.Interpreter(model_content=relu_model(), experimental_delegates=[teflon_py.load_delegate("opencl")])
    with pytest.warns(FallbackWarning, match="opencl is unavailable, running on NumPy: no OpenCL device matches"):
        it.allocate_tensors()
    (f,) = it.fallbacks()
    assert f.delegate == "opencl" and f.stage == "unavailable" and f.partition is None
    assert list(f.nodes) == list(range(len(it.graph.operations))) and "bogus" in f.reason
    assert {p.backend for p in it.placements()} == {"numpy"} and it.devices() == {}


def test_environment_makes_build_and_run_failures_errors(lenient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEFLON_FALLBACK", "error")
    model = relu_model()
    it = teflon_py.Interpreter(model_content=model, experimental_delegates=[Breaking(["CONV_2D"], [0])])
    with pytest.raises(BackendError, match="broken by the test"):
        it.allocate_tensors()
    it = teflon_py.Interpreter(model_content=model, experimental_delegates=[Breaking(["CONV_2D"], [0], at="run")])
    it.allocate_tensors()
    with pytest.raises(BackendError, match="run broken by the test"):
        it.invoke()
    # the delegate's own option wins over the environment
    it = teflon_py.Interpreter(model_content=model,
                               experimental_delegates=[Breaking(["CONV_2D"], [0], fallback="warn")])
    with pytest.warns(FallbackWarning, match=r"breaking partition 0 \(\d+ nodes\) failed to build"):
        it.allocate_tensors()
    assert [f.stage for f in it.fallbacks()] == ["build"]


def test_run_failures_are_recorded(lenient) -> None:
    it = teflon_py.Interpreter(model_content=relu_model(), experimental_delegates=[Breaking(["CONV_2D"], [0], at="run")])
    it.allocate_tensors()
    assert it.fallbacks() == []
    with pytest.warns(FallbackWarning, match="breaking partition 0 failed to run"):
        it.invoke()
    (f,) = it.fallbacks()
    assert (f.stage, f.partition, f.reason) == ("run", 0, "run broken by the test")


def test_executorch_program_shares_the_policy(lenient, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .pte's delegate graphs run through the same executor: same policy, same records."""
    pte = str(PTE / "net_split_layernorm_fp32.pte")
    monkeypatch.setenv("TEFLON_CL_DEVICE", "bogus")
    program = Runtime.get().load_program(pte, experimental_delegates=[
        teflon_py.load_delegate("opencl", {"fallback": "error"})])
    with pytest.raises(BackendError, match="bogus"):
        program.load_method("forward")
    method = Runtime.get().load_program(pte, experimental_delegates=[teflon_py.load_delegate("opencl")])
    with pytest.warns(FallbackWarning, match="opencl is unavailable"):
        method = method.load_method("forward")
    assert method.fallbacks() and {f.stage for f in method.fallbacks()} == {"unavailable"} and method.devices() == {}
    it = ProgramInterpreter(pte, [teflon_py.load_delegate("opencl")])  # what the CLI uses
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        it.allocate_tensors()
    assert any(issubclass(w.category, FallbackWarning) for w in caught)
    assert it.fallbacks() == it.method.fallbacks() and it.devices() == {}


def test_executorch_method_names_its_device(device) -> None:
    pte = str(PTE / "net_split_layernorm_fp32.pte")
    method = Runtime.get().load_program(pte, experimental_delegates=[teflon_py.load_delegate("opencl")]) \
        .load_method("forward")
    assert method.fallbacks() == [] and set(method.devices()) == {"opencl"}
    assert "driver" in method.devices()["opencl"]


# -- the CLI: nothing could run on the device asked for -------------------------------------------
@pytest.mark.parametrize("command", ["run", "inspect", "bench"])
def test_cli_bogus_device_is_one_line_and_exit_2(demo_path: str, command: str) -> None:
    extra = ["--runs", "1", "--warmup", "0"] if command == "bench" else []
    r = subprocess_cli(command, demo_path, "--delegate", "opencl", *extra, TEFLON_CL_DEVICE="bogus")
    assert r.returncode == 2, r.stderr
    line = one_line(r.stderr)
    assert line.startswith(f"teflon-py {command}: error: --delegate opencl: no usable device:")
    assert "no OpenCL device matches 'bogus'" in line
    assert "delegate: opencl" not in r.stdout and "median" not in r.stdout


def test_cli_no_opencl_platform_is_one_line_and_exit_2(demo_path: str, tmp_path: Path) -> None:
    r = subprocess_cli("run", demo_path, "--delegate", "opencl", OCL_ICD_VENDORS=str(tmp_path / "no-icds"))
    assert r.returncode == 2, r.stderr
    assert "--delegate opencl: no usable device: no OpenCL platform found" in one_line(r.stderr)


def test_cli_executorch_program_with_bogus_device(device) -> None:
    r = subprocess_cli("run", str(PTE / "net_split_layernorm_fp32.pte"), "--delegate", "opencl",
                       TEFLON_CL_DEVICE="bogus")
    assert r.returncode == 2 and "no usable device" in one_line(r.stderr)


def test_cli_fallback_error_environment_is_one_line_too(demo_path: str) -> None:
    r = subprocess_cli("run", demo_path, "--delegate", "opencl", TEFLON_CL_DEVICE="bogus", TEFLON_FALLBACK="error")
    assert r.returncode == 2 and "no OpenCL device matches 'bogus'" in one_line(r.stderr)


def test_cli_no_partition_builds(capsys, lenient, demo_path: str, backends) -> None:
    name = backends("breaking-all", lambda options: Breaking(["CONV_2D", "ADD"], range(100)))
    code, out, err = run_cli(capsys, "run", demo_path, "--delegate", name)
    assert code == 2
    line = one_line(err)
    assert f"--delegate {name}: no partition could be built" in line and "partition 0 broken by the test" in line
    assert "invoke (first)" not in out and "allocate_tensors:" not in out


# -- the CLI: part of the graph fell back ----------------------------------------------------------
def test_cli_reports_nodes_left_to_numpy_in_one_line(capsys, demo_path: str, backends) -> None:
    name = backends("echo-conv", lambda options: EchoDelegate(["CONV_2D"]))
    code, out, err = run_cli(capsys, "run", demo_path, "--delegate", name)
    assert code == 0 and "nodes on: echo, numpy" in out
    line = one_line(err)
    n_ops = len(teflon_py.Interpreter(model_path=demo_path).model.main.operations)
    assert line.startswith("teflon-py run: warning: ") and f"of {n_ops} nodes run on NumPy, not {name}:" in line
    assert "(echo: echo runs only CONV_2D)" in line


def test_cli_reports_a_partition_that_failed_to_build(capsys, lenient, demo_path: str, backends) -> None:
    name = backends("breaking-one", lambda options: Breaking(["CONV_2D"], [1]))
    code, out, err = run_cli(capsys, "inspect", demo_path, "--delegate", name)
    assert code == 0 and "echo" in out
    line = one_line(err)
    assert "partition 1 (1 nodes) failed to build: partition 1 broken by the test second line of its log" in line


def test_cli_reports_a_partition_that_failed_to_run(capsys, lenient, demo_path: str, backends) -> None:
    name = backends("breaking-run", lambda options: Breaking(["CONV_2D"], [0], at="run"))
    code, _, err = run_cli(capsys, "run", demo_path, "--delegate", name)
    assert code == 0
    assert "partition 0 (1 nodes) failed to run: run broken by the test" in one_line(err)


def test_cli_other_warnings_are_one_line_without_file_and_line(capsys, demo_path: str, backends) -> None:
    class Chatty(EchoDelegate):
        def compile(self, graph: ir.Graph, partition: Any) -> CompiledPartition:
            warnings.warn("something the user should know\nover two lines", UserWarning, stacklevel=1)
            return super().compile(graph, partition)

    name = backends("chatty", lambda options: Chatty([op.name for op in
                                                      teflon_py.Interpreter(model_path=demo_path).model.main.operations]))
    code, _, err = run_cli(capsys, "run", demo_path, "--delegate", name)
    assert code == 0
    assert one_line(err) == "teflon-py run: warning: UserWarning: something the user should know over two lines"


# -- the CLI: which device ran, and honest bench labels ----------------------------------------------
def test_cli_names_the_device_that_ran(capsys, device, demo_path: str) -> None:
    from teflon_py.opencl.runtime.device import select_device

    dev = select_device()
    want = f"opencl: {dev.name.strip()} ({dev.platform.name.strip()}, driver {dev.driver_version.strip()})"
    for command in ("run", "inspect"):
        code, out, err = run_cli(capsys, command, demo_path, "--delegate", "opencl")
        assert code == 0 and want in out.splitlines(), out
        assert err == ""
    code, out, _ = run_cli(capsys, "bench", demo_path, "--delegate", "opencl", "--runs", "1", "--warmup", "0")
    assert code == 0 and f"delegate: opencl; {want}" in out
    code, out, _ = run_cli(capsys, "inspect", demo_path, "--delegate", "opencl", "--json")
    assert json.loads(out)["devices"] == {"opencl": want.removeprefix("opencl: ")}


def test_cli_without_delegate_names_no_device(capsys, demo_path: str) -> None:
    code, out, err = run_cli(capsys, "run", demo_path)
    assert code == 0 and not any(line.startswith("opencl:") for line in out.splitlines()) and err == ""


def test_bench_never_labels_numpy_timings_with_the_delegate(capsys, lenient, demo_path: str, backends) -> None:
    """A delegate that claims nothing, or whose partitions all fail at run time: the timings are
    NumPy's and bench says so (text and JSON)."""
    idle = backends("idle", lambda options: EchoDelegate([]))
    flaky = backends("flaky", lambda options: Breaking(["CONV_2D", "ADD"], range(100), at="run"))
    for name in (idle, flaky):
        code, out, err = run_cli(capsys, "bench", demo_path, "--delegate", name, "--runs", "1", "--warmup", "0")
        assert code == 0
        assert f"delegate: {name}" not in out and f"delegate: none ran ({name} runs no node; NumPy fallback)" in out
        assert "nodes on: numpy" in out
        assert f"not {name}" in one_line(err)
        code, out, _ = run_cli(capsys, "bench", demo_path, "--delegate", name, "--runs", "1", "--warmup", "0",
                               "--json")
        doc = json.loads(out)
        assert doc["delegate"] is None and doc["delegate_requested"] == name and set(doc["nodes_on"]) == {"numpy"}
        assert f"not {name}" in doc["fallback"] and doc["devices"] == {}
    echo = backends("echo-all", lambda options: EchoDelegate(["CONV_2D"]))
    doc = json.loads(run_cli(capsys, "bench", demo_path, "--delegate", echo, "--runs", "1", "--warmup", "0",
                             "--json")[1])
    assert doc["delegate"] == echo and doc["nodes_on"]["echo"] > 0
