"""Source text that snippets ship so they shingle exactly as calib does.

Never a hand copy: :func:`shingling_source` inserts the source of the very
functions calib runs (``calib.sketches.represent.punct_re``, ``normalize`` and
``shingle_strings``, read with :func:`inspect.getsource`) after a small
stand-in for the :class:`~calib.sketches.represent.Representation` fields they read.
``tests/test_targets.py`` holds the result equal to calib on arbitrary Unicode.
"""

from __future__ import annotations

import inspect
import textwrap
from functools import lru_cache

from calib.sketches import represent

# the hash of one shingle's UTF-8 bytes, as calib.sketches.shingles computes it (see calib.sketches.represent's docstring)
HASH_IMPORT = {"xxhash": "import xxhash", "mmh3": "import mmh3",
               "sha1": "from datasketch.hashfunc import sha1_hash32"}
HASH_EXPR = {"xxhash": "xxhash.xxh32_intdigest(b)  # xxHash32, seed 0",
             "mmh3": "mmh3.hash(b, 0, signed=False)  # MurmurHash3 x86_32, seed 0, unsigned",
             "sha1": "sha1_hash32(b)  # datasketch.hashfunc.sha1_hash32"}


@lru_cache(maxsize=1)
def _functions_source() -> str:
    """The three functions' source, read once a process (each export writes it for every target)."""
    return "\n\n".join(inspect.getsource(f).rstrip() for f in
                       (represent.punct_re, represent.normalize, represent.shingle_strings))


def shingling_source(rep) -> str:
    """Python source defining ``REP``, ``normalize(text, rep)``, ``shingle_strings(text, rep)``,
    ``shingles(text)`` (the set of UTF-8 shingles) and ``shingle_hash(b)`` for ``rep``.

    It needs ``from __future__ import annotations`` at the top of the module
    it goes into (the inserted functions annotate with ``Representation``).
    """
    fields = ", ".join(f"{name}={getattr(rep, name)!r}" for name in
                       ("lowercase", "nfkc", "strip_punct", "collapse_ws", "shingle", "k"))
    funcs = _functions_source()
    return f'''# --- calib's shingling: the source of calib.represent ({represent.__name__}), inserted verbatim ---
import re
import sys
import unicodedata
from functools import lru_cache
from types import SimpleNamespace
{HASH_IMPORT[rep.hashfunc]}

REP = SimpleNamespace({fields})


{funcs}


def shingles(text):
    """The set of UTF-8 encoded shingles of one text (calib.shingles encodes the same way)."""
    return {{s.encode("utf-8", "surrogatepass") for s in shingle_strings(text, REP)}}


def shingle_hash(b):
    return {HASH_EXPR[rep.hashfunc]}
# --- end of calib's shingling ---
'''


def indent(text: str, prefix: str = "    ") -> str:
    return textwrap.indent(text, prefix)
