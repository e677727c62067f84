"""Security of a web app that reads files: uploads, typed paths, the review
store (a path, or a team's PostgreSQL URL whose password is never shown), the server settings. No browser; AppTest where the page matters."""

from __future__ import annotations

import os
import re
import socket
import stat
import tempfile
import tomllib
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from streamlit.testing.v1 import AppTest

from appui import loading, reviews
from appui.paths import PathNotAllowed, resolve_allowed
from appui.text import md
from calib.review.stores import open_review_store
from calib.review.postgres import redact_url
from calib.reading.samples import SampleError

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
DOCS_CSV = (b"id,text\n"
            b"a,the quick brown fox jumps over the lazy dog near the river bank\n"
            b"b,the quick brown fox jumps over the lazy dog near the river bank today\n")


@pytest.fixture(autouse=True)
def _own_home(monkeypatch, tmp_path):
    """A HOME of the test's own (on top of conftest's _clean: caches cleared, review store in tmp_path)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))


def files_under(root: Path) -> set[Path]:
    """Every file under ``root`` but caches, test artifacts and the top-level ``work/`` folder: the README's
    commands write there, and a user running one meanwhile must not fail these tests (the tests run the
    app from an empty temporary folder as well, where a relative write would land)."""
    return {p for p in root.rglob("*") if "__pycache__" not in p.parts and ".git" not in p.parts
            and "test-artifacts" not in p.parts and ".pytest_cache" not in p.parts
            and p.relative_to(root).parts[:1] != ("work",)}


# -- uploads ------------------------------------------------------------------

def test_upload_goes_to_a_private_temp_folder_and_is_removed(monkeypatch):
    seen = []
    real = loading.load_sample

    def spy(path, pairs=None, **kw):
        path = Path(path)
        folder = path.parent.parent
        seen.append((path, folder, stat.S_IMODE(folder.stat().st_mode), path.read_bytes()))
        return real(path, pairs, **kw)

    monkeypatch.setattr(loading, "load_sample", spy)
    before = files_under(ROOT)
    loaded = loading.load_upload(("../../../some/where/docs.csv", DOCS_CSV))
    assert loaded.sample.n == 2
    (path, folder, mode, data), = seen
    assert path.name == "docs.csv"  # the folder part of the name is dropped
    assert folder.parent == Path(tempfile.gettempdir()).resolve() or folder.parent == Path(tempfile.gettempdir())
    assert folder.name.startswith("calib-upload-") and not folder.resolve().is_relative_to(ROOT)
    assert mode == 0o700  # private to the server's user
    assert data == DOCS_CSV
    assert not folder.exists()  # removed once the sample is in memory
    assert files_under(ROOT) == before  # nothing written next to the code


@pytest.mark.parametrize("name", ["app.py", "docs.pkl", "docs.pickle", ".docs.csv", "docs.csv.py", "..", "",
                                  "docs.npy", "docs.sh"])
def test_upload_names_that_are_not_data_files_are_refused(name):
    with pytest.raises(SampleError):
        loading.load_upload((name, DOCS_CSV))


def test_uploaded_code_is_data_never_executed(tmp_path):
    marker = tmp_path / "executed"
    code = f"__import__('pathlib').Path({str(marker)!r}).write_text('x')"
    docs = ("id,text\n"
            f'a,"{code}"\n'
            f'b,"{code} and more words here"\n').encode()
    loaded = loading.load_upload(("docs.csv", docs))
    assert loaded.sample.texts[0] == code
    jsonl = f'{{"id": "a", "text": "{code}"}}\n{{"id": "b", "text": "exec(open(\'x\').read())"}}\n'.encode()
    assert loading.load_upload(("docs.jsonl", jsonl)).sample.n == 2
    assert not marker.exists()


def test_no_eval_exec_or_pickle_in_the_app_or_the_loaders():
    files = [*ROOT.glob("appui/*.py"), *ROOT.glob("pages/*.py"), ROOT / "app.py", ROOT / "home.py",
             *ROOT.glob("calib/reading/*.py")]
    bad = re.compile(r"\b(eval|exec)\s*\(|\bpickle\b|read_pickle|allow_pickle\s*=\s*True|subprocess|os\.system")
    hits = [f"{f.relative_to(ROOT)}:{n}: {line.strip()}" for f in files
            for n, line in enumerate(f.read_text().splitlines(), 1) if bad.search(line)]
    assert not hits, hits


# -- typed paths --------------------------------------------------------------

@pytest.mark.parametrize("text", ["/etc", "/etc/passwd", "../../etc/passwd", "~", "~/.ssh", "data/../..",
                                  "data/sample/../../README.md", "data/../calib", "/proc/self/environ"])
def test_typed_paths_outside_are_refused(text):
    with pytest.raises(PathNotAllowed, match="outside the allowed folders"):
        resolve_allowed(text)


def test_typed_path_edge_cases(tmp_path, monkeypatch):
    allowed, sibling, outside = tmp_path / "allowed", tmp_path / "allowed-evil", tmp_path / "outside"
    for d in (allowed / "s", sibling, outside / "deep"):
        d.mkdir(parents=True)
    (outside / "docs.csv").write_bytes(DOCS_CSV)
    (sibling / "docs.csv").write_bytes(DOCS_CSV)
    monkeypatch.setenv("CALIB_ALLOWED_DIRS", str(allowed))
    with pytest.raises(PathNotAllowed, match="NUL"):
        resolve_allowed("data/sample\x00/etc/passwd")
    with pytest.raises(PathNotAllowed, match="Type a path"):
        resolve_allowed("   ")
    with pytest.raises(PathNotAllowed, match="outside"):  # a name prefix is not a parent folder
        resolve_allowed(str(sibling))
    (allowed / "file-link.csv").symlink_to(outside / "docs.csv")  # a file link pointing outside
    with pytest.raises(PathNotAllowed, match="outside"):
        resolve_allowed(str(allowed / "file-link.csv"))
    # a folder inside whose docs.csv is a link to a file outside: the loader would read it
    (allowed / "s" / "docs.csv").symlink_to(outside / "docs.csv")
    with pytest.raises(PathNotAllowed, match="is a link to"):
        resolve_allowed(str(allowed / "s"))
    with pytest.raises(PathNotAllowed, match="is a link to"):
        loading.load_path(str(allowed / "s"))
    # ... also deeper down (the Clough loader reads subfolders)
    (allowed / "c" / "sub").mkdir(parents=True)
    (allowed / "c" / "sub" / "escape").symlink_to(outside / "deep", target_is_directory=True)
    with pytest.raises(PathNotAllowed, match="is a link to"):
        resolve_allowed(str(allowed / "c"))
    # links that stay inside the sample folder are fine
    (allowed / "ok").mkdir()
    (allowed / "ok" / "real.csv").write_bytes(DOCS_CSV)
    (allowed / "ok" / "docs.csv").symlink_to(allowed / "ok" / "real.csv")
    assert loading.load_path(str(allowed / "ok")).sample.n == 2
    # ... a link to elsewhere in the allowed folders is not: the loader reads only inside the sample folder
    (allowed / "ok2").mkdir()
    (allowed / "real.csv").write_bytes(DOCS_CSV)
    (allowed / "ok2" / "docs.csv").symlink_to(allowed / "real.csv")
    with pytest.raises(SampleError, match="outside the sample folder"):
        loading.load_path(str(allowed / "ok2"))
    # ... and so is a hard link, which no path check can see through
    (allowed / "hl").mkdir()
    os.link(outside / "docs.csv", allowed / "hl" / "docs.csv")
    with pytest.raises(SampleError, match="hard links"):
        loading.load_path(str(allowed / "hl"))
    # an allowed folder given through a link is allowed by where it really is
    (tmp_path / "link-to-allowed").symlink_to(allowed, target_is_directory=True)
    monkeypatch.setenv("CALIB_ALLOWED_DIRS", str(tmp_path / "link-to-allowed"))
    assert resolve_allowed(str(allowed / "ok")) == (allowed / "ok").resolve()


def _clone_beside(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A fake clone in ``tmp_path/parent`` (appui.paths reads REPO_ROOT) and the
    ``../shared/corpora`` folder next to it, holding a docs.csv."""
    import appui.paths as paths
    parent = tmp_path / "parent"
    clone, corpora = parent / "clone", parent / "shared" / "corpora"
    (clone / "data").mkdir(parents=True)
    corpora.mkdir(parents=True)
    (corpora / "docs.csv").write_bytes(DOCS_CSV)
    for d in (parent, parent / "shared", corpora):
        d.chmod(0o755)
    monkeypatch.setattr(paths, "REPO_ROOT", clone)
    return clone, corpora


