#!/usr/bin/env bash
# pg-test-server.sh start|stop|status -- a throwaway PostgreSQL 15 for tally's tests.
#
# start: initdb + pg_ctl start of a fresh cluster in target/pg-test (data, socket, log), on
# 127.0.0.1 and the first free port from 5433, with a role and database `tally`; prints the
# URL (postgres://tally:tally@127.0.0.1:PORT/tally_test) on stdout. Idempotent: a healthy
# server is reused. PostgreSQL refuses to run as root, so under root the server runs as user
# `postgres` (the Debian package creates it); as any other user it runs as that user.
# stop: stops the server (fast, then SIGKILL after a timeout) and removes the directory.
#
# Use:  TALLY_TEST_PG_URL=$(scripts/pg-test-server.sh start) && export TALLY_TEST_PG_URL
# (docs/team.md#tests). Needs the postgresql-15 package (apt-get install -y postgresql-15).
# Knobs: PG_TEST_DIR, PG_TEST_PORT (first port tried), PG_TEST_BIN, PG_TEST_TIMEOUT.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=${PG_TEST_DIR:-$ROOT/target/pg-test}
FIRST_PORT=${PG_TEST_PORT:-5433}
BIN=${PG_TEST_BIN:-/usr/lib/postgresql/15/bin}
TIMEOUT=${PG_TEST_TIMEOUT:-30}
DB=tally_test
ROLE=tally
PASS=tally

say() { echo "pg-test-server: $*" >&2; }

# Runs a PostgreSQL program as the server's user.
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

port_of() { sed -n 's/^port = \([0-9]*\)$/\1/p' "$DIR/data/postgresql.conf" 2>/dev/null | tail -n 1; }
url_of() { echo "postgres://$ROLE:$PASS@127.0.0.1:$1/$DB"; }
login_ok() { timeout 5 psql "$(url_of "$1")" -qAtc 'select 1' >/dev/null 2>&1; }

# Whether something listens on 127.0.0.1:PORT.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

stop() {
  if [ -f "$DIR/data/postmaster.pid" ]; then
    local pid i
    pid=$(head -n 1 "$DIR/data/postmaster.pid")
    if ! as_owner "$BIN/pg_ctl" -D "$DIR/data" -m fast -w -t "$TIMEOUT" stop >/dev/null 2>&1; then
      if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = postgres ]; then
        say "pg_ctl stop failed; killing postmaster $pid"
        kill -9 "$pid" || true
        for ((i = 0; i < 50; i++)); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
      fi
    fi
  fi
  rm -rf "$DIR"
}

start() {
  local port
  port=$(port_of || true)
  if [ -n "$port" ] && [ -f "$DIR/data/postmaster.pid" ] && login_ok "$port"; then
    say "already up"; url_of "$port"; return 0
  fi
  [ -x "$BIN/initdb" ] || { say "no $BIN/initdb: install PostgreSQL 15 (apt-get install -y postgresql-15)"; return 1; }
  if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
    say "running as root and there is no user postgres to run the server as"; return 1
  fi
  stop
  port=$FIRST_PORT
  while port_busy "$port"; do port=$((port + 1)); [ "$port" -lt $((FIRST_PORT + 100)) ] || { say "no free port from $FIRST_PORT"; return 1; }; done
  mkdir -p "$DIR"
  # The server's user must reach the directory: it owns it, and every parent must be
  # searchable (target/ under a home directory with mode 0700 is not, for user postgres).
  if [ "$(id -u)" = 0 ]; then
    chown postgres:postgres "$DIR"
    runuser -u postgres -- test -x "$DIR" ||
      { say "user postgres cannot reach $DIR; set PG_TEST_DIR to a directory it can reach"; return 1; }
  fi
  chmod 0755 "$DIR"
  as_owner "$BIN/initdb" -D "$DIR/data" -U postgres -E UTF8 --locale=C.UTF-8 \
    --auth-local=trust --auth-host=scram-sha-256 --no-sync >"$DIR/initdb.log" 2>&1 ||
    { say "initdb failed:"; cat "$DIR/initdb.log" >&2; return 1; }
  cat >>"$DIR/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$DIR'
# a throwaway server: durability off, speed on
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
  as_owner "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/postgres.log" -w -t "$TIMEOUT" start >/dev/null ||
    { say "the server did not start:"; tail -n 30 "$DIR/postgres.log" >&2; return 1; }
  psql -h "$DIR" -p "$port" -U postgres -d postgres -qAt -v ON_ERROR_STOP=1 \
    -c "CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASS'" \
    -c "CREATE DATABASE $DB OWNER $ROLE" >/dev/null
  login_ok "$port" || { say "cannot log in as $ROLE over TCP"; tail -n 30 "$DIR/postgres.log" >&2; return 1; }
  say "up: PostgreSQL $(psql "$(url_of "$port")" -qAtc 'show server_version') in $DIR"
  url_of "$port"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status)
    port=$(port_of || true)
    if [ -n "$port" ] && login_ok "$port"; then url_of "$port"; else echo "pg-test-server: down"; exit 1; fi
    ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
