# A throwaway PostgreSQL server for the tests of the shared review store.
# Sourced by .ci/run; alone: `source .ci/postgres.sh && calib_pg_start` (then
# `calib_pg_stop`). Installs Debian's postgresql if missing, runs initdb in a
# temp folder (as the postgres user when run as root: initdb refuses root),
# listens on 127.0.0.1 and a unix socket in that folder on a free port,
# password auth over TCP, and creates the test database. Exports
# CALIB_TEST_POSTGRES (a superuser URL: the tests create a database each) and
# CALIB_REQUIRE_POSTGRES=1. calib_pg_stop stops the server and removes the folder.

calib_pg_start() {
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
  fi
  local bin
  bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  CALIB_PG_DIR=$(mktemp -d /tmp/calib-pg.XXXXXX)
  local as=()
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres: "$CALIB_PG_DIR"
    as=(runuser -u postgres --)
  fi
  local port password
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  password=$(python3 -c 'import secrets; print(secrets.token_hex(12))')
  printf '%s\n' "$password" > "$CALIB_PG_DIR/pw"
  chmod 600 "$CALIB_PG_DIR/pw"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$CALIB_PG_DIR/pw"
  "${as[@]}" "$bin/initdb" -D "$CALIB_PG_DIR/data" -U calib_test --pwfile="$CALIB_PG_DIR/pw" \
    --auth-local=trust --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$CALIB_PG_DIR/initdb.log" 2>&1 \
    || { cat "$CALIB_PG_DIR/initdb.log" >&2; return 1; }
  # fsync off: a throwaway server; a killed *client* (what the tests do) loses nothing committed either way
  "${as[@]}" "$bin/pg_ctl" -D "$CALIB_PG_DIR/data" -l "$CALIB_PG_DIR/server.log" -w -t 60 \
    -o "-p $port -k $CALIB_PG_DIR -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null \
    || { cat "$CALIB_PG_DIR/server.log" >&2; return 1; }
  CALIB_PG_BIN=$bin
  "$bin/createdb" -h "$CALIB_PG_DIR" -p "$port" -U calib_test calib_test
  export CALIB_TEST_POSTGRES="postgresql://calib_test:$password@127.0.0.1:$port/calib_test"
  export CALIB_REQUIRE_POSTGRES=1
  echo "postgres: test server on 127.0.0.1:$port ($CALIB_PG_DIR)" >&2
}

calib_pg_stop() {
  [ -n "${CALIB_PG_DIR:-}" ] && [ -d "$CALIB_PG_DIR" ] || return 0
  local as=()
  [ "$(id -u)" -eq 0 ] && as=(runuser -u postgres --)
  "${as[@]}" "$CALIB_PG_BIN/pg_ctl" -D "$CALIB_PG_DIR/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$CALIB_PG_DIR"
  unset CALIB_PG_DIR CALIB_TEST_POSTGRES CALIB_REQUIRE_POSTGRES
}