def test_shared_corpora_root_is_allowed_only_when_nobody_else_could_have_made_it(tmp_path, monkeypatch):
    import appui.paths as paths
    clone, corpora = _clone_beside(tmp_path, monkeypatch)
    assert corpora.resolve() in paths.allowed_roots()
    assert resolve_allowed("../shared/corpora/docs.csv") == (corpora / "docs.csv").resolve()
    # a clone in a world-writable folder (/tmp): anyone could have created shared/corpora beside it
    (corpora.parent).chmod(0o777)
    assert corpora.resolve() not in paths.allowed_roots()
    with pytest.raises(PathNotAllowed, match=r"outside the allowed folders.*corpora is not allowed: .*shared is "
                                             r"writable by every user"):
        resolve_allowed("../shared/corpora/docs.csv")
    corpora.parent.chmod(0o755)
    corpora.chmod(0o777)
    with pytest.raises(PathNotAllowed, match="corpora is writable by every user"):
        resolve_allowed("../shared/corpora/docs.csv")
    corpora.chmod(0o755)
    if os.getuid() == 0:  # only root can give a folder to another user
        os.chown(corpora, 65534, 65534)
        assert "belongs to another user (uid 65534)" in paths.trust_problem(corpora)
        with pytest.raises(PathNotAllowed, match="belongs to another user"):
            resolve_allowed("../shared/corpora/docs.csv")
        os.chown(corpora, 0, 0)
    assert paths.trust_problem(corpora) is None
    # absent: not a root, and the refusal does not mention it
    (corpora / "docs.csv").unlink()
    corpora.rmdir()
    assert paths.trust_problem(corpora) == "does not exist"
    assert [p.name for p in paths.allowed_roots()] == ["data"]


