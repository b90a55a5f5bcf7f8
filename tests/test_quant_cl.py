"""``cl_kernels/quant.cl`` against ``teflon_py.quant``: one formula, two renderings, same integers.

Random int32 vectors (with the edge values TFLite meets: INT32_MIN/MAX, zero, exact halves) go
through each C function on the OpenCL device and through its NumPy twin; results must be equal.
"""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import quant
from teflon_py.errors import BackendError
from tests.harness import int32_kernel_runner

pytest.importorskip("pyopencl")
N = 1 << 14  # values per check (a multiple of 16)
EDGES = np.array([quant.INT32_MIN, quant.INT32_MIN + 1, -1, 0, 1, quant.INT32_MAX, 1 << 30, -(1 << 30)],
                 np.int64)


@pytest.fixture(scope="module")
def cl_run():
    """run(kernel, *int32 inputs, outputs=1, per_item=1) -> int32 output arrays, on the default device."""
    return int32_kernel_runner(("quant.cl",), {"QUANT_CL_TEST": True})


def int32s(rng: np.random.Generator, n: int = N, bits: int = 32) -> np.ndarray:
    """Random int32 values of up to ``bits`` magnitude bits, with the edge values in front."""
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    x = rng.integers(lo, hi, n, endpoint=True, dtype=np.int64)
    x[: EDGES.size] = np.clip(EDGES, lo, hi)
    return x


def multipliers(rng: np.random.Generator, n: int = N) -> tuple[np.ndarray, np.ndarray]:
    """(multiplier, shift) pairs as quantize_multiplier makes them from random positive scales."""
    scales = np.exp(rng.uniform(np.log(1e-7), np.log(300.0), n))
    m, s = quant.quantize_multiplier(scales)
    return m.astype(np.int64), s.astype(np.int64)


def test_srdhm(cl_run) -> None:
    rng = np.random.default_rng(0)
    a, b = int32s(rng), int32s(rng)
    b[:EDGES.size] = EDGES[::-1]
    b[0] = quant.INT32_MIN  # INT32_MIN * INT32_MIN saturates
    (got,) = cl_run("t_srdhm", a, b)
    np.testing.assert_array_equal(got, quant.saturating_rounding_doubling_high_mul(a, b))


def test_rounding_divide_by_pot(cl_run) -> None:
    rng = np.random.default_rng(1)
    x = int32s(rng)
    e = rng.integers(0, 32, N)
    halves = slice(EDGES.size, EDGES.size + 64)  # odd multiples of 2^(e-1): exact rounding halves
    x[halves] = (rng.integers(-1000, 1000, 64) * 2 + 1) << np.maximum(np.minimum(e[halves], 20) - 1, 0)
    (got,) = cl_run("t_rdbpot", x, e)
    np.testing.assert_array_equal(got, quant.rounding_divide_by_pot(x, e))


@pytest.mark.parametrize("bits", [12, 24, 32], ids=lambda b: f"x{b}bit")
def test_multiply_by_quantized_multiplier(cl_run, bits: int) -> None:
    """Scalar (any multiplier) and 16-lane (positive multipliers) renderings, left and right shifts."""
    rng = np.random.default_rng(bits)
    x = int32s(rng, bits=bits)
    m, s = multipliers(rng)
    want = quant.multiply_by_quantized_multiplier(x, m, s)
    (got,) = cl_run("t_mbqm", x, m, s)
    np.testing.assert_array_equal(got, want)
    (got16,) = cl_run("t_mbqm16", x, m, s, per_item=16)
    np.testing.assert_array_equal(got16, want)


def test_multiply_by_negative_and_extreme_multipliers(cl_run) -> None:
    rng = np.random.default_rng(5)
    x = int32s(rng)
    m = int32s(rng)
    s = rng.integers(-31, 8, N)
    (got,) = cl_run("t_mbqm", x, m, s)
    np.testing.assert_array_equal(got, quant.wrap_int(quant.multiply_by_quantized_multiplier(x, m, s)))


def test_count_leading_zeros(cl_run) -> None:
    rng = np.random.default_rng(6)
    x = int32s(rng)
    x[100:132] = 1 << np.arange(32)
    (got,) = cl_run("t_clz", x)
    np.testing.assert_array_equal(got, quant.count_leading_zeros32(x))


def test_get_reciprocal(cl_run) -> None:
    """Softmax's 1 / (sum of exponentials) in Q12: every positive sum a row can reach."""
    rng = np.random.default_rng(7)
    x = rng.integers(1, (1 << 31) - 1, N, endpoint=True)
    x[:31] = np.int64(1) << np.arange(31)
    scale, bits = cl_run("t_reciprocal", x, outputs=2)
    want_scale, want_bits = quant.get_reciprocal(x, 12)
    np.testing.assert_array_equal(scale, want_scale)
    np.testing.assert_array_equal(bits, want_bits)


