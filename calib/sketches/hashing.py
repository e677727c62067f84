"""Compiled 32-bit hash primitives over byte arrays (numba).

Bit-exact re-implementations of xxHash32 (seed 0) and MurmurHash3 x86_32
(seed 0), and the MurmurHash3 32-bit finalizer ``fmix32`` that datasketch
applies before its affine permutations. Tests hold each to the reference
library (``xxhash``, ``mmh3``) on random inputs.
"""

from __future__ import annotations

import numpy as np
from numba import njit

# Arithmetic is uint32 throughout, every step cast back (U(...)): numba widens
# integer operations to 64 bits, and with each result truncated LLVM narrows
# them to 32-bit lanes again (eight to an AVX2 register instead of four; the
# shingle loop runs about twice as fast as with uint64 and & 0xFFFFFFFF).
U = np.uint32
P1 = U(0x9E3779B1)
P2 = U(0x85EBCA77)
P3 = U(0xC2B2AE3D)
P4 = U(0x27D4EB2F)
P5 = U(0x165667B1)


@njit(inline="always")
def _rotl32(x, r):
    return U(U(x << U(r)) | U(x >> U(32 - r)))


@njit(inline="always")
def _read32(buf, p):
    return U(U(buf[p]) | U(U(buf[p + 1]) << U(8)) | U(U(buf[p + 2]) << U(16)) | U(U(buf[p + 3]) << U(24)))


@njit(inline="always")
def read32_at(buf, p):
    """The little-endian word at the unsigned position ``p`` (np.uint64). numba wraps a negative
    signed index (a select on every load), which keeps LLVM from fusing the four byte loads of
    :func:`_read32` into one; an unsigned index has no such select (about 4x faster in a loop
    over shingles)."""
    return U(U(buf[p]) | U(U(buf[p + np.uint64(1)]) << U(8)) | U(U(buf[p + np.uint64(2)]) << U(16))
             | U(U(buf[p + np.uint64(3)]) << U(24)))


@njit(inline="always")
def read32_upto(buf, p, end):
    """The little-endian word of the bytes at p .. p + 3, those at ``end`` or past it read as 0."""
    w = U(0)
    for i in range(4):
        if p + i < end:
            w |= U(U(buf[p + i]) << U(8 * i))
    return w


@njit(inline="always")
def xxh32_words(w0, w1, w2, w3, n):
    """xxh32 of ``n`` < 16 bytes given as the little-endian words w0..w3 of the 16 bytes from
    their start (the bytes past ``n`` are ignored), with no branch: each of the 3 word rounds and
    the 3 byte rounds (the bytes of word n >> 2) is computed and kept or not by a select on
    ``n``. Equal to :func:`xxh32_fixed` for every ``n``; a loop of it over many inputs
    vectorizes, where xxh32_fixed with ``n`` a variable has data-dependent loops."""
    h = U(P5 + U(n))
    nw = n >> 2
    g = U(_rotl32(U(h + U(w0 * P3)), 17) * P4)
    h = g if nw > 0 else h
    g = U(_rotl32(U(h + U(w1 * P3)), 17) * P4)
    h = g if nw > 1 else h
    g = U(_rotl32(U(h + U(w2 * P3)), 17) * P4)
    h = g if nw > 2 else h
    tail = w0 if nw == 0 else (w1 if nw == 1 else (w2 if nw == 2 else w3))
    nb = n & 3
    g = U(_rotl32(U(h + U(U(tail & U(255)) * P5)), 11) * P1)
    h = g if nb > 0 else h
    g = U(_rotl32(U(h + U(U(U(tail >> U(8)) & U(255)) * P5)), 11) * P1)
    h = g if nb > 1 else h
    g = U(_rotl32(U(h + U(U(U(tail >> U(16)) & U(255)) * P5)), 11) * P1)
    h = g if nb > 2 else h
    h = U(h ^ U(h >> U(15)))
    h = U(h * P2)
    h = U(h ^ U(h >> U(13)))
    h = U(h * P3)
    return U(h ^ U(h >> U(16)))


