"""Text in -> OPH signature out, one document at a time in one compiled call.

The staged path (:func:`calib.sketches.shingles.chunk_sets`, then
:func:`calib.sketches.oph.signatures_permuted`) writes a chunk's normalized
bytes and every shingle's hash to memory and reads them back (about 5 MB for
a 1 MB chunk), in four kernel calls, each of which takes the GIL back when it
returns. Here each document is normalized, hashed and sketched while its
bytes and hashes are still in the core's cache (buffers of a few KB, reused
from one document to the next), read straight from the texts' own str
buffers (:func:`calib.sketches.encode.str_addresses`), in one kernel call a
chunk: less memory traffic for one thread, and for two threads fewer waits
for the GIL and for each other's memory.

It covers the common chunk, texts that are all compact ASCII ``str``
objects; :func:`signatures_into` says when a chunk is not one, and the
caller takes the staged path. Both give the same bits for any text (a test
holds them equal).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from calib.sketches import oph
from calib.sketches.encode import STR_DATA, ascii_str_bytes, ascii_str_lengths, ascii_table, map_ascii, str_addresses
from calib.sketches.shingles import _HASH_CODES, _doc_shingles, _hash_doc


@njit(cache=True, nogil=True)
def _signatures(address, str_type, data_at, tab, collapse, k, word, code, perm, a, b, key, out):
    """OPH rows of the str texts at ``address`` into ``out``; False (and nothing
    written) when one is not a compact ASCII str. ``perm`` is True, passed as an
    argument: a literal would compile a second copy of :func:`_hash_doc` (~30 s)."""
    length, ok = ascii_str_lengths(address, str_type)
    if not ok:
        return False
    text = np.empty(length.max() if len(length) else 0, dtype=np.uint8)
    hashes = np.empty(max(len(text), 1), dtype=np.uint32)  # a document has at most one shingle a byte
    filled = np.empty(out.shape[1], dtype=np.bool_)
    for d in range(len(address)):
        m = map_ascii(ascii_str_bytes(address[d], data_at, length[d]), tab, collapse, text)
        doc = text[:m]
        c = _doc_shingles(doc, k, word)
        _hash_doc(doc, k, word, code, perm, a, b, hashes[:c])
        oph._row(hashes[:c], a, b, key, out[d], filled, True)
    return True


def signatures_into(texts: list[str], rep, out: np.ndarray) -> bool:
    """Write the oph signatures of ``texts`` under ``rep`` (``scheme="oph"``,
    unweighted, a compiled hash) into ``out`` (C-contiguous uint32,
    ``(len(texts), rep.num_perm)``), as the staged path would, and return
    True; or return False, writing nothing, when the texts are not all compact
    ASCII str objects."""
    address = str_addresses(texts)
    if address is None or not len(texts):
        return False
    a, b, key = oph.parameters(rep.seed)
    tab, collapse = ascii_table(rep)
    return _signatures(address, id(str), STR_DATA, tab, collapse, rep.k, rep.shingle == "word",
                       _HASH_CODES[rep.hashfunc], True, np.uint32(a), np.uint32(b), np.uint64(key), out)
