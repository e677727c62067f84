"""Data as inert text inside Streamlit's Markdown.

``st.markdown``, ``st.caption``, ``st.subheader``, ``st.error``... render
Markdown: a document id ``![x](http://host/x.png)`` would become an image the
browser fetches, ``# x`` a heading, ``[a](http://...)`` a link, ``:red[x]``
coloured text, ``$x$`` maths. :func:`md` backslash-escapes every ASCII
punctuation character (CommonMark allows an escape before any of them, and an
escaped character is always literal) and turns line breaks into spaces, so a
value from a file, a file name or an id shows exactly as typed.
"""

from __future__ import annotations

import re

_PUNCT = re.compile(r"([!-/:-@\[-`{-~])")
_BREAKS = re.compile(r"[\r\n\u0085\u2028\u2029]+")


def md(value) -> str:
    """``value`` as text that Markdown renders literally, on one line."""
    return _PUNCT.sub(r"\\\1", _BREAKS.sub(" ", str(value)))
