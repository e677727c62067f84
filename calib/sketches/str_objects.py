"""Texts read in CPython's own str buffers, from compiled kernels.

A CPython str is stored "compact": its header and then its characters, in one
block: one byte each for an ASCII str (after a PyASCIIObject), else one, two or
four bytes each (the str's "kind": the widest character decides) after a
PyCompactUnicodeObject. Reading them there from the kernel, with the GIL
released, skips the copies that ``"".join(texts).encode(...)`` makes while
holding it (about 5% of a chunk's time, the largest serial part of two threads'
work). The layout is checked on this interpreter at import, and each text's
header flags (compact, ascii, kind) by the kernel before any text is read;
anything else (another Python, a str subclass, a legacy string) takes the
copying path.
"""

from __future__ import annotations

import ctypes
import sys
import sysconfig

import numpy as np
from numba import carray, njit, types
from numba.extending import intrinsic

_TYPE_AT, _LENGTH_AT, _STATE_AT = 8, 16, 32  # PyASCIIObject: ob_refcnt, ob_type, length, hash, state (64-bit)
_COMPACT_ASCII = 0x60                         # state's compact (bit 5) and ascii (bit 6) flags
_COMPACT = 0x20
_KIND_SHIFT, _KIND_MASK = 2, 7                # state's kind: bytes a character (1, 2, 4)
ASCII = 0                                     # str_heads's kind of a compact ASCII str


def _str_layout() -> tuple[int, int]:
    """Offsets of the first character of a compact ASCII str and of any other
    compact str from its address (``id``), or (-1, -1) when this interpreter
    does not store strings as checked here."""
    if (sys.implementation.name != "cpython" or sys.maxsize != 2**63 - 1
            or sysconfig.get_config_var("Py_GIL_DISABLED")):
        return -1, -1
    data = sys.getsizeof("") - 1  # the header, then the characters and a NUL
    wide_data = sys.getsizeof("\xe9") - 2
    probe = "".join(["calib", " ascii probe"])
    probes = [("".join(["calib", " \xe9"]), "latin-1", 1), ("".join(["calib", " \u0436"]), "utf-16-le", 2),
              ("".join(["calib", " \U0001F600"]), "utf-32-le", 4)]
    word = lambda obj, at: ctypes.c_int64.from_address(id(obj) + at).value  # noqa: E731
    try:
        ok = (ctypes.string_at(id(probe) + data, len(probe)) == probe.encode("ascii")
              and word(probe, _TYPE_AT) == id(str) and word(probe, _LENGTH_AT) == len(probe)
              and word(probe, _STATE_AT) & _COMPACT_ASCII == _COMPACT_ASCII)
        for wide, codec, kind in probes:
            state = word(wide, _STATE_AT)
            ok = ok and (state & _COMPACT_ASCII == _COMPACT and (state >> _KIND_SHIFT) & _KIND_MASK == kind
                         and word(wide, _LENGTH_AT) == len(wide)
                         and ctypes.string_at(id(wide) + wide_data, kind * len(wide)) == wide.encode(codec))
    except (OSError, ValueError):
        return -1, -1
    return (data, wide_data) if ok else (-1, -1)


STR_DATA, WIDE_DATA = _str_layout()  # where a compact ASCII / other str's characters start, or -1


def _pointer_intrinsic(item, doc):
    """A numba intrinsic that turns an int64 address into a pointer to ``item``
    (for ``numba.carray``)."""
    def pointer(typingctx, address):
        sig = types.CPointer(item)(types.int64)

        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(signature.return_type))

        return sig, codegen

    pointer.__doc__ = doc
    return intrinsic(pointer)


_bytes_at = _pointer_intrinsic(types.uint8, "The int64 ``address`` as a pointer to uint8.")
_int64_at = _pointer_intrinsic(types.int64, "The int64 ``address`` as a pointer to int64.")
_uint16_at = _pointer_intrinsic(types.uint16, "The int64 ``address`` as a pointer to uint16.")
_uint32_at = _pointer_intrinsic(types.uint32, "The int64 ``address`` as a pointer to uint32.")


@njit(inline="always")
def str_heads(address, str_type):
    """(lengths, kinds, True) of the compact str objects at ``address`` (their
    ``id``; ``str_type`` is ``id(str)``): kind :data:`ASCII`, or 1, 2 or 4 bytes a
    character; or (so far, so far, False) at the first object that is not one.
    Only object headers are read: an object's type first, then (for a str) its
    flags. Address 0 is a text given in normalized bytes instead (see
    :func:`calib.sketches.encode.str_sources`): length 0 here."""
    n = len(address)
    length = np.zeros(n, dtype=np.int64)
    kind = np.zeros(n, dtype=np.int64)
    for d in range(n):
        if address[d] == 0:
            continue
        head = carray(_int64_at(address[d]), 5)  # ob_refcnt, ob_type, length, hash, state
        state = head[_STATE_AT // 8]
        if head[_TYPE_AT // 8] != str_type or state & _COMPACT == 0:
            return length, kind, False
        if state & _COMPACT_ASCII != _COMPACT_ASCII:
            kind[d] = (state >> _KIND_SHIFT) & _KIND_MASK
        length[d] = head[_LENGTH_AT // 8]
    return length, kind, True


@njit(inline="always")
def ascii_str_bytes(address, data_at, length):
    """The characters of the compact ASCII (or kind 1) str at ``address``, as a uint8 view of its own buffer."""
    return carray(_bytes_at(address + data_at), length)


@njit(inline="always")
def str_ucs2(address, data_at, length):
    """The characters of a compact str of kind 2, a uint16 view of its buffer."""
    return carray(_uint16_at(address + data_at), length)


@njit(inline="always")
def str_ucs4(address, data_at, length):
    """The characters of a compact str of kind 4, a uint32 view of its buffer."""
    return carray(_uint32_at(address + data_at), length)


def str_addresses(texts: list[str]) -> np.ndarray | None:
    """The texts' addresses (``id``) for the kernels that read compact str
    objects in place, or None when this interpreter's strings are not laid out
    as they expect. The caller holds ``texts`` (so every object stays alive
    while a kernel reads it; str objects do not move)."""
    if STR_DATA < 0:
        return None
    return np.fromiter(map(id, texts), dtype=np.int64, count=len(texts))
