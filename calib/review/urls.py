"""What a PostgreSQL URL's secret is, decided the way libpq decides it, and the URL as it is shown.

libpq does not parse a URL as :func:`urllib.parse.urlsplit` does: it takes the
user part up to the first ``@`` or ``/`` (so an unencoded ``#`` or ``?`` stays in
the password), and a ``/`` in a password ends the host instead. Everything here
starts from libpq's own parse (:func:`conninfo`, psycopg's ``conninfo_to_dict``,
which calls ``PQconninfoParse``), so the password found is the one libpq will
send, the host is the one it will connect to (a ``%2Ftmp`` host or ``?host=/tmp``
is a Unix-socket folder), and nothing is echoed from the URL's text. libpq's other form, a
``keyword=value`` connection string (``host=db user=ana password=...``, what psql also accepts),
is a store on a server too (:func:`is_postgres_url`), parsed, shown and scrubbed the same way:

* :func:`redact_url` is the one display form of a URL, built from the parsed
  fields only: ``postgresql://user:***@host:port/database`` (no other
  parameter, never a password);
* :func:`check_unambiguous` refuses a URL whose text holds a ``@`` or ``/``
  that libpq would read as part of the host, port or database although it was
  meant as part of a password (``user:sl/ash@host``, ``user:at@sign@host``):
  such a URL could never be shown safely, and libpq would connect elsewhere;
* :func:`scrub` takes a URL's secrets out of a driver or server message;
* :func:`without_cleartext` rebuilds a URL from its parse with ``require_auth`` set so that
  libpq never sends a password in clear, whatever the URL's text says.
"""

from __future__ import annotations

import os
import re
from urllib.parse import quote, unquote

URL_SCHEMES = ("postgresql", "postgres")
_PORTS = re.compile(r"\d*(,\d*)*")
# libpq's other form, a connection string of keyword=value settings ("host=db user=ana password=..."): it
# starts with a keyword and "=" (a SQLite path never does in practice; psql reads such text the same way)
_KEYWORD_VALUE = re.compile(r"\s*[A-Za-z_][A-Za-z0-9_]*\s*=")


def is_key_value(target) -> bool:
    """True for a libpq ``keyword=value`` connection string (not a URL)."""
    return isinstance(target, str) and _KEYWORD_VALUE.match(target) is not None


def is_postgres_url(target) -> bool:
    """True for a review store on a server: a ``postgresql://`` or ``postgres://`` URL, or libpq's
    ``keyword=value`` connection string (``host=db dbname=reviews user=ana``), which psql accepts too."""
    return isinstance(target, str) and (
        target.strip().lower().startswith(tuple(f"{s}://" for s in URL_SCHEMES)) or is_key_value(target))


def _scheme(url: str) -> str:
    """The scheme a store is shown with: the URL's own, ``postgresql`` for a keyword=value string."""
    return "postgresql" if is_key_value(url) else url.strip().split(":", 1)[0].lower()


def conninfo(url: str) -> dict:
    """libpq's parse of ``url`` (keyword -> value, percent-decoded). A URL libpq
    cannot parse is a one-line ``ValueError`` that does not repeat the URL."""
    try:
        from psycopg.conninfo import conninfo_to_dict
    except ImportError:
        raise ValueError("a PostgreSQL review store needs psycopg: pip install 'calib[postgres]'") from None
    try:
        return {k: str(v) for k, v in conninfo_to_dict(url.strip()).items() if v is not None}
    except Exception as exc:  # noqa: BLE001 - psycopg.ProgrammingError: libpq's message can quote the URL
        raise ValueError(f"{_unparsed(url)}: libpq cannot parse it ({type(exc).__name__})") from None


def _unparsed(url: str) -> str:
    return f"{_scheme(url)}://({'connection string' if is_key_value(url) else 'URL'} not shown)"


def _authority_and_path(url: str) -> tuple[str, str]:
    """The raw text after ``scheme://`` cut as libpq cuts it: up to the first ``/`` (the
    authority, user part included), then the path up to ``?``."""
    rest = url.strip().split("://", 1)[1]
    authority, _, path = rest.partition("/")
    return authority.split("?", 1)[0], path.split("?", 1)[0]


def check_unambiguous(url: str) -> None:
    """A ``ValueError`` (not repeating the URL) when libpq would read part of what was
    meant as a password as the host, port or database: a second ``@``, or an ``@`` after
    the first ``/`` (a ``/`` ended the host inside the password), or a port that is not a
    number. Percent-encode such characters in a password (``%40`` for @, ``%2F`` for /)."""
    port = conninfo(url).get("port", "")
    if is_key_value(url):  # every setting is named: nothing is read as another part (a port may still be text)
        authority, path = "", ""
    else:
        authority, path = _authority_and_path(url)
    if authority.count("@") > 1 or "@" in path or not _PORTS.fullmatch(port):
        raise ValueError(f"{_unparsed(url)}: not a usable URL: libpq would read part of it as a port that is not "
                         "a number, or as the host or database (an unencoded @, / or : in the password?); "
                         "percent-encode them in a password (%40 for @, %2F for /, %3A for :)")


