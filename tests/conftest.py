"""Test-wide settings.

Under CI (``CI`` set, as ``.ci/run`` runs there) hypothesis is derandomized:
each property test sees the same examples on every run, so a landing never
depends on a lucky draw. Locally it explores new examples each run.
"""

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# The workspace's disk store (calib.search.stored) is off in tests: each test computes what it checks, and
# nothing is written to ~/.cache; tests/test_disk_cache.py turns it on in a folder of its own.
os.environ["CALIB_CACHE"] = "off"

# Tests that share a resource too costly to make twice run on one pytest-xdist worker (.ci/run: -n 2
# --dist loadgroup). xdist hands tests out one at a time, so without a group the tests of one module
# alternate between the workers and each worker builds the module's fixtures. An entry names a fixture
# of this file, or "file::fixture" a module's own; the group is named after the entry.
SHARED_ON_ONE_WORKER = (
    "spark_cluster",                   # a Spark standalone cluster
    "app_server",                      # streamlit run: its Workspace keeps the shipped sample's sketches
    "shipped_search",                  # calib sweep's default search on the shipped sample
    "test_spark_apply.py::spark",      # a local Spark session (a JVM)
    "test_target_search.py::hard",     # two default searches on 210 documents (the picks), sketches cached
    "test_refactor_checksums.py::ws",  # a sweep of the shipped sample
    "test_corpus_draw.py::world",      # a 100,000-document corpus built and scanned
    "test_export.py::ws",              # the shipped sample's default configuration evaluated
    "test_atomic_sets.py::results",    # two applies on 400 documents
    "test_e2e_team.py::server",        # a server of its own, on a PostgreSQL store
    "test_seed_robust.py::steep",      # a Workspace whose sketches the two searches share
    "test_search_watch.py::ws",        # the default search on a planted sample, watched (run once)
)
# The longest single test starts first, so that it never starts late and ends alone (.ci/run keeps this
# order: --no-loadscope-reorder; xdist would otherwise hand out every group before any single test).
FIRST = ("tests/test_readme.py::test_readme_and_docs_run_in_order",)


def _shares(item, entry: str) -> bool:
    module, _, fixture = entry.rpartition("::")
    return fixture in getattr(item, "fixturenames", ()) and (not module or item.path.name == module)


def _group_for_xdist(config, item, group: str) -> None:
    """On an xdist worker under --dist loadgroup: the test's id ends with "@group", which is how the scheduler
    keeps a group on one worker. pytest-xdist 3.8 writes the suffix to ``item._nodeid``, which pytest 9 no
    longer reads (its id is ``item._id``), so without this every group was silently spread over both workers."""
    if not getattr(config.option, "loadgroup", False) or "@" in item.nodeid or not hasattr(item, "_id"):
        return
    from _pytest.nodeid import coerce_node_id
    item._id = coerce_node_id(f"{item.nodeid}@{group}")


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks
def pytest_collection_modifyitems(config, items):
    """FIRST, then slow tests, then the rest (a stable sort: the order within each kind is kept), so that
    with two workers the long ones start at once and short ones fill in at the end, rather than one long
    test starting last while the other worker idles."""
    for item in items:
        for entry in SHARED_ON_ONE_WORKER:
            if _shares(item, entry):
                item.add_marker(pytest.mark.xdist_group(entry))
                _group_for_xdist(config, item, entry)
                break
    items.sort(key=lambda item: (item.nodeid not in FIRST, item.get_closest_marker("slow") is None))


@pytest.fixture(scope="session")
def sample():
    """The shipped labeled sample (data/sample), loaded once per run; tests must not modify it."""
    from calib.reading.samples import load_sample
    return load_sample(Path(__file__).resolve().parents[1] / "data" / "sample")


@pytest.fixture(scope="session")
def shipped_search(tmp_path_factory) -> tuple[Path, str]:
    """``calib sweep --sample data/sample --out results.parquet`` (the default search, as the README runs it),
    run once in this process for the tests that read its outcome: the results table's path and what the
    command wrote to stderr. Tests must not modify the table."""
    import contextlib
    import io

    from calib.cli import main
    out = tmp_path_factory.mktemp("shipped_search") / "results.parquet"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(["sweep", "--sample", str(Path(__file__).resolve().parents[1] / "data" / "sample"),
                     "--out", str(out)])
    assert code == 0, err.getvalue()[-3000:]
    return out, err.getvalue()


# ------------------------------------------------------- the app in-process (streamlit.testing AppTest)

# the files whose tests drive the app in this process: each test starts and ends with Streamlit's caches empty
APP_TEST_FILES = frozenset({
    "test_app.py", "test_app_boilerplate.py", "test_app_containment.py", "test_app_readability.py",
    "test_app_search.py", "test_app_security.py", "test_app_weighted.py", "test_figures.py", "test_team_app.py",
    "test_uncertainty_app.py"})


