"""Whole float32 networks on the OpenCL delegate: one partition, no fallback, LiteRT's numbers.

The zoo's MobileNet V1/V2-shaped graphs (96x96, alpha 0.5, seeded random weights) must run as a
single OpenCL partition within relative L2 1e-4 of LiteRT's reference kernels, and a second
process must find the compiled programs in the on-disk cache (allocate_tensors >= 5x faster).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from teflon_py import zoo
from teflon_py.errors import BackendError
from tests.harness import check_model

pytest.importorskip("pyopencl")
pytestmark = pytest.mark.model
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def device() -> None:
    from teflon_py.opencl import device as dev

    try:
        dev.get_context()
    except BackendError as e:
        pytest.skip(f"no OpenCL device: {e}")


@pytest.mark.parametrize("name", ["mobilenet_v1", "mobilenet_v2"])
def test_float_mobilenet_is_one_opencl_partition(device, name: str) -> None:
    model = zoo.build(name, dtype="float32")
    x = np.random.default_rng(0).uniform(-1.0, 1.0, (1, 96, 96, 3)).astype(np.float32)
    it = check_model(model, "opencl", inputs=[x], float_tol=1e-4)
    placements = it.placements()
    assert [p.backend for p in placements] == ["opencl"] * len(placements)
    assert it.partitions() == [{"index": 0, "backend": "opencl", "nodes": list(range(len(placements)))}]


_ALLOCATE = textwrap.dedent("""
    import json, time
    import numpy as np
    import teflon_py
    from teflon_py import zoo
    model = zoo.build("mobilenet_v1", dtype="float32")
    it = teflon_py.Interpreter(model_content=model, experimental_delegates=[teflon_py.load_delegate("opencl")])
    start = time.perf_counter()
    it.allocate_tensors()
    seconds = time.perf_counter() - start
    it.set_tensor(it.get_input_details()[0]["index"], np.zeros((1, 96, 96, 3), np.float32))
    it.invoke()
    print(json.dumps({"seconds": seconds, "backends": sorted({p.backend for p in it.placements()})}))
""")


def test_second_process_finds_programs_in_the_cache(device, tmp_path: Path) -> None:
    env = dict(os.environ, TEFLON_CACHE_DIR=str(tmp_path / "teflon"), POCL_CACHE_DIR=str(tmp_path / "pocl"),
               PYTHONPATH=str(REPO))
    runs = []
    for _ in range(2):
        done = subprocess.run([sys.executable, "-c", _ALLOCATE], env=env, cwd=REPO, capture_output=True,
                              text=True, check=False, timeout=300)
        assert done.returncode == 0, done.stderr
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    assert all(r["backends"] == ["opencl"] for r in runs)
    cold, warm = runs[0]["seconds"], runs[1]["seconds"]
    assert cold >= 5 * warm, f"allocate_tensors took {cold:.2f} s cold and {warm:.2f} s from the cache"
    assert any((tmp_path / "teflon").iterdir())
