"""The Label page (AppTest): label a drawn set, progress per stratum, export, use it as the sample."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from appui.text import md
from calib.labeling.draw import draw, write_drawn
from calib.review.sqlite import ReviewStore

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture()
def drawn(monkeypatch, tmp_path):
    st.cache_data.clear()
    st.cache_resource.clear()
    monkeypatch.setenv("CALIB_REVIEW_DB", str(tmp_path / "reviews" / "r.sqlite"))
    monkeypatch.setenv("CALIB_ALLOWED_DIRS", str(tmp_path))
    folder = tmp_path / "drawn"
    write_drawn(folder, draw(ROOT / "data" / "sample" / "docs.jsonl", docs=300, pairs=40, seed=3))
    yield folder
    st.cache_data.clear()
    st.cache_resource.clear()


def test_label_page_records_decisions_and_exports(drawn, tmp_path):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    at.switch_page("pages/7_Label.py").run()
    at.text_input(key="label_folder_input").input(str(drawn)).run()
    at.text_input(key="label_reviewer").input("ann").run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    assert any("0 of 40 drawn pairs decided" in s.value for s in at.subheader)
    first = pd.read_csv(drawn / "pairs.csv", dtype=str, keep_default_na=False).iloc[0]
    at.button(key="label_duplicate").click().run()
    at.button(key="label_unsure").click().run()
    at.button(key="label_not_duplicate").click().run()
    assert any("3 of 40 drawn pairs decided" in s.value for s in at.subheader)
    with ReviewStore(tmp_path / "reviews" / "r.sqlite") as store:
        latest = store.latest()
        first_decision = store.all().iloc[0]
    assert len(latest) == 3 and set(latest["decision"]) == {"duplicate", "unsure", "not_duplicate"}
    assert {first["id_a"], first["id_b"]} == {first_decision["id_a"], first_decision["id_b"]}
    assert first_decision["decision"] == "duplicate"
    progress = at.table[0].value  # an HTML table: counts as text, headers in words
    counts = lambda col: progress[col].astype(str).str.split(" of ").str[0].str.replace(",", "").astype(int).sum()  # noqa: E731
    assert counts("duplicate") + counts("not duplicate") == 2 and counts("skipped (unsure)") == 1
    assert counts("drawn of the stratum's pairs") == 40
    at.button(key="label_write").click().run()
    assert not at.exception, at.exception
    wrote = next(s.value for s in at.success if s.value.startswith("Wrote"))
    # one escape (the page's), no literal backslash; the count agrees with its noun
    assert wrote == f"Wrote 2 labels into {md(drawn / 'pairs.csv')}.", wrote
    assert [b.label for b in at.button if b.key and b.key.startswith("label_") and b.key != "label_write"][:3] == [
        "Duplicate", "Not duplicate", "Skip"]  # the button shows its key itself: no "Duplicate (D) D"
    at.button(key="label_use").click().run()
    assert not at.exception, at.exception
    written = pd.read_csv(drawn / "pairs.csv", dtype=str, keep_default_na=False)
    assert (written["label"] != "").sum() == 2 and written.iloc[0]["label"] == "duplicate"
    s = at.session_state["calib_sample"]
    assert s.design is not None and len(s.pairs) == 2
    assert any("What to label next" in h.value for h in at.subheader)


def test_label_page_opens_what_calib_draw_wrote_into_work(monkeypatch, tmp_path):
    """The README's path: `calib draw ... --out work/drawn/` in the clone, then the Label
    page with the folder typed as `work/drawn`, without CALIB_ALLOWED_DIRS."""
    import appui.paths as paths
    from calib.cli import main
    st.cache_data.clear()
    st.cache_resource.clear()
    clone = tmp_path / "clone"
    clone.mkdir()
    monkeypatch.setattr(paths, "REPO_ROOT", clone)
    monkeypatch.setenv("CALIB_REVIEW_DB", str(tmp_path / "reviews" / "r.sqlite"))
    monkeypatch.delenv("CALIB_ALLOWED_DIRS", raising=False)
    monkeypatch.chdir(clone)
    assert main(["draw", "--corpus", str(ROOT / "data" / "corpus" / "docs.jsonl.gz"), "--out", "work/drawn/",
                 "--pairs", "30", "--seed", "0"]) == 0  # the corpus design, the default
    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
        at.switch_page("pages/7_Label.py").run()
        at.text_input(key="label_folder_input").input("work/drawn").run()
        assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
        assert any("0 of 30 drawn pairs decided" in s.value for s in at.subheader)
    finally:
        st.cache_data.clear()
        st.cache_resource.clear()


def label_session(drawn, name: str, share: float) -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    at.switch_page("pages/7_Label.py").run()
    at.text_input(key="label_folder_input").input(str(drawn)).run()
    at.text_input(key="label_reviewer").input(name)
    at.number_input(key="label_reviewer_overlap").set_value(share)
    at.run()
    assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
    return at


def current_pair(at) -> str:
    return next(m.value for m in at.markdown if "left for" in m.value).split(": ", 1)[1].split(", stratum")[0]


def test_label_page_needs_a_name_and_routes_the_overlap_to_a_second_reviewer(drawn, tmp_path):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    at.switch_page("pages/7_Label.py").run()
    at.text_input(key="label_folder_input").input(str(drawn)).run()
    assert not [b for b in at.button if b.key == "label_duplicate"]  # no name: nothing can be recorded
    assert any("reviewer name" in w.value for w in at.warning)
    ann = label_session(drawn, "ann", 1.0)
    first = current_pair(ann)
    ann.button(key="label_duplicate").click().run()
    bob = label_session(drawn, "bob", 1.0)
    assert current_pair(bob) == first  # share 1: every pair ann decided goes to bob too, blind
    assert any("Second review" in c.value for c in bob.caption)
    bob.button(key="label_not_duplicate").click().run()
    # contested: no label in the progress table (counted as skipped) until adjudicated
    assert bob.table[0].value[["duplicate", "not duplicate"]].astype(int).sum().sum() == 0
    assert any("1 contested pair(s) excluded" in c.value for c in bob.caption)
    cat = label_session(drawn, "cat", 1.0)
    assert current_pair(cat) != first  # two reviewers decided it: not offered to a third
