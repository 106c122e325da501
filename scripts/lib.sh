# Sourced by scripts/start, scripts/test and scripts/admin. Installs what a fresh machine with only
# Node.js and npm lacks: Bun from the npm registry into .tools/ (pinned), then the dependencies
# exactly as bun.lock records them.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUN_VERSION="1.4.5"
BUN="$ROOT/.tools/node_modules/.bin/bun"

ensure_bun() {
  if [ -x "$BUN" ] && [ "$("$BUN" --version 2>/dev/null)" = "$BUN_VERSION" ]; then return 0; fi
  if ! command -v npm >/dev/null 2>&1; then
    echo "gpuhq: npm is needed to install Bun ($BUN_VERSION); install Node.js and npm first" >&2
    exit 1
  fi
  echo "gpuhq: installing Bun $BUN_VERSION from the npm registry into .tools/ …" >&2
  mkdir -p "$ROOT/.tools"
  [ -f "$ROOT/.tools/package.json" ] || echo '{"private":true}' >"$ROOT/.tools/package.json"
  (cd "$ROOT/.tools" && npm install --no-audit --no-fund --loglevel=error --foreground-scripts "bun@$BUN_VERSION" >&2)
  if [ "$("$BUN" --version 2>/dev/null)" != "$BUN_VERSION" ]; then
    echo "gpuhq: Bun did not install correctly into .tools/" >&2
    exit 1
  fi
}

ensure_deps() {
  # Reinstall only when bun.lock changed since the last install.
  local stamp="$ROOT/node_modules/.gpuhq-lock-stamp"
  local want
  want="$(sha256sum "$ROOT/bun.lock" | cut -d' ' -f1)"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then return 0; fi
  echo "gpuhq: installing dependencies from bun.lock …" >&2
  (cd "$ROOT" && "$BUN" install --frozen-lockfile >&2)
  echo "$want" >"$stamp"
}

# Debian's Chromium, for tests/docs/swagger-ui.test.ts (the API docs rendered in a real browser).
# Only scripts/test calls this. A failure here is a warning: that one test then fails and says why.
ensure_chromium() {
  if [ -x /usr/bin/chromium ]; then return 0; fi
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; else
      echo "gpuhq: /usr/bin/chromium is missing and this user cannot install it: apt-get install chromium as root" >&2
      return 0
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "gpuhq: /usr/bin/chromium is missing and there is no apt-get here: install Debian's chromium package" >&2
    return 0
  fi
  echo "gpuhq: installing Chromium from Debian's packages (the API docs browser test) …" >&2
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium fonts-liberation; } >&2; then
    echo "gpuhq: could not install chromium with apt-get; the API docs browser test will fail" >&2
  fi
}

# PostgreSQL's server programs (initdb, pg_ctl), for the suite's PostgreSQL pass (docs/scale-out.md):
# Debian's postgresql package, installed with apt-get when none is here. Sets PG_BIN; a failure is a
# warning (the PostgreSQL pass is then skipped and says so).
PG_BIN=""
ensure_postgres() {
  local d
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r) /usr/local/bin /usr/bin; do
    if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then PG_BIN="$d"; return 0; fi
  done
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; else
      echo "gpuhq: PostgreSQL is not installed and this user cannot install it: apt-get install postgresql as root" >&2
      return 1
    fi
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "gpuhq: PostgreSQL is not installed and there is no apt-get here: install Debian's postgresql package" >&2
    return 1
  fi
  echo "gpuhq: installing PostgreSQL from Debian's packages (the suite's PostgreSQL pass) …" >&2
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends postgresql; } >&2; then
    echo "gpuhq: could not install postgresql with apt-get" >&2
    return 1
  fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n -r); do
    if [ -x "$d/initdb" ]; then PG_BIN="$d"; return 0; fi
  done
  return 1
}

