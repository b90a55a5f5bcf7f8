"""``teflon-py``: run / inspect / bench / devices / zoo, and one-line errors (exit 2) on bad input."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ai_edge_litert.interpreter import Interpreter as LiteRTInterpreter

import teflon_py
from teflon_py import cli, zoo
from teflon_py.delegate import _BACKENDS, register_backend
from tests.echo_delegate import EchoDelegate

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def echo_backend():
    register_backend("echo-test", lambda options: EchoDelegate(["CONV_2D", "ADD"]))
    yield "echo-test"
    _BACKENDS.pop("echo-test", None)


def run_cli(capsys: pytest.CaptureFixture, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code: int, err: str, *words: str) -> None:
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], lines[0]


# -- run ------------------------------------------------------------------------------------------
def test_run_without_a_model_runs_the_demo(capsys) -> None:
    code, out, _ = run_cli(capsys, "run")
    assert code == 0
    assert "probabilities: float32[1,10]" in out and "top-5:" in out and "nodes on: numpy" in out


def test_run_with_inputs_and_outputs(capsys, tmp_path, demo_path) -> None:
    x = np.random.default_rng(5).uniform(-1, 1, (1, 32, 32, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out_path = tmp_path / "out.npz"
    code, out, _ = run_cli(capsys, "run", demo_path, "--input", str(tmp_path / "x.npy"), "--output", str(out_path))
    assert code == 0 and f"wrote {out_path}" in out
    it = teflon_py.Interpreter(model_path=demo_path)
    it.allocate_tensors()
    it.set_tensor(0, x)
    it.invoke()
    saved = np.load(out_path)
    np.testing.assert_array_equal(saved["probabilities"], it.get_tensor(it.get_output_details()[0]["index"]))


def test_run_with_a_delegate(capsys, demo_path, echo_backend) -> None:
    code, out, _ = run_cli(capsys, "run", demo_path, "--delegate", echo_backend)
    assert code == 0 and "nodes on: echo, numpy" in out


def test_run_int8_model_with_random_inputs(capsys, tmp_path) -> None:
    path = tmp_path / "q.tflite"
    path.write_bytes(zoo.demo(dtype="int8", io="uint8"))
    code, out, _ = run_cli(capsys, "run", str(path))
    assert code == 0 and "output: uint8[1,10]" in out


BAD_INPUTS = ["wrong-shape", "wrong-dtype", "too-many", "not-npy", "npz", "float64", "pickled", "directory"]


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_run_rejects_bad_inputs_before_compiling(capsys, tmp_path, demo_path, monkeypatch, case: str) -> None:
    def no_compile(self) -> None:
        raise AssertionError("allocate_tensors ran before the inputs were checked")

    monkeypatch.setattr(teflon_py.Interpreter, "allocate_tensors", no_compile)
    good = tmp_path / "good.npy"
    np.save(good, np.zeros((1, 32, 32, 3), np.float32))
    bad = tmp_path / "bad.npy"
    if case == "wrong-shape":
        np.save(bad, np.zeros((1, 32, 32, 4), np.float32))
        words: tuple[str, ...] = ("shape [1, 32, 32, 4]", "[1, 32, 32, 3]")
    elif case == "wrong-dtype":
        np.save(bad, np.zeros((1, 32, 32, 3), np.int32))
        words = ("dtype int32", "float32")
    elif case == "too-many":
        bad = good
        words = ("1 input(s), 2 --input",)
    elif case == "not-npy":
        bad.write_bytes(b"not numpy")
        words = ("not a .npy file",)
    elif case == "npz":
        bad = tmp_path / "x.npz"
        np.savez(bad, x=np.zeros((1, 32, 32, 3), np.float32))
        words = ("x.npz", ".npz archive", "one .npy file per model input")
    elif case == "float64":  # as set_tensor, no silent cast
        np.save(bad, np.zeros((1, 32, 32, 3)))
        words = ("dtype float64", "wants float32", "astype(np.float32)")
    elif case == "pickled":
        np.save(bad, np.array([{"a": 1}], dtype=object), allow_pickle=True)
        words = ("Python objects",)
    else:
        bad = tmp_path / "folder"
        bad.mkdir()
        words = ("folder", "is a directory")
    args = ["--input", str(good), "--input", str(bad)] if case == "too-many" else ["--input", str(bad)]
    code, _, err = run_cli(capsys, "run", demo_path, *args)
    assert_one_line_error(code, err, *words)
    assert "allow_pickle" not in err and "Traceback" not in err


def test_set_tensor_refuses_float64_as_the_cli_does(demo_path) -> None:
    it = teflon_py.Interpreter(model_path=demo_path)
    it.allocate_tensors()
    with pytest.raises(ValueError, match="FLOAT64"):
        it.set_tensor(0, np.zeros((1, 32, 32, 3)))


@pytest.mark.parametrize("command", ["run", "inspect", "bench"])
def test_a_directory_is_not_a_model(capsys, tmp_path, command: str) -> None:
    code, _, err = run_cli(capsys, command, str(tmp_path))
    assert_one_line_error(code, err, "is a directory, not a model file")


def test_bench_compare_litert_without_litert_fails_before_compiling(capsys, demo_path, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)
    monkeypatch.setattr(cli, "_timed_allocate", lambda *a, **k: pytest.fail("compiled before checking"))
    code, _, err = run_cli(capsys, "bench", demo_path, "--compare", "litert")
    assert_one_line_error(code, err, "--compare litert needs LiteRT", "pip install ai-edge-litert")


@pytest.mark.parametrize("command", ["run", "inspect", "bench"])
def test_bad_model_files(capsys, tmp_path, command: str) -> None:
    code, _, err = run_cli(capsys, command, str(tmp_path / "missing.tflite"))
    assert_one_line_error(code, err, "missing.tflite", "no such model file")
    corrupt = tmp_path / "corrupt.tflite"
    corrupt.write_bytes(zoo.demo()[:300])
    code, _, err = run_cli(capsys, command, str(corrupt))
    assert_one_line_error(code, err, "corrupt.tflite")
    not_model = tmp_path / "notes.tflite"
    not_model.write_text("hello, this is not a model")
    code, _, err = run_cli(capsys, command, str(not_model))
    assert_one_line_error(code, err, "not a TFLite model")


def test_unknown_delegate(capsys, demo_path) -> None:
    code, _, err = run_cli(capsys, "run", demo_path, "--delegate", "warp-drive")
    assert_one_line_error(code, err, "unknown delegate 'warp-drive'")


# -- inspect --------------------------------------------------------------------------------------
def test_inspect_table(capsys, demo_path) -> None:
    code, out, _ = run_cli(capsys, "inspect", demo_path)
    assert code == 0
    lines = out.strip().splitlines()
    n_ops = len(teflon_py.Interpreter(model_path=demo_path).model.main.operations)
    assert lines[1].split() == ["#", "op", "inputs", "outputs", "backend", "part", "reason"]
    assert len(lines) == 1 + 1 + n_ops + 1
    assert lines[2].split()[:2] == ["0", "CONV_2D"] and "float32[1,32,32,3]" in lines[2]
    assert lines[-1] == f"0 partitions claim 0 of {n_ops} nodes; {n_ops} run on the fallback"


def test_inspect_json_schema(capsys, demo_path, echo_backend) -> None:
    code, out, _ = run_cli(capsys, "inspect", demo_path, "--delegate", echo_backend, "--json")
    assert code == 0
    doc = json.loads(out)
    assert list(doc) == ["model", "delegate", "nodes", "partitions", "devices", "fallbacks"]
    assert doc["model"] == demo_path and doc["delegate"] == echo_backend
    assert doc["devices"] == {} and doc["fallbacks"] == []  # the echo backend names no device
    ops = [op.name for op in teflon_py.Interpreter(model_path=demo_path).model.main.operations]
    assert [n["index"] for n in doc["nodes"]] == list(range(len(ops)))
    graph = teflon_py.Interpreter(model_path=demo_path).model.main
    for node, op in zip(doc["nodes"], ops):
        assert list(node) == ["index", "op", "backend", "partition", "reason", "inputs", "outputs"]
        assert node["op"] == op
        operation = graph.operations[node["index"]]
        for key, indices in (("inputs", operation.inputs), ("outputs", operation.outputs)):
            assert [d and d["tensor"] for d in node[key]] == [i if i >= 0 else None for i in indices]
            for d in node[key]:
                if d is not None:
                    t = graph.tensors[d["tensor"]]
                    assert d["dtype"] == t.dtype.name and d["shape"] == list(t.shape)
        if op in ("CONV_2D", "ADD"):
            assert node["backend"] == "echo" and isinstance(node["partition"], int) and node["reason"] is None
        else:
            assert node["backend"] == "numpy" and node["partition"] is None and "echo runs only" in node["reason"]
    assert doc["partitions"]
    for k, part in enumerate(doc["partitions"]):
        assert part == {"index": k, "backend": "echo", "nodes": part["nodes"]}
        assert all(doc["nodes"][i]["partition"] == k for i in part["nodes"])


def test_inspect_json_without_delegate(capsys, demo_path) -> None:
    doc = json.loads(run_cli(capsys, "inspect", demo_path, "--json")[1])
    assert doc["delegate"] is None and doc["partitions"] == []
    assert {n["backend"] for n in doc["nodes"]} == {"numpy"}


# -- bench ----------------------------------------------------------------------------------------
def test_bench_json(capsys, demo_path) -> None:
    code, out, _ = run_cli(capsys, "bench", demo_path, "--runs", "3", "--warmup", "1", "--json", "--compare", "litert")
    assert code == 0
    doc = json.loads(out)
    assert {"model", "delegate", "runs", "warmup", "allocate_ms", "allocate_programs_built", "allocate_cache",
            "allocate_warm_ms", "allocate_warm_programs_built", "median_ms", "min_ms", "max_ms", "litert",
            "ratio_to_litert", "ratio_of_medians", "delegate_requested", "nodes_on", "devices"} == set(doc)
    assert doc["runs"] == 3 and 0 < doc["min_ms"] <= doc["median_ms"] <= doc["max_ms"]
    assert doc["allocate_ms"] > 0 and doc["ratio_to_litert"] > 0 and doc["allocate_cache"] == "none"
    assert doc["litert"]["num_threads"] == os.cpu_count() and doc["litert"]["median_ms"] > 0


def test_bench_text_and_bad_runs(capsys, demo_path) -> None:
    code, out, _ = run_cli(capsys, "bench", demo_path, "--runs", "2", "--warmup", "0")
    assert code == 0 and "median" in out and "allocate_tensors (first)" in out and "allocate_tensors (warm" in out
    code, _, err = run_cli(capsys, "bench", demo_path, "--runs", "0")
    assert_one_line_error(code, err, "--runs")
    with pytest.raises(SystemExit) as info:  # --compare names what to compare with
        cli.main(["bench", demo_path, "--compare", "tensorflow"])
    assert info.value.code == 2


# -- devices, zoo ---------------------------------------------------------------------------------
def test_devices(capsys) -> None:
    from tests.conftest import BACKENDS

    code, out, err = run_cli(capsys, "devices")
    if "opencl" in BACKENDS:  # a device exists (always under CI): it is listed
        assert code == 0 and out.strip()
        from teflon_py.opencl.runtime import device

        assert device.select_device().name.strip() in out
    else:
        assert code == 1 and err.strip()


def test_devices_without_the_opencl_module(capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "teflon_py.opencl.runtime.device", None)
    code, _, err = run_cli(capsys, "devices")
    assert code == 1 and "OpenCL backend is not available" in err


@pytest.mark.parametrize("args", [
    ["demo"], ["demo", "--dtype", "int8", "--io", "float32"],
    ["mobilenet_v1", "--size", "64", "--alpha", "0.25", "--classes", "7"],
    ["mobilenet_v2", "--dtype", "int8", "--io", "uint8", "--size", "64", "--alpha", "0.35", "--external-buffers"],
], ids=["demo", "demo-int8", "v1-small", "v2-int8-external"])
def test_zoo_writes_models_litert_runs(capsys, tmp_path, args: list[str]) -> None:
    out_path = tmp_path / "m.tflite"
    code, out, _ = run_cli(capsys, "zoo", args[0], str(out_path), *args[1:])
    assert code == 0 and f"wrote {out_path}" in out
    lite = LiteRTInterpreter(model_path=str(out_path))
    lite.allocate_tensors()
    if "--classes" in args:
        assert list(lite.get_output_details()[0]["shape"]) == [1, 7]
    ours = teflon_py.Interpreter(model_path=str(out_path))
    assert [d["name"] for d in ours.get_tensor_details()] == [d["name"] for d in lite.get_tensor_details()][
        :len(ours.get_tensor_details())]


@pytest.mark.parametrize("flag,value", [("--size", "0"), ("--size", "-3"), ("--classes", "0"), ("--alpha", "0")])
def test_zoo_refuses_sizes_that_make_no_model(capsys, tmp_path, flag: str, value: str) -> None:
    out = tmp_path / "m.tflite"
    code, _, err = run_cli(capsys, "zoo", "mobilenet_v1", str(out), flag, value)
    assert_one_line_error(code, err, flag)
    assert not out.exists()


@pytest.mark.parametrize("kwargs", [{"input_size": 0}, {"num_classes": 0}, {"alpha": 0.0}, {"input_size": 2.5}])
def test_zoo_builders_refuse_sizes_that_make_no_model(kwargs) -> None:
    with pytest.raises(ValueError, match="must be a positive|must be positive"):
        zoo.mobilenet_v1(**kwargs)


def test_zoo_rejects_bad_options(capsys, tmp_path) -> None:
    code, _, err = run_cli(capsys, "zoo", "demo", str(tmp_path / "m.tflite"), "--alpha", "2")
    assert_one_line_error(code, err, "--alpha")
    code, _, err = run_cli(capsys, "zoo", "mobilenet_v1", str(tmp_path / "m.tflite"), "--io", "uint8")
    assert_one_line_error(code, err, "io 'uint8'")
    with pytest.raises(SystemExit) as info:
        cli.main(["zoo", "resnet", str(tmp_path / "m.tflite")])
    assert info.value.code == 2


# -- the installed command ----------------------------------------------------------------------------
def test_console_script_subprocess(tmp_path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    ok = subprocess.run([sys.executable, "-m", "teflon_py.cli", "run"], capture_output=True, text=True, env=env,
                        cwd=tmp_path, timeout=120, check=False)
    assert ok.returncode == 0, ok.stderr
    assert "top-5" in ok.stdout
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"TFL3" * 10)
    fail = subprocess.run([sys.executable, "-m", "teflon_py.cli", "inspect", str(bad)], capture_output=True,
                          text=True, env=env, cwd=tmp_path, timeout=120, check=False)
    assert fail.returncode == 2 and "Traceback" not in fail.stderr
    assert len(fail.stderr.strip().splitlines()) == 1


# -- ExecuTorch programs ------------------------------------------------------------------------------
PTE = ROOT / "tests" / "fixtures" / "executorch"


def test_run_a_program_with_inputs_matches_executorch(capsys, tmp_path) -> None:
    recorded = np.load(PTE / "net_split_layernorm_fp32.npz")
    np.save(tmp_path / "x.npy", recorded["input_0"])
    code, out, _ = run_cli(capsys, "run", str(PTE / "net_split_layernorm_fp32.pte"), "--input",
                           str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npz"))
    assert code == 0 and "nodes on: numpy" in out
    np.testing.assert_allclose(np.load(tmp_path / "y.npz")["output0"], recorded["output_0"], rtol=1e-5, atol=1e-6)


def test_inspect_json_of_a_program(capsys, device) -> None:
    """The same document as for a .tflite: one row per XNode and per portable kernel call."""
    code, out, _ = run_cli(capsys, "inspect", str(PTE / "net_split_layernorm_fp32.pte"), "--delegate", "opencl",
                           "--json")
    assert code == 0
    doc = json.loads(out)
    assert list(doc) == ["model", "delegate", "nodes", "partitions", "devices", "fallbacks"]
    assert set(doc["devices"]) == {"opencl"} and doc["fallbacks"] == []
    assert [n["op"] for n in doc["nodes"]] == ["XNNStaticTranspose", "XNNConv2d", "XNNStaticTranspose",
                                               "aten::mean.out", "aten::native_layer_norm.out", "XNNFullyConnected"]
    for node in doc["nodes"]:
        assert list(node) == ["index", "op", "backend", "partition", "reason", "inputs", "outputs"]
        assert node["outputs"][0]["dtype"] == "float32" and all(n > 0 for n in node["outputs"][0]["shape"])
        assert all(isinstance(d["dtype"], str) and all(isinstance(n, int) for n in d["shape"])
                   for d in node["inputs"] + node["outputs"] if d is not None)
        portable = node["op"].startswith("aten::")
        assert node["backend"] == ("numpy" if portable else "opencl")
        assert (node["reason"] == "portable operator") == portable
    assert [p["nodes"] for p in doc["partitions"]] == [[0, 1, 2], [5]]


def test_bench_a_program(capsys) -> None:
    code, out, _ = run_cli(capsys, "bench", str(PTE / "conv2d.pte"), "--runs", "2", "--warmup", "0", "--json")
    assert code == 0 and json.loads(out)["median_ms"] > 0
    code, _, err = run_cli(capsys, "bench", str(PTE / "conv2d.pte"), "--compare", "litert")
    assert_one_line_error(code, err, "ExecuTorch program", "--compare executorch")


def test_a_damaged_program_is_one_line(capsys, tmp_path) -> None:
    bad = tmp_path / "bad.pte"
    bad.write_bytes((PTE / "conv2d.pte").read_bytes()[:300])
    code, _, err = run_cli(capsys, "inspect", str(bad))
    assert_one_line_error(code, err, str(bad))
