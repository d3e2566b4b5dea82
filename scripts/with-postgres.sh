#!/usr/bin/env bash
# Runs a command with DATABASE_URL pointing at a PostgreSQL server.
#
#   scripts/with-postgres.sh cargo test --test suite cache::
#
# If DATABASE_URL is already set, the command just runs (CI with a database
# service, or a developer's own server). Otherwise a throwaway server is made
# for the command alone: a fresh cluster in a temp dir, trust auth on
# 127.0.0.1 only, a free port, fsync off. It is stopped and deleted when the
# command ends, however it ends, and the command's exit status is returned.
#
# The server also speaks TLS (ssl=on), as hosted databases do: a CA and a
# server certificate for 127.0.0.1 and localhost are made on the spot with
# openssl, and CONDENSE_TEST_PG_TLS_ROOT names the CA's certificate, for
# `?sslmode=verify-full&sslrootcert=$CONDENSE_TEST_PG_TLS_ROOT`. Plain
# connections are still accepted. Without openssl the server is plain and
# CONDENSE_TEST_PG_TLS_ROOT is unset (the TLS tests then say how to fix it).
#
# Server binaries: $PG_BINDIR if set, else the newest /usr/lib/postgresql/*/bin
# (Debian/Ubuntu), else `pg_config --bindir`, else initdb/pg_ctl on PATH. If
# none is found, installs Debian's `postgresql` package with apt-get (needs
# root). PostgreSQL refuses to run as root, so as root the server runs as the
# `postgres` user (created if missing). Needs no terminal and no stdin.
set -euo pipefail

if [ -n "${DATABASE_URL:-}" ]; then
  exec "$@"
fi

if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi

say() { echo "with-postgres: $*" >&2; }

find_bindir() {
  local d
  if [ -n "${PG_BINDIR:-}" ] && [ -x "$PG_BINDIR/initdb" ]; then
    echo "$PG_BINDIR"
    return
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
      echo "$d"
      return
    fi
  done
  if command -v pg_config >/dev/null 2>&1; then
    d="$(pg_config --bindir 2>/dev/null || true)"
    if [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
      echo "$d"
      return
    fi
  fi
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    dirname "$(readlink -f "$(command -v initdb)")"
  fi
}

BINDIR="$(find_bindir)"
if [ -z "$BINDIR" ]; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    say "no PostgreSQL server binaries found; install PostgreSQL (Debian: apt-get install postgresql) or set DATABASE_URL"
    exit 1
  fi
  say "installing PostgreSQL with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq </dev/null >&2
  apt-get install -y -qq --no-install-recommends postgresql </dev/null >&2
  BINDIR="$(find_bindir)"
  if [ -z "$BINDIR" ]; then
    say "apt-get installed postgresql but no initdb was found under /usr/lib/postgresql"
    exit 1
  fi
fi

# As root, run the server as an unprivileged user.
as_server() { "$@"; }
RUN_USER="$(id -un)"
if [ "$(id -u)" -eq 0 ]; then
  RUN_USER=postgres
  if ! id "$RUN_USER" >/dev/null 2>&1; then
    useradd --system --no-create-home --shell /usr/sbin/nologin "$RUN_USER"
  fi
  if command -v runuser >/dev/null 2>&1; then
    as_server() { runuser -u "$RUN_USER" -- "$@"; }
  else
    as_server() { su -s /bin/sh "$RUN_USER" -c "$(printf '%q ' "$@")"; }
  fi
fi

TMP="$(mktemp -d "${TMPDIR:-/tmp}/condense-pg.XXXXXX")"
DATA="$TMP/data"
LOG="$TMP/server.log"
STARTED=0

cleanup() {
  if [ "$STARTED" -eq 1 ]; then
    as_server "$BINDIR/pg_ctl" -D "$DATA" -m immediate -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

chmod 0755 "$TMP"
[ "$RUN_USER" = "$(id -un)" ] || chown "$RUN_USER" "$TMP"

as_server "$BINDIR/initdb" -D "$DATA" -U postgres -A trust -E UTF8 --locale=C --no-sync \
  >"$TMP/initdb.log" 2>&1 </dev/null || {
  cat "$TMP/initdb.log" >&2
  say "initdb failed"
  exit 1
}

# A CA and a server certificate signed by it, both for this run only.
make_tls() {
  local dir="$TMP/tls"
  mkdir -p "$dir"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=condense test CA" \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" &&
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
      -keyout "$dir/server.key" -out "$dir/server.csr" &&
    printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" \
      "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage=serverAuth" >"$dir/server.ext" &&
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" \
      -CAcreateserial -days 2 -extfile "$dir/server.ext" -out "$dir/server.pem"
}

TLS_OPTS=""
if ! command -v openssl >/dev/null 2>&1; then
  say "openssl not found: the server is plain, and the TLS tests will fail (apt-get install openssl)"
elif make_tls >"$TMP/tls.log" 2>&1 </dev/null; then
  # PostgreSQL insists that its key is its own and private.
  [ "$RUN_USER" = "$(id -un)" ] || chown -R "$RUN_USER" "$TMP/tls"
  chmod 0600 "$TMP/tls/server.key"
  TLS_OPTS="-c ssl=on -c ssl_cert_file=$TMP/tls/server.pem -c ssl_key_file=$TMP/tls/server.key"
else
  cat "$TMP/tls.log" >&2
  say "making the TLS certificates failed: the server is plain"
fi

free_port() {
  if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
  else
    echo $((20000 + RANDOM % 40000))
  fi
}

# A port can be taken between picking and binding: try a few.
for attempt in 1 2 3 4 5; do
  PORT="$(free_port)"
  if as_server "$BINDIR/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 -o \
    "-c listen_addresses=127.0.0.1 -p $PORT -k $TMP -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off $TLS_OPTS" \
    start >/dev/null 2>&1 </dev/null; then
    STARTED=1
    break
  fi
  say "start on port $PORT failed (attempt $attempt)"
  tail -n 5 "$LOG" >&2 2>/dev/null || true
done
if [ "$STARTED" -ne 1 ]; then
  say "could not start PostgreSQL"
  exit 1
fi

export DATABASE_URL="postgres://postgres@127.0.0.1:$PORT/postgres"
TLS_NOTE="plain only"
if [ -n "$TLS_OPTS" ]; then
  export CONDENSE_TEST_PG_TLS_ROOT="$TMP/tls/ca.pem"
  TLS_NOTE="TLS with root $CONDENSE_TEST_PG_TLS_ROOT"
fi
say "PostgreSQL $("$BINDIR/postgres" --version | awk '{print $3}') on 127.0.0.1:$PORT, $TLS_NOTE (data in $TMP)"

# The command runs in the background so that a signal to this script (CI
# cancelling, `timeout`, Ctrl-C) is handled at once: it is passed on to the
# command, and the EXIT trap still stops the server. Stdin is passed through.
set +e
"$@" <&0 &
CHILD=$!
trap 'kill -TERM "$CHILD" 2>/dev/null' INT TERM HUP
while kill -0 "$CHILD" 2>/dev/null; do
  wait "$CHILD"
done
wait "$CHILD"
STATUS=$?
exit "$STATUS"
