"""The per-device kernel parameters: which family each kind of device gets, the overrides, and
what ``inspect`` reports of the choice."""
from __future__ import annotations

import json

import pytest

import teflon_py
from teflon_py import cli, zoo
from teflon_py.opencl.caps import Caps
from teflon_py.opencl.kernels import cpu_tiles
from teflon_py.opencl.params import ENV, default_family, params_for

POCL = Caps(name="cpu-x86-64", device_type="CPU", platform="Portable Computing Language", compute_units=2)
LLVMPIPE = Caps(name="llvmpipe (LLVM 15.0.6, 256 bits)", device_type="CPU", platform="rusticl",
                compute_units=8, simd_work_items=True, max_work_group_size=1024)
GPU = Caps(name="Some GPU", device_type="GPU", platform="vendor", compute_units=40, simd_work_items=True,
           max_work_group_size=256)


def test_family_by_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    assert default_family(POCL) == "cpu" and params_for(POCL).family == "cpu"
    assert default_family(LLVMPIPE) == "gpu" and params_for(LLVMPIPE).gpu
    assert default_family(GPU) == "gpu"
    gpu = params_for(GPU)
    assert gpu.device == "Some GPU" and gpu.compute_units == 40
    assert gpu.gemm_wg[0] * gpu.gemm_wg[1] <= 256 and gpu.small_wg <= 256
    assert gpu.min_items >= 40 * 8  # at least a work-item per lane of every compute unit
    small = params_for(Caps(device_type="GPU", max_work_group_size=32))
    assert small.gemm_wg[0] * small.gemm_wg[1] <= 32 and small.small_wg <= 32


def test_overrides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "GPU")
    assert params_for(POCL).family == "gpu"
    assert params_for(POCL, "cpu").family == "cpu"  # the delegate option beats the environment
    monkeypatch.setenv(ENV, "vector")
    with pytest.raises(ValueError, match=ENV):
        params_for(POCL)
    monkeypatch.delenv(ENV)
    assert params_for(LLVMPIPE, "cpu").family == "cpu"


@pytest.mark.parametrize("width,table", [(16, "avx512"), (8, "avx2"), (4, "narrow"), (1, "narrow")])
def test_cpu_tiles_follow_the_vector_width(monkeypatch: pytest.MonkeyPatch, width: int, table: str) -> None:
    """The cpu family's register tiles are the device's SIMD width's, and inspect says which."""
    monkeypatch.delenv(cpu_tiles.ENV, raising=False)
    p = params_for(Caps(float_vector_width=width))
    assert p.tiles.name == table and p.describe()["tiles"] == table
    rows = p.tiles.tile_rows
    assert all(r * nv * 16 <= 24 * 16 for r, nv in p.tiles.blockings)  # accumulators: at most 24 vectors
    assert rows and all(p.tiles.rows_for(nv) >= 1 for nv in range(1, 5))
    monkeypatch.setenv(cpu_tiles.ENV, "avx512")
    assert params_for(Caps(float_vector_width=width)).tiles is cpu_tiles.AVX512
    monkeypatch.setenv(cpu_tiles.ENV, "sse9")
    with pytest.raises(ValueError, match=cpu_tiles.ENV):
        params_for(POCL)


def test_the_avx2_tiles_fit_sixteen_registers() -> None:
    """A 16-float vector is two AVX2 registers: the AVX2 table's accumulators leave room for the
    B vectors and the broadcast (the AVX-512 tiles spilled there and ran 2-3x slower)."""
    assert max(r * nv * 2 for r, nv in cpu_tiles.AVX2.blockings) <= 12
    assert max(r * nv for r, nv in cpu_tiles.AVX512.blockings) <= 24


def test_delegate_option_checked() -> None:
    with pytest.raises(ValueError, match="kernel family 'simd'"):
        teflon_py.load_delegate("opencl", {"kernel_family": "simd"})
    assert teflon_py.load_delegate("opencl", {"kernel_family": "GPU"}).family == "gpu"


@pytest.mark.parametrize("family", ["cpu", "gpu"])
def test_inspect_reports_family_and_device(capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch,
                                           tmp_path, family: str) -> None:
    pytest.importorskip("pyopencl")
    path = tmp_path / "demo.tflite"
    path.write_bytes(zoo.demo())
    monkeypatch.setenv(ENV, family)
    assert cli.main(["inspect", str(path), "--delegate", "opencl", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["partitions"]
    dev = teflon_py.load_delegate("opencl")
    for part in doc["partitions"]:
        assert part["kernel_family"] == family and part["device"] == dev.caps.name
        assert ("tiles" in part) == (family == "cpu")
    assert cli.main(["inspect", str(path), "--delegate", "opencl"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert f"partition 0 (opencl): device {dev.caps.name}, kernel family {family}" in text
