"""The build probe: a driver that ends the process while compiling costs a NumPy fallback, not the
interpreter (``teflon_py/opencl/runtime/probe.py``). Faults are injected in the probe's child
(``TEFLON_CL_PROBE_FAULT``); the last tests use a real crashing driver (Mesa rusticl) if present."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
import warnings
from pathlib import Path

import numpy as np
import pytest

from teflon_py import ir
from teflon_py.errors import BackendError
from tests.harness import compare_with_litert, single_op

pytest.importorskip("pyopencl")
REPO = Path(__file__).resolve().parents[1]
RUSTICL = Path("/opt/extra-icds/rusticl.icd")
KERNEL = "__kernel void twice(__global const float *x, __global float *y) { int i = get_global_id(0); y[i] = 2.0f * x[i]; }"
F32 = np.float32


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch):
    """No program or probe outcome remembered in this process; probing on, no fault injected."""
    from teflon_py.opencl.runtime import probe, programs

    for env in (probe.ENV, probe.FAULT_ENV, probe.TIMEOUT_ENV, probe.WARM_ENV):
        monkeypatch.delenv(env, raising=False)
    programs.clear_memo()
    probe.forget()
    yield probe
    programs.clear_memo()
    probe.forget()


@pytest.fixture(scope="module")
def dc():
    from teflon_py.opencl.runtime import device

    try:
        return device.get_context()
    except BackendError as e:
        pytest.skip(f"no OpenCL device: {e}")


def _unique(name: str = "twice") -> str:
    return f"// {name} {uuid.uuid4()}\n{KERNEL}"


def _conv_model() -> bytes:
    """A 3x3 conv with 16 output channels: conv2d.cl's (fewer take conv2d_narrow.cl)."""
    w = np.random.default_rng(3).standard_normal((16, 3, 3, 4)).astype(F32)
    from teflon_py.tflite import options as O

    return single_op("CONV_2D", [{"shape": (1, 8, 8, 4), "dtype": F32}, {"shape": w.shape, "dtype": F32, "data": w},
                                 {"shape": (16,), "dtype": F32, "data": np.zeros(16, F32)}],
                     [{"shape": (1, 8, 8, 16), "dtype": F32}], O.Conv2DOptions(padding=ir.Padding.SAME, stride_w=1, stride_h=1))


def test_crash_falls_back_with_one_line_warning_and_is_recorded(dc, fresh, monkeypatch, tmp_path, lenient) -> None:
    monkeypatch.setenv(fresh.FAULT_ENV, "abort:conv2d.cl")
    before = dict(fresh.STATS)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        it = compare_with_litert(_conv_model(), "opencl", options={"cache_dir": str(tmp_path)})
    assert [p.backend for p in it.placements()] == ["numpy"]
    (message,) = [str(w.message) for w in caught if "failed to build" in str(w.message)]
    assert "\n" not in message
    assert "conv2d.cl" in message and "ended the process" in message and "SIGABRT" in message, message
    assert dc.name in message
    (record,) = tmp_path.glob("*.crash")
    assert json.loads(record.read_text())["outcome"] == "crash" and str(record) in message
    assert fresh.STATS["crash"] == before.get("crash", 0) + 1
    probed, started = fresh.STATS["probed"], fresh.STATS["started"]

    # A second load (nothing remembered in-process) reads the record: no child, same fallback.
    from teflon_py.opencl.runtime import programs

    programs.clear_memo()
    fresh.forget()
    with pytest.warns(RuntimeWarning, match="conv2d.cl.*in an earlier probe"):
        it = compare_with_litert(_conv_model(), "opencl", options={"cache_dir": str(tmp_path)})
    assert [p.backend for p in it.placements()] == ["numpy"]
    assert (fresh.STATS["probed"], fresh.STATS["started"]) == (probed, started)


def test_strict_mode_makes_a_crash_an_error(dc, fresh, monkeypatch, tmp_path) -> None:
    import teflon_py

    monkeypatch.setenv("TEFLON_STRICT", "1")
    monkeypatch.setenv(fresh.FAULT_ENV, "abort:conv2d.cl")
    it = teflon_py.Interpreter(model_content=_conv_model(),
                               experimental_delegates=[teflon_py.load_delegate("opencl", {"cache_dir": str(tmp_path)})])
    with pytest.raises(BackendError, match="ended the process building .*conv2d.cl"):
        it.allocate_tensors()


