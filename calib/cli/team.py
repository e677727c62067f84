"""``calib reviews team ...``: a team on a PostgreSQL review store, whose database vouches for who
wrote each decision (:mod:`calib.review.team`).

    calib reviews team init   --reviews URL [--prefix P] [--share S]   as the database's owner
    calib reviews team add    --reviews URL NAME --role reviewer|adjudicator|viewer [--password-stdin]
    calib reviews team remove --reviews URL NAME
    calib reviews team show   --reviews URL                            as anyone of the team
    calib reviews team share  --reviews URL SHARE                      as an adjudicator

``add`` prints the new person's ``~/.pgpass`` line on stdout (and nothing else there), the rest on
stderr: ``calib reviews team add ... > ana.pgpass`` hands it over without showing it.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager

from calib.base.errors import CliError


def add_parser(rs) -> None:
    """``calib reviews team``: its subcommands."""
    t = rs.add_parser("team", help="a team on a PostgreSQL review store: one login role per person, the database "
                                   "checks who writes and who may adjudicate (calib reviews team init -h)")
    ts = t.add_subparsers(dest="team_command", required=True)

    def sub(name: str, help: str, func):
        p = ts.add_parser(name, help=help, description=help)
        p.add_argument("--reviews", required=True, metavar="URL", help="the team's review store: postgresql://USER@HOST:PORT/DATABASE "
                                                                      "(the password from ~/.pgpass or PGPASSFILE)")
        p.set_defaults(func=func)
        return p
    i = sub("init", "as the database's owner (or a superuser): create the store's tables, the group roles "
                    "PREFIX_reviewer, PREFIX_adjudicator, PREFIX_viewer, their grants and the triggers that check "
                    "every decision", cmd_init)
    i.add_argument("--prefix", help="the group roles' prefix (default: the database's name)")
    i.add_argument("--share", type=float, default=None,
                   help="the overlap share: pairs a second reviewer decides blind (default 0.2; kept if already set)")
    a = sub("add", "give a person a login role of their own in one group (an existing role only joins it); "
                   "prints their ~/.pgpass line on stdout", cmd_add)
    a.add_argument("name", help="the person's role name (what every decision of theirs records)")
    a.add_argument("--role", required=True, choices=("reviewer", "adjudicator", "viewer"),
                   help="reviewer: decides pairs; adjudicator: also settles contested pairs and changes the team "
                        "settings; viewer: reads only")
    a.add_argument("--password-stdin", action="store_true",
                   help="read the password from the first line of stdin (default: a new random one)")
    r = sub("remove", "take a person out of the team's groups (the role and its decisions stay)", cmd_remove)
    r.add_argument("name")
    sub("show", "who you are connected as, the team's members and its overlap share", cmd_show)
    s = sub("share", "as an adjudicator: set the team's overlap share (every session reads it)", cmd_share)
    s.add_argument("share", type=float)


@contextmanager
def _opened(url: str, *, readonly: bool = False):
    """The team's store at ``url``, closed afterwards; a refusal (the server's or the checks') as one line."""
    from calib.review.postgres import PostgresReviewStore, is_postgres_url
    if not is_postgres_url(url):
        raise CliError(f"--reviews {url}: a team needs a PostgreSQL store (postgresql://...); a SQLite file is "
                       "one person's store")
    try:
        store = PostgresReviewStore(url, readonly=readonly)
    except ValueError as exc:
        raise CliError(f"--reviews {exc}")
    try:
        yield store
    except ValueError as exc:
        raise CliError(str(exc))
    finally:
        store.close()


