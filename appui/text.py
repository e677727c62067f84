"""Data as inert text inside Streamlit's Markdown.

``st.markdown``, ``st.caption``, ``st.subheader``, ``st.error``... render
Markdown: a document id ``![x](http://host/x.png)`` would become an image the
browser fetches, ``# x`` a heading, ``[a](http://...)`` a link, ``:red[x]``
coloured text, ``$x$`` maths, ``http://x`` an autolink. :func:`md` backslash-escapes
every character that can start Markdown or HTML syntax (CommonMark allows an
escape before any ASCII punctuation, and an escaped character is always
literal): ``\\ ` * _ [ ] ( ) # + - ! < > | ~ $ { } :`` and ``@`` (the last two
break ``http://``, ``mailto:`` and e-mail autolinks), the dot of ``www.``
and of a leading ``1.`` (an ordered list); line breaks become spaces. Plain
punctuation (``. , ' " ; ? /``) stays as is, so messages read normally.
"""

from __future__ import annotations

import re

_SYNTAX = re.compile(r"([\\`*_\[\]()#+\-!<>|~${}:@])")
_BREAKS = re.compile(r"[\r\n\u0085\u2028\u2029]+")
_WWW = re.compile(r"(?i)(www)\.")
_LIST = re.compile(r"^(\s*\d+)([.)])")
# Streamlit's Markdown still autolinks ``http\://host`` on some pages (seen in
# Chromium on the Review page), so a scheme also gets an invisible word joiner
# (U+2060) before its colon: the text reads the same and is never a URL.
_SCHEME = re.compile(r"(?i)\b(https?|ftp|file|mailto)\\:")


def md(value) -> str:
    """``value`` as text that Markdown renders literally, on one line."""
    s = _SYNTAX.sub(r"\\\1", _BREAKS.sub(" ", str(value)))
    s = _SCHEME.sub("\\1\u2060\\\\:", s)
    return _LIST.sub(r"\1\\\2", _WWW.sub(r"\1\\.", s))


def count(n: int, noun: str, plural: str | None = None) -> str:
    """'1 decision', '1,234 decisions' (``plural`` for nouns not made with -s:
    count(2, "matrix", "matrices")): every count a page prints goes through here
    so that numbers carry thousands separators and nouns agree with them."""
    n = int(n)
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"


def agree(n: int, singular: str, plural: str) -> str:
    """The verb form for ``n`` things: agree(1, "contradicts", "contradict")."""
    return singular if int(n) == 1 else plural
