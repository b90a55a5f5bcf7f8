"""BATCH_MATMUL against LiteRT's reference kernels.

Ranks 2 to 5 with broadcast batch dimensions, adj_x / adj_y, a constant or a runtime RHS, in
float32, int8 (nonzero zero points on both operands) and int16 (zero points 0). The probe pins
the multiplier derivation: the float32 product of the two input scales, not the double one.
"""

from __future__ import annotations

import numpy as np
import pytest

from teflon_py import quant
from teflon_py.tflite.options import BatchMatMulOptions
from tests.harness import check_model, quantization, single_op

MODES = ["float32", "int8", "int16"]
#: (lhs (scale, zp), rhs (scale, zp), output zp, std of a full-range harness input) per dtype
QUANT = {
    np.int8: ((0.05, -3), (0.02, 4), 6, 74.0),
    np.int16: ((0.001, 0), (0.0007, 0), 0, 18918.0),
}

#: (lhs shape, rhs shape, adj_x, adj_y), shapes as stored (before the adjoints)
CASES = [
    ((3, 5), (5, 4), False, False),
    ((2, 3, 5), (5, 4), False, False),
    ((2, 1, 3, 5), (1, 3, 5, 4), False, False),
    ((2, 1, 2, 3, 4), (1, 2, 1, 4, 3), False, False),
    ((2, 5, 3), (2, 5, 4), True, False),
    ((2, 3, 5), (4, 5), False, True),
    ((3, 1, 6, 2), (2, 7, 6), True, True),
    ((1, 4, 1), (1, 1, 3), False, False),  # K = 1
    ((2, 8, 64), (64, 16), False, False),
]


def _out_shape(lhs: tuple, rhs: tuple, adj_x: bool, adj_y: bool) -> tuple:
    rows = lhs[-1] if adj_x else lhs[-2]
    cols = rhs[-2] if adj_y else rhs[-1]
    batch = np.broadcast_shapes(lhs[:-2], rhs[:-2])
    return (*batch, rows, cols)


def batch_matmul_model(
    lhs: tuple, rhs: tuple, adj_x: bool, adj_y: bool, mode: str, const_rhs: bool, seed: int
) -> bytes:
    rng = np.random.default_rng(seed)
    out_shape = _out_shape(lhs, rhs, adj_x, adj_y)
    depth = lhs[-2] if adj_x else lhs[-1]
    opts = BatchMatMulOptions(adj_x=adj_x, adj_y=adj_y)
    if mode == "float32":
        r = {"shape": rhs, "dtype": np.float32}
        if const_rhs:
            r["data"] = rng.standard_normal(rhs).astype(np.float32)
        return single_op(
            "BATCH_MATMUL",
            [{"shape": lhs, "dtype": np.float32}, r],
            [{"shape": out_shape, "dtype": np.float32}],
            opts,
        )
    dtype = np.int8 if mode == "int8" else np.int16
    (ls, lz), (rs, rz), oz, spread = QUANT[dtype]
    out_scale = float(np.sqrt(depth) * spread * spread * ls * rs / (quant.QRANGE[np.dtype(dtype)][1] / 3.5))
    r = {"shape": rhs, "dtype": dtype, "quant": quantization(rs, rz)}
    if const_rhs:
        lo, hi = quant.QRANGE[np.dtype(dtype)]
        r["data"] = rng.integers(lo, hi, rhs, endpoint=True).astype(dtype)
    return single_op(
        "BATCH_MATMUL",
        [{"shape": lhs, "dtype": dtype, "quant": quantization(ls, lz)}, r],
        [{"shape": out_shape, "dtype": dtype, "quant": quantization(out_scale, oz)}],
        opts,
    )


