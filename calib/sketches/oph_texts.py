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

It covers every chunk of ``str`` texts: the ASCII ones (compact ``str``
objects) are read in place, the others normalized in Python first; a chunk
of other objects is refused (:func:`signatures_into`) and the caller takes
the staged path. Both give the same bits for any text (a test
holds them equal).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from calib.sketches import oph
from calib.sketches.encode import ascii_table, map_ascii, str_sources
from calib.sketches.str_objects import STR_DATA, ascii_str_bytes, ascii_str_lengths
from calib.sketches.shingles import _HASH_CODES, _doc_shingles, _hash_doc


@njit(cache=True, nogil=True)
def _signatures(address, wide, wide_off, str_type, data_at, tab, collapse, k, word, code, perm, a, b, key, out):
    """OPH rows of the texts into ``out``: the str objects at ``address``, and for
    address 0 the next normalized text of ``wide`` (offsets ``wide_off``); False
    (and nothing written) when an object is not a compact ASCII str. ``perm`` is
    True, passed as an argument: a literal would compile a second copy of
    :func:`_hash_doc` (~30 s)."""
    length, ok = ascii_str_lengths(address, str_type)
    if not ok:
        return False
    text = np.empty(length.max() if len(length) else 0, dtype=np.uint8)
    longest = len(text)
    for j in range(len(wide_off) - 1):
        longest = max(longest, wide_off[j + 1] - wide_off[j])
    hashes = np.empty(max(longest, 1), dtype=np.uint32)  # a document has at most one shingle a byte
    filled = np.empty(out.shape[1], dtype=np.bool_)
    j = 0
    for d in range(len(address)):
        if address[d] == 0:
            doc = wide[wide_off[j]:wide_off[j + 1]]
            j += 1
        else:
            doc = text[:map_ascii(ascii_str_bytes(address[d], data_at, length[d]), tab, collapse, text)]
        c = _doc_shingles(doc, k, word)
        _hash_doc(doc, k, word, code, perm, a, b, hashes[:c])
        oph._row(hashes[:c], a, b, key, out[d], filled, True)
    return True


def signatures_into(texts: list[str], rep, out: np.ndarray) -> bool:
    """Write the oph signatures of ``texts`` under ``rep`` (``scheme="oph"``,
    unweighted, a compiled hash) into ``out`` (C-contiguous uint32,
    ``(len(texts), rep.num_perm)``), as the staged path would, and return
    True; or return False, writing nothing, when an object is not a ``str``
    itself or an ASCII one is not compact. Texts that are not ASCII are normalized
    first, in Python (:func:`calib.sketches.encode.str_sources`)."""
    if not len(texts) or (sources := str_sources(texts, rep)) is None:
        return False
    a, b, key = oph.parameters(rep.seed)
    tab, collapse = ascii_table(rep)
    return _signatures(*sources, id(str), STR_DATA, tab, collapse, rep.k, rep.shingle == "word",
                       _HASH_CODES[rep.hashfunc], True, np.uint32(a), np.uint32(b), np.uint64(key), out)
