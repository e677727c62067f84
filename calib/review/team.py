"""A team on the PostgreSQL review store: the database, not the app, vouches for who wrote a decision.

:func:`setup_team` (``calib reviews team init``, run once by the database's owner or a superuser)
creates three group roles (NOLOGIN) and their grants, and installs the rules as triggers:

- ``<prefix>_viewer``: reads decisions and the team settings;
- ``<prefix>_reviewer`` (also a viewer): inserts decisions, on every column but ``id``, so the
  row id always comes from the identity column (``OVERRIDING SYSTEM VALUE`` needs ``id``);
- ``<prefix>_adjudicator`` (also a reviewer): may write ``kind = 'adjudication'`` and change the
  team settings.

``prefix`` defaults to the database's name, so two review stores on one server have two teams
and the names never clash with the hand-made ``calib_reviewer`` / ``calib_viewer`` of older set-ups.
Each person then gets a LOGIN role of their own in one group (:func:`add_member`); the trigger on
``decisions`` (BEFORE INSERT, for every role, the owner included) then

1. refuses a ``reviewer`` other than ``session_user`` (the login role; ``SET ROLE`` does not change
   it), which is also the column's default;
2. stamps ``created_at`` with the server's clock (``clock_timestamp()`` in UTC), whatever the client sent;
3. refuses ``kind = 'adjudication'`` from anyone not a member of the adjudicator group, and on a
   pair that person reviewed; and a review on a pair that person adjudicated (an adjudicator is a
   third person);
4. refuses a person's decision beyond :data:`MAX_DECISIONS_PER_PERSON` (or their notes beyond
   :data:`MAX_NOTES_PER_PERSON` characters together), and texts longer than the
   schema's bounds (:data:`calib.review.schema.MAX_NOTE`, :data:`calib.review.schema.MAX_ID`): one
   reviewer cannot make every teammate's reads slow or large.

Before the checks of 3 the trigger locks the person's row of ``team_people`` (``FOR UPDATE``), a
table no role but its owner may read, lock or write (the triggers run as its owner: SECURITY
DEFINER; ``session_user`` stays the person). That row lock makes the check and the insert one step
against the same person's other connections, and no teammate can take it (an advisory lock, which
any role may take, let one reviewer block another's decisions for good). A statement-level trigger
then adds the statement's decisions and note characters to that row (the counts of 4). It holds at
every isolation level: at READ COMMITTED the checks' fresh reads see what the person's previous
transaction committed while this one waited; at REPEATABLE READ and SERIALIZABLE, whose snapshot
could predate that commit, locking a row another transaction changed (counted) after the snapshot is
a serialization failure, so the insert is refused (retry it) rather than checked against a stale view. A wait on that row (the same
person's other open transaction) is bounded: :data:`LOCK_WAIT_S` seconds, then a one-line refusal.

The trigger functions name every table with its schema and run with ``search_path = pg_catalog,
pg_temp`` (pg_temp last), so a temporary table cannot stand in for the team table. The team
settings are the table ``team_settings``: append-only, the latest row in force (the overlap share,
who set it, when by the server's clock); only adjudicators (and the owner) may add one. The
adjudicators are the adjudicator group's members, read from the catalog by every session.
A superuser counts as a member of every role (PostgreSQL's rule); the owner can still disable a
trigger, so the owner's password stays with whoever runs the server.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from calib.review.overlap import DEFAULT_SHARE, check_share
from calib.review.postgres import PostgresReviewStore
from calib.review.schema import MAX_ID, MAX_NOTE, MAX_SHORT

GROUPS = ("reviewer", "adjudicator", "viewer")
MAX_DECISIONS_PER_PERSON = 100_000  # decisions one person may write in a team store (hours of reading per 1,000)
MAX_NOTES_PER_PERSON = 10_000_000  # characters of notes one person may write in a team store, all notes together
LOCK_WAIT_S = 10  # how long a decision waits for the same person's other open transaction
MAX_NAME_BYTES = 63  # PostgreSQL's NAMEDATALEN - 1: a longer role name is cut, not refused, by the server
_INSERTABLE = ("id_a", "id_b", "decision", "reviewer", "note", "config_fingerprint", "created_at", "kind")
_SERVER_NOW = """to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"+00:00"')"""


