"""Re-lay constant weights once, at compile time, into the panels the kernels stream.

Panels are ``nr`` output channels wide. When there are at least ``nr`` channels, the last panel
is *shifted* back to end at the last channel (``panel_starts``): it overlaps the one before, so
every panel is whole and the kernels never handle a ragged channel tail (the overlapped
channels are computed twice and stored twice, with equal values). With fewer than ``nr``
channels the one panel is zero-padded instead. ``pack_conv_weights`` (padded panels) stays for
kernels that handle the tail themselves (transpose_conv.cl).
"""
from __future__ import annotations

import numpy as np


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def panel_starts(n: int, nr: int) -> np.ndarray:
    """First column of each of the ceil(n / nr) panels: p * nr, the last one shifted back to
    n - nr when n >= nr (the kernels compute the same: ``n >= nr ? min(p * nr, n - nr) : 0``)."""
    starts = np.arange(-(-n // nr)) * nr
    return np.minimum(starts, n - nr) if n >= nr else starts


def pad_vector(values: np.ndarray | None, length: int, padded: int) -> np.ndarray:
    """A float32 vector of ``padded`` entries: ``values`` (or zeros), then zeros."""
    out = np.zeros(padded, np.float32)
    if values is not None:
        out[:length] = np.asarray(values, np.float32).reshape(length)
    return out


def _panel_columns(n: int, nr: int) -> np.ndarray:
    """Column index of every packed position [panel][lane]; -1 for zero padding."""
    cols = panel_starts(n, nr)[:, None] + np.arange(nr)[None, :]
    return np.where(cols < n, cols, -1)


def _gather_columns(x: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """x[..., cols] with zeros where cols is -1."""
    out = np.take(x, np.maximum(cols, 0), axis=-1)
    out[..., cols < 0] = 0.0
    return out


def pack_gemm_weights(b_kn: np.ndarray, nr: int) -> np.ndarray:
    """B[K][N] -> panels [ceil(N/nr)][K][nr] (last panel shifted, or zero-padded when N < nr)."""
    cols = _panel_columns(b_kn.shape[1], nr)  # [P][nr]
    packed = _gather_columns(np.asarray(b_kn, np.float32), cols)  # [K][P][nr]
    return np.ascontiguousarray(packed.transpose(1, 0, 2))


def pack_conv_weights_shifted(w_ohwi: np.ndarray, ocb: int) -> np.ndarray:
    """TFLite's filter [OC][KH][KW][IC] -> [ceil(OC/ocb)][KH][KW][IC][ocb], last panel shifted."""
    w = np.moveaxis(np.asarray(w_ohwi, np.float32), 0, -1)  # [KH][KW][IC][OC]
    packed = _gather_columns(w, _panel_columns(w.shape[-1], ocb))  # [KH][KW][IC][P][ocb]
    return np.ascontiguousarray(np.moveaxis(packed, 3, 0))


def panel_bias(values: np.ndarray | None, n: int, nr: int) -> np.ndarray:
    """The bias as the kernels read it: at each panel's start, so ``n`` values then zeros up to a
    whole panel (``round_up(n, nr)``) entries."""
    return pad_vector(values, n, round_up(n, nr))


def pack_conv_weights(w_ohwi: np.ndarray, ocb: int) -> np.ndarray:
    """TFLite's filter [OC][KH][KW][IC] -> [OCP/ocb][KH][KW][IC][ocb], zero-padded to OCP."""
    oc, kh, kw, ic = w_ohwi.shape
    ocp = round_up(oc, ocb)
    padded = np.zeros((ocp, kh, kw, ic), np.float32)
    padded[:oc] = w_ohwi
    return np.ascontiguousarray(padded.reshape(ocp // ocb, ocb, kh, kw, ic).transpose(0, 2, 3, 4, 1))


def pack_depthwise_weights(w_1hwo: np.ndarray, vector: int = 16) -> np.ndarray:
    """TFLite's depthwise filter [1][KH][KW][OC] -> [KH][KW][OCP] with OCP a multiple of ``vector``."""
    _, kh, kw, oc = w_1hwo.shape
    out = np.zeros((kh, kw, round_up(oc, vector)), np.float32)
    out[:, :, :oc] = w_1hwo[0]
    return out