@njit(inline="always")
def _xxh32_tail(buf, p, n, h):
    """xxHash32's last steps: the ``n`` (< 16) bytes from ``p`` after the
    16-byte stripes (4 at a time, then 1), then the avalanche. Counted loops:
    with ``n`` a compile-time constant (see :func:`xxh32_fixed`) they unroll
    and the caller's loop over shingles vectorizes."""
    for _ in range(n >> 2):
        h = U(_rotl32(U(h + U(_read32(buf, p) * P3)), 17) * P4)
        p += 4
    for _ in range(n & 3):
        h = U(_rotl32(U(h + U(U(buf[p]) * P5)), 11) * P1)
        p += 1
    h = U(h ^ U(h >> U(15)))
    h = U(h * P2)
    h = U(h ^ U(h >> U(13)))
    h = U(h * P3)
    return U(h ^ U(h >> U(16)))


@njit(cache=True)
def xxh32(buf, start, end):
    """xxHash32 of buf[start:end] with seed 0 (uint32)."""
    n = end - start
    p = start
    if n >= 16:
        v1 = U(P1 + P2)
        v2 = P2
        v3 = U(0)
        v4 = U(U(0) - P1)
        limit = end - 16
        while p <= limit:
            v1 = U(_rotl32(U(v1 + U(_read32(buf, p) * P2)), 13) * P1)
            v2 = U(_rotl32(U(v2 + U(_read32(buf, p + 4) * P2)), 13) * P1)
            v3 = U(_rotl32(U(v3 + U(_read32(buf, p + 8) * P2)), 13) * P1)
            v4 = U(_rotl32(U(v4 + U(_read32(buf, p + 12) * P2)), 13) * P1)
            p += 16
        h = U(U(U(_rotl32(v1, 1) + _rotl32(v2, 7)) + _rotl32(v3, 12)) + _rotl32(v4, 18))
    else:
        h = P5
    h = U(h + U(n))
    return _xxh32_tail(buf, p, end - p, h)


@njit(inline="always")
def xxh32_fixed(buf, start, n):
    """xxh32 of the ``n`` < 16 bytes from ``start`` (no stripe loop), inlined
    into the shingle kernels; called with a literal ``n`` it compiles to
    straight-line code."""
    return _xxh32_tail(buf, start, n, U(P5 + U(n)))


@njit(inline="always")
def xxh32_fixed_any(buf, start, n):
    """xxh32 of the ``n`` < 32 bytes from ``start``: :func:`xxh32_fixed`, or one 16-byte stripe
    and the tail (NeMo Curator's character 24-grams); with a literal ``n``, straight-line code."""
    if n < 16:
        return xxh32_fixed(buf, start, n)
    v1 = U(_rotl32(U(U(P1 + P2) + U(_read32(buf, start) * P2)), 13) * P1)
    v2 = U(_rotl32(U(P2 + U(_read32(buf, start + 4) * P2)), 13) * P1)
    v3 = U(_rotl32(U(_read32(buf, start + 8) * P2), 13) * P1)
    v4 = U(_rotl32(U(U(U(0) - P1) + U(_read32(buf, start + 12) * P2)), 13) * P1)
    h = U(U(U(_rotl32(v1, 1) + _rotl32(v2, 7)) + _rotl32(v3, 12)) + _rotl32(v4, 18))
    return _xxh32_tail(buf, start + 16, n - 16, U(h + U(n)))


C1 = U(0xCC9E2D51)
C2 = U(0x1B873593)


@njit(inline="always")
def fmix32(h):
    """MurmurHash3 32-bit finalizer (a bijection on uint32)."""
    h = U(h)
    h = U(h ^ U(h >> U(16)))
    h = U(h * U(0x85EBCA6B))
    h = U(h ^ U(h >> U(13)))
    h = U(h * U(0xC2B2AE35))
    return U(h ^ U(h >> U(16)))


@njit(cache=True)
def murmur3_32(buf, start, end):
    """MurmurHash3 x86_32 of buf[start:end] with seed 0 (uint32)."""
    n = end - start
    h = U(0)
    p = start
    while p + 4 <= end:
        k = U(_read32(buf, p) * C1)
        k = U(_rotl32(k, 15) * C2)
        h = U(h ^ k)
        h = U(U(_rotl32(h, 13) * U(5)) + U(0xE6546B64))
        p += 4
    rem = end - p
    if rem > 0:
        k = U(0)
        if rem >= 3:
            k = U(k ^ U(U(buf[p + 2]) << U(16)))
        if rem >= 2:
            k = U(k ^ U(U(buf[p + 1]) << U(8)))
        k = U(k ^ U(buf[p]))
        k = U(k * C1)
        k = U(_rotl32(k, 15) * C2)
        h = U(h ^ k)
    h = U(h ^ U(n))
    return fmix32(h)
