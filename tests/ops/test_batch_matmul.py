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
