"""The OpenCL runtime layer: device choice, program cache, arena planning and launch lists."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from teflon_py import ir
from teflon_py.errors import BackendError
from teflon_py.opencl import memory
from teflon_py.opencl.memory import Lifetime
from teflon_py.opencl.runtime import pocl_target

pytest.importorskip("pyopencl")
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def dc():
    from teflon_py.opencl.runtime import device

    try:
        return device.get_context()
    except BackendError as e:
        pytest.skip(f"no OpenCL device: {e}")


# ---- device selection -------------------------------------------------------------------------

def test_list_devices_describes_each_device(dc):
    from teflon_py.opencl.runtime import device

    found = device.list_devices()
    assert found
    for d in found:
        assert {"index", "platform", "name", "type", "version", "driver", "compute_units",
                "global_mem_bytes"} <= d.keys()
        assert d["type"] in ("GPU", "CPU", "ACCELERATOR", "OTHER")
    json.dumps(found)  # plain data, ready for `teflon-py devices --json`


def test_default_prefers_gpu_then_cpu(dc, monkeypatch):
    from teflon_py.opencl.runtime import device

    monkeypatch.delenv(device.ENV, raising=False)
    kinds = [d["type"] for d in device.list_devices()]
    expected = "GPU" if "GPU" in kinds else "CPU" if "CPU" in kinds else kinds[0]
    assert device.device_kind(device.select_device()) == expected


def test_spec_by_index_and_by_name(dc, monkeypatch):
    from teflon_py.opencl.runtime import device

    monkeypatch.delenv(device.ENV, raising=False)
    first = device.list_devices()[0]
    assert device.select_device(first["index"]).name.strip() == first["name"]
    assert device.select_device(first["name"][:5].upper()).name.strip() == first["name"]
    assert device.select_device(first["platform"].lower()).platform.name.strip() == first["platform"]


def test_env_var_chooses_and_option_wins(dc, monkeypatch):
    from teflon_py.opencl.runtime import device

    first = device.list_devices()[0]
    monkeypatch.setenv(device.ENV, first["index"])
    assert device.select_device().name.strip() == first["name"]
    monkeypatch.setenv(device.ENV, "no-such-device")
    with pytest.raises(BackendError, match="no-such-device.*available"):
        device.select_device()
    assert device.select_device(first["index"]).name.strip() == first["name"]


def test_unknown_index_lists_devices(dc):
    from teflon_py.opencl.runtime import device

    with pytest.raises(BackendError, match="available: 0:0"):
        device.select_device("9:9")


def test_no_platform_is_a_backend_error(monkeypatch):
    import pyopencl as cl

    from teflon_py.opencl.runtime import device

    monkeypatch.setattr(cl, "get_platforms", list)
    with pytest.raises(BackendError, match="no OpenCL platform"):
        device.platforms()

    def fail():
        raise cl.LogicError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")

    monkeypatch.setattr(cl, "get_platforms", fail)
    with pytest.raises(BackendError, match="no OpenCL platform"):
        device.platforms()


def test_context_is_shared_and_queues_are_lazy(dc):
    from teflon_py.opencl.runtime import device

    assert device.get_context(dc.device) is dc
    assert dc.queue() is dc.queue()
    prof = dc.queue(profiling=True)
    assert prof is not dc.queue() and prof is dc.queue(profiling=True)


def test_pocl_cpu_names_never_exceed_the_cpu():
    skx = {"avx2", "fma", "bmi1", "bmi2", "f16c", "movbe", "popcnt", "abm",
           "avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl"}
    assert pocl_target.best_cpu_name(set()) == "x86-64"
    assert pocl_target.best_cpu_name({"avx2", "fma", "bmi1", "bmi2", "f16c", "movbe", "popcnt", "abm"}) == "haswell"
    assert pocl_target.best_cpu_name(skx) == "skylake-avx512"
    assert pocl_target.best_cpu_name(skx | {"avx512_vnni"}) == "cascadelake"
    assert pocl_target.best_cpu_name(skx - {"avx512bw"}) == "haswell"


def test_pocl_target_features_follow_the_patched_cpu_name(monkeypatch: pytest.MonkeyPatch):
    """What the caps' ``vnni`` reads: a patched-in CPU name limits the features to its own."""
    host = {"avx2", "fma", "avx512f", "avx512_vnni", "sse4_2"}
    monkeypatch.setattr(pocl_target, "_cpu_flags", lambda: set(host))
    monkeypatch.setitem(pocl_target._state, "cpu", None)
    assert pocl_target.target_features() == host  # unpatched: PoCL targets the host CPU
    monkeypatch.setitem(pocl_target._state, "cpu", "skylake-avx512")
    assert pocl_target.target_features() == {"avx2", "fma", "avx512f"}
    monkeypatch.setitem(pocl_target._state, "cpu", "cascadelake")
    assert "avx512_vnni" in pocl_target.target_features()


