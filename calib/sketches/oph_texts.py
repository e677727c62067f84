"""Text in -> OPH signature out, one document at a time in one compiled call.

The staged path (:func:`calib.sketches.shingles.chunk_sets`, then
:func:`calib.sketches.oph.signatures_permuted`) writes a chunk's normalized
bytes and every shingle's hash to memory and reads them back (about 5 MB for
a 1 MB chunk), in four kernel calls, each of which takes the GIL back when it
returns. Here each document is normalized, hashed and sketched while its
bytes and hashes are still in the core's cache (buffers of a few KB, reused
from one document to the next), read straight from the texts' own str
buffers (:mod:`calib.sketches.str_objects`), in one kernel call a
chunk: less memory traffic for one thread, and for two threads fewer waits
for the GIL and for each other's memory.

It covers every chunk of ``str`` texts, read in place whatever their
characters (:func:`calib.sketches.encode.normalize_str`); the few texts whose
NFKC depends on neighbouring code points are normalized in Python and sketched
by a second call. A chunk of other objects is refused (:func:`signatures_into`)
and the caller takes the staged path. Both give the same bits for any text (a
test holds them equal).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from calib.sketches import oph
from calib.sketches.encode import ascii_table, first_room, normalize_str, python_normalized, str_sources, \
    unicode_arguments
from calib.sketches.str_objects import STR_DATA, WIDE_DATA, str_heads
from calib.sketches.shingles import _HASH_CODES, _doc_shingles, _hash_doc
from calib.sketches.unicode_norm import CONTEXT, NO_ROOM


@njit(cache=True, nogil=True)
def _signatures(address, wide, wide_off, str_type, data_at, wide_at, tab, collapse, uni, opts, growth, k, word,
                code, perm, a, b, key, out):
    """OPH rows of the texts into ``out``: the str objects at ``address``, and for
    address 0 the next normalized text of ``wide`` (offsets ``wide_off``). Returns
    (context, True), ``context`` marking the rows left unwritten for Python
    (:data:`calib.sketches.unicode_norm.CONTEXT`); or (empty, False), nothing
    written, when an object is not a compact str. ``perm`` is True, passed as an
    argument: a literal would compile a second copy of :func:`_hash_doc` (~30 s)."""
    n = len(address)
    context = np.zeros(n, dtype=np.bool_)
    length, kind, ok = str_heads(address, str_type)
    if not ok:
        return context, False
    room = 1
    for d in range(n):
        room = max(room, first_room(kind[d], length[d]))
    for j in range(len(wide_off) - 1):
        room = max(room, wide_off[j + 1] - wide_off[j])
    text = np.empty(room, dtype=np.uint8)
    hashes = np.empty(room, dtype=np.uint32)  # a document has at most one shingle a byte
    filled = np.empty(out.shape[1], dtype=np.bool_)
    j = 0
    for d in range(n):
        if address[d] == 0:
            doc = wide[wide_off[j]:wide_off[j + 1]]
            j += 1
        else:
            m = normalize_str(address[d], kind[d], length[d], data_at, wide_at, tab, collapse, uni, opts, text)
            if m == NO_ROOM:
                text = np.empty(length[d] * growth + 8, dtype=np.uint8)
                m = normalize_str(address[d], kind[d], length[d], data_at, wide_at, tab, collapse, uni, opts, text)
            if m == CONTEXT:
                context[d] = True
                continue
            doc = text[:m]
        if len(doc) > len(hashes):
            hashes = np.empty(len(doc), dtype=np.uint32)
        c = _doc_shingles(doc, k, word)
        _hash_doc(doc, k, word, code, perm, a, b, hashes[:c])
        oph._row(hashes[:c], a, b, key, out[d], filled, True)
    return context, True


def signatures_into(texts: list[str], rep, out: np.ndarray) -> bool:
    """Write the oph signatures of ``texts`` under ``rep`` (``scheme="oph"``,
    unweighted, a compiled hash) into ``out`` (C-contiguous uint32,
    ``(len(texts), rep.num_perm)``), as the staged path would, and return
    True; or return False, writing nothing, when an object is not a ``str``
    itself or not compact."""
    if not len(texts) or (sources := str_sources(texts)) is None:
        return False
    address, wide = sources
    a, b, key = oph.parameters(rep.seed)
    fixed = (id(str), STR_DATA, WIDE_DATA, *ascii_table(rep), *unicode_arguments(rep, wide), rep.k,
             rep.shingle == "word", _HASH_CODES[rep.hashfunc], True, np.uint32(a), np.uint32(b), np.uint64(key))
    context, ok = _signatures(address, _NO_BYTES, _NO_OFFSETS, *fixed, out)
    if ok and context.any():
        at, normalized, offsets = python_normalized(texts, context, rep)
        rows = np.empty((len(at), out.shape[1]), dtype=out.dtype)
        _signatures(np.zeros(len(at), dtype=np.int64), normalized, offsets, *fixed, rows)
        out[at] = rows
    return ok


_NO_BYTES = np.empty(0, dtype=np.uint8)
_NO_OFFSETS = np.zeros(1, dtype=np.int64)