@pytest.fixture(autouse=True)
def _clean(request):
    """In the files of APP_TEST_FILES: ``st.cache_data`` and ``st.cache_resource`` cleared before and after
    each test, the review store a file of the test's own (CALIB_REVIEW_DB in its tmp_path) and
    CALIB_ALLOWED_DIRS unset. Other files are left alone (no tmp_path made for them)."""
    if request.path.name not in APP_TEST_FILES:
        yield
        return
    import streamlit as st
    monkeypatch, tmp_path = request.getfixturevalue("monkeypatch"), request.getfixturevalue("tmp_path")
    st.cache_data.clear()
    st.cache_resource.clear()
    monkeypatch.setenv("CALIB_REVIEW_DB", str(tmp_path / "reviews" / "r.sqlite"))
    monkeypatch.delenv("CALIB_ALLOWED_DIRS", raising=False)
    yield
    st.cache_data.clear()
    st.cache_resource.clear()


# ------------------------------------------------------- the app in a real browser

@pytest.fixture(scope="session")
def unlabeled(tmp_path_factory) -> Path:
    """A folder with 300 of the shipped documents and no label at all (no pairs, no groups)."""
    from calib.reading.samples import load_sample
    folder = tmp_path_factory.mktemp("unlabeled")
    load_sample(Path(__file__).resolve().parents[1] / "data" / "sample").docs[["id", "text"]].head(300).to_json(
        folder / "docs.jsonl", orient="records", lines=True)
    return folder


@pytest.fixture(scope="session")
def app_server(tmp_path_factory, unlabeled):
    """``streamlit run app.py`` (tests/_app_server.py), one for the run: the browser tests that sweep the
    shipped sample share its Workspace, so the second sweep reuses the first one's sketches. Its review
    store is its own SQLite file; ``unlabeled`` is an allowed folder."""
    if not Path("/usr/bin/chromium").exists():
        if os.environ.get("CALIB_REQUIRE_BROWSER"):
            pytest.fail("CALIB_REQUIRE_BROWSER is set but /usr/bin/chromium is missing")
        pytest.skip("/usr/bin/chromium is missing (apt-get install chromium)")
    from _app_server import serve
    with serve(tmp_path_factory.mktemp("app_server"), allowed=[unlabeled]) as url:
        yield url


# ------------------------------------------------------- PostgreSQL (the shared review store)

def _postgres_unavailable(url: str | None) -> str | None:
    if not url:
        return "CALIB_TEST_POSTGRES is unset (.ci/run starts a server: source .ci/postgres.sh && calib_pg_start)"
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (pip install -e '.[postgres]')"
    try:
        psycopg.connect(url, connect_timeout=10).close()
    except psycopg.Error as exc:
        from calib.review.postgres import redact_url
        return f"CALIB_TEST_POSTGRES={redact_url(url)} does not answer ({str(exc).splitlines()[0]})"
    return None


@pytest.fixture(scope="session")
def postgres_admin() -> str:
    """CALIB_TEST_POSTGRES: a URL of a role that may create databases and roles. Tests skip
    without it, and fail when CALIB_REQUIRE_POSTGRES=1 (as .ci/run sets) and it does not answer."""
    url = os.environ.get("CALIB_TEST_POSTGRES")
    why = _postgres_unavailable(url)
    if why:
        if os.environ.get("CALIB_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"CALIB_REQUIRE_POSTGRES=1 but {why}")
        pytest.skip(why)
    return url


def with_database(url: str, name: str) -> str:
    """``url`` naming database ``name`` instead of its own."""
    from urllib.parse import urlsplit, urlunsplit
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


@pytest.fixture
def postgres_db(postgres_admin):
    """A fresh, empty database for one test (its URL, as the admin role); dropped afterwards.
    Its collation is ICU's en-US, as on many real servers, where 'a' sorts before 'B' (the
    test server's own C locale sorts by code point, as Python and SQLite do)."""
    import uuid

    import psycopg
    name = f"calib_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_admin, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE \'en-US\'')
    yield with_database(postgres_admin, name)
    with psycopg.connect(postgres_admin, autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# ------------------------------------------------------- Spark: a standalone cluster on loopback

@pytest.fixture(scope="session")
def spark_cluster():
    """A Spark standalone master and two workers (1 core, 1 GB each) on 127.0.0.1 as separate processes, whose
    Python has no calib (tests/_spark_cluster.py); one for the whole run, stopped by PID at its end. Skipped
    without pyspark or Java unless CALIB_REQUIRE_SPARK is set (.ci/run sets it)."""
    from calib.production.engines.spark import io as spark_io
    try:
        spark_io.check_environment()
    except spark_io.SparkApplyError as exc:
        if os.environ.get("CALIB_REQUIRE_SPARK"):
            pytest.fail(f"CALIB_REQUIRE_SPARK is set but {exc}")
        pytest.skip(str(exc))
    from _spark_cluster import StandaloneCluster
    with StandaloneCluster(workers=2, cores=1, memory="1g") as cluster:
        yield cluster
