"""What the LSTM and RNN kernels share: op options, state write-back, Eigen float maths, row quantization."""
from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal, localcontext

import numpy as np

from teflon_py import quant
from teflon_py.fallback.registry import Node
from teflon_py.ops.common import Act, FusedActivation
from teflon_py.ops.recurrent import RecurrentAttrs

_F32 = np.float32


# -- options, state and time --------------------------------------------------------------------

def op_options(node: Node) -> RecurrentAttrs:
    """The recurrent op's attributes (``ops.recurrent.RecurrentAttrs``)."""
    return node.attrs


def assign_state(node: Node, k: int, value: np.ndarray) -> None:
    """Write state operand ``k`` (a variable tensor) back in its own type and shape, so it persists
    across invokes (the executor's ``assign``; skipped when a kernel runs without one)."""
    t = node.inputs[k]
    if node.context is not None:
        node.context.assign(node.op.inputs[k], np.asarray(value).astype(t.dtype).reshape(t.shape))


def _time_steps(n: int, reverse: bool) -> range:
    return range(n - 1, -1, -1) if reverse else range(n)


# -- shared maths -------------------------------------------------------------------------------

def apply_activation(x: np.ndarray, act: FusedActivation) -> np.ndarray:
    """tensor_utils::ApplyActivationToVector on float32 values (TANH: Eigen's, see ``eigen_tanh``)."""
    kind = act.kind
    if kind == Act.NONE:
        return x
    if kind == Act.RELU:
        return np.maximum(x, _F32(0))
    if kind == Act.RELU_N1_TO_1:
        return np.clip(x, _F32(-1), _F32(1))
    if kind == Act.RELU6:
        return np.clip(x, _F32(0), _F32(6))
    if kind == Act.TANH:
        return eigen_tanh(x)
    if kind == Act.SIGN_BIT:
        return np.signbit(x).astype(_F32)
    return np.clip(x, _F32(act.lo), _F32(act.hi))  # CLAMP


def _horner(x: np.ndarray, coefficients: Sequence[float]) -> np.ndarray:
    """Eigen's ppolevl without FMA: ((c0 * x + c1) * x + c2) ..., each step rounded to float32."""
    r = np.full_like(x, _F32(coefficients[0]))
    for c in coefficients[1:]:
        r = r * x + _F32(c)
    return r


def eigen_tanh(x: np.ndarray) -> np.ndarray:
    """Eigen's float tanh as LiteRT's x86 build runs it (``ptanh_float``, EIGEN_FAST_MATH, no FMA):
    a [9/8] rational approximation of the input clamped to +-7.90738964, bit-exact with LiteRT's
    ApplyTanhToVector."""
    c = _F32(7.90738964080810547)
    x = np.minimum(np.maximum(np.asarray(x, _F32), -c), c)
    x2 = x * x
    p = _horner(x2, (1.394553628e-8, 2.102733560e-5, 3.520756727e-3, 1.340216100e-1))
    q = _horner(x2, (8.015776984e-7, 3.326951409e-4, 2.597254514e-2, 4.673548340e-1, 1.0))
    return (x2 * x * p + x) / q


def _exp2f_table() -> np.ndarray:
    """glibc's __exp2f_data.tab: the bits of 2^(i/32), correctly rounded, minus i << 47."""
    with localcontext() as ctx:
        ctx.prec = 50
        bits = [np.float64(float((Decimal(i) / 32 * Decimal(2).ln()).exp())).view(np.uint64) for i in range(32)]
    return np.array(bits, np.uint64) - (np.arange(32, dtype=np.uint64) << np.uint64(47))


_EXP2F_TAB = _exp2f_table()
_EXPF_INV_LN2_N = np.float64(float.fromhex("0x1.71547652b82fep+0") * 32)
_EXPF_SHIFT = np.float64(float.fromhex("0x1.8p+52"))
_EXPF_POLY = tuple(np.float64(float.fromhex(c) / 32 ** k)
                   for c, k in (("0x1.c6af84b912394p-5", 3), ("0x1.ebfce50fac4f3p-3", 2), ("0x1.62e42ff0c52d6p-1", 1)))


def glibc_expf(x: np.ndarray) -> np.ndarray:
    """glibc's expf (2.27+) for float32 x <= 88: 2^(k/32) from a table times a cubic in double,
    rounded once to float32 (0 below log(2^-150)). It differs from the correctly rounded exp in
    about 0.05% of inputs; it matched this machine's libm expf on 400k samples."""
    x = np.asarray(x, _F32)
    z = _EXPF_INV_LN2_N * np.maximum(x, _F32(-110)).astype(np.float64)
    shift = _EXPF_SHIFT
    kd = z + shift
    ki = kd.view(np.uint64)
    r = z - (kd - shift)
    s = (_EXP2F_TAB[ki % np.uint64(32)] + (ki << np.uint64(47))).view(np.float64)
    c0, c1, c2 = _EXPF_POLY
    y = (c0 * r + c1) * (r * r) + (c2 * r + 1)
    return np.where(x < _F32(float.fromhex("-0x1.9fe368p6")), _F32(0), (y * s).astype(_F32))