def test_survived_build_is_recorded_and_reused(dc, fresh, tmp_path) -> None:
    from teflon_py.opencl.runtime import programs

    source = _unique()
    probed = fresh.STATS["probed"]
    programs.ProgramCache(dc, tmp_path).build_source(source, "-DSCALE=2.0f", label="twice.cl")
    assert fresh.STATS["probed"] == probed + 1
    (record,) = tmp_path.glob("*.ok")
    assert json.loads(record.read_text())["outcome"] == "ok"

    programs.clear_memo()
    fresh.forget()
    cache = programs.ProgramCache(dc, tmp_path)
    cache.build_source(source, "-DSCALE=2.0f", label="twice.cl")
    assert cache.stats["source"] == 1 and fresh.STATS["probed"] == probed + 1  # built, not probed again
    assert cache.commit() == 1

    # A cached binary needs no probe, even without the record.
    record.unlink()
    programs.clear_memo()
    fresh.forget()
    cache = programs.ProgramCache(dc, tmp_path)
    cache.build_source(source, "-DSCALE=2.0f", label="twice.cl")
    assert cache.stats["disk"] == 1 and fresh.STATS["probed"] == probed + 1
    assert not list(tmp_path.glob("*.ok")) and not list(tmp_path.glob(".tmp-*"))


def test_build_error_is_survivable_and_reported_as_before(dc, fresh, tmp_path) -> None:
    from teflon_py.opencl.runtime import programs

    errors = fresh.STATS["error"]
    with pytest.raises(BackendError, match="(?s)building broken.cl .*failed.*deliberately broken"):
        programs.ProgramCache(dc, tmp_path).build_source(_unique() + "\n#error deliberately broken\n", "",
                                                         label="broken.cl")
    assert fresh.STATS["error"] == errors + 1
    (record,) = tmp_path.glob("*.ok")
    assert json.loads(record.read_text())["outcome"] == "error"


def test_hang_times_out_and_a_longer_timeout_probes_again(dc, fresh, monkeypatch, tmp_path) -> None:
    from teflon_py.opencl.runtime import programs

    source = _unique()
    fresh.check(dc.device, "warm-up", _unique(), "", "warm.cl", None)  # a running child: the count below is of restarts
    monkeypatch.setenv(fresh.FAULT_ENV, "hang:hang.cl")
    monkeypatch.setenv(fresh.TIMEOUT_ENV, "0.5")
    started, probed = fresh.STATS["started"], fresh.STATS["probed"]
    with pytest.raises(BackendError, match=r"building hang.cl on .* did not finish within 0.5 s \(TEFLON_CL_PROBE_TIMEOUT\)"):
        programs.ProgramCache(dc, tmp_path).build_source(source, "", label="hang.cl")
    (record,) = tmp_path.glob("*.crash")
    assert json.loads(record.read_text())["outcome"] == "hang"
    assert fresh.STATS["probed"] == probed + 1

    programs.clear_memo()
    fresh.forget()
    with pytest.raises(BackendError, match="within 0.5 s .*in an earlier probe"):  # same limit: the record answers
        programs.ProgramCache(dc, tmp_path).build_source(source, "", label="hang.cl")
    assert fresh.STATS["probed"] == probed + 1

    monkeypatch.setenv(fresh.TIMEOUT_ENV, "0.75")
    with pytest.raises(BackendError, match="within 0.75 s .*in a probe process"):
        programs.ProgramCache(dc, tmp_path).build_source(source, "", label="hang.cl")
    assert fresh.STATS["probed"] == probed + 2

    monkeypatch.delenv(fresh.FAULT_ENV)  # the killed child is replaced at the next probe
    programs.ProgramCache(dc, tmp_path).build_source(_unique(), "", label="after.cl")
    assert fresh.STATS["started"] == started + 2  # hung twice, restarted after each


def test_probing_off_builds_in_process_and_records_nothing(dc, fresh, monkeypatch, tmp_path) -> None:
    from teflon_py.opencl.runtime import programs

    monkeypatch.setenv(fresh.ENV, "0")
    monkeypatch.setenv(fresh.FAULT_ENV, "abort:twice.cl")
    probed = fresh.STATS["probed"]
    cache = programs.ProgramCache(dc, tmp_path)
    cache.build_source(_unique(), "", label="twice.cl")
    assert cache.stats["source"] == 1 and fresh.STATS["probed"] == probed
    assert not list(tmp_path.iterdir())