@pytest.mark.parametrize("const_rhs", [True, False], ids=["const_rhs", "input_rhs"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}-adj{int(c[2])}{int(c[3])}")
def test_batch_matmul(case: tuple, mode: str, const_rhs: bool, backend: str) -> None:
    seed = CASES.index(case)
    check_model(batch_matmul_model(*case, mode, const_rhs, seed), backend, seed=seed)


@pytest.mark.parametrize("const_rhs", [True, False], ids=["const_rhs", "input_rhs"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}-adj{int(c[2])}{int(c[3])}")
def test_batch_matmul_gpu_family(gpu_family: str, case: tuple, const_rhs: bool) -> None:
    """The float cases on the GPU-style GEMM (a runtime right operand laid out by gpu_pack_b)."""
    seed = CASES.index(case)
    check_model(batch_matmul_model(*case, "float32", const_rhs, seed), gpu_family, seed=seed)


#: scales whose float32 product differs from the double one in the multiplier's last bits, and an
#: accumulator the two multipliers requantize differently
PROBE_SCALES = (0.0123, 0.000457, 0.049)
PROBE_ACC = 675579


def test_batch_matmul_multiplier_probe(backend: str) -> None:
    """The multiplier comes from float32(lhs_scale * rhs_scale) (GetQuantizedConvolutionMultipler)."""
    si, sw, so = PROBE_SCALES
    candidates = []
    for product in (
        np.float64(np.float32(si)) * np.float64(np.float32(sw)),
        np.float64(np.float32(si) * np.float32(sw)),
    ):
        m, s = quant.quantize_multiplier(product / np.float64(np.float32(so)))
        candidates.append(int(quant.multiply_by_quantized_multiplier(np.array([PROBE_ACC]), m, s)[0]))
    assert candidates[0] != candidates[1], "the probe must separate the two derivations"
    depth = 48
    column = np.full(depth, 127, np.int8)
    column[-1] = 1
    rhs = np.stack([column, -column], axis=1)  # [depth, 2]: +target and -target
    model = single_op(
        "BATCH_MATMUL",
        [
            {"shape": (2, depth), "dtype": np.int8, "quant": quantization(si, 0)},
            {"data": rhs, "dtype": np.int8, "quant": quantization(sw, 0)},
        ],
        [{"shape": (2, 2), "dtype": np.int8, "quant": quantization(so, 0)}],
        BatchMatMulOptions(),
    )
    lhs = np.zeros((2, depth), np.int8)  # row 0 dots the column to PROBE_ACC exactly
    full, rest = divmod(PROBE_ACC, 127 * 127)
    lhs[0, :full] = 127
    lhs[0, full], lhs[0, -1] = divmod(rest, 127)  # the remainder meets the column's final 1
    assert int(lhs[0].astype(np.int64) @ column.astype(np.int64)) == PROBE_ACC
    check_model(model, backend, inputs=[lhs])


# -- int8: the OpenCL kernel's tails, zero points at the edges, several requantizations ----------

#: (lhs shape, rhs shape, adj_x, adj_y) whose M, N, K leave ragged row blocks (6 or 14 rows a
#: work-item), ragged 16-column vectors and odd depths
INT8_CASES = [
    ((2, 13, 37), (2, 37, 45), False, False),
    ((3, 1, 9, 20), (1, 4, 70, 20), False, True),  # broadcast (3, 1) x (1, 4), N = 70: 1-4 vectors
    ((2, 20, 7), (20, 33), True, False),  # a rank-2 right operand shared by every batch
    ((2, 2, 16, 5), (2, 1, 17, 16), True, True),
    ((1, 4, 40, 32), (1, 4, 32, 40), False, False),  # attention-shaped Q.K^T
]
#: (lhs zp, rhs zp, output zp, output scale relative to one that spreads the result over +-3.5 std):
#: zero points at int8's edges both ways, a coarse scale, and a fine one that saturates often
INT8_QUANT = [(-128, 127, -128, 1.0), (127, -128, 127, 0.3), (5, -9, 0, 4.0)]


def int8_model(lhs: tuple, rhs: tuple, adj_x: bool, adj_y: bool, zps: tuple, const_rhs: bool, seed: int) -> bytes:
    """An int8 BATCH_MATMUL with the zero points and output scale of ``zps`` (``INT8_QUANT``)."""
    rng = np.random.default_rng(seed)
    lz, rz, oz, rel = zps
    ls, rs = 0.02 * (1 + seed % 3), 0.013
    depth = lhs[-2] if adj_x else lhs[-1]
    out_scale = float(rel * np.sqrt(depth) * 74.0 * 74.0 * ls * rs / (127 / 3.5))
    r = {"shape": rhs, "dtype": np.int8, "quant": quantization(rs, rz)}
    if const_rhs:
        r["data"] = rng.integers(-128, 127, rhs, endpoint=True).astype(np.int8)
    return single_op(
        "BATCH_MATMUL",
        [{"shape": lhs, "dtype": np.int8, "quant": quantization(ls, lz)}, r],
        [{"shape": _out_shape(lhs, rhs, adj_x, adj_y), "dtype": np.int8, "quant": quantization(out_scale, oz)}],
        BatchMatMulOptions(adj_x=adj_x, adj_y=adj_y),
    )


@pytest.mark.parametrize("zps", INT8_QUANT, ids=lambda q: f"zp{q[0]}_{q[1]}_{q[2]}-s{q[3]}")
@pytest.mark.parametrize("case", INT8_CASES, ids=lambda c: f"{c[0]}x{c[1]}-adj{int(c[2])}{int(c[3])}")
def test_batch_matmul_int8(case: tuple, zps: tuple, backend: str) -> None:
    """Bit-exact with LiteRT; the right operand a constant or a runtime input by turns, inputs
    drawn from int8's edges (and the zero points) for the runtime ones."""
    seed = INT8_CASES.index(case) * len(INT8_QUANT) + INT8_QUANT.index(zps)
    model = int8_model(*case, zps, const_rhs=seed % 2 == 0, seed=seed)
    check_model(model, backend, seed=seed, extremes=True)


@pytest.mark.parametrize("tiles, n", [("avx512", 40), ("avx512", 70), ("narrow", 70)])
@pytest.mark.parametrize("const_rhs", [True, False], ids=["const_rhs", "input_rhs"])
def test_batch_matmul_int8_tiles(tiles: str, n: int, const_rhs: bool, device: None,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The other CPUs' register blockings of qmatmul.cl (AVX-512: 3 vectors x 8 rows for 40
    columns, 4 x 6 for 70, whose second block is all but 6 columns past N; narrow: 1 x 4), 29 rows."""
    monkeypatch.setenv("TEFLON_CL_TILES", tiles)
    model = int8_model((2, 29, 24), (24, n), False, False, INT8_QUANT[0], const_rhs, seed=7)
    check_model(model, "opencl", seed=7)


def test_batch_matmul_int8_refusals() -> None:
    """The OpenCL int8 lowering refuses what its kernel does not compute, with the reason: a zero
    point outside int8 (its int16 panels hold y - zp) and per-channel parameters (LiteRT's are per
    tensor); the same op with in-range per-tensor parameters is accepted."""
    pytest.importorskip("pyopencl")
    from teflon_py.opencl.lowerings import check_op
    from teflon_py.tflite.reader import read_model

    def verdict(rhs_quant: object) -> str:
        model = single_op(
            "BATCH_MATMUL",
            [{"shape": (2, 3, 4), "dtype": np.int8, "quant": quantization(0.1, 1)},
             {"shape": (2, 4, 2), "dtype": np.int8, "quant": rhs_quant}],
            [{"shape": (2, 3, 2), "dtype": np.int8, "quant": quantization(0.2, 0)}],
            BatchMatMulOptions(),
        )
        graph = read_model(model).main
        return check_op(graph, graph.operations[0], None).reason or ""

    assert verdict(quantization(0.1, -128)) == ""
    assert "outside int8's range" in verdict(quantization(0.1, 200))
    assert "per channel" in verdict(quantization([0.1, 0.2], 0, 2))


def test_batch_matmul_int8_constant_lhs(backend: str) -> None:
    """A constant left operand with a runtime right one (OpenCL uploads it as int8, not float32)."""
    rng = np.random.default_rng(9)
    model = single_op(
        "BATCH_MATMUL",
        [{"data": rng.integers(-128, 127, (2, 5, 19), endpoint=True).astype(np.int8), "dtype": np.int8,
          "quant": quantization(0.05, -128)},
         {"shape": (2, 19, 21), "dtype": np.int8, "quant": quantization(0.02, 127)}],
        [{"shape": (2, 5, 21), "dtype": np.int8, "quant": quantization(2.0, 3)}],
        BatchMatMulOptions(),
    )
    check_model(model, backend, seed=9, extremes=True)