def test_work_folder_of_the_clone_is_allowed_once_it_exists(tmp_path, monkeypatch):
    """The README's commands write into work/ (git-ignored): what calib draw writes there
    opens on the Label page without CALIB_ALLOWED_DIRS."""
    import appui.paths as paths
    clone, _ = _clone_beside(tmp_path, monkeypatch)
    with pytest.raises(PathNotAllowed, match="outside the allowed folders"):
        resolve_allowed("work/drawn")
    (clone / "work" / "drawn").mkdir(parents=True)
    (clone / "work").chmod(0o755)
    assert resolve_allowed("work/drawn") == (clone / "work" / "drawn").resolve()
    (clone / "work").chmod(0o777)
    with pytest.raises(PathNotAllowed, match="work is writable by every user"):
        resolve_allowed("work/drawn")


def test_work_folder_is_git_ignored():
    assert "/work/" in (ROOT / ".gitignore").read_text().splitlines()


def test_typed_path_on_the_page_shows_the_refusal():
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/1_Sample.py").run()
    at.radio(key="sample_source_choice").set_value("Path on this machine").run()
    for text in ("../../etc/passwd", "data/sample\x00x"):
        at.text_input(key="sample_path").set_value(text).run()
        at.button(key="load_path").click().run()
        assert not at.exception
        assert at.error and ("outside the allowed folders" in at.error[0].value or "NUL" in at.error[0].value)
    assert at.session_state["calib_sample"].n == 2396


