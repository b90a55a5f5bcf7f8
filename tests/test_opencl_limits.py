"""Device limits the OpenCL backend honours: the largest buffer (CL_DEVICE_MAX_MEM_ALLOC_SIZE,
forced small with TEFLON_CL_MAX_ALLOC so PoCL behaves like a GPU with a quarter of its memory per
buffer), sub-buffer base alignment, work-group sizes, and the three ways graph inputs and outputs
reach the device (TEFLON_CL_IO forces the "map" path of unified-memory GPUs on PoCL).

A split arena or another I/O path must not change one bit of any output.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import teflon_py
from teflon_py import zoo
from teflon_py.errors import BackendError
from teflon_py.opencl.memory import Lifetime, align_up, plan_arena
from teflon_py.tflite import options as O
from teflon_py.tflite.builder import ModelBuilder
from tests.harness import check_model, compare_with_litert, run_litert
from tests.test_opencl_models import compiled_partition

pytest.importorskip("pyopencl")
F32 = np.float32


# ---- planning under a cap (pure) ------------------------------------------------------------------

def _random_lifetimes(rng: np.random.Generator, n: int) -> list[Lifetime]:
    out = []
    for _ in range(n):
        first = int(rng.integers(0, 12))
        out.append(Lifetime(int(rng.integers(1, 5000)), first, first + int(rng.integers(0, 6))))
    return out


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("alignment", [128, 512])
def test_capped_plan_keeps_every_chunk_under_the_cap_and_live_tensors_apart(seed: int, alignment: int) -> None:
    rng = np.random.default_rng(seed)
    tensors = _random_lifetimes(rng, 30)
    cap = max(t.size for t in tensors) + int(rng.integers(0, 3000))
    plan = plan_arena(tensors, alignment, max_size=cap)
    assert len(plan.sizes) > 1  # 30 tensors of up to 5000 bytes never fit one chunk of < 8000
    assert all(n <= cap for n in plan.sizes) and plan.size == sum(plan.sizes)
    for i, t in enumerate(tensors):
        c, off = plan.chunk_of(i), plan.offsets[i]
        assert off % alignment == 0 and off + t.size <= plan.sizes[c]
        for j in range(i):
            u = tensors[j]
            if plan.chunk_of(j) == c and t.overlaps(u):
                assert off + t.size <= plan.offsets[j] or plan.offsets[j] + u.size <= off, (i, j)


def test_a_cap_that_holds_everything_gives_the_uncapped_plan() -> None:
    tensors = _random_lifetimes(np.random.default_rng(9), 20)
    free = plan_arena(tensors, 128)
    assert plan_arena(tensors, 128, max_size=free.size) == free
    assert free.chunks == () and free.sizes == (free.size,)


def test_a_tensor_over_the_cap_is_refused_by_the_plan() -> None:
    with pytest.raises(ValueError, match="5000 bytes exceeds"):
        plan_arena([Lifetime(100, 0, 1), Lifetime(5000, 1, 2)], 128, max_size=4096)


def test_a_cap_below_the_alignment_still_packs_tensors_that_fit() -> None:
    plan = plan_arena([Lifetime(60, 0, 0), Lifetime(60, 0, 0)], 128, max_size=100)
    assert plan.sizes == (100, 100) and plan.offsets == (0, 0)
    assert align_up(60, 128) == 128  # aligned, they would pass the cap


# ---- the device context's limits ------------------------------------------------------------------

@pytest.fixture
def dc(device):
    from teflon_py.opencl.runtime import device as dev

    return dev.get_context()


def test_base_alignment_is_read_in_bits(dc) -> None:
    bits = int(dc.device.mem_base_addr_align)
    assert dc.base_align * 8 >= bits and dc.base_align & (dc.base_align - 1) == 0
    assert dc.base_align < 2 * max(1, bits // 8)  # not the bit count taken for bytes


def test_max_alloc_override(dc, monkeypatch: pytest.MonkeyPatch) -> None:
    from teflon_py.opencl.caps import Caps

    assert dc.max_alloc == dc.device.max_mem_alloc_size
    monkeypatch.setenv("TEFLON_CL_MAX_ALLOC", "96k")
    assert dc.max_alloc == 96 * 1024 and Caps.of(dc.device).max_alloc == 96 * 1024
    monkeypatch.setenv("TEFLON_CL_MAX_ALLOC", str(1 << 62))  # never above the device's own limit
    assert dc.max_alloc == dc.device.max_mem_alloc_size
    monkeypatch.setenv("TEFLON_CL_MAX_ALLOC", "lots")
    with pytest.raises(BackendError, match="byte count"):
        _ = dc.max_alloc


def test_io_mode_follows_the_device(dc, monkeypatch: pytest.MonkeyPatch) -> None:
    from teflon_py.opencl.runtime.device import DeviceContext

    if dc.is_cpu and dc.host_unified:
        assert dc.io_mode == "host_ptr"  # PoCL's CPU device: buffers are host memory
    monkeypatch.setattr(DeviceContext, "host_unified", property(lambda self: True))
    monkeypatch.setattr(DeviceContext, "is_cpu", property(lambda self: False))
    monkeypatch.setattr(DeviceContext, "is_gpu", property(lambda self: True))  # an integrated GPU
    assert dc.io_mode == "map"
    monkeypatch.setattr(DeviceContext, "host_unified", property(lambda self: False))  # a discrete one
    assert dc.io_mode == "copy"
    monkeypatch.setenv("TEFLON_CL_IO", "copy")
    assert dc.io_mode == "copy"
    monkeypatch.setenv("TEFLON_CL_IO", "dma")
    with pytest.raises(BackendError, match="TEFLON_CL_IO"):
        _ = dc.io_mode


def test_buffers_over_the_cap_raise_backend_errors(dc, monkeypatch: pytest.MonkeyPatch) -> None:
    from teflon_py.opencl.runtime import launch as runtime

    monkeypatch.setenv("TEFLON_CL_MAX_ALLOC", "4096")
    runtime.constant_buffer(dc, np.zeros(1024, F32))  # exactly at the cap
    with pytest.raises(BackendError, match=r"packed weights needs a buffer of 4100 bytes.*4096 bytes"):
        runtime.constant_buffer(dc, np.zeros(1025, F32), "packed weights")
    with pytest.raises(BackendError, match="scratch needs a buffer of 5000 bytes"):
        runtime.Arena(dc, [Lifetime(100, 0, 1), Lifetime(5000, 1, 1)], ["t", "scratch"])
    arena = runtime.Arena(dc, [Lifetime(4096, 0, 1), Lifetime(4096, 1, 2), Lifetime(1, 2, 2)])
    assert len(arena.buffers) == 2 and all(b.size <= 4096 for b in arena.buffers)


# ---- whole models under the limits: bit for bit -----------------------------------------------------

def _run_opencl(model: bytes, x: np.ndarray):
    it = teflon_py.Interpreter(model_content=model, experimental_delegates=[teflon_py.load_delegate("opencl")])
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    compiled = compiled_partition(it)
    compiled.interpreter = it  # the partition is closed with its interpreter: keep that alive
    return it.get_tensor(it.get_output_details()[0]["index"]), compiled


def _input(dtype: str) -> np.ndarray:
    x = np.random.default_rng(1).uniform(-1, 1, (1, 96, 96, 3))
    return x.astype(F32) if dtype == "float32" else np.round(x * 127).astype(np.int8)


#: alpha 0.25, 10 classes: the largest tensor (an expansion's output) is a little under the
#: arena, so a cap at that tensor's size splits the arena yet refuses nothing
CAPS = {"float32": 442368, "int8": 110592}


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_split_arena_is_bit_exact(dc, monkeypatch: pytest.MonkeyPatch, dtype: str) -> None:
    model = zoo.build("mobilenet_v2", dtype=dtype, alpha=0.25, num_classes=10)
    x = _input(dtype)
    whole, compiled = _run_opencl(model, x)
    assert compiled.stats["arena_buffers"] == 1 and compiled.stats["arena_bytes"] > CAPS[dtype]
    monkeypatch.setenv("TEFLON_CL_MAX_ALLOC", str(CAPS[dtype]))
    split, compiled = _run_opencl(model, x)
    arena = compiled.launch_list.keep[0]
    assert compiled.stats["arena_buffers"] >= 2 and all(b.size <= CAPS[dtype] for b in arena.buffers)
    assert np.array_equal(split, whole)
    if dtype == "int8":  # and LiteRT's reference kernels agree, bit for bit
        (ref,) = run_litert(model, [x])
        assert np.array_equal(split, ref)


def test_tensor_over_the_cap_stays_on_numpy_with_the_reason(device, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEFLON_CL_MAX_ALLOC", "64k")
    mb = ModelBuilder()
    g = mb.main
    a, big = g.add_input("a", (4, 4), F32), g.add_input("big", (1, 128, 128, 4), F32)  # 256 KiB
    s, r = g.add_tensor("sum", (4, 4), F32), g.add_tensor("relu", (1, 128, 128, 4), F32)
    g.add_op("ADD", [a, a], [s], O.AddOptions())
    g.add_op("RELU", [big], [r])
    g.mark_outputs(s, r)
    it = compare_with_litert(mb.build(), "opencl")
    add, relu = it.placements()
    assert add.backend == "opencl" and relu.backend == "numpy"
    assert "tensor 1 'big' is 262144 bytes" in relu.reason and "CL_DEVICE_MAX_MEM_ALLOC_SIZE" in relu.reason


def test_sub_buffer_offsets_meet_a_large_base_alignment(dc, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyopencl as cl

    from teflon_py.opencl.runtime.device import DeviceContext

    model = zoo.build("mobilenet_v2", dtype="float32", alpha=0.25, num_classes=10)
    x = _input("float32")
    whole, _ = _run_opencl(model, x)
    monkeypatch.setattr(DeviceContext, "base_align", property(lambda self: 4096))  # a GPU's 32768 bits
    aligned, compiled = _run_opencl(model, x)
    arena = compiled.launch_list.keep[0]
    assert arena.alignment == 4096
    offsets = [view.get_info(cl.mem_info.OFFSET) for view in arena.views]
    assert len(offsets) > 10 and any(offsets) and all(off % 4096 == 0 for off in offsets)
    assert np.array_equal(aligned, whole)


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_every_io_mode_gives_the_same_bits(dc, monkeypatch: pytest.MonkeyPatch, dtype: str) -> None:
    model = zoo.build("mobilenet_v2", dtype=dtype, alpha=0.25, num_classes=10)
    x, flipped = _input(dtype), _input(dtype)[:, ::-1].copy()
    results = {}
    for mode in ("host_ptr", "map", "copy"):
        monkeypatch.setenv("TEFLON_CL_IO", mode)
        y, compiled = _run_opencl(model, x)
        assert compiled.stats["io"] == mode
        results[mode] = (y, compiled.invoke([flipped])[0])  # inputs re-bound on every run
    (y0, f0), rest = results["host_ptr"], [results["map"], results["copy"]]
    assert not np.array_equal(y0, f0)
    assert all(np.array_equal(y, y0) and np.array_equal(f, f0) for y, f in rest)


def test_mapped_io_of_every_dtype(device, monkeypatch: pytest.MonkeyPatch) -> None:
    """Bool, byte and float inputs and outputs through mapped ALLOC_HOST_PTR buffers."""
    monkeypatch.setenv("TEFLON_CL_IO", "map")
    mb = ModelBuilder()
    g = mb.main
    b, u = g.add_input("b", (9,), np.bool_), g.add_input("u", (9,), np.uint8)
    outs = []
    for name, src, dtype in (("f", u, F32), ("n", b, np.bool_), ("i", b, np.int8)):
        t = g.add_tensor(name, (9,), dtype)
        g.add_op("LOGICAL_NOT" if name == "n" else "CAST", [src], [t])
        outs.append(t)
    g.mark_outputs(*outs)
    check_model(mb.build(), "opencl")


# ---- work-group sizes --------------------------------------------------------------------------------

def test_local_sizes_are_checked_against_the_kernel(dc) -> None:
    from teflon_py.opencl.kernels import specs as kernels
    from teflon_py.opencl.runtime import programs

    w = np.random.default_rng(2).standard_normal((32, 1, 1, 8)).astype(F32)
    spec = kernels.conv2d_spec((1, 8, 8, 8), w, None)
    cache = programs.program_cache(dc)
    x = np.random.default_rng(3).standard_normal((1, 8, 8, 8)).astype(F32)
    (ref,), _ = kernels.single_launch_list(dc, cache, spec, x.shape).run([x])
    g0, *rest = spec.global_size
    ones = (1,) * len(rest)
    assert g0 > 1
    grouped = dataclasses.replace(spec, local_size=(g0, *ones))  # legal: a whole row of work-items
    (y,), _ = kernels.single_launch_list(dc, cache, grouped, x.shape).run([x])
    assert np.array_equal(y, ref)
    limit = int(dc.device.max_work_group_size)
    # an even work-group past the kernel's limit is halved until it fits (and still divides)
    halved = dataclasses.replace(spec, global_size=(2 * limit, *rest), local_size=(2 * limit, *ones))
    fitted = kernels.single_launch_list(dc, cache, halved, x.shape).launches[0].local_size
    assert fitted[0] <= limit and (2 * limit) % fitted[0] == 0 and fitted[1:] == ones
    # one that cannot be halved into the limit is refused, naming the limit
    odd = 2 * limit + 1
    too_big = dataclasses.replace(spec, global_size=(odd, *rest), local_size=(odd, *ones))
    with pytest.raises(BackendError, match="CL_KERNEL_WORK_GROUP_SIZE"):
        kernels.single_launch_list(dc, cache, too_big, x.shape)
    ragged = dataclasses.replace(spec, global_size=(g0 + 1, *rest), local_size=(g0, *ones))
    with pytest.raises(BackendError, match="not a multiple"):
        kernels.single_launch_list(dc, cache, ragged, x.shape)