def url_password(url: str) -> str | None:
    """The password libpq will send for ``url`` (user part or ``password=`` parameter), or None."""
    return conninfo(url).get("password") or None


def secrets(url: str) -> list[str]:
    """Every text a message must not show for ``url``: libpq's password, the raw user part
    after its first ``:`` (percent-encoded as typed), and, where libpq reads that part otherwise
    (an ambiguous URL), each piece of it; longest first, so that replacing them in turn leaves no part of one."""
    out = set()
    try:
        pw = url_password(url)
    except ValueError:
        pw = None
    if pw:
        out.add(pw)
    if is_key_value(url):  # each password setting as typed (quoted, escaped), and its pieces: libpq may not parse it
        for raw in re.findall(r"password\s*=\s*('(?:[^'\\]|\\.)*'?|\S+)", url, flags=re.IGNORECASE):
            out.add(raw)
            out.update(p for p in re.split(r"[\s'\\]", raw) if len(p) >= 3)
        return sorted((s for s in out if s), key=len, reverse=True)
    rest = url.strip().split("://", 1)[-1]
    if "@" in rest:  # the widest reading: from the first ':' to the last '@' of the whole text
        user_part = rest[:rest.rindex("@")]
        if ":" in user_part:
            raw = user_part.split(":", 1)[1]
            out.add(raw)
            if unquote(raw) != pw:  # libpq reads it otherwise (ambiguous): each piece may show up on its own
                out.update(p for p in re.split(r"[@/:?#]", raw) if len(p) >= 3)
    return sorted((s for s in out if s), key=len, reverse=True)


def scrub(text: str, url: str) -> str:
    """``text`` (a driver's or server's message) with every secret of ``url`` as ``***``."""
    for s in secrets(url):
        text = text.replace(s, "***")
    return text


def redact_url(url: str) -> str:
    """The one display form of a review store: a PostgreSQL URL as
    ``postgresql://user[:***]@host:port/database`` built from libpq's parse (other
    parameters and the password never shown); an ambiguous or unparsable URL as
    ``postgresql://(URL not shown)``. Anything else (a SQLite path) is returned as it is."""
    if not is_postgres_url(url):
        return url
    try:
        check_unambiguous(url)
        info = conninfo(url)
    except ValueError:
        return _unparsed(url)
    user = quote(info.get("user", ""), safe="")
    cred = f"{user}{':***' if info.get('password') else ''}"
    host = ",".join(f"[{h}]" if ":" in h else quote(h, safe="") for h in info.get("host", "").split(","))
    port = f":{info['port']}" if info.get("port") else ""
    db = quote(info.get("dbname", ""), safe="")
    return f"{_scheme(url)}://{cred + '@' if cred else ''}{host}{port}/{db}"


NO_CLEARTEXT = "!password"


def _no_password_methods(methods: str, where: str) -> str:
    """``require_auth`` with cleartext password refused and nothing else loosened: a list of refused
    methods (``!md5``) gains ``!password``; a list of allowed ones loses ``password`` (a list that
    allowed only it is refused: there is nothing left to allow)."""
    listed = [m.strip() for m in methods.split(",") if m.strip()]
    if not listed:
        return NO_CLEARTEXT
    refused = [m.startswith("!") for m in listed]
    if all(refused):
        return ",".join(dict.fromkeys(listed + [NO_CLEARTEXT]))
    if any(refused):
        raise ValueError(f"{where}: require_auth mixes allowed and refused methods, which libpq does not accept")
    kept = [m for m in listed if m != "password"]
    if not kept:
        raise ValueError(f"{where}: require_auth allows only a password sent in clear, which is never sent from here "
                         "(use SCRAM: password_encryption = scram-sha-256 on the server)")
    return ",".join(dict.fromkeys(kept))


def without_cleartext(url: str) -> str:
    """``url`` rebuilt from libpq's own parse (:func:`conninfo`: the user part, the path and every query
    parameter, percent-decoded) as ``scheme://?key=value&...``, with ``require_auth`` such that libpq never
    sends a password in clear (:func:`_no_password_methods` of the URL's own ``require_auth``, else of
    ``PGREQUIREAUTH``, else ``!password``). A server a link names then cannot ask for the password of a
    ``~/.pgpass`` line with ``*`` for its host. Decided on the parse, never on the text: a database or an
    application name spelled ``require_auth`` changes nothing, and a URL's own ``require_auth=password``
    (or one repeated, the last counting for libpq as for the parse) cannot loosen the rule."""
    where = redact_url(url)
    info = conninfo(url)
    info["require_auth"] = _no_password_methods(info.get("require_auth", os.environ.get("PGREQUIREAUTH", "")), where)
    query = "&".join(f"{quote(k, safe='')}={quote(v, safe='')}" for k, v in info.items())
    return f"{_scheme(url)}://?{query}"
