"""The line-by-line boilerplate counting, finding and stripping that calib.sketches.boilerplate ran before
its distinct-line table (calib.sketches.line_table): the reference the table is held equal to, kept as it was
(each line split, looked up in a per-call memo and hashed, once per normalization and share)."""

import numpy as np

from calib.sketches import line_table
from calib.sketches.boilerplate import LineCounts, Stoplist
from calib.sketches.line_table import normalize_line


def _line_hash(line):
    return line_table._line_hash(line)  # looked up on each call: a test may weaken the hash to force collisions


def normalized_lines(text, rep, memo):
    out = []
    for line in text.splitlines():
        done = memo.get(line)
        if done is None:
            done = memo[line] = normalize_line(line, rep)
        out.append(done)
    return out


def count_lines(texts, rep, memo):
    per_doc, n = [], 0
    for text in texts:
        n += 1
        hs = {_line_hash(x) for x in normalized_lines(text, rep, memo) if x}
        if hs:
            per_doc.append(np.fromiter(hs, dtype=np.uint64, count=len(hs)))
    if not per_doc:
        return LineCounts(n, np.zeros(0, np.uint64), np.zeros(0, np.int64))
    hashes, counts = np.unique(np.concatenate(per_doc), return_counts=True)
    return LineCounts(n, hashes, counts.astype(np.int64))


def stoplist(texts, rep, share, memo):
    texts = list(texts)
    counts = count_lines(texts, rep, memo)
    if share == 0.0:
        return Stoplist(share, counts.n_docs, (), ())
    hot = counts.hashes[(counts.counts > counts.limit(share)) & (counts.counts >= 2)]
    if not len(hot):
        return Stoplist(share, counts.n_docs, (), ())
    hot_set, found = set(hot.tolist()), {}
    for text in texts:  # the text of each stoplist hash
        for x in normalized_lines(text, rep, memo):
            if x and x not in found and _line_hash(x) in hot_set:
                found[x] = _line_hash(x)
        if len(found) == len(hot_set):
            break
    lines = sorted(found)
    where = np.searchsorted(counts.hashes, np.asarray([found[x] for x in lines], dtype=np.uint64))
    return Stoplist(share, counts.n_docs, tuple(lines), tuple(int(c) for c in counts.counts[where]))


def strip_all(stop, texts, rep, memo):
    if not stop.lines:
        return list(texts)
    out = []
    for text in texts:
        kept = []
        for line in text.splitlines(keepends=True):
            norm = memo.get(line)
            if norm is None:
                norm = memo[line] = normalize_line(line, rep)
            if norm not in stop._set:
                kept.append(line)
        out.append("".join(kept))
    return out


def stripped(corpus, texts, rep, share):
    """What Workspace.stripped returned: the stoplist counted on ``corpus``, ``texts`` stripped by it,
    one memo shared by the counting, the finding and the stripping (as the workspace shared it)."""
    memo = {}
    st = stoplist(corpus, rep, share, memo)
    return st, strip_all(st, texts, rep, memo)
