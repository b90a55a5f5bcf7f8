"""FarmHash's ``Fingerprint64`` (farmhashna's ``Hash64``), vectorised over many keys of one length.

LSH_PROJECTION (TFLite's and Android's reference kernels) hashes each key, the float32 seed's
bytes followed by one input row's bytes, with ``Fingerprint64``; its sign decides each bit. This is
the published algorithm (Google's farmhash.cc, namespace farmhashna): keys of 0-16, 17-32 and
33-64 bytes each have their own mixing, longer ones run 64-byte rounds over five 64-bit state
words. All arithmetic is modulo 2^64 (NumPy uint64 arrays wrap), rotations are to the right, and
the bytes are read little-endian (``Fetch``/``Fetch32`` on the little-endian machines both
kernels run on).
"""
from __future__ import annotations

import numpy as np

U64 = np.uint64
K0 = U64(0xC3A5C85C97CB3127)
K1 = U64(0xB492B66FBE98F273)
K2 = U64(0x9AE16A3B2F90404F)
SEED = U64(81)


def _fetch64(keys: np.ndarray, at: int) -> np.ndarray:
    return np.ascontiguousarray(keys[:, at:at + 8]).view("<u8")[:, 0].astype(U64)


def _fetch32(keys: np.ndarray, at: int) -> np.ndarray:
    return np.ascontiguousarray(keys[:, at:at + 4]).view("<u4")[:, 0].astype(U64)


def _rotate(v: np.ndarray, shift: int) -> np.ndarray:
    if shift == 0:
        return v
    return (v >> U64(shift)) | (v << U64(64 - shift))


def _shift_mix(v: np.ndarray) -> np.ndarray:
    return v ^ (v >> U64(47))


def _hash_len16(u: np.ndarray, v: np.ndarray, mul: np.ndarray | np.uint64) -> np.ndarray:
    """Murmur-inspired mixing of two words."""
    a = (u ^ v) * mul
    a ^= a >> U64(47)
    b = (v ^ a) * mul
    b ^= b >> U64(47)
    return b * mul


def _len0to16(keys: np.ndarray, n: int) -> np.ndarray:
    count = keys.shape[0]
    if n >= 8:
        mul = K2 + U64(n * 2)
        a = _fetch64(keys, 0) + K2
        b = _fetch64(keys, n - 8)
        c = _rotate(b, 37) * mul + a
        d = (_rotate(a, 25) + b) * mul
        return _hash_len16(c, d, mul)
    if n >= 4:
        mul = K2 + U64(n * 2)
        a = _fetch32(keys, 0)
        return _hash_len16(U64(n) + (a << U64(3)), _fetch32(keys, n - 4), mul)
    if n > 0:
        a = keys[:, 0].astype(U64)
        b = keys[:, n >> 1].astype(U64)
        c = keys[:, n - 1].astype(U64)
        y = (a + (b << U64(8))) & U64(0xFFFFFFFF)  # uint32 arithmetic
        z = (U64(n) + (c << U64(2))) & U64(0xFFFFFFFF)
        return _shift_mix(y * K2 ^ z * K0) * K2
    return np.full(count, K2, U64)


def _len17to32(keys: np.ndarray, n: int) -> np.ndarray:
    mul = K2 + U64(n * 2)
    a = _fetch64(keys, 0) * K1
    b = _fetch64(keys, 8)
    c = _fetch64(keys, n - 8) * mul
    d = _fetch64(keys, n - 16) * K2
    return _hash_len16(_rotate(a + b, 43) + _rotate(c, 30) + d, a + _rotate(b + K2, 18) + c, mul)