@dataclass(frozen=True)
class TeamRoles:
    """The three group roles of a team."""
    reviewer: str
    adjudicator: str
    viewer: str

    @classmethod
    def with_prefix(cls, prefix: str) -> "TeamRoles":
        return cls(*(check_role_name(f"{prefix}_{g}", "--prefix") for g in GROUPS))

    def of(self, group: str) -> str:
        if group not in GROUPS:
            raise ValueError(f"group must be one of {', '.join(GROUPS)}, got {group!r}")
        return getattr(self, group)


@dataclass(frozen=True)
class Identity:
    """Who a session is, as the database says: the login role, whether the store has a team (else the
    name is only what the client typed), the groups the role belongs to, and the team's overlap share."""
    user: str
    team: TeamRoles | None
    groups: tuple[str, ...]
    share: float

    @property
    def vouched(self) -> bool:
        return self.team is not None

    def may(self, group: str) -> bool:
        return group in self.groups


def check_role_name(name: str, what: str = "name") -> str:
    """A role name PostgreSQL keeps as it is: non-empty, no NUL, at most 63 bytes (else ValueError)."""
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        raise ValueError(f"{what}: a role name must be non-empty, without spaces around it, got {name!r}")
    if "\x00" in name:
        raise ValueError(f"{what}: a role name cannot contain a NUL character")
    if not name.isprintable():  # a newline breaks the printed ~/.pgpass line and every listing in two
        bad = next(c for c in name if not c.isprintable())
        raise ValueError(f"{what}: {name!r}: a role name cannot contain a control character ({bad!r})")
    if len(name.encode()) > MAX_NAME_BYTES:
        raise ValueError(f"{what}: {name[:20]!r}...: a role name is at most {MAX_NAME_BYTES} bytes "
                         f"(this one is {len(name.encode())})")
    return name


def _sql():
    from psycopg import sql
    return sql


