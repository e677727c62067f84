"""Cost of the team's triggers (calib.review.team) on writing decisions to PostgreSQL.

    source .ci/postgres.sh && calib_pg_start
    PYTHONPATH=. .venv/bin/python -m bench.review.team_store [--out bench/results/team_store.md]
    calib_pg_stop

Two databases on the same server, one with a team (reviewer checked against session_user, the
server's clock, the adjudication rule, a per-person advisory lock) and one without. Timed: N
decisions in one transaction (``record_many``) into a store already holding N decisions, and 300
decisions one transaction each (``record``, what the app does per click), best of 3.
"""

from __future__ import annotations

from bench.record import RESULTS_DIR, best_of, write_result
import argparse
import os
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[2]


def _database(admin: str, name: str) -> str:
    import psycopg
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f'CREATE DATABASE "{name}"')
    p = urlsplit(admin)
    return urlunsplit((p.scheme, p.netloc, f"/{name}", "", ""))


def _rows(n: int, who: str, start: int) -> list[dict]:
    return [{"id_a": f"a{k:07d}", "id_b": f"b{k:07d}", "decision": "duplicate" if k % 3 else "not_duplicate",
             "reviewer": who} for k in range(start, start + n)]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(RESULTS_DIR / "team_store.md"))
    ap.add_argument("--n", type=int, default=20_000)
    a = ap.parse_args()
    import psycopg

    from calib.review.postgres import PostgresReviewStore
    from calib.review.team import TeamRoles, setup_team
    admin = os.environ["CALIB_TEST_POSTGRES"]
    who = urlsplit(admin).username
    tag = uuid.uuid4().hex[:6]
    with psycopg.connect(admin) as con:
        v = con.info.server_version
    lines = ["# Team triggers: cost of writing decisions", "",
             f"PostgreSQL {v // 10000}.{v % 100}, loopback, fsync off (the throwaway test "
             f"server of .ci/postgres.sh); {a.n:,} decisions already in the store; best of 3.", "",
             "| store | record_many, per decision | record (one transaction each), per decision |", "|---|---|---|"]
    names = []
    for team in (False, True):
        name = f"bench_{'team' if team else 'plain'}_{tag}"
        names.append(name)
        with PostgresReviewStore(_database(admin, name)) as store:
            roles = TeamRoles.with_prefix(name) if team else None
            if team:
                setup_team(store, roles)
            store.record_many(_rows(a.n, who, 0))
            start = [a.n]

            def many():
                store.record_many(_rows(a.n // 4, who, start[0]))
                start[0] += a.n // 4

            def single():
                for r in _rows(300, who, start[0]):
                    store.record(r["id_a"], r["id_b"], r["decision"], r["reviewer"])
                start[0] += 300
            t_many, t_one = best_of(many)[0] / (a.n // 4), best_of(single)[0] / 300
        lines.append(f"| {'team (triggers)' if team else 'no team'} | {t_many * 1e6:.0f} µs | {t_one * 1e6:.0f} µs |")
    with psycopg.connect(admin, autocommit=True) as con:
        for name in names:
            con.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        for g in ("reviewer", "adjudicator", "viewer")[::-1]:
            con.execute(f'DROP ROLE IF EXISTS "{names[1]}_{g}"')
    write_result(a.out, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
