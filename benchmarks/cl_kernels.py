"""Micro-benchmark of the float32 OpenCL kernels against NumPy (im2col + matmul), in GFLOP/s.

    python benchmarks/cl_kernels.py [--rounds R] [--reps N] [--sweep]

A kernel's time is the best, over ``--rounds`` interleaved rounds of ``--reps`` batches, of a batch
of 10 back-to-back launches waited once: on a shared machine the best batch is the least
disturbed one. ``--sweep`` also times alternative blockings, to re-tune
``teflon_py.opencl.kernels.specs`` on a new machine.
"""
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from teflon_py import ir
from teflon_py.opencl.kernels import depthwise_specs
from teflon_py.opencl.kernels import specs as kernels
from teflon_py.opencl.runtime import device, programs


def best_time(fn: Callable[[], None], reps: int) -> float:
    """Seconds per call of ``fn``: the best of ``reps`` calls."""
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


@dataclass
class Case:
    label: str
    flops: int
    run: Callable[[], None]  # one batch
    per_batch: int
    is_numpy: bool = False
    best: float = float("inf")


def kernel_case(dc, cache, label: str, spec: kernels.KernelSpec, x: np.ndarray, batch: int = 10) -> Case:
    """A Case that launches ``spec`` ``batch`` times back to back on fixed buffers, then waits."""
    import pyopencl as cl

    launches = kernels.single_launch_list(dc, cache, spec, x.shape)
    launches.run([x])  # the first launch JIT-compiles, then the binary goes to the disk cache
    mf = cl.mem_flags
    xb = cl.Buffer(dc.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
    yb = cl.Buffer(dc.context, mf.READ_WRITE, int(np.prod(kernels.output_shape(spec))) * 4)
    la = launches.launches[0]
    la.kernel.set_arg(spec.args.index("input"), xb)
    la.kernel.set_arg(spec.args.index("output"), yb)
    queue = dc.queue()

    def run() -> None:
        for _ in range(batch):
            cl.enqueue_nd_range_kernel(queue, la.kernel, la.global_size, la.local_size)
        queue.finish()

    run.keep = (launches, xb, yb)  # type: ignore[attr-defined]
    return Case(label, spec.flops, run, batch)


def im2col_conv(x: np.ndarray, w: np.ndarray, pad: int, out_hw: tuple[int, int]) -> np.ndarray:
    """NumPy's usual conv: gather the patches (im2col) with stride tricks, then one matmul."""
    oc, kh, kw, ic = w.shape
    oh, ow = out_hw
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    cols = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(1, 2))[:, :oh, :ow]
    cols = np.ascontiguousarray(cols.transpose(0, 1, 2, 4, 5, 3)).reshape(-1, kh * kw * ic)
    return cols @ w.reshape(oc, -1).T


def numpy_depthwise(x: np.ndarray, w: np.ndarray, pad: int, out_hw: tuple[int, int]) -> np.ndarray:
    """NumPy depthwise: one multiply-add of a shifted view per tap."""
    _, kh, kw, _ = w.shape
    oh, ow = out_hw
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0)))
    out = np.zeros((x.shape[0], oh, ow, x.shape[3]), np.float32)
    for a in range(kh):
        for c in range(kw):
            out += xp[:, a:a + oh, c:c + ow] * w[0, a, c]
    return out