def _schema_sql(store: PostgresReviewStore, roles: TeamRoles, share: float) -> list:
    """The statements of :func:`setup_team`, in order (psycopg ``sql`` objects: names quoted)."""
    sql = _sql()
    con = store._con
    schema = con.execute("SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                         "WHERE c.oid = 'decisions'::regclass").fetchone()[0]
    s = sql.Identifier(schema)
    database = sql.Identifier(con.info.dbname)
    rv, ad, vw = (sql.Identifier(r) for r in (roles.reviewer, roles.adjudicator, roles.viewer))

    def q(text: str, **kw):
        return sql.SQL(text).format(s=s, db=database, rv=rv, ad=ad, vw=vw, **kw)
    out = [q("CREATE TABLE IF NOT EXISTS {s}.team (single BOOLEAN PRIMARY KEY DEFAULT true CHECK (single), "
             "reviewer_role TEXT NOT NULL, adjudicator_role TEXT NOT NULL, viewer_role TEXT NOT NULL)"),
           q("INSERT INTO {s}.team (reviewer_role, adjudicator_role, viewer_role) VALUES ({r}, {a}, {v}) "
             "ON CONFLICT (single) DO UPDATE SET reviewer_role = EXCLUDED.reviewer_role, "
             "adjudicator_role = EXCLUDED.adjudicator_role, viewer_role = EXCLUDED.viewer_role",
             r=sql.Literal(roles.reviewer), a=sql.Literal(roles.adjudicator), v=sql.Literal(roles.viewer)),
           q("CREATE TABLE IF NOT EXISTS {s}.team_settings (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
             "overlap_share DOUBLE PRECISION NOT NULL CHECK (overlap_share >= 0 AND overlap_share <= 1), "
             "changed_by TEXT NOT NULL DEFAULT session_user, changed_at TEXT NOT NULL DEFAULT " + _SERVER_NOW + ")"),
           q("ALTER TABLE {s}.decisions ALTER COLUMN reviewer SET DEFAULT session_user"),
           # one row per person: the row the rule locks, and their decision count; no grant to any role
           q("CREATE TABLE IF NOT EXISTS {s}.team_people (person TEXT PRIMARY KEY, decisions BIGINT NOT NULL, "
             "notes BIGINT NOT NULL)"),
           q("REVOKE ALL ON {s}.team_people FROM PUBLIC"),
           q("INSERT INTO {s}.team_people AS p (person, decisions, notes) SELECT d.reviewer, count(*), "
             "coalesce(sum(length(d.note)), 0) FROM {s}.decisions d GROUP BY d.reviewer "
             "ON CONFLICT (person) DO UPDATE SET decisions = EXCLUDED.decisions, notes = EXCLUDED.notes"),
           q("""CREATE OR REPLACE FUNCTION {s}.decisions_vouched() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp SET lock_timeout = {wait} AS $$
DECLARE adjudicators TEXT;
BEGIN
    IF NEW.reviewer IS DISTINCT FROM session_user::text THEN
        RAISE EXCEPTION 'reviewer % is not the connected role %: a decision records who wrote it',
            quote_literal(NEW.reviewer), quote_literal(session_user::text) USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF length(NEW.note) > {max_note} OR length(NEW.id_a) > {max_id} OR length(NEW.id_b) > {max_id}
            OR length(NEW.config_fingerprint) > {max_short} THEN
        RAISE EXCEPTION 'a decision holds at most % characters of note, % of a document id and % of a fingerprint',
            {max_note}, {max_id}, {max_short} USING ERRCODE = 'string_data_right_truncation';
    END IF;
    NEW.created_at := """ + _SERVER_NOW + """;
    BEGIN  -- the person's row, locked to the end of the transaction (see the module's docstring)
        PERFORM 1 FROM {s}.team_people p WHERE p.person = session_user::text FOR UPDATE;
        IF NOT FOUND THEN
            INSERT INTO {s}.team_people (person, decisions, notes) VALUES (session_user::text, 0, 0)
                ON CONFLICT (person) DO NOTHING;
            PERFORM 1 FROM {s}.team_people p WHERE p.person = session_user::text FOR UPDATE;
        END IF;
    EXCEPTION
        WHEN serialization_failure THEN
            RAISE EXCEPTION '% wrote a decision in another transaction since this one began: retry it (the rule '
                'is checked against what that transaction wrote)', session_user USING ERRCODE = 'serialization_failure';
        WHEN lock_not_available THEN
            RAISE EXCEPTION 'another open transaction of % is writing a decision (for over % s): commit or end it, '
                'then retry', session_user, {wait_s} USING ERRCODE = 'lock_not_available';
    END;
    IF NEW.kind = 'adjudication' THEN
        SELECT t.adjudicator_role INTO adjudicators FROM {s}.team t;
        IF adjudicators IS NULL OR NOT pg_has_role(session_user, adjudicators, 'MEMBER') THEN
            RAISE EXCEPTION '% may not adjudicate: only members of % may', session_user, adjudicators
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF EXISTS (SELECT 1 FROM {s}.decisions d WHERE d.id_a = NEW.id_a AND d.id_b IS NOT DISTINCT FROM NEW.id_b
                   AND d.kind = 'review' AND d.reviewer = session_user::text) THEN
            RAISE EXCEPTION '% reviewed % / %: another person adjudicates it', session_user, NEW.id_a, NEW.id_b
                USING ERRCODE = 'insufficient_privilege';
        END IF;
    ELSIF EXISTS (SELECT 1 FROM {s}.decisions d WHERE d.id_a = NEW.id_a AND d.id_b IS NOT DISTINCT FROM NEW.id_b
                  AND d.kind = 'adjudication' AND d.reviewer = session_user::text) THEN
        RAISE EXCEPTION '% adjudicated % / %: an adjudicator does not review the pair too', session_user,
            NEW.id_a, NEW.id_b USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$""", wait=sql.Literal(f"{LOCK_WAIT_S}s"), wait_s=sql.Literal(LOCK_WAIT_S), max_note=sql.Literal(MAX_NOTE),
             max_id=sql.Literal(MAX_ID), max_short=sql.Literal(MAX_SHORT)),
           q("DROP TRIGGER IF EXISTS decisions_vouched ON {s}.decisions"),
           q("CREATE TRIGGER decisions_vouched BEFORE INSERT ON {s}.decisions FOR EACH ROW "
             "EXECUTE FUNCTION {s}.decisions_vouched()"),
           # the counts, once per statement (a row updated once per decision would grow a chain of versions
           # within one transaction that every next decision walks: 50,000 in one statement took over 10 min)
           q("""CREATE OR REPLACE FUNCTION {s}.decisions_counted() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE n BIGINT; chars BIGINT; written BIGINT; noted BIGINT;
BEGIN
    SELECT count(*), coalesce(sum(length(i.note)), 0) INTO n, chars FROM inserted i;
    IF n > 0 THEN
        UPDATE {s}.team_people p SET decisions = p.decisions + n, notes = p.notes + chars
            WHERE p.person = session_user::text RETURNING p.decisions, p.notes INTO written, noted;
        IF written > {max_decisions} OR noted > {max_notes} THEN
            RAISE EXCEPTION '% would have % decisions and % characters of notes; one person may have at most % '
                'and %', session_user, written, noted, {max_decisions}, {max_notes}
                USING ERRCODE = 'program_limit_exceeded';
        END IF;
    END IF;
    RETURN NULL;
END $$""", max_decisions=sql.Literal(MAX_DECISIONS_PER_PERSON), max_notes=sql.Literal(MAX_NOTES_PER_PERSON)),
           q("DROP TRIGGER IF EXISTS decisions_counted ON {s}.decisions"),
           q("CREATE TRIGGER decisions_counted AFTER INSERT ON {s}.decisions REFERENCING NEW TABLE AS inserted "
             "FOR EACH STATEMENT EXECUTE FUNCTION {s}.decisions_counted()"),
           q("""CREATE OR REPLACE FUNCTION {s}.team_settings_vouched() RETURNS trigger LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp AS $$
DECLARE adjudicators TEXT;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        RAISE EXCEPTION 'team settings are append-only: add a row instead' USING ERRCODE = 'insufficient_privilege';
    END IF;
    SELECT t.adjudicator_role INTO adjudicators FROM {s}.team t;
    IF NOT (coalesce(pg_has_role(session_user, adjudicators, 'MEMBER'), false) OR pg_has_role(session_user,
            (SELECT c.relowner FROM pg_class c WHERE c.oid = TG_RELID), 'MEMBER')) THEN
        RAISE EXCEPTION '% may not change the team settings: only members of % may', session_user, adjudicators
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    NEW.changed_by := session_user::text;
    NEW.changed_at := """ + _SERVER_NOW + """;
    RETURN NEW;
END $$"""),
           q("DROP TRIGGER IF EXISTS team_settings_vouched ON {s}.team_settings"),
           q("CREATE TRIGGER team_settings_vouched BEFORE INSERT OR UPDATE OR DELETE ON {s}.team_settings "
             "FOR EACH ROW EXECUTE FUNCTION {s}.team_settings_vouched()"),
           q("DROP TRIGGER IF EXISTS team_settings_no_truncate ON {s}.team_settings"),
           q("CREATE TRIGGER team_settings_no_truncate BEFORE TRUNCATE ON {s}.team_settings "
             "FOR EACH STATEMENT EXECUTE FUNCTION {s}.team_settings_vouched()"),
           q("REVOKE ALL ON {s}.team, {s}.team_settings FROM PUBLIC")]
    for role, inherits in ((roles.viewer, None), (roles.reviewer, roles.viewer), (roles.adjudicator, roles.reviewer)):
        exists = con.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone()
        if not exists:
            out.append(sql.SQL("CREATE ROLE {} NOLOGIN").format(sql.Identifier(role)))
        if inherits:
            out.append(sql.SQL("GRANT {} TO {}").format(sql.Identifier(inherits), sql.Identifier(role)))
    out += [q("GRANT CONNECT ON DATABASE {db} TO {vw}"),
            q("GRANT USAGE ON SCHEMA {s} TO {vw}"),
            q("GRANT SELECT ON {s}.decisions, {s}.schema_version, {s}.team, {s}.team_settings TO {vw}"),
            q("GRANT INSERT ({cols}) ON {s}.decisions TO {rv}",
              cols=sql.SQL(", ").join(sql.Identifier(c) for c in _INSERTABLE)),
            q("GRANT INSERT (overlap_share) ON {s}.team_settings TO {ad}")]
    settings = con.execute("SELECT to_regclass('team_settings') IS NOT NULL").fetchone()[0]
    if not settings or con.execute("SELECT count(*) FROM team_settings").fetchone()[0] == 0:
        out.append(q("INSERT INTO {s}.team_settings (overlap_share) VALUES ({share})", share=sql.Literal(share)))
    return out


def _admin(store: PostgresReviewStore, run, what: str):
    import psycopg
    try:
        return run()
    except psycopg.Error as exc:
        raise ValueError(f"{store.where}: {store._one_line(exc)}; {what}") from None


def setup_team(store: PostgresReviewStore, roles: TeamRoles, *, share: float = DEFAULT_SHARE) -> list[str]:
    """Create the store's tables if missing, the team's group roles, grants, triggers and settings
    (one transaction: all or nothing); running it again changes nothing but the role names.
    Returns the roles other than the team's that may also insert decisions (the hand-made roles
    of an older set-up: they now write under their own name only; revoke them)."""
    check_share(share)
    store.create()

    def run():
        with store._con.transaction():
            for stmt in _schema_sql(store, roles, share):
                store._con.execute(stmt)
        return [r[0] for r in store._con.execute(
            "SELECT r.rolname FROM pg_roles r WHERE NOT r.rolsuper AND r.rolname NOT LIKE 'pg\\_%%' "
            "AND has_any_column_privilege(r.oid, 'decisions', 'INSERT') AND NOT pg_has_role(r.oid, %s, 'MEMBER') "
            "AND NOT pg_has_role(r.oid, (SELECT relowner FROM pg_class WHERE oid = 'decisions'::regclass), 'MEMBER') "
            "ORDER BY 1", (roles.reviewer,))]
    return _admin(store, run, "the team was not set up")


def team_roles(store) -> TeamRoles | None:
    """The team's group roles, or None for a store without a team (SQLite, or PostgreSQL before
    :func:`setup_team`)."""
    if not isinstance(store, PostgresReviewStore) or not store.exists:
        return None
    if store._rows("SELECT to_regclass('team') IS NOT NULL", ())[0][0] is not True:
        return None
    rows = store._rows("SELECT reviewer_role, adjudicator_role, viewer_role FROM team", ())
    return TeamRoles(*rows[0]) if rows else None


def _require_team(store) -> TeamRoles:
    roles = team_roles(store)
    if roles is None:
        raise ValueError(f"{store.where}: no team in this review store: set one up first "
                         "(calib reviews team init --reviews URL, as the database's owner)")
    return roles


def whoami(store) -> Identity | None:
    """Who this session is, as the database says (None for a SQLite store: there the name is typed)."""
    if not isinstance(store, PostgresReviewStore):
        return None
    user = store._checked(lambda: store._con.execute("SELECT session_user").fetchone()[0])
    roles = team_roles(store)
    if roles is None:
        return Identity(user, None, (), DEFAULT_SHARE)
    groups = store._rows("SELECT g FROM unnest(%s::text[], %s::text[]) AS x(g, r) "
                         "WHERE pg_has_role(session_user, r, 'MEMBER')",
                         (list(GROUPS), [roles.of(g) for g in GROUPS]))
    return Identity(user, roles, tuple(r[0] for r in groups), current_share(store))


def current_share(store) -> float:
    """The team's overlap share: the latest row of ``team_settings`` (the default before any)."""
    rows = store._rows("SELECT overlap_share FROM team_settings ORDER BY id DESC LIMIT 1", ())
    return float(rows[0][0]) if rows else DEFAULT_SHARE


def settings_history(store) -> list[tuple[float, str, str]]:
    """Every change of the team's overlap share, oldest first: (share, changed_by, changed_at)."""
    _require_team(store)
    return [(float(a), b, c) for a, b, c in
            store._rows("SELECT overlap_share, changed_by, changed_at FROM team_settings ORDER BY id", ())]


def set_share(store, share: float) -> None:
    """Record a new overlap share for the whole team (the database refuses anyone but an adjudicator)."""
    _require_team(store)
    share = check_share(share)
    with store._transaction() as cur:
        cur.execute("INSERT INTO team_settings (overlap_share) VALUES (%s)", (share,))


def members(store) -> dict[str, list[str]]:
    """The login roles directly in each group (the adjudicators under 'adjudicator', and so on)."""
    roles = _require_team(store)
    return {g: [r[0] for r in store._rows(
        "SELECT m.rolname FROM pg_auth_members a JOIN pg_roles m ON m.oid = a.member "
        "JOIN pg_roles g ON g.oid = a.roleid WHERE g.rolname = %s AND m.rolcanlogin ORDER BY 1", (roles.of(g),))]
        for g in GROUPS}


def add_member(store: PostgresReviewStore, name: str, group: str, password: str | None = None) -> str | None:
    """Give person ``name`` a LOGIN role in ``group`` (created with ``password``, a new random one when
    None; the server gets it as a SCRAM verifier, never in clear). An existing role only joins the
    group (its password unchanged); an existing role that cannot log in or has members (a group, perhaps
    another team's: its members would get this team's rights) and PostgreSQL's own ``pg_`` roles are
    refused. Returns the password set, or None for an existing role."""
    sql = _sql()
    roles = _require_team(store)
    check_role_name(name, "person")
    group_role = roles.of(group)
    if name in (roles.reviewer, roles.adjudicator, roles.viewer):
        raise ValueError(f"person {name!r} is one of the team's group roles: choose a person's own name")
    if name.startswith("pg_"):
        raise ValueError(f"person {name!r}: pg_ names are PostgreSQL's own roles, not a person's")
    con = store._con

    def run():
        exists = con.execute("SELECT r.rolcanlogin, EXISTS (SELECT 1 FROM pg_auth_members a WHERE a.roleid = r.oid) "
                             "FROM pg_roles r WHERE r.rolname = %s", (name,)).fetchone()
        if exists and (not exists[0] or exists[1]):
            raise ValueError(f"{store.where}: {name} is an existing role that " +
                             ("cannot log in (a group role, perhaps another team's)" if not exists[0] else
                              "other roles are members of (a group)") +
                             ": its members would get this team's rights; add each person by name")
        with con.transaction():
            if exists:
                con.execute(sql.SQL("GRANT {} TO {}").format(sql.Identifier(group_role), sql.Identifier(name)))
                return None
            secret = password or secrets.token_urlsafe(18)
            verifier = con.pgconn.encrypt_password(secret.encode(), name.encode(), b"scram-sha-256").decode()
            con.execute(sql.SQL("CREATE ROLE {} LOGIN PASSWORD {} IN ROLE {}").format(
                sql.Identifier(name), sql.Literal(verifier), sql.Identifier(group_role)))
            return secret
    return _admin(store, run, f"{name} was not added")


def remove_member(store: PostgresReviewStore, name: str) -> None:
    """Take ``name`` out of every group of the team (the role and its past decisions stay)."""
    sql = _sql()
    roles = _require_team(store)
    check_role_name(name, "person")

    def run():
        with store._con.transaction():
            store._con.execute(sql.SQL("REVOKE {}, {}, {} FROM {}").format(
                *(sql.Identifier(r) for r in (roles.reviewer, roles.adjudicator, roles.viewer)), sql.Identifier(name)))
    _admin(store, run, f"{name} was not removed")


def pgpass_line(store: PostgresReviewStore, user: str, password: str) -> str:
    """A ``~/.pgpass`` line (host:port:database:user:password, ``:`` and ``\\`` escaped) for this server."""
    info = store._con.info
    host = "localhost" if not info.host or info.host.startswith("/") else info.host

    def esc(v) -> str:
        return str(v).replace("\\", "\\\\").replace(":", "\\:")
    return ":".join(esc(v) for v in (host, info.port, info.dbname, user, password))


def person_url(store: PostgresReviewStore, user: str) -> str:
    """The URL a person connects with (no password: it comes from their ~/.pgpass)."""
    from urllib.parse import quote
    info = store._con.info
    host = "localhost" if not info.host or info.host.startswith("/") else info.host
    host = f"[{host}]" if ":" in host else host
    return f"postgresql://{quote(user, safe='')}@{host}:{info.port}/{quote(info.dbname, safe='')}"


__all__ = ["GROUPS", "TeamRoles", "Identity", "check_role_name", "setup_team", "team_roles", "whoami",
           "current_share", "settings_history", "set_share", "members", "add_member", "remove_member",
           "pgpass_line", "person_url"]