def test_a_probe_that_cannot_start_warns_and_builds_unprobed(dc, fresh, monkeypatch, tmp_path) -> None:
    from teflon_py.opencl.runtime import programs

    monkeypatch.setattr(fresh, "_children", {})  # this test's broken worker is not the others'
    monkeypatch.setattr(fresh.devices, "index_of", lambda dev: "99:0")  # no such platform in the child
    cache = programs.ProgramCache(dc, tmp_path)
    with pytest.warns(RuntimeWarning, match="cannot start the OpenCL build probe on .*no OpenCL platform 99"):
        cache.build_source(_unique(), "", label="twice.cl")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cache.build_source(_unique(), "", label="twice.cl")
    assert not caught  # no second attempt, no second warning
    assert cache.stats["source"] == 2 and not list(tmp_path.iterdir())


# ---- a real driver that ends the process: Mesa rusticl on llvmpipe ----------------------------

RUSTICL_CHILD = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    from teflon_py.errors import BackendError
    from teflon_py.opencl.runtime import device, probe, programs
    dc = device.get_context()
    source = "__kernel void k(__global float *x) { __builtin_prefetch(x + 16); x[get_global_id(0)] *= 2.0f; }"
    try:
        programs.program_cache(dc).build_source(source, "", label="prefetch.cl")
        error = None
    except BackendError as e:
        error = str(e)
    import teflon_py
    from teflon_py import zoo
    model = zoo.build("demo")
    x = np.random.default_rng(0).standard_normal((1, 32, 32, 3)).astype(np.float32)
    outs = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for name in ("numpy", "opencl"):
            delegates = [teflon_py.load_delegate("opencl")] if name == "opencl" else []
            it = teflon_py.Interpreter(model_content=model, experimental_delegates=delegates)
            it.allocate_tensors()
            it.set_tensor(it.get_input_details()[0]["index"], x)
            it.invoke()
            outs[name] = it.get_tensor(it.get_output_details()[0]["index"]).tolist()
            backends = [p.backend for p in it.placements()]
    print(json.dumps({"device": dc.name, "error": error, "stats": dict(probe.STATS), "outs": outs,
                      "backends": backends, "warnings": [str(w.message) for w in caught]}))