def build_cases(dc, cache, sweep: bool) -> list[Case]:
    rng = np.random.default_rng(0)
    cases: list[Case] = []

    def np_case(label: str, flops: int, fn: Callable[[], object], batch: int = 5) -> None:
        def run() -> None:
            for _ in range(batch):
                fn()

        cases.append(Case(f"  numpy {label}", flops, run, batch, is_numpy=True))

    # 1x1 conv 56x56x128 -> 128: a GEMM with M = pixels
    x = rng.standard_normal((1, 56, 56, 128)).astype(np.float32)
    w = rng.standard_normal((128, 1, 1, 128)).astype(np.float32)
    b = rng.standard_normal(128).astype(np.float32)
    spec = kernels.conv2d_spec(x.shape, w, b, activation=ir.Activation.RELU6)
    cases.append(kernel_case(dc, cache, "1x1 conv 56x56x128->128", spec, x))
    w2 = w.reshape(128, 128).T.copy()
    np_case("matmul", spec.flops, lambda x=x, w2=w2: x.reshape(-1, 128) @ w2)
    for nv, mr in ((4, 4), (4, 5), (4, 6), (4, 7), (2, 12), (2, 14), (3, 8)) if sweep else ():
        s = kernels.gemm_spec(56 * 56, 128, 128, w2, b, nv=nv, mr=mr)
        cases.append(kernel_case(dc, cache, f"  gemm nv={nv} mr={mr}", s, x))

    # 3x3 conv 56x56x64 -> 64, stride 1, SAME
    x = rng.standard_normal((1, 56, 56, 64)).astype(np.float32)
    w = rng.standard_normal((64, 3, 3, 64)).astype(np.float32)
    b = rng.standard_normal(64).astype(np.float32)
    spec = kernels.conv2d_spec(x.shape, w, b, activation=ir.Activation.RELU6)
    cases.append(kernel_case(dc, cache, "3x3 conv 56x56x64->64 s1", spec, x))
    np_case("im2col+matmul", spec.flops, lambda x=x, w=w: im2col_conv(x, w, 1, (56, 56)))
    for nv, pw in ((4, 4), (4, 5), (4, 6), (4, 7), (2, 8), (2, 12), (2, 14), (1, 24)) if sweep else ():
        s = kernels.conv2d_spec(x.shape, w, b, nv=nv, pw=pw)
        cases.append(kernel_case(dc, cache, f"  conv2d nv={nv} pw={pw}", s, x))

    # 3x3 conv 256x256x3 -> 8, stride 2, SAME (MediaPipe hand_recrop's stem): conv2d_narrow.cl
    x = rng.standard_normal((1, 256, 256, 3)).astype(np.float32)
    w = rng.standard_normal((8, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    spec = kernels.conv2d_spec(x.shape, w, b, stride=(2, 2))
    cases.append(kernel_case(dc, cache, "3x3 conv 256x256x3->8 s2", spec, x))
    for pw in (6, 10, 12, 14) if sweep else ():
        s = kernels.conv2d_spec(x.shape, w, b, stride=(2, 2), pw=pw)
        cases.append(kernel_case(dc, cache, f"  conv2d_narrow pw={pw}", s, x))
    if sweep:  # the 16-channel tiles it replaced
        s = kernels.conv2d_spec(x.shape, w, b, stride=(2, 2), nv=1, pw=6)
        cases.append(kernel_case(dc, cache, "  conv2d nv=1 pw=6", s, x))

    # depthwise 3x3 112x112x32, stride 1, SAME
    x = rng.standard_normal((1, 112, 112, 32)).astype(np.float32)
    w = rng.standard_normal((1, 3, 3, 32)).astype(np.float32)
    b = rng.standard_normal(32).astype(np.float32)
    spec = depthwise_specs.depthwise_spec(x.shape, w, b, activation=ir.Activation.RELU6)
    cases.append(kernel_case(dc, cache, "depthwise 3x3 112x112x32 s1", spec, x))
    np_case("shifted views", spec.flops, lambda x=x, w=w: numpy_depthwise(x, w, 1, (112, 112)))
    for pw in (4, 6, 7, 12, 14, 16) if sweep else ():
        s = depthwise_specs.depthwise_spec(x.shape, w, b, pw=pw)
        cases.append(kernel_case(dc, cache, f"  depthwise pw={pw}", s, x))

    # fully connected 1x1024 -> 1000
    x = rng.standard_normal((1, 1024)).astype(np.float32)
    w = rng.standard_normal((1000, 1024)).astype(np.float32)
    b = rng.standard_normal(1000).astype(np.float32)
    spec = kernels.fully_connected_spec(1, w, b)
    cases.append(kernel_case(dc, cache, "FC 1x1024->1000", spec, x))
    wt = np.ascontiguousarray(w.T)
    np_case("matmul", spec.flops, lambda x=x, wt=wt, b=b: x @ wt + b)
    for nv in (1, 2, 3) if sweep else ():
        s = kernels.gemm_spec(1, 1000, 1024, wt, b, nv=nv)
        cases.append(kernel_case(dc, cache, f"  gemm nv={nv}", s, x))
    return cases


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--sweep", action="store_true")
    args = ap.parse_args()
    dc = device.get_context()
    cache = programs.program_cache(dc)
    print(f"device: {dc.name} ({dc.device.version.strip()})")
    cases = build_cases(dc, cache, args.sweep)
    for _ in range(args.rounds):
        for case in cases:
            case.best = min(case.best, best_time(case.run, args.reps) / case.per_batch)
    for case in cases:
        print(f"{case.label:36s} {case.best * 1e6:9.1f} us {case.flops / case.best / 1e9:8.1f} GFLOP/s")


if __name__ == "__main__":
    main()
