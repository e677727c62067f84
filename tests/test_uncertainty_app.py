"""Issue 10 in the app: the Sample page's dominant-group warning, the
Sweep page's seeds, expected and macro columns (AppTest, no browser)."""

from __future__ import annotations

import pytest

from test_app import _clean, errors, start  # noqa: F401  (_clean: autouse cache/env reset)

DOCS = ("id,text,group\n" + "".join(f"a{k},the same licence text with a small change number {k},A\n" for k in range(6))
        + "b0,another text entirely about sparse matrices,B\nb1,another text entirely about sparse matrices too,B\n"
        + "c0,a third unrelated document on rivers,C\n").encode()


def _upload(at, docs: bytes):
    at.switch_page("pages/1_Sample.py").run()
    at.radio(key="sample_source_choice").set_value("Upload files").run()
    at.file_uploader(key="upload_docs").set_value(("docs.csv", docs, "text/csv"))
    at.run()
    at.button(key="load_upload").click().run()
    assert not at.exception and not errors(at), errors(at)
    return at


def test_sample_page_warns_when_one_group_holds_most_pairs():
    at = _upload(start(), DOCS)
    warn = [w.value for w in at.warning if "holds" in w.value]
    assert warn and "One duplicate group (6 documents) holds 94% of the duplicate pairs (15)" in warn[0]


def test_sample_page_has_no_group_warning_for_balanced_groups():
    balanced = DOCS.replace(b",A\n", b",X\n", 3)  # a0-a2 in X, a3-a5 in A: 3 + 3 + 1 pairs, none above half
    at = _upload(start(), balanced)
    assert not [w.value for w in at.warning if "holds" in w.value]
    at = start()  # the shipped sample: pairs only, no shared documents
    at.switch_page("pages/1_Sample.py").run()
    assert not [w.value for w in at.warning if "holds" in w.value]