""")


@pytest.mark.skipif(not RUSTICL.exists(), reason=f"Mesa rusticl is not installed ({RUSTICL} missing)")
def test_rusticl_compiler_abort_is_survived(tmp_path) -> None:
    """rusticl's SPIR-V writer ends the process on ``__builtin_prefetch`` (exit status 8); through
    the probe the build is a BackendError, and a model still runs (on OpenCL where it builds)."""
    env = {**os.environ, "OCL_ICD_VENDORS": str(RUSTICL), "RUSTICL_ENABLE": "llvmpipe", "TEFLON_STRICT": "0",
           "TEFLON_CACHE_DIR": str(tmp_path), "TEFLON_CL_DEVICE": "rusticl",
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for var in ("TEFLON_CL_PROBE", "TEFLON_CL_PROBE_FAULT"):
        env.pop(var, None)
    done = subprocess.run([sys.executable, "-c", RUSTICL_CHILD], check=False, env=env, capture_output=True, text=True,
                          cwd=REPO, timeout=600)
    if done.returncode != 0 and "no OpenCL device matches" in done.stderr:
        pytest.skip("rusticl lists no llvmpipe device here")
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["error"] is not None and "prefetch.cl" in result["error"], result
    assert "llvm.prefetch" in result["error"] and "exit status" in result["error"]
    assert result["stats"]["crash"] >= 1
    np.testing.assert_allclose(result["outs"]["opencl"], result["outs"]["numpy"], rtol=1e-4, atol=1e-5)
    crashed = [w for w in result["warnings"] if "ended the process" in w]
    assert crashed or set(result["backends"]) == {"opencl"}, result  # each partition: OpenCL, or a clear fallback


def test_a_partitions_programs_are_probed_two_at_a_time(dc, fresh, monkeypatch, tmp_path) -> None:
    """``ahead.check_many`` probes a batch in two children; a crash in one is recorded for its program
    only, the others are recorded ok, and the builds that follow answer from the records."""
    from teflon_py.opencl.runtime import ahead, programs

    monkeypatch.setenv(fresh.FAULT_ENV, "abort:crashing.cl")
    cache = programs.ProgramCache(dc, tmp_path)
    sources = [(_unique(f"p{i}"), f"p{i}.cl") for i in range(4)] + [(_unique("crash"), "crashing.cl")]
    items = [(cache.key(src, ""), src, "", label) for src, label in sources]
    probed = fresh.STATS["probed"]
    ahead.check_many(dc.device, items, tmp_path)
    assert fresh.STATS["probed"] == probed + 5
    slots = {slot for (ptr, slot), child in fresh._children.items() if ptr == dc.device.int_ptr and child}
    assert {0, 1} <= slots  # two children probed
    assert len(list(tmp_path.glob("*.ok"))) == 4 and len(list(tmp_path.glob("*.crash"))) == 1
    for src, label in sources[:4]:
        cache.build_source(src, "", label=label)
    with pytest.raises(BackendError, match="crashing.cl.*in an earlier probe"):
        cache.build_source(sources[4][0], "", label="crashing.cl")
    assert fresh.STATS["probed"] == probed + 5  # every answer came from the records


def _warms(dc) -> None:
    from teflon_py.opencl.runtime import probe

    if not probe.compiles_at_launch_into_disk_cache(dc.device):
        pytest.skip(f"{dc.name} does not keep kernels compiled at a first launch in a disk cache")


def test_a_cold_partitions_kernels_are_warmed_up_in_the_children(dc, fresh, tmp_path) -> None:
    """Each freshly probed program is probed once (the build waits for the child's answer instead
    of probing again), and each of its kernels runs once in a child before the first run here; the
    partition still computes what LiteRT does."""
    _warms(dc)
    before = dict(fresh.STATS)
    it = compare_with_litert(_conv_model(), "opencl", options={"cache_dir": str(tmp_path)})
    assert [p.backend for p in it.placements()] == ["opencl"]
    probed = fresh.STATS["probed"] - before.get("probed", 0)
    assert probed >= 1 and len(list(tmp_path.glob("*.ok"))) == probed
    assert fresh.STATS["warmed"] - before.get("warmed", 0) >= 1
    assert fresh.STATS["warm_failed"] == before.get("warm_failed", 0)

    # Loaded again with the records on disk: nothing is probed, so nothing is warmed.
    from teflon_py.opencl.runtime import programs

    programs.clear_memo()
    fresh.forget()
    after = dict(fresh.STATS)
    compare_with_litert(_conv_model(), "opencl", options={"cache_dir": str(tmp_path)})
    assert (fresh.STATS["probed"], fresh.STATS["warmed"]) == (after["probed"], after["warmed"])


def test_a_child_dying_in_a_warm_up_costs_only_the_warm_up(dc, fresh, monkeypatch, tmp_path) -> None:
    """A warm-up that kills its child records nothing and warns nothing: the program was probed
    fine, and this process compiles the kernel at its first launch as it would have."""
    _warms(dc)
    monkeypatch.setenv(fresh.FAULT_ENV, "warm-abort:conv2d.cl")
    before = dict(fresh.STATS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        it = compare_with_litert(_conv_model(), "opencl", options={"cache_dir": str(tmp_path)})
    assert [p.backend for p in it.placements()] == ["opencl"]
    assert fresh.STATS["warm_failed"] > before.get("warm_failed", 0)
    assert not list(tmp_path.glob("*.crash")) and list(tmp_path.glob("*.ok"))


def test_warm_ups_off(dc, fresh, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv(fresh.WARM_ENV, "0")
    before = dict(fresh.STATS)
    compare_with_litert(_conv_model(), "opencl", options={"cache_dir": str(tmp_path)})
    assert fresh.STATS["warmed"] == before.get("warmed", 0) and fresh.STATS["probed"] > before.get("probed", 0)


def test_the_childs_ctypes_opencl_sees_this_process_device_and_reports_build_errors(dc) -> None:
    """``cl_abi`` (the child's OpenCL through ctypes) opens the library this process uses, numbers
    the device as pyopencl does, passes pyopencl's build options, runs a launch, and turns a
    build error into CLError (-11) instead of a crash."""
    from teflon_py.opencl.runtime import cl_abi, pocl_target, probe
    from teflon_py.opencl.runtime import device as devices

    library = cl_abi.opencl_library()
    assert library is not None and "OpenCL" in library
    cl = cl_abi.OpenCL(library, pocl_target.pocl_path())
    dev = cl.device(*(int(part) for part in devices.index_of(dc.device).split(":")))
    assert cl.device_name(dev) == dc.device.name.strip()
    ctx = cl.context(dev)
    options = probe.driver_options(dc.device, "-DSCALE=2.0f")
    assert options.startswith("-DSCALE=2.0f") and " -I " in options  # pyopencl's include directory
    program = cl.build(ctx, dev, KERNEL, options)
    assert cl.create_kernels(program) == 1
    cl.launch(ctx, cl.queue(ctx, dev), program, "twice", [64], [1], [("buf", 256), ("buf", 256)])
    with pytest.raises(cl_abi.CLError) as e:
        cl.build(ctx, dev, "__kernel void broken(void) { no_such_call(); }", "")
    assert e.value.code == -11  # CL_BUILD_PROGRAM_FAILURE
    with pytest.raises(LookupError, match="no OpenCL platform 99"):
        cl.device(99, 0)