# ---- program cache ----------------------------------------------------------------------------

def test_build_options_are_canonical():
    from teflon_py.opencl.runtime.programs import build_options

    assert build_options({"N": 3, "ACT_MAX": 6.0, "ACT_MIN": 0.0, "FLAG": None}) == \
        "-DACT_MAX=6.0f -DACT_MIN=0.0f -DFLAG -DN=3"
    with pytest.raises(ValueError):
        build_options({"X": float("inf")})


def test_sources_load_from_the_package():
    from teflon_py.opencl.runtime.programs import load_source

    assert "__kernel void gemm" in load_source("gemm.cl")
    with pytest.raises(BackendError):
        load_source("missing.cl")


def test_integer_templates_of_every_kind_build_as_one_program(dc, tmp_path):
    """A partition's quant.cl template programs merge into one (``merge_template_programs``):
    qdepthwise.cl's instantiations of both 8-bit types, both depth-multiplier paths, both
    requantization rules and several blockings, and qreduce.cl, compile side by side."""
    import pyopencl as cl

    from teflon_py.opencl.kernels import qspecs
    from teflon_py.opencl.lowerings.qreduce import FILES
    from teflon_py.opencl.runtime.programs import ProgramCache, is_template_program, merge_template_programs

    specs = []
    for dtype, dm, stride, kw, pw in ((np.int8, 1, 1, 3, None), (np.int8, 1, 2, 3, None), (np.uint8, 1, 1, 5, 3),
                                      (np.int8, 2, 1, 3, 5)):
        for req in (qspecs.Requant(0, -128, 127, multiplier=np.array([1 << 30]), shift=np.array([0])),
                    qspecs.Requant(0, -128, 127, scale32=np.array([0.5]))):
            w = np.ones((kw, kw, 16 * dm), np.int64)
            specs.append(qspecs.qdepthwise_spec((1, 8, 8, 16), np.dtype(dtype), 0, w, None, req, depth_multiplier=dm,
                                                stride=(stride, stride), dilation=(1, 1), padding=1, pw=pw))
    pairs = [(s.files, s.function) for s in specs] + [(FILES, "qmean"), (FILES, "qsoftmax")]
    assert all(is_template_program(files, {}) for files, _ in pairs)
    merged = merge_template_programs(pairs)
    assert list(merged) == ["quant.cl"] and len({s.function for s in specs}) == len(specs) == len(merged["quant.cl"]) - 2
    program = ProgramCache(dc, tmp_path).build(merged["quant.cl"])
    kernels = set(program.get_info(cl.program_info.KERNEL_NAMES).split(";"))
    assert {s.function for s in specs} | {"qmean", "qsoftmax"} <= kernels


KERNEL = "__kernel void twice(__global const float* a, __global float* b) { int i = get_global_id(0); b[i] = a[i] * SCALE; }"


