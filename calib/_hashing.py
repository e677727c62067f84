"""Compiled 32-bit hash primitives over byte arrays (numba).

Bit-exact re-implementations of xxHash32 (seed 0) and MurmurHash3 x86_32
(seed 0), and the MurmurHash3 32-bit finalizer ``fmix32`` that datasketch
applies before its affine permutations. Tests hold each to the reference
library (``xxhash``, ``mmh3``) on random inputs.
"""

from __future__ import annotations

import numpy as np
from numba import njit

M32 = np.uint64(0xFFFFFFFF)
P1 = np.uint64(0x9E3779B1)
P2 = np.uint64(0x85EBCA77)
P3 = np.uint64(0xC2B2AE3D)
P4 = np.uint64(0x27D4EB2F)
P5 = np.uint64(0x165667B1)


@njit(inline="always")
def _rotl32(x, r):
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & M32


@njit(inline="always")
def _read32(buf, p):
    return (np.uint64(buf[p]) | (np.uint64(buf[p + 1]) << np.uint64(8))
            | (np.uint64(buf[p + 2]) << np.uint64(16)) | (np.uint64(buf[p + 3]) << np.uint64(24)))


@njit(inline="always")
def _xxh32_tail(buf, p, n, h):
    """xxHash32's last steps: the ``n`` (< 16) bytes from ``p`` after the
    16-byte stripes (4 at a time, then 1), then the avalanche. Counted loops:
    with ``n`` a compile-time constant (see :func:`xxh32_fixed`) they unroll
    and the caller's loop over shingles vectorizes."""
    for _ in range(n >> 2):
        h = (_rotl32((h + _read32(buf, p) * P3) & M32, 17) * P4) & M32
        p += 4
    for _ in range(n & 3):
        h = (_rotl32((h + np.uint64(buf[p]) * P5) & M32, 11) * P1) & M32
        p += 1
    h ^= h >> np.uint64(15)
    h = (h * P2) & M32
    h ^= h >> np.uint64(13)
    h = (h * P3) & M32
    h ^= h >> np.uint64(16)
    return h


@njit(cache=True)
def xxh32(buf, start, end):
    """xxHash32 of buf[start:end] with seed 0, as uint64 in [0, 2^32)."""
    n = end - start
    p = start
    if n >= 16:
        v1 = (P1 + P2) & M32
        v2 = P2
        v3 = np.uint64(0)
        v4 = (np.uint64(0x100000000) - P1) & M32
        limit = end - 16
        while p <= limit:
            v1 = (_rotl32((v1 + _read32(buf, p) * P2) & M32, 13) * P1) & M32
            v2 = (_rotl32((v2 + _read32(buf, p + 4) * P2) & M32, 13) * P1) & M32
            v3 = (_rotl32((v3 + _read32(buf, p + 8) * P2) & M32, 13) * P1) & M32
            v4 = (_rotl32((v4 + _read32(buf, p + 12) * P2) & M32, 13) * P1) & M32
            p += 16
        h = (_rotl32(v1, 1) + _rotl32(v2, 7) + _rotl32(v3, 12) + _rotl32(v4, 18)) & M32
    else:
        h = P5
    h = (h + np.uint64(n)) & M32
    return _xxh32_tail(buf, p, end - p, h)


@njit(inline="always")
def xxh32_fixed(buf, start, n):
    """xxh32 of the ``n`` < 16 bytes from ``start`` (no stripe loop), inlined
    into the shingle kernels; called with a literal ``n`` it compiles to
    straight-line code."""
    return _xxh32_tail(buf, start, n, (P5 + np.uint64(n)) & M32)


C1 = np.uint64(0xCC9E2D51)
C2 = np.uint64(0x1B873593)


@njit(inline="always")
def fmix32(h):
    """MurmurHash3 32-bit finalizer (a bijection on [0, 2^32))."""
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & M32
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & M32
    h ^= h >> np.uint64(16)
    return h


@njit(cache=True)
def murmur3_32(buf, start, end):
    """MurmurHash3 x86_32 of buf[start:end] with seed 0, unsigned."""
    n = end - start
    h = np.uint64(0)
    p = start
    while p + 4 <= end:
        k = (_read32(buf, p) * C1) & M32
        k = (_rotl32(k, 15) * C2) & M32
        h ^= k
        h = (_rotl32(h, 13) * np.uint64(5) + np.uint64(0xE6546B64)) & M32
        p += 4
    rem = end - p
    if rem > 0:
        k = np.uint64(0)
        if rem >= 3:
            k ^= np.uint64(buf[p + 2]) << np.uint64(16)
        if rem >= 2:
            k ^= np.uint64(buf[p + 1]) << np.uint64(8)
        k ^= np.uint64(buf[p])
        k = (k * C1) & M32
        k = (_rotl32(k, 15) * C2) & M32
        h ^= k
    h ^= np.uint64(n)
    return fmix32(h)