# A throwaway PostgreSQL cluster: initdb in a temporary directory, listening on a free loopback port
# only (and a socket in that directory), fsync on as in production, C collation so text sorts as
# SQLite's BINARY does. PostgreSQL refuses to run as root: as root the cluster runs as the
# `postgres` user Debian's package creates. Exports GPUHQ_TEST_PG_URL (its maintenance database);
# stop_test_postgres stops it and removes every file.
PG_TEST_DIR=""
start_test_postgres() {
  ensure_postgres || return 1
  local as=() port tries
  PG_TEST_DIR="$(mktemp -d "${TMPDIR:-/tmp}/gpuhq-pg.XXXXXX")"
  if [ "$(id -u)" -eq 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
      echo "gpuhq: PostgreSQL cannot run as root and there is no postgres user" >&2
      return 1
    fi
    chown postgres "$PG_TEST_DIR"
    as=(runuser -u postgres --)
  fi
  if ! "${as[@]}" "$PG_BIN/initdb" -D "$PG_TEST_DIR/data" -U gpuhq --auth=trust --locale=C.UTF-8 --encoding=UTF8 >"$PG_TEST_DIR/initdb.log" 2>&1; then
    echo "gpuhq: initdb failed (see $PG_TEST_DIR/initdb.log)" >&2
    return 1
  fi
  for tries in 1 2 3 4 5; do
    port=$((20000 + RANDOM % 40000))
    if "${as[@]}" "$PG_BIN/pg_ctl" -D "$PG_TEST_DIR/data" -l "$PG_TEST_DIR/server.log" -w -t 60 \
      -o "-p $port -k $PG_TEST_DIR -c listen_addresses=127.0.0.1 -c fsync=on -c max_connections=300 -c shared_buffers=64MB" start >/dev/null 2>&1; then
      export GPUHQ_TEST_PG_URL="postgres://gpuhq@127.0.0.1:$port/postgres"
      return 0
    fi
  done
  echo "gpuhq: PostgreSQL did not start (see $PG_TEST_DIR/server.log)" >&2
  return 1
}

stop_test_postgres() {
  [ -n "$PG_TEST_DIR" ] || return 0
  local as=()
  [ "$(id -u)" -eq 0 ] && as=(runuser -u postgres --)
  "${as[@]}" "$PG_BIN/pg_ctl" -D "$PG_TEST_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$PG_TEST_DIR"
  PG_TEST_DIR=""
}

# promtool from Debian's prometheus package, for tests/prometheus/ (`promtool check metrics` parses
# and lints the Prometheus exposition). Only that binary is taken from the package (apt-get download,
# then dpkg-deb, into .tools/bin): installing the package would also start a Prometheus server and
# pull in its web assets. A promtool already on PATH (the package installed) is used as it is. Only
# scripts/test calls this. A failure here is a warning: those tests then fail and say why.
PROMTOOL="$ROOT/.tools/bin/promtool"
ensure_promtool() {
  if [ -x "$PROMTOOL" ] || command -v promtool >/dev/null 2>&1; then return 0; fi
  if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg-deb >/dev/null 2>&1; then
    echo "gpuhq: promtool is missing and there is no apt-get here: install Debian's prometheus package (or put promtool on PATH)" >&2
    return 0
  fi
  local sudo="" apt_opts=() dir
  if [ "$(id -u)" -eq 0 ]; then apt_opts=(-o APT::Sandbox::User=root); elif command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; fi
  dir="$(mktemp -d)"
  echo "gpuhq: fetching promtool from Debian's prometheus package (the Prometheus endpoint's tests) …" >&2
  # The package lists may be missing or stale on a fresh machine: refresh them once and try again.
  if ! (cd "$dir" && apt-get "${apt_opts[@]}" download -qq prometheus >&2 2>/dev/null); then
    $sudo apt-get update -qq >&2 || true
    (cd "$dir" && apt-get "${apt_opts[@]}" download -qq prometheus >&2) || true
  fi
  local deb
  deb="$(find "$dir" -maxdepth 1 -name 'prometheus_*.deb' | head -n1)"
  if [ -n "$deb" ] && dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dir" ./usr/bin/promtool && "$dir/usr/bin/promtool" --version >/dev/null 2>&1; then
    mkdir -p "$(dirname "$PROMTOOL")"
    mv "$dir/usr/bin/promtool" "$PROMTOOL"
  else
    echo "gpuhq: could not fetch promtool from Debian's prometheus package; the Prometheus endpoint's tests will fail" >&2
  fi
  rm -rf "$dir"
}

if [ "${GPUHQ_PREINSTALLED:-}" = "1" ]; then
  # The Docker image: its Dockerfile installed Bun and the production dependencies, and it has no npm.
  BUN="$(command -v bun)"
else
  ensure_bun
  ensure_deps
  export PATH="$ROOT/.tools/node_modules/.bin:$PATH"
fi
