"""Hostile inputs against the review store's link guard and the team store's rules (a server a link names,
a teammate holding a lock, isolation levels, huge notes, odd role names and passwords)."""

from __future__ import annotations

import socket
import struct
import threading

import pytest

psycopg = pytest.importorskip("psycopg")

SECRET = "s3cret-pw-wildcard"


class RogueServer:
    """A server on loopback that answers every connection by asking for the password in clear
    (AuthenticationCleartextPassword), as a server named in a crafted link could, and keeps every
    byte each client sends."""

    def __init__(self):
        self.received: list[bytes] = []
        self.srv = socket.socket()
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(8)
        self.srv.settimeout(0.2)
        self.port = self.srv.getsockname()[1]
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self._stop.is_set():
            try:
                con, _ = self.srv.accept()
            except OSError:
                continue
            got = bytearray()
            self.received.append(got)
            try:
                with con:
                    con.settimeout(5)
                    self._talk(con, got)
            except OSError:
                pass

    @staticmethod
    def _talk(con, got: bytearray):
        while True:
            head = con.recv(8)
            got += head
            if len(head) < 8:
                return
            length, code = struct.unpack("!ii", head)
            got += con.recv(length - 8)
            if code in (80877103, 80877104):  # SSLRequest, GSSENCRequest: no
                con.sendall(b"N")
                continue
            con.sendall(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
            while chunk := con.recv(4096):
                got += chunk
            return

    def close(self):
        self._stop.set()
        self.thread.join(10)
        self.srv.close()

    def leaked(self) -> bool:
        return any(SECRET.encode() in bytes(r) for r in self.received)


@pytest.fixture
def rogue(tmp_path, monkeypatch):
    """A rogue server and a pgpass file whose wildcard line (the docs' ``*:*:*:ana:...`` case) would
    give ana's password to any server that asks."""
    passfile = tmp_path / "pgpass"
    passfile.write_text(f"*:*:*:ana:{SECRET}\n")
    passfile.chmod(0o600)
    monkeypatch.setenv("PGPASSFILE", str(passfile))
    monkeypatch.delenv("PGREQUIREAUTH", raising=False)
    monkeypatch.delenv("CALIB_REVIEW_DB", raising=False)
    server = RogueServer()
    yield server
    server.close()


LINKS = [
    "postgresql://ana@127.0.0.1:{port}/require_auth?connect_timeout=5",  # the text, as a database name
    "postgresql://ana@127.0.0.1:{port}/calib?application_name=require_auth&connect_timeout=5",
    "postgresql://ana@127.0.0.1:{port}/calib?options=-c%20require_auth%3Dpassword&connect_timeout=5",
    "postgresql://ana@127.0.0.1:{port}/calib?sslmode=disable&connect_timeout=5",
    "postgresql://ana@127.0.0.1:{port}/calib?require_auth=password&connect_timeout=5",  # a link's own guard
    "postgresql://ana@127.0.0.1:{port}/calib?require_auth=%21md5&connect_timeout=5",
    "postgresql://ana@127.0.0.1:{port}/calib?require_auth=password,md5&connect_timeout=5",
    "postgresql://ana@127.0.0.1:{port}/calib?require_auth=md5&require_auth=password&connect_timeout=5",
    "postgresql://ana@127.0.0.1:{port}/calib?req%75ire_auth=password&connect_timeout=5",  # percent-encoded key
    "postgresql://127.0.0.1:{port}/calib?user=ana&connect_timeout=5&require_auth=%70assword",
]


@pytest.mark.parametrize("link", LINKS)
def test_a_link_never_gets_a_wildcard_pgpass_password_in_clear(rogue, link):
    """The app's opener (every page goes through it) against a server asking for the password in clear:
    refused, and the password never arrives, however the link spells or sets require_auth."""
    from appui.reviews import open_store
    with pytest.raises(ValueError):
        open_store(link.format(port=rogue.port))
    assert not rogue.leaked(), rogue.received


def test_the_rogue_server_is_a_real_control(rogue):
    """Without the guard libpq does send the wildcard line's password to that server: the test above can fail."""
    from calib.review.stores import open_review_store
    with pytest.raises(ValueError):
        open_review_store(f"postgresql://ana@127.0.0.1:{rogue.port}/calib?connect_timeout=5&sslmode=disable")
    rogue.close()
    assert rogue.leaked()


def test_the_guard_is_decided_on_the_parse():
    """The rebuilt URL: libpq's parse of the link, the guard merged into the link's own require_auth so
    that it only ever gets stricter."""
    from calib.review.urls import conninfo, without_cleartext
    base = "postgresql://ana@db.example:5432/calib"
    cases = {"": "!password", "?require_auth=%21md5": "!md5,!password", "?require_auth=scram-sha-256": "scram-sha-256",
             "?require_auth=password,scram-sha-256": "scram-sha-256", "?require_auth=md5&require_auth=!password":
             "!password", "?application_name=require_auth": "!password"}
    for query, expected in cases.items():
        info = conninfo(without_cleartext(base + query))
        assert info["require_auth"] == expected, query
        assert (info["host"], info["port"], info["dbname"], info["user"]) == ("db.example", "5432", "calib", "ana")
    with pytest.raises(ValueError, match="only a password sent in clear"):
        without_cleartext(base + "?require_auth=password")
    with pytest.raises(ValueError, match="mixes"):
        without_cleartext(base + "?require_auth=md5,!password")
    kept = conninfo(without_cleartext("postgresql://an%2Fa:p%40ss@h1:5,h2:6/d%20b?options=-c%20x%3Dy"))
    assert (kept["user"], kept["password"], kept["host"], kept["port"], kept["dbname"], kept["options"]) == \
        ("an/a", "p@ss", "h1,h2", "5,6", "d b", "-c x=y")


def test_the_operators_stricter_setting_stays(monkeypatch):
    """PGREQUIREAUTH (set where the app runs) is the starting point, never replaced by a looser one."""
    from calib.review.urls import conninfo, without_cleartext
    monkeypatch.setenv("PGREQUIREAUTH", "scram-sha-256")
    assert conninfo(without_cleartext("postgresql://ana@h/d"))["require_auth"] == "scram-sha-256"