# -- the review database --------------------------------------------------------

TEXT_ELEMENTS = ("caption", "markdown", "error", "warning", "info", "success", "text_input", "subheader", "title")


def test_review_db_path_is_restricted(tmp_path, monkeypatch):
    home = Path(os.environ["HOME"])
    env_dir = Path(os.environ["CALIB_REVIEW_DB"]).parent
    assert reviews.check_db_path("~/.calib/reviews.sqlite") == (home / ".calib" / "reviews.sqlite").resolve()
    assert reviews.check_db_path(str(env_dir / "other.db")) == (env_dir / "other.db").resolve()
    assert reviews.check_db_path("data/reviews.sqlite") == (ROOT / "data" / "reviews.sqlite").resolve()
    for text in ("/etc/reviews.sqlite", "/tmp/x.sqlite", "~/reviews.sqlite", "~/.calib/../x.sqlite",
                 "../../x.sqlite", str(tmp_path / "elsewhere" / "r.db")):
        with pytest.raises(ValueError, match="outside the folders"):
            reviews.check_db_path(text)
    for text in ("~/.calib/r.txt", "~/.calib/app.py", ""):
        with pytest.raises(ValueError):
            reviews.check_db_path(text)
    with pytest.raises(ValueError, match="NUL"):
        reviews.check_db_path("~/.calib/r\x00.sqlite")
    # symlinks: a .sqlite link inside ~/.calib to a file outside, and a linked folder
    (home / ".calib").mkdir()
    (tmp_path / "secret.sqlite").write_bytes(b"")
    (home / ".calib" / "link.sqlite").symlink_to(tmp_path / "secret.sqlite")
    with pytest.raises(ValueError, match="outside the folders"):
        reviews.check_db_path("~/.calib/link.sqlite")
    (home / ".calib" / "dir").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(ValueError, match="outside the folders"):
        reviews.check_db_path("~/.calib/dir/new.sqlite")
    (tmp_path / "notes.txt").write_text("x")
    (home / ".calib" / "notes.sqlite").symlink_to(tmp_path / "notes.txt")
    with pytest.raises(ValueError, match="not a .sqlite"):
        reviews.check_db_path("~/.calib/notes.sqlite")
    # CALIB_ALLOWED_DIRS folders are allowed too
    monkeypatch.setenv("CALIB_ALLOWED_DIRS", str(tmp_path / "elsewhere"))
    assert reviews.check_db_path(str(tmp_path / "elsewhere" / "r.db")) == (tmp_path / "elsewhere" / "r.db").resolve()


def shown_text(at: AppTest) -> str:
    """Every text the page shows in the elements a URL could appear in (values, labels, help)."""
    out = []
    for kind in TEXT_ELEMENTS:
        for el in getattr(at, kind):
            out += [str(getattr(el, attr, "") or "") for attr in ("value", "label", "help", "body")]
    return "\n".join(out)


