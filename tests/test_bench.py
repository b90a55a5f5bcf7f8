"""``teflon-py bench``: the JSON it prints, the LiteRT comparison and the Chrome trace of a
profiled invoke. No timing asserts: speed is what bench reports (see BENCHMARKS.md), not a test.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from teflon_py import cli, ir, profile, zoo

pytest.importorskip("pyopencl")


@pytest.fixture(scope="module")
def small_v2(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("bench") / "v2.tflite"
    path.write_bytes(zoo.build("mobilenet_v2", input_size=32, alpha=0.35, num_classes=10))
    return str(path)


def bench_json(capsys: pytest.CaptureFixture, *argv: str) -> dict:
    code = cli.main(["bench", *argv, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def test_bench_opencl_against_litert_with_a_trace(capsys, tmp_path: Path, device, small_v2: str) -> None:
    trace = tmp_path / "trace.json"
    doc = bench_json(capsys, small_v2, "--delegate", "opencl", "--runs", "3", "--warmup", "1",
                     "--compare", "litert", "--profile", str(trace))
    assert doc["delegate"] == "opencl" and doc["runs"] == 3 and doc["warmup"] == 1
    assert 0 < doc["min_ms"] <= doc["median_ms"] <= doc["max_ms"]
    assert doc["allocate_ms"] > 0 and doc["allocate_warm_ms"] > 0
    assert doc["allocate_cache"] in ("cold", "warm") and doc["allocate_programs_built"] >= 0
    lite = doc["litert"]
    assert lite["num_threads"] >= 1 and 0 < lite["min_ms"] <= lite["median_ms"] <= lite["max_ms"]
    assert doc["ratio_to_litert"] > 0 and doc["ratio_of_medians"] > 0

    events = json.loads(trace.read_text())["traceEvents"]
    kernels = [e for e in events if e["ph"] == "X" and e["cat"] == "opencl"]
    assert kernels, "no OpenCL kernel events in the trace"
    for e in kernels:
        assert {"name", "ph", "ts", "dur", "pid", "tid", "args"} <= set(e)
        assert e["dur"] >= 0 and e["args"]["op"] >= -1
    ops = {e["args"]["op_name"] for e in kernels}
    assert {"CONV_2D", "DEPTHWISE_CONV_2D"} <= ops
    assert all(k["args"]["flops"] > 0 for k in kernels if k["args"]["op_name"] in profile.FLOP_OPS)

    top = doc["profile"]["costliest"]
    assert 1 <= len(top) <= 10 and doc["profile"]["events"] == len(kernels)
    assert [r["median_us"] for r in top] == sorted((r["median_us"] for r in top), reverse=True)
    assert all(r["unit"] == ("GFLOP/s" if r["flops"] else "GB/s") and r["rate"] >= 0 for r in top)


def test_bench_numpy_fallback_profiles_host_ops(capsys, tmp_path: Path, small_v2: str) -> None:
    trace = tmp_path / "numpy.json"
    doc = bench_json(capsys, small_v2, "--delegate", "none", "--runs", "1", "--warmup", "0", "--profile", str(trace))
    assert doc["delegate"] is None and doc["allocate_cache"] == "none" and "litert" not in doc
    events = [e for e in json.loads(trace.read_text())["traceEvents"] if e["ph"] == "X"]
    n_ops = len(zoo_ops(small_v2))
    assert len(events) == n_ops and {e["cat"] for e in events} == {"numpy"}
    assert [e["name"] for e in events] == zoo_ops(small_v2)


def zoo_ops(path: str) -> list[str]:
    from teflon_py.tflite.reader import read_model

    return [op.name for op in read_model(path).main.operations]


def test_bench_text_output(capsys, device, small_v2: str, tmp_path: Path) -> None:
    code = cli.main(["bench", small_v2, "--delegate", "opencl", "--runs", "2", "--warmup", "0",
                     "--profile", str(tmp_path / "t.json")])
    out = capsys.readouterr().out
    assert code == 0
    for words in ("allocate_tensors (first)", "allocate_tensors (warm", "median", "costliest"):
        assert words in out, out


def test_costliest_ranks_by_median_and_picks_units() -> None:
    def ev(name: str, dur: float, flops: int = 0, nbytes: int = 0) -> profile.Event:
        return profile.Event(name, "opencl", 1, "CONV_2D" if flops else "ADD", 0.0, dur, flops, nbytes)

    runs = [[ev("gemm", 10.0, flops=2_000_000), ev("add", 4.0, nbytes=4_000_000)],
            [ev("gemm", 30.0, flops=2_000_000), ev("add", 6.0, nbytes=4_000_000)],
            [ev("gemm", 20.0, flops=2_000_000), ev("add", 5.0, nbytes=4_000_000)]]
    top = profile.costliest(runs, 10)
    assert [r["kernel"] for r in top] == ["gemm", "add"]
    assert top[0]["median_us"] == 20.0 and top[0]["unit"] == "GFLOP/s" and top[0]["rate"] == pytest.approx(100.0)
    assert top[1]["unit"] == "GB/s" and top[1]["rate"] == pytest.approx(800.0)
    assert top[0]["share"] == pytest.approx(20 / 25)
    trace = profile.chrome_trace(runs[0])
    assert [e["name"] for e in trace["traceEvents"] if e["ph"] == "X"] == ["gemm", "add"]


def test_op_flops_counts_multiply_adds() -> None:
    from teflon_py.tflite.builder import ModelBuilder
    from teflon_py.tflite.options import Conv2DOptions

    mb = ModelBuilder()
    g = mb.main
    x = g.add_input("x", (1, 8, 8, 3), np.float32)
    w = g.add_constant("w", np.zeros((4, 3, 3, 3), np.float32))
    y = g.add_tensor("y", (1, 4, 4, 4), np.float32)
    op = g.add_op("CONV_2D", [x, w], [y], Conv2DOptions(padding=ir.Padding.SAME, stride_w=2, stride_h=2))
    assert profile.op_flops(g.graph, op) == 2 * (4 * 4 * 4) * (3 * 3 * 3)