def _twice(dc, program, n=8):
    import pyopencl as cl

    x = np.arange(n, dtype=np.float32)
    y = np.empty_like(x)
    mf = cl.mem_flags
    a = cl.Buffer(dc.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    b = cl.Buffer(dc.context, mf.WRITE_ONLY, y.nbytes)
    k = cl.Kernel(program, "twice")
    k.set_args(a, b)
    cl.enqueue_nd_range_kernel(dc.queue(), k, (n,), (1,))
    cl.enqueue_copy(dc.queue(), y, b)
    return y / np.maximum(x, 1)


def test_corrupt_cache_entry_is_rebuilt(dc, tmp_path):
    from teflon_py.opencl.runtime import programs

    source = f"// {uuid.uuid4()}\n{KERNEL}"
    cache = programs.ProgramCache(dc, tmp_path)
    assert _twice(dc, cache.build_source(source, "-DSCALE=2.0f"))[1:].tolist() == [2.0] * 7
    assert cache.commit() == 1
    (entry,) = tmp_path.glob("*.bin")
    good = entry.read_bytes()
    for damaged in (good[:-100] + bytes(100), good[:20], b"", good[:8] + bytes(32) + good[40:]):
        programs.clear_memo()
        entry.write_bytes(damaged)
        fresh = programs.ProgramCache(dc, tmp_path)
        assert _twice(dc, fresh.build_source(source, "-DSCALE=2.0f"))[1:].tolist() == [2.0] * 7
        assert fresh.stats["corrupt"] + fresh.stats["source"] >= 1 and fresh.stats["disk"] == 0
        assert fresh.commit() == 1
        assert entry.read_bytes()[:8] == good[:8]
    programs.clear_memo()
    again = programs.ProgramCache(dc, tmp_path)
    again.build_source(source, "-DSCALE=2.0f")
    assert again.stats == {"memo": 0, "disk": 1, "source": 0, "corrupt": 0}
    assert not list(tmp_path.glob(".tmp-*"))  # atomic writes leave no temporaries


def test_cache_key_covers_options_and_source(dc, tmp_path):
    from teflon_py.opencl.runtime import programs

    cache = programs.ProgramCache(dc, tmp_path)
    keys = {cache.key(KERNEL, "-DSCALE=2.0f"), cache.key(KERNEL, "-DSCALE=3.0f"), cache.key(KERNEL + " ", "-DSCALE=2.0f")}
    assert len(keys) == 3
    p2 = cache.build_source(KERNEL, "-DSCALE=2.0f")
    p3 = cache.build_source(KERNEL, "-DSCALE=3.0f")
    assert p2 is cache.build_source(KERNEL, "-DSCALE=2.0f")
    assert _twice(dc, p3)[1] == 3.0


CHILD = textwrap.dedent("""
    import json, time
    import numpy as np
    from teflon_py.opencl.runtime import device
    from teflon_py.opencl.kernels import specs as kernels
    from teflon_py.opencl.runtime import programs
    dc = device.get_context()
    cache = programs.program_cache(dc)
    t = time.perf_counter()
    w = np.ones((40, 3, 3, 8), np.float32)
    spec = kernels.conv2d_spec((1, 9, 9, 8), w, None)
    launches = kernels.single_launch_list(dc, cache, spec, (1, 9, 9, 8))
    (y,), _ = launches.run([np.ones((1, 9, 9, 8), np.float32)])  # commits the binary
    print(json.dumps({"seconds": time.perf_counter() - t, "stats": cache.stats, "center": float(y[0, 4, 4, 0])}))
""")


def test_second_process_loads_the_binary_fast(dc, tmp_path):
    """A fresh process loads the binary the first one built from our cache (cache statistics, not
    timings: a build + first launch takes ~0.45 s cold, a few ms from the cache, on a quiet machine)."""
    env = {**os.environ, "TEFLON_CACHE_DIR": str(tmp_path), "POCL_KERNEL_CACHE": "0",
           "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def child() -> dict:
        out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True,
                             check=True, cwd=REPO)
        return json.loads(out.stdout.strip().splitlines()[-1])

    cold, warm = child(), child()
    assert cold["stats"]["source"] == 1 and warm["stats"]["disk"] == 1
    assert cold["center"] == warm["center"] == 72.0
    assert warm["stats"]["source"] == 0, warm


# ---- arena planning ---------------------------------------------------------------------------

lifetimes = st.lists(
    st.tuples(st.integers(0, 5000), st.integers(0, 20), st.integers(0, 6)).map(
        lambda t: Lifetime(t[0], t[1], t[1] + t[2])),
    max_size=40)


@settings(max_examples=300, deadline=None)
@given(lifetimes, st.sampled_from([64, 128, 512]))
def test_arena_plan_properties(tensors, alignment):
    plan = memory.plan_arena(tensors, alignment)
    assert len(plan.offsets) == len(tensors)
    assert all(off % alignment == 0 for off in plan.offsets)
    assert plan.size % alignment == 0
    assert plan.size <= sum(memory.align_up(max(t.size, 1), alignment) for t in tensors)
    for i, a in enumerate(tensors):
        assert plan.offsets[i] + a.size <= plan.size
        for j in range(i):
            b = tensors[j]
            if a.overlaps(b) and a.size and b.size:
                assert (plan.offsets[i] + a.size <= plan.offsets[j]
                        or plan.offsets[j] + b.size <= plan.offsets[i]), (a, b, plan)
    steps = {s for t in tensors for s in range(t.first, t.last + 1)}
    peak = max((sum(t.size for t in tensors if t.first <= s <= t.last) for s in steps), default=0)
    assert plan.size >= peak


def test_arena_reuses_memory_along_a_chain():
    # a -> b -> c -> d: only neighbours are alive together, so two slots suffice
    chain = [Lifetime(1000, i, i + 1) for i in range(4)]
    plan = memory.plan_arena(chain, 128)
    assert plan.size == 2 * 1024
    assert plan.offsets[0] == plan.offsets[2] and plan.offsets[1] == plan.offsets[3]


def test_arena_rejects_bad_input():
    with pytest.raises(ValueError):
        memory.plan_arena([Lifetime(4, 3, 2)])
    with pytest.raises(ValueError):
        memory.plan_arena([Lifetime(4, 0, 1)], alignment=100)
    assert memory.plan_arena([]) == memory.ArenaPlan((), 0)


# ---- launch lists -----------------------------------------------------------------------------

def _conv_then_depthwise(dc, zero_copy):
    """conv2d -> (arena) -> depthwise, with the partition's input and output bound per run."""
    from teflon_py.opencl.kernels import depthwise_specs
    from teflon_py.opencl.kernels import specs as kernels
    from teflon_py.opencl.runtime import launch as runtime
    from teflon_py.opencl.runtime import programs

    rng = np.random.default_rng(3)
    conv_w = rng.standard_normal((24, 3, 3, 5)).astype(np.float32)
    dw_w = rng.standard_normal((1, 3, 3, 24)).astype(np.float32)
    conv = kernels.conv2d_spec((1, 12, 10, 5), conv_w, None, activation=ir.Activation.RELU)
    dw = depthwise_specs.depthwise_spec((1, 12, 10, 24), dw_w, None, stride=(2, 2))
    mid = 12 * 10 * 24 * 4
    arena = runtime.Arena(dc, [Lifetime(mid, 0, 1), Lifetime(64, 0, 0)])
    cache = programs.program_cache(dc)
    first = conv.launch(dc, cache, {"output": arena.views[0]})
    second = dw.launch(dc, cache, {"input": arena.views[0]})
    x = runtime.ExternalTensor((1, 12, 10, 5), np.dtype(np.float32), [runtime.ArgUse(first.kernel, 0)])
    y = runtime.ExternalTensor(kernels.output_shape(dw), np.dtype(np.float32),
                               [runtime.ArgUse(second.kernel, dw.args.index("output"))])
    launches = runtime.LaunchList(dc, [first, second], [x], [y], keep=[arena], zero_copy=zero_copy)
    return launches, conv_w, dw_w


@pytest.mark.parametrize("zero_copy", [True, False])
def test_launch_list_chains_through_the_arena(dc, zero_copy):
    from test_cl_kernels import ref_conv, ref_depthwise

    launches, conv_w, dw_w = _conv_then_depthwise(dc, zero_copy)
    rng = np.random.default_rng(4)
    for _ in range(2):  # inputs are re-bound on every run
        x = rng.standard_normal((1, 12, 10, 5)).astype(np.float32)
        (y,), times = launches.run([x])
        assert times == []
        mid = ref_conv(x, conv_w, None, (1, 1), (1, 1), (1, 1), (12, 10), ir.Activation.RELU)
        ref = ref_depthwise(mid, dw_w, None, 1, (2, 2), (1, 1), (0, 0), (6, 5), ir.Activation.NONE)
        assert np.linalg.norm(y - ref) <= 1e-5 * np.linalg.norm(ref)


def test_launch_list_profiles_each_launch(dc):
    launches, _, _ = _conv_then_depthwise(dc, None)
    _, times = launches.run([np.ones((1, 12, 10, 5), np.float32)], profile=True)
    assert [name for name, _ in times] == ["conv2d", "depthwise"]
    assert all(s > 0 for _, s in times)
    with pytest.raises(BackendError, match="input of shape"):
        launches.run([np.ones((2, 3), np.float32)])


def test_profile_without_device_timestamps_times_on_the_host(dc, monkeypatch):
    """A device whose events carry no real timestamps (rusticl on llvmpipe counts 0, 1, 2, 3)
    gets each launch timed alone on the host instead of zeros."""
    from teflon_py.opencl.runtime import launch as runtime

    launches, _, _ = _conv_then_depthwise(dc, None)
    x = np.ones((1, 12, 10, 5), np.float32)
    (want,), _ = launches.run([x])

    class Fake:
        profile = type("P", (), {"queued": 0, "submit": 1, "start": 2, "end": 3})()

    real = runtime._cl().enqueue_nd_range_kernel
    calls = []

    def enqueue(*args, **kw):
        calls.append(args[1])
        real(*args, **kw)
        return Fake()

    monkeypatch.setattr(runtime._cl(), "enqueue_nd_range_kernel", enqueue)
    (y,), times = launches.run_timed([x])
    np.testing.assert_array_equal(y, want)
    assert len(calls) == 4  # the run, then each launch again alone
    assert [t.launch.name for t in times] == ["conv2d", "depthwise"] and all(t.seconds > 0 for t in times)
    with pytest.raises(BackendError, match="expected 1 inputs"):
        launches.run([])