def cmd_init(a) -> int:
    from calib.review.overlap import DEFAULT_SHARE
    from calib.review.team import TeamRoles, current_share, setup_team
    with _opened(a.reviews) as store:
        roles = TeamRoles.with_prefix(a.prefix or store._con.info.dbname)
        share = DEFAULT_SHARE if a.share is None else a.share
        others = setup_team(store, roles, share=share)
        if a.share is not None and abs(current_share(store) - a.share) > 1e-12:
            from calib.review.team import set_share
            set_share(store, a.share)
        share = current_share(store)
        print(f"team ready on {store.where}: groups {roles.reviewer}, {roles.adjudicator} (also reviews), "
              f"{roles.viewer} (reads); overlap share {share:g}. From now on the database records each decision's "
              "connected role as its reviewer, stamps it with the server's clock, and lets only adjudicators "
              "adjudicate, never a pair they reviewed. Add people: calib reviews team add --reviews URL NAME "
              "--role reviewer", file=sys.stderr)
        for role in others:
            print(f"note: role {role} may also insert decisions (an older shared set-up): its decisions now record "
                  f"'{role}' as the reviewer; revoke it once everyone has a role of their own: "
                  f"REVOKE INSERT ON decisions FROM {role}", file=sys.stderr)
    return 0


def cmd_add(a) -> int:
    from calib.review.team import add_member, person_url, pgpass_line
    from calib.review.team import check_role_name
    try:
        check_role_name(a.name, "person")
    except ValueError as exc:
        raise CliError(str(exc))
    password = _stdin_password() if a.password_stdin else None
    with _opened(a.reviews) as store:
        secret = add_member(store, a.name, a.role, password)
        url = person_url(store, a.name)
        if secret is None:
            print(f"{a.name} (an existing role, password unchanged) is now in the team's {a.role} group; "
                  f"they connect with {url}", file=sys.stderr)
            return 0
        print(pgpass_line(store, a.name, secret))
        print(f"{a.name} can log in now, in the team's {a.role} group; they connect with {url} and keep the line "
              "printed on stdout in their own ~/.pgpass (chmod 600) or the file PGPASSFILE names", file=sys.stderr)
    return 0


def _stdin_password() -> str:
    """The first line of stdin as a password: its line end (``\\n`` or ``\\r\\n``) cut, read as bytes so that a
    NUL, a control character or bytes that are not UTF-8 are refused by name, never cut or mangled."""
    stream = getattr(sys.stdin, "buffer", None)
    raw = stream.readline() if stream is not None else sys.stdin.readline().encode()
    raw = raw.removesuffix(b"\n").removesuffix(b"\r")
    if not raw:
        raise CliError("--password-stdin: the first line of stdin is empty")
    if b"\x00" in raw:
        raise CliError(f"--password-stdin: the password holds a NUL byte (at byte {raw.index(0)}), which "
                       "PostgreSQL cannot keep; nothing was changed")
    try:
        password = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliError(f"--password-stdin: the password is not valid UTF-8 (byte {exc.start}); nothing was changed") from None
    if not password.isprintable():
        raise CliError("--password-stdin: the password holds a control character (libpq and ~/.pgpass would not "
                       "keep it); nothing was changed")
    return password


def cmd_remove(a) -> int:
    from calib.review.team import remove_member
    with _opened(a.reviews) as store:
        remove_member(store, a.name)
        print(f"{a.name} is out of the team's groups: they can no longer read or write its decisions (the role "
              f"and its past decisions stay; DROP ROLE as a superuser to end the login)", file=sys.stderr)
    return 0


def _printable(name: str) -> str:
    """A role name on one line: quoted with escapes when it holds a control character (made by hand)."""
    return name if name.isprintable() else repr(name)


def cmd_show(a) -> int:
    from calib.review.team import members, settings_history, whoami
    with _opened(a.reviews, readonly=True) as store:
        me = whoami(store)
        if not me.vouched:
            raise CliError(f"{store.where}: no team in this review store (calib reviews team init, as its owner)")
        people = members(store)
        history = settings_history(store)
        print(f"connected as {_printable(me.user)} ({', '.join(me.groups) or 'in no group of the team'})")
        for group in ("reviewer", "adjudicator", "viewer"):
            print(f"{group}s ({me.team.of(group)}): {', '.join(map(_printable, people[group])) or '-'}")
        share, by, at = history[-1] if history else (me.share, "-", "-")
        print(f"overlap share: {share:g} (set by {by} at {at})")
    return 0


def cmd_share(a) -> int:
    from calib.review.team import set_share
    with _opened(a.reviews) as store:
        set_share(store, a.share)
        print(f"overlap share of the team on {store.where}: {a.share:g} (every session reads it)", file=sys.stderr)
    return 0
