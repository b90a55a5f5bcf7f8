"""issue 13 items 3, 6-8: check, ops, inspect --dot, --version, python -m, help defaults, progress,
compiler output."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from teflon_py import cli, progress, zoo
from tests.echo_delegate import EchoDelegate, _EchoPartition

ROOT = Path(__file__).resolve().parents[1]


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def int8_path(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("m") / "demo_int8.tflite"
    path.write_bytes(zoo.demo(dtype="int8"))
    return str(path)


class _OffByOne(_EchoPartition):
    """Runs the NumPy kernels, then adds one LSB to the first ADD's output: an injected divergence."""

    def invoke(self, inputs):
        outs = super().invoke(inputs)
        add = next(op for node, _ in self.steps if (op := node.op).name == "ADD")
        k = self.outputs.index(add.outputs[0]) if add.outputs[0] in self.outputs else -1  # else the graph's
        outs[k] = (outs[k].astype(np.int16) + 1).clip(-128, 127).astype(np.int8)
        return outs


class OffByOneDelegate(EchoDelegate):
    name = "offbyone"

    def compile(self, graph, partition):
        return _OffByOne(graph, partition)


def test_check_finds_the_first_divergent_operator(capsys, int8_path, backends) -> None:
    name = backends("offbyone", lambda options: OffByOneDelegate(["CONV_2D", "DEPTHWISE_CONV_2D", "ADD"]))
    code, out, _ = run_cli(capsys, "check", int8_path, "--delegate", name, "--quiet")
    assert code == 1
    last = out.strip().splitlines()[-1]
    assert last.startswith("first divergence from numpy: node 3 ADD (on offbyone partition 0)") and "1 LSB" in last
    code, out, _ = run_cli(capsys, "check", int8_path, "--delegate", name, "-v", "--lsb", "0")
    lines = [ln for ln in out.splitlines() if ln.startswith("node ")]
    assert len(lines) == 14 and lines[0].split()[6] == "ok" and "DIVERGES" in lines[3]
    code, out, _ = run_cli(capsys, "check", int8_path, "--delegate", name, "--lsb", "200")
    assert code == 0  # within the allowed error: no divergence


class _WrongOnlyFused(_EchoPartition):
    """Right while every tensor is a partition output (``check``'s per-tensor run); one LSB off on
    the graph's outputs when the partition keeps its intermediates to itself, as a fused kernel would."""

    def invoke(self, inputs):
        outs = super().invoke(inputs)
        produced = {t for node, _ in self.steps for t in node.op.outputs}
        if len(self.outputs) < len(produced):
            outs = [(o.astype(np.int16) + 1).clip(-128, 127).astype(np.int8) for o in outs]
        return outs


class WrongOnlyFusedDelegate(EchoDelegate):
    name = "fusedbug"

    def compile(self, graph, partition):
        return _WrongOnlyFused(graph, partition)


def test_check_also_runs_the_backend_as_an_application_does(capsys, int8_path, backends) -> None:
    """Keeping every tensor disables a delegate's folds, so check compares a second, normal run on
    the graph outputs: a bug that only a fused run shows is found there."""
    name = backends("fusedbug", lambda options: WrongOnlyFusedDelegate(["CONV_2D", "DEPTHWISE_CONV_2D", "ADD"]))
    code, out, _ = run_cli(capsys, "check", int8_path, "--delegate", name, "--quiet")
    lines = out.strip().splitlines()
    assert code == 1 and "fusedbug agrees with numpy on 14 tensors" in out
    assert lines[-1].startswith("first divergence from numpy with ops folded as in a normal run: graph output 0")
    assert "1 LSB" in lines[-1]


def test_check_without_divergence(capsys, int8_path, backends) -> None:
    name = backends("echo-check", lambda options: EchoDelegate(["CONV_2D", "DEPTHWISE_CONV_2D", "ADD"]))
    code, out, _ = run_cli(capsys, "check", int8_path, "--delegate", name)
    assert code == 0 and "echo-check agrees with numpy on 14 tensors of 14 operators (largest 0 LSB)" in out
    assert "echo-check with ops folded as in a normal run agrees on the 1 graph outputs" in out
    code, out, _ = run_cli(capsys, "check", int8_path, "--delegate", "none", "--reference", "litert")
    assert code == 0 and "agrees with LiteRT BUILTIN_REF" in out and "largest 0 LSB" in out


def test_check_opencl_against_litert_reference(capsys, device, int8_path) -> None:
    code, out, _ = run_cli(capsys, "check", int8_path, "--delegate", "opencl", "--reference", "litert")
    assert code == 0 and "opencl agrees with LiteRT BUILTIN_REF" in out and "largest 0 LSB" in out


def test_check_bad_input_is_one_line(capsys, int8_path, tmp_path) -> None:
    code, _, err = run_cli(capsys, "check", int8_path, "--delegate", "none")
    assert code == 2 and "--reference litert" in err
    code, _, err = run_cli(capsys, "check", str(tmp_path / "nope.tflite"))
    assert code == 2 and "no such model file" in err


def test_check_compare_units() -> None:
    from teflon_py.check import compare

    a = np.array([1.0, 2.0], np.float32)
    assert compare(a, a, 1e-5, 0) == ("rel L2", 0.0, False)
    unit, err, bad = compare(a * 1.01, a, 1e-5, 0)
    assert unit == "rel L2" and abs(err - 0.01) < 1e-6 and bad
    assert compare(np.array([3], np.int8), np.array([1], np.int8), 0, 1)[1:] == (2.0, True)


