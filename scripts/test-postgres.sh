#!/usr/bin/env bash
# A throwaway PostgreSQL for the test suite: a fresh cluster in a temporary directory, listening
# on 127.0.0.1 on a free port, with one database. Installs the server with apt when it is missing.
#
#   scripts/test-postgres.sh              prints TEST_DATABASE_URL=... and TEST_POSTGRES_DIR=...
#   source scripts/test-postgres.sh       exports both instead
#   scripts/test-postgres.sh stop DIR     stops that cluster and deletes its directory
#
# PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user the
# package creates. Nothing is durable (fsync off): it is for tests only.

_tpg_main () {
  set -euo pipefail

  if [ "${1:-}" = stop ]; then
    local dir=${2:?usage: test-postgres.sh stop DIR}
    _tpg_as_owner "$(_tpg_bin)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
    rm -rf "$dir"
    return 0
  fi

  if [ -z "$(_tpg_bin)" ]; then
    echo "test-postgres: installing postgresql with apt" >&2
    # Not started, not enabled at boot: this script starts its own throwaway server.
    # shellcheck source=scripts/apt-install-quietly.sh
    source "$(dirname "${BASH_SOURCE[0]}")/apt-install-quietly.sh"
    apt_install_quietly postgresql
  fi
  local bin port password dir
  bin=$(_tpg_bin)
  [ -n "$bin" ] || { echo "test-postgres: no initdb after installing postgresql" >&2; return 1; }
  port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')
  password=$(node -e 'console.log(require("crypto").randomBytes(18).toString("base64url"))')
  dir=$(mktemp -d /tmp/test-postgres.XXXXXX)
  chmod 755 "$dir"
  printf '%s\n' "$password" > "$dir/password"
  if [ "$(id -u)" = 0 ]; then chown -R postgres:postgres "$dir"; fi

  _tpg_as_owner "$bin/initdb" -D "$dir/data" -U postgres --auth=scram-sha-256 --pwfile="$dir/password" \
    --encoding=UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; return 1; }
  _tpg_as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 start \
    -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c fsync=off -c synchronous_commit=off -c full_page_writes=off" >/dev/null \
    || { cat "$dir/server.log" >&2; return 1; }
  PGPASSWORD=$password "$bin/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -c 'CREATE DATABASE control_test' >&2

  TEST_DATABASE_URL="postgres://postgres:$password@127.0.0.1:$port/control_test"
  TEST_POSTGRES_DIR=$dir
}

# The newest installed server's bin directory, or nothing.
_tpg_bin () {
  local initdb
  initdb=$(ls -d /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1)
  [ -n "$initdb" ] && dirname "$initdb"
  return 0
}

_tpg_as_owner () {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  _tpg_main "$@"
  if [ "${1:-}" != stop ]; then
    echo "TEST_DATABASE_URL=$TEST_DATABASE_URL"
    echo "TEST_POSTGRES_DIR=$TEST_POSTGRES_DIR"
    echo "test-postgres: stop it with: scripts/test-postgres.sh stop $TEST_POSTGRES_DIR" >&2
  fi
else
  # Sourced: run in a subshell so `set -e` and friends stay out of the caller's shell.
  _tpg_out=$( _tpg_main && echo "TEST_DATABASE_URL=$TEST_DATABASE_URL" && echo "TEST_POSTGRES_DIR=$TEST_POSTGRES_DIR" ) || return 1
  export TEST_DATABASE_URL TEST_POSTGRES_DIR
  TEST_DATABASE_URL=$(printf '%s\n' "$_tpg_out" | sed -n 's/^TEST_DATABASE_URL=//p')
  TEST_POSTGRES_DIR=$(printf '%s\n' "$_tpg_out" | sed -n 's/^TEST_POSTGRES_DIR=//p')
  unset _tpg_out
fi
