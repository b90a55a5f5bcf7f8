"""Dynamic (per-row, run-time) int8 quantization: XNNPACK's qd8, as ExecuTorch's dynamically
quantized linear layers use it. Each row's range, widened to include 0, is mapped onto
[-128, 127]: ``scale = (max - min) / 255`` (1 for an all-zero row), and the zero point is the
integer nearest to where real 0 falls, taken from the end (min or max) whose rounding error is
smaller, as TFLite's asymmetric input quantization nudges it."""
from __future__ import annotations

import numpy as np

QMIN, QMAX = -128, 127


def row_params(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a float32 [rows, depth] array: (float32 scale, int32 zero point)."""
    lo = np.minimum(rows.min(axis=1, initial=0.0), 0.0).astype(np.float32)
    hi = np.maximum(rows.max(axis=1, initial=0.0), 0.0).astype(np.float32)
    scale = ((hi - lo) / np.float32(QMAX - QMIN)).astype(np.float32)
    scale = np.where(scale == 0, np.float32(1.0), scale).astype(np.float32)
    from_min = np.float32(QMIN) - lo / scale
    from_max = np.float32(QMAX) - hi / scale
    err_min = np.float32(abs(QMIN)) + np.abs(lo / scale)
    err_max = np.float32(abs(QMAX)) + np.abs(hi / scale)
    zero = np.where(err_min < err_max, from_min, from_max)
    zero_point = np.clip(np.rint(zero), QMIN, QMAX).astype(np.int32)
    return scale, zero_point


def quantize_rows(rows: np.ndarray, scale: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
    """int8 values of ``rows`` with per-row ``scale`` and ``zero_point`` (round half to even)."""
    q = np.rint(rows / scale[:, None]) + zero_point[:, None]
    return np.clip(q, QMIN, QMAX).astype(np.int8)