def _len33to64(keys: np.ndarray, n: int) -> np.ndarray:
    mul = K2 + U64(n * 2)
    a = _fetch64(keys, 0) * K2
    b = _fetch64(keys, 8)
    c = _fetch64(keys, n - 8) * mul
    d = _fetch64(keys, n - 16) * K2
    y = _rotate(a + b, 43) + _rotate(c, 30) + d
    z = _hash_len16(y, a + _rotate(b + K2, 18) + c, mul)
    e = _fetch64(keys, 16) * mul
    f = _fetch64(keys, 24)
    g = (y + _fetch64(keys, n - 32)) * mul
    h = (z + _fetch64(keys, n - 24)) * mul
    return _hash_len16(_rotate(e + f, 43) + _rotate(g, 30) + h, e + _rotate(f + a, 18) + g, mul)


def _weak_hash_len32_with_seeds(keys: np.ndarray, at: int, a: np.ndarray, b: np.ndarray
                                ) -> tuple[np.ndarray, np.ndarray]:
    """A 16-byte hash of 32 bytes at ``at`` and two seeds."""
    w, x, y, z = (_fetch64(keys, at + 8 * i) for i in range(4))
    a = a + w
    b = _rotate(b + a + z, 21)
    c = a
    a = a + x + y
    b = b + _rotate(a, 44)
    return a + z, b + c


def _long(keys: np.ndarray, n: int) -> np.ndarray:
    """Keys over 64 bytes: 64-byte rounds, then the last 64 bytes (which may overlap)."""
    count = keys.shape[0]
    zero = np.zeros(count, U64)
    x = np.full(count, SEED, U64)
    y = np.full(count, (int(SEED) * int(K1) + 113) % 2**64, U64)
    z = _shift_mix(y * K2 + U64(113)) * K2
    v, w = (zero, zero), (zero, zero)
    x = x * K2 + _fetch64(keys, 0)
    end = ((n - 1) // 64) * 64
    last64 = n - 64
    for s in range(0, end, 64):
        x = _rotate(x + y + v[0] + _fetch64(keys, s + 8), 37) * K1
        y = _rotate(y + v[1] + _fetch64(keys, s + 48), 42) * K1
        x = x ^ w[1]
        y = y + v[0] + _fetch64(keys, s + 40)
        z = _rotate(z + w[0], 33) * K1
        v = _weak_hash_len32_with_seeds(keys, s, v[1] * K1, x + w[0])
        w = _weak_hash_len32_with_seeds(keys, s + 32, z + w[1], y + _fetch64(keys, s + 16))
        z, x = x, z
    mul = K1 + ((z & U64(0xFF)) << U64(1))
    s = last64
    w0 = w[0] + U64((n - 1) & 63)
    v0 = v[0] + w0
    w0 = w0 + v0
    v, w = (v0, v[1]), (w0, w[1])
    x = _rotate(x + y + v[0] + _fetch64(keys, s + 8), 37) * mul
    y = _rotate(y + v[1] + _fetch64(keys, s + 48), 42) * mul
    x = x ^ (w[1] * U64(9))
    y = y + v[0] * U64(9) + _fetch64(keys, s + 40)
    z = _rotate(z + w[0], 33) * mul
    v = _weak_hash_len32_with_seeds(keys, s, v[1] * mul, x + w[0])
    w = _weak_hash_len32_with_seeds(keys, s + 32, z + w[1], y + _fetch64(keys, s + 16))
    z, x = x, z
    return _hash_len16(_hash_len16(v[0], w[0], mul) + _shift_mix(y) * K0 + z,
                       _hash_len16(v[1], w[1], mul) + x, mul)


def fingerprint64(keys: np.ndarray) -> np.ndarray:
    """``Fingerprint64`` of each row of ``keys`` (a 2-D uint8 array: one key per row), as uint64."""
    keys = np.ascontiguousarray(keys, np.uint8)
    if keys.ndim != 2:
        raise ValueError(f"keys must be a 2-D byte array, got shape {keys.shape}")
    n = keys.shape[1]
    if n <= 16:
        return _len0to16(keys, n)
    if n <= 32:
        return _len17to32(keys, n)
    if n <= 64:
        return _len33to64(keys, n)
    return _long(keys, n)
