"""``cl_kernels/fixedpoint16.cl`` against ``teflon_py.quant``: the integer LSTM's int16 logistic and
tanh on every int16 input for every integer-bit count the LSTM uses, and the inverse square root
of its layer norm on random and edge variances: one formula, two renderings, same integers."""
from __future__ import annotations

import numpy as np
import pytest

from teflon_py import quant
from tests.harness import int32_kernel_runner

pytest.importorskip("pyopencl")
ALL_INT16 = np.arange(-32768, 32768, dtype=np.int64)


@pytest.fixture(scope="module")
def cl_run():
    """run(kernel, *int32 inputs, outputs=1, per_item=1) -> int32 output arrays, on the default device."""
    return int32_kernel_runner(("quant.cl", "fixedpoint16.cl"), {"FIXEDPOINT16_CL_TEST": True})


@pytest.mark.parametrize("bits", [0, 3, 4, 6])
def test_logistic_int16(cl_run, bits: int) -> None:
    """Gates are Q3.12 (3 integer bits); the other counts cover the cell states' formats."""
    (got,) = cl_run("t_logistic16", ALL_INT16, np.full(ALL_INT16.size, bits))
    np.testing.assert_array_equal(got, quant.logistic_int16(ALL_INT16, bits))


@pytest.mark.parametrize("bits", [0, 3, 4, 6])
def test_tanh_int16(cl_run, bits: int) -> None:
    """The cell gate (3 integer bits) and tanh(cell) at 15 + cell_scale in 0..6 integer bits."""
    (got,) = cl_run("t_tanh16", ALL_INT16, np.full(ALL_INT16.size, bits))
    np.testing.assert_array_equal(got, quant.tanh_gemmlowp_int16(ALL_INT16, bits))


def test_inv_sqrt(cl_run) -> None:
    rng = np.random.default_rng(0)
    x = np.concatenate([np.arange(-2, 70), rng.integers(0, 2 ** 31 - 1, 4096),
                        [2 ** 29 - 1, 2 ** 29, 2 ** 30, 2 ** 31 - 1]]).astype(np.int64)
    m, s = cl_run("t_inv_sqrt", x, outputs=2)
    em, es = quant.get_inv_sqrt_quantized_multiplier_exp(x, -1)
    np.testing.assert_array_equal(m, em)
    np.testing.assert_array_equal(s, es)