def test_ops_lists_every_registered_op(capsys) -> None:
    from teflon_py.fallback import KERNELS
    from teflon_py.opencl.registry import LOWERINGS

    code, out, _ = run_cli(capsys, "ops", "--json")
    doc = json.loads(out)
    assert code == 0 and set(doc) == {"numpy", "opencl"}
    assert [r["op"] for r in doc["numpy"]] == sorted(KERNELS)
    assert {r["op"]: r["dtypes"] for r in doc["opencl"]} == {n: sorted(k) for n, k in LOWERINGS.items()}
    code, out, _ = run_cli(capsys, "ops", "--backend", "opencl")
    assert code == 0 and "numpy" not in out and any(ln.split()[:2] == ["opencl", "CONV_2D"] and "int8," in ln
                                                    for ln in out.splitlines())


def test_inspect_dot_colours_partitions_and_labels_fallbacks(capsys, tmp_path, int8_path, backends) -> None:
    name = backends("echo-dot", lambda options: EchoDelegate(["CONV_2D", "ADD"]))
    out_path = tmp_path / "g.dot"
    code, out, _ = run_cli(capsys, "inspect", int8_path, "--delegate", name, "--dot", str(out_path))
    assert code == 0 and f"wrote {out_path}" in out
    text = out_path.read_text()
    assert text.startswith('digraph "demo_int8.tflite" {') and text.rstrip().endswith("}")
    assert 'label="echo partition 0"' in text and "subgraph cluster_echo_0" in text
    assert 'n1 [label="1 DEPTHWISE_CONV_2D' in text and "numpy: echo: echo runs only ADD, CONV_2D" in text
    assert "n0 -> n1;" in text and "in0 -> n0;" in text
    if not any(Path(p, "dot").exists() for p in os.environ.get("PATH", "").split(os.pathsep)):
        code, _, err = run_cli(capsys, "inspect", int8_path, "--svg", str(tmp_path / "g.svg"))
        assert code == 2 and "Graphviz" in err


def test_version_and_python_m(capsys) -> None:
    from teflon_py import __version__

    with pytest.raises(SystemExit) as info:
        cli.main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"teflon-py {__version__}"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "teflon_py", "--version"], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.strip() == f"teflon-py {__version__}"


def test_every_option_has_help_and_shows_its_default() -> None:
    parser = cli._parser()
    sub = next(a for a in parser._actions if a.choices and isinstance(a.choices, dict))
    for name, p in sub.choices.items():
        text = p.format_help()
        for action in p._actions:
            if not action.option_strings or action.dest == "help":
                continue
            assert action.help, f"{name} {action.option_strings} has no help"
            if action.default is not None and action.default is not False:
                assert f"default: {action.default}" in " ".join(text.split()), (name, action.dest)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_on_a_tty_only_when_programs_compile(monkeypatch) -> None:
    counts = {"source": 0}
    monkeypatch.setattr(progress, "_totals", lambda: dict(counts))
    monkeypatch.setattr(progress, "TICK_S", 0.01)
    tty = _Tty()
    p = progress.BuildProgress(tty)
    delegate = EchoDelegate(["ADD"])
    p.watch([delegate])
    with p:
        counts["source"] = 3
        import time

        deadline = time.monotonic() + 5
        while "compiling OpenCL programs: 3 built" not in tty.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    assert "compiling OpenCL programs: 3 built" in tty.getvalue()
    assert tty.getvalue().endswith("compiled 3 OpenCL programs in " + f"{p.seconds:.1f} s; cached for next time\n")
    assert p.built == 3
    for stream, quiet in ((io.StringIO(), False), (_Tty(), True)):  # not a terminal, or --quiet
        counts["source"] = 0
        with progress.BuildProgress(stream, quiet=quiet) as q:
            counts["source"] = 2
        assert stream.getvalue() == "" and q.built == 2
    warm = _Tty()
    with progress.BuildProgress(warm):  # everything from caches: no line
        pass
    assert warm.getvalue() == ""


def test_run_reports_allocate_apart_from_the_first_invoke(capsys) -> None:
    code, out, _ = run_cli(capsys, "run")
    assert code == 0 and "allocate_tensors: " in out and "invoke (first): " in out


def test_compiler_output_is_held_back_unless_debug(capfd, monkeypatch) -> None:
    from teflon_py.opencl.runtime import compiler_output

    class CompilerWarning(UserWarning):
        pass

    def noisy_build() -> None:
        with compiler_output.captured():
            os.write(2, b"36 warnings generated.\n")
            warnings.warn("Non-empty compiler output encountered.", CompilerWarning, stacklevel=1)
            warnings.warn("something else", UserWarning, stacklevel=1)

    monkeypatch.delenv("TEFLON_DEBUG", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        noisy_build()
    assert "warnings generated" not in capfd.readouterr().err
    assert [str(w.message) for w in caught] == ["something else"]  # other warnings still reach the caller
    assert "36 warnings generated." in compiler_output.last_output[0]
    monkeypatch.setenv("TEFLON_DEBUG", "1")
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        noisy_build()
    assert "36 warnings generated." in capfd.readouterr().err


def test_a_cold_opencl_build_prints_no_compiler_noise(device, tmp_path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TEFLON_CACHE_DIR=str(tmp_path / "c"),
               POCL_CACHE_DIR=str(tmp_path / "p"))
    env.pop("TEFLON_DEBUG", None)
    done = subprocess.run([sys.executable, "-m", "teflon_py", "run", "--delegate", "opencl"], capture_output=True,
                          text=True, env=env, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # not a terminal: no progress line either