@pytest.mark.parametrize(("zero_point", "lo", "hi"), [(0, -128, 127), (-5, -128, 127), (17, -20, 90), (128, 0, 255)])
def test_requantize_float32(cl_run, zero_point: int, lo: int, hi: int) -> None:
    """XNNPACK's float32 rule: float(acc) * scale, clamped, halves to even (ties included)."""
    rng = np.random.default_rng(7)
    acc = int32s(rng, bits=24)
    scale = rng.uniform(1e-4, 0.05, N).astype(np.float32)
    acc[:64] = np.arange(-32, 32) * 2 + 1  # exact halves with scale 0.5
    scale[:64] = 0.5
    params = np.zeros(N, np.int64)
    params[:3] = (zero_point, lo, hi)
    (ours,) = cl_run("t_requantize_float16", acc, scale.view(np.int32), params, per_item=16)
    expected = quant.requantize_float32(acc, scale, zero_point, lo, hi, np.int64)
    np.testing.assert_array_equal(ours, expected)
    halves = (acc[:64].astype(np.float64) * 0.5)
    assert np.array_equal(expected[:64] - zero_point, np.clip(np.rint(halves), lo - zero_point, hi - zero_point))


@pytest.mark.parametrize(("zero_point", "lo", "hi"), [(0, -(1 << 19) + 1, (1 << 19) - 1), (-5, -128, 127), (128, 0, 255)])
def test_requantize_exact(cl_run, zero_point: int, lo: int, hi: int) -> None:
    """FULLY_CONNECTED's round(double(acc) * scale) in integers: near-ties where the double
    product's own rounding decides, exact halves, extreme accumulators, every scale exponent."""
    from tests.test_quant_exact import hard_cases

    rng = np.random.default_rng(8)
    acc, scale = hard_cases(rng, N // 4)
    n = acc.size // 16 * 16
    acc, scale = acc[:n], scale[:n]
    mh, ml, sk = quant.exact_scale_parts(scale)
    params = np.zeros(n, np.int64)
    params[:3] = (zero_point, lo, hi)
    (got,) = cl_run("t_requantize_exact16", acc, mh.astype(np.uint32).view(np.int32), ml.astype(np.uint32).view(np.int32),
                    sk, params, per_item=16)
    np.testing.assert_array_equal(got, quant.requantize_scaled(acc, scale, zero_point, lo, hi, np.int64))


@pytest.mark.parametrize("skew", [0, -2, 3])
def test_quantize_finds_the_correctly_rounded_quotient(skew: int) -> None:
    """qquantize's rounding is TFLite's (round(fl32(x / scale)), halves away from zero) even from
    a quotient a few ulps off, as a device without correctly rounded division gives (``skew``
    moves it that many ulps): inputs sit on and within a few ulps of half-integer quotients."""
    import pyopencl as cl

    from teflon_py.opencl.runtime import device, programs

    try:
        dc = device.get_context()
    except BackendError as e:
        pytest.skip(f"no OpenCL device: {e}")
    program = programs.program_cache(dc).build(("quant.cl", "qelementwise.cl"), {"Q_DIVIDE_SKEW": skew})
    rng = np.random.default_rng(skew + 10)
    x, scales = [], []
    for s in (0.05, 0.125, 0.03, 0.0071, 1.7, 3e-5):
        s = np.float32(s)
        half = (rng.integers(-100, 100, 400) + np.float32(0.5)).astype(np.float32) * s  # near ties
        for k in range(-3, 4):
            x.append(np.nextafter(half, np.float32(np.inf) if k > 0 else np.float32(-np.inf)) if k else half)
            for _ in range(abs(k) - 1):
                x[-1] = np.nextafter(x[-1], np.float32(np.inf) if k > 0 else np.float32(-np.inf))
            scales.append(np.full(half.size, s, np.float32))
        x.append((rng.standard_normal(400) * 90 * s).astype(np.float32))
        scales.append(np.full(400, s, np.float32))
    x = np.concatenate(x).astype(np.float32)
    scale = np.concatenate(scales).astype(np.float32)
    quotient = (x / scale).astype(np.float32)  # NumPy's float32 division is correctly rounded
    expected = np.clip(quant.round_half_away(quotient), -128, 127).astype(np.int32)
    # one channel per element: channel c = (i / inner) % channels with inner 1
    n = x.size
    mf = cl.mem_flags
    bufs = [cl.Buffer(dc.context, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=a)
            for a in (x, scale, np.zeros(n, np.int32))]
    out = np.empty(n, np.uint8)
    obuf = cl.Buffer(dc.context, mf.WRITE_ONLY, n)
    kernel = cl.Kernel(program, "qquantize")
    kernel.set_args(bufs[0], obuf, bufs[1], bufs[2], np.int32(n), np.int32(n), np.int32(1), np.int32(n),
                    np.int32(-128), np.int32(127))
    queue = dc.queue()
    cl.enqueue_nd_range_kernel(queue, kernel, (1,), None)
    cl.enqueue_copy(queue, out, obuf)
    queue.finish()
    got = out.view(np.int8).astype(np.int32)
    bad = np.flatnonzero(got != expected)
    assert bad.size == 0, f"{bad.size} of {n} differ, e.g. x={x[bad[:3]]} scale={scale[bad[:3]]}"
