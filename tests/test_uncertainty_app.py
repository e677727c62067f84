"""Honest uncertainty in the app: the Sample page's dominant-group warning, the
Sweep page's seeds, expected and macro columns (AppTest, no browser)."""

from __future__ import annotations

import pytest

from test_app import errors, start

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


@pytest.mark.slow
def test_sweep_page_with_seeds_shows_and_recommends_across_seeds():
    from calib.search.recommend import recommend
    from calib.search.seeds import across_seeds
    at = start()
    at.switch_page("pages/2_Sweep.py").run()
    at.multiselect(key="g_num_perms").set_value([64])
    at.radio(key="g_split_mode").set_value("a list")
    at.run()
    at.text_input(key="g_splits").set_value("16x4, 8x8")
    at.multiselect(key="g_thresholds").set_value([0.7, 0.9])  # 0.9 keeps false removals at 0 here
    at.text_input(key="g_seeds").set_value("1, 2")
    at.run()
    at.button(key="run_sweep").click().run()
    assert not at.exception and not errors(at), errors(at)
    per_seed = at.session_state["calib_results"]
    assert sorted(per_seed["seed"].unique()) == [1, 2]
    assert any("2 hash seeds (1,2)" in i.value for i in at.info)
    table = at.dataframe[0].value
    assert {"seeds", "pair_recall_min", "pair_recall_max", "expected_candidate_recall",
            "pair_recall_interval"} <= set(table.columns)
    assert len(table) == len(across_seeds(per_seed)) and (table["seeds"] == 2).all()
    best = recommend(across_seeds(per_seed), max_false_removal_rate=at.session_state["calib_budget"])
    assert f"{best['pair_recall']:.1%}" in [m.value for m in at.metric]


def test_sweep_page_rejects_bad_seeds():
    at = start()
    at.switch_page("pages/2_Sweep.py").run()
    at.text_input(key="g_seeds").set_value("1, x").run()
    assert any("integers" in e for e in errors(at)), errors(at)