def test_box_checks_urls_and_keeps_path_checks(monkeypatch, tmp_path):
    url = "postgresql://ana@db.example:5433/calib_reviews?sslmode=require"
    assert reviews.check_db_target(url) == url  # not resolved as a path, not changed
    assert reviews.check_db_target(" postgres://db.example/r ") == "postgres://db.example/r"
    with pytest.raises(ValueError, match="leave the password out") as err:
        reviews.check_db_target("postgresql://ana:hunter2@db.example/r")
    assert "hunter2" not in str(err.value) and "postgresql://ana:***@db.example/r" in str(err.value)
    with pytest.raises(ValueError, match="leave the password out") as err:
        reviews.check_db_target("postgresql://db.example/r?user=ana&password=hunter2")
    assert "hunter2" not in str(err.value)
    for bad, needle in (("postgresql://db.example/r?passfile=/etc/shadow", "'passfile' is not accepted"),
                        ("postgresql://db.example/r?sslkey=/root/.ssh/id_rsa", "'sslkey' is not accepted"),
                        ("postgresql:///r?host=/var/run/postgresql", "Unix-socket folder"),
                        ("postgresql:///r", "name the server"),
                        ("postgresql://db.example:abc/r", "not a usable URL")):
        with pytest.raises(ValueError, match=needle):
            reviews.check_db_target(bad)
    # paths: the folder rules still hold
    with pytest.raises(ValueError, match="outside the folders"):
        reviews.check_db_target("/etc/reviews.sqlite")
    assert reviews.check_db_target("~/.calib/r.sqlite") == str((tmp_path / "home" / ".calib" / "r.sqlite").resolve())
    # the URL set by whoever starts the app may carry a password: shown as ***, given back whole
    secret = "postgresql://ana:s3cret@db.example/r?passfile=/srv/pgpass"
    monkeypatch.setenv("CALIB_REVIEW_DB", secret)
    assert reviews.shown(reviews.default_db()) == "postgresql://ana:***@db.example/r"
    assert reviews.check_db_target(reviews.shown(reviews.default_db())) == secret


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_review_page_on_postgres_never_shows_the_password(postgres_db, monkeypatch):
    password = urlsplit(postgres_db).password
    monkeypatch.setenv("CALIB_REVIEW_DB", postgres_db)
    at = AppTest.from_file(APP, default_timeout=90).run()
    at.switch_page("pages/5_Review.py").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.text_input(key="review_db_input").value == redact_url(postgres_db)
    at.text_input(key="reviewer_input").set_value("ana").run()
    at.button(key="decide_not_duplicate").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(md(redact_url(postgres_db)) in c.value for c in at.caption)  # markdown-escaped
    assert password not in shown_text(at)
    with open_review_store(postgres_db, readonly=True) as store:
        rows = store.all_decisions()
    assert rows[["decision", "reviewer", "kind"]].values.tolist() == [["not_duplicate", "ana", "review"]]
    # the Export page reads the review status from the same store
    at.switch_page("pages/6_Export.py").run()
    assert not at.exception and not at.error
    assert not [w.value for w in at.warning if "review status" in w.value]
    assert password not in shown_text(at)
    # a server that does not answer: one error naming the URL, still without the password
    user = urlsplit(postgres_db).username
    at.switch_page("pages/5_Review.py").run()
    dead = f"postgresql://{user}@127.0.0.1:{_free_port()}/calib?connect_timeout=5"
    at.text_input(key="review_db_input").set_value(dead).run()
    assert not at.exception
    assert [e.value for e in at.error] and "Cannot open the review store" in at.error[0].value
    assert password not in shown_text(at)


def test_review_page_refuses_a_db_outside_and_creates_nothing(tmp_path):
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/5_Review.py").run()
    target = tmp_path / "elsewhere" / "evil.sqlite"
    at.text_input(key="review_db_input").set_value(str(target)).run()
    assert not at.exception
    assert at.error and "outside the folders" in at.error[0].value
    assert not target.exists() and not target.parent.exists()


def test_export_page_writes_no_file(tmp_path, monkeypatch):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # a relative write (manifest.csv, config.json, work/...) would land here
    before = files_under(ROOT)
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page("pages/6_Export.py").run()
    assert not at.exception and not at.error
    at.download_button(key="download_manifest_parquet").click().run()
    assert files_under(ROOT) == before
    assert not any(cwd.iterdir())
    assert not Path(os.environ["CALIB_REVIEW_DB"]).exists()  # read only if it exists, never created


# -- server settings ------------------------------------------------------------

def test_streamlit_config_binds_loopback_without_usage_stats():
    cfg = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert cfg["server"]["address"] == "127.0.0.1"
    assert cfg["browser"]["gatherUsageStats"] is False
    assert 1 <= cfg["server"]["maxUploadSize"] <= 1000
    assert cfg["server"].get("enableXsrfProtection", True) is True
