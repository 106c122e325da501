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

ensure_bun
ensure_deps
export PATH="$ROOT/.tools/node_modules/.bin:$PATH"
