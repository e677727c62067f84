"""Side-by-side view of two documents with their shared shingles marked.

Both texts are shown after the representation's normalization (that is what
gets shingled). A unit (word for word shingles, character for char shingles)
is marked when it lies inside at least one shingle the other document also
has. Every piece of text is HTML-escaped, and the result goes through
``st.html`` (no Markdown pass).
"""

from __future__ import annotations

import html

from calib.sketches.represent import Representation, normalize, shingle_strings

MAX_UNITS = {"word": 4000, "char": 20000}
STYLE = ("<style>.calib-diff{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:0.82rem;"
         "line-height:1.5;white-space:pre-wrap;word-break:break-word;max-height:420px;overflow-y:auto;"
         "border:1px solid #ddd;border-radius:6px;padding:8px;background:#fafafa}"
         ".calib-diff mark{background:#ffe08a;padding:0;border-radius:2px}</style>")


def _units(text: str, rep: Representation) -> tuple[list[str], str]:
    norm = normalize(text, rep)
    if rep.shingle == "word":
        return (norm.split(" ") if norm else []), " "
    return list(norm), ""


def covered(units: list[str], joiner: str, k: int, other: set[str]) -> list[bool]:
    """Which units lie inside a shingle (window of k units) found in ``other``."""
    n = len(units)
    out = [False] * n
    if n == 0:
        return out
    if n < k:
        if joiner.join(units) in other:
            out = [True] * n
        return out
    for s in range(n - k + 1):
        if joiner.join(units[s:s + k]) in other:
            for u in range(s, s + k):
                out[u] = True
    return out


def shared_shingles(text_a: str, text_b: str, rep: Representation) -> tuple[int, int, int]:
    """(shingles of A, shingles of B, shared) as distinct strings."""
    a, b = set(shingle_strings(text_a, rep)), set(shingle_strings(text_b, rep))
    return len(a), len(b), len(a & b)


def marked_html(text: str, other_text: str, rep: Representation) -> str:
    units, joiner = _units(text, rep)
    other = set(shingle_strings(other_text, rep))
    limit = MAX_UNITS[rep.shingle]
    cut = len(units) > limit
    units = units[:limit]
    cov = covered(units, joiner, rep.k, other)
    parts, run, run_on = [], [], None
    for u, c in zip(units, cov):
        if run_on is not None and c != run_on:
            parts.append((run_on, joiner.join(run)))
            run = []
        run.append(u)
        run_on = c
    if run:
        parts.append((run_on, joiner.join(run)))
    body = joiner.join(f"<mark>{html.escape(t)}</mark>" if on else html.escape(t) for on, t in parts)
    if cut:
        body += html.escape(f" [... cut after {limit} {rep.shingle}s]")
    return f'{STYLE}<div class="calib-diff">{body}</div>'


def show(container, text: str, other_text: str, rep: Representation) -> None:
    """Draw :func:`marked_html` with ``st.html``: the (escaped) HTML is inserted
    as is, never parsed as Markdown, so a document's ``![x](http://...)``,
    ``[link](...)`` or ``# heading`` shows as text (unlike ``st.markdown``,
    which would turn them into an image fetch, a link and a heading)."""
    container.html(marked_html(text, other_text, rep))
