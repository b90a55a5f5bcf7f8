"""Re-lay constant weights once, at compile time, into the panels the kernels stream.

Every packer zero-pads the output-channel axis to a whole number of vector blocks, so kernels
never test for a ragged last block while loading weights or bias.
"""
from __future__ import annotations

import numpy as np


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def pad_vector(values: np.ndarray | None, length: int, padded: int) -> np.ndarray:
    """A float32 vector of ``padded`` entries: ``values`` (or zeros), then zeros."""
    out = np.zeros(padded, np.float32)
    if values is not None:
        out[:length] = np.asarray(values, np.float32).reshape(length)
    return out


def pack_gemm_weights(b_kn: np.ndarray, nr: int) -> np.ndarray:
    """B[K][N] -> panels [NP/nr][K][nr], NP = N rounded up to ``nr``."""
    k, n = b_kn.shape
    np_ = round_up(n, nr)
    padded = np.zeros((k, np_), np.float32)
    padded[:, :n] = b_kn
    return np.ascontiguousarray(padded.reshape(k, np_ // nr, nr).transpose(1, 0, 2))


def pack_conv_weights(w_ohwi: np.ndarray, ocb: int) -> np.ndarray:
    """TFLite's filter [OC][KH][KW][IC] -> [OCP/ocb][KH][KW][IC][ocb]."""
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