def eigen_scalar_elements(n: int, start: int | np.ndarray, packet: int = 4) -> np.ndarray:
    """Which of ``n`` floats starting ``start`` floats past a 64-byte aligned address (a mask per
    start) Eigen's vectorised assignment computes one by one in LiteRT's SSE build: the head before
    the first 16-byte aligned element and the tail after the last full 4-float packet."""
    start = np.asarray(start)[..., None]
    head = np.minimum((packet - start % packet) % packet, n)
    body = (n - head) // packet * packet
    i = np.arange(n)
    return (i < head) | (i >= head + body)


def eigen_logistic(x: np.ndarray, scalar: np.ndarray | None = None) -> np.ndarray:
    """Eigen's float logistic as LiteRT's ApplySigmoidToVector computes it: on vectorised elements
    ``scalar_logistic_op<float>::packetOp`` (no FMA: exp(x/2)^2 from Cephes' range reduction and a
    degree-5 polynomial, then e / (1 + e)); on the ``scalar`` elements (the head and tail Eigen's
    alignment peeling leaves, see ``eigen_scalar_elements``) std::exp(x) / (1 + std::exp(x))."""
    x = np.asarray(x, _F32)
    half = np.minimum(x, _F32(16.6355324)) * _F32(0.5)
    m = np.floor(half * _F32(1.44269504088896341) + _F32(0.5))
    r = m * _F32(-0.693359375) + half
    r = m * _F32(2.12194440e-4) + r
    r2 = r * r
    p_even = r2 * _F32(4.1898667812347412109375e-2) + _F32(0.49999141693115234375)
    p_odd = r2 * _F32(8.33471305668354034423828125e-3) + _F32(0.16666877269744873046875)
    p = r2 * (r * p_odd + p_even) + (r + _F32(1))
    e = np.ldexp(p, m.astype(np.int32))
    e = e * e
    out = np.where(x < _F32(-104), _F32(0), e / (_F32(1) + e)).astype(_F32)
    if scalar is not None and scalar.any():  # Eigen's scalar path: std::exp, then e / (1 + e)
        e = glibc_expf(np.minimum(x, _F32(16.6355324)))
        out = np.where(scalar, e / (_F32(1) + e), out).astype(_F32)
    return out


def sequential_sum(x: np.ndarray) -> np.ndarray:
    """Left-to-right float32 sum over the last axis, as a plain C loop adds (cumsum is sequential)."""
    return np.cumsum(x, axis=-1, dtype=_F32)[..., -1]


def _mean_stddev_normalization(x: np.ndarray) -> np.ndarray:
    """tensor_utils::MeanStddevNormalization over the last axis (the portable loop, in float32)."""
    n = _F32(x.shape[-1])
    mean = (sequential_sum(x) / n)[..., None]
    diff = x - mean
    variance = sequential_sum(diff * diff) / n
    return diff * (_F32(1) / np.sqrt(variance + _F32(1e-8)))[..., None]


def _clip(x: np.ndarray, limit: float) -> np.ndarray:
    """CwiseClipping: clamp to [-limit, limit] when limit > 0."""
    return np.clip(x, -limit, limit) if limit > 0 else x


def quantize_rows(x: np.ndarray, asymmetric: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """BatchQuantizeFloats over the rows of ``x``: (int8, float32 scaling factors, zero points or None)."""
    if asymmetric:
        return quant.asymmetric_quantize_rows(x)
    q, scale = quant.symmetric_quantize_rows(x)
    return q, scale, None


def hybrid_matmul(q: np.ndarray, scale: np.ndarray, zero_point: np.ndarray | None, w: np.ndarray,
                  w_scale: np.float32, row_sums: np.ndarray) -> np.ndarray:
    """The hybrid MatrixBatchVectorMultiplyAccumulate term: int32 dot products (minus
    ``row_sums * zero_point`` when asymmetric) times ``scaling_factor * weight_scale`` in float32."""
    dot = q.astype(np.float64) @ w.T  # exact: int8 products summed well below 2^53
    if zero_point is not None:
        dot -= row_sums * zero_point[..., None].astype(np.float64)
    return dot.astype(_F32) * (scale * w_scale)[..., None]
