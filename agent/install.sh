#!/bin/sh
# Installs the gpuhq agent as a systemd service on a Linux GPU server.
#
#   curl -fsSL https://gpuhq.example.com/agent/install.sh \
#     | sudo sh -s -- --url https://gpuhq.example.com --token-file /root/gpuhq-init-token
#
#   sudo sh install.sh --url https://gpuhq.example.com --token-stdin < /root/gpuhq-init-token
#
# The init token is read from a file or standard input only, never from the command line:
# arguments are visible to every user of the host (ps, /proc/<pid>/cmdline) and stay in shell
# history. With "curl … | sh" standard input is the script itself, so use --token-file there.
#
# Re-running the installer without a token updates the agent files and restarts the service,
# keeping the existing enrolment. See docs/agent.md.
set -eu

PREFIX="${GPUHQ_AGENT_PREFIX:-/opt/gpuhq-agent}"
STATE_DIR="${GPUHQ_AGENT_STATE_DIR:-/var/lib/gpuhq-agent}"
UNIT_DIR="${GPUHQ_SYSTEMD_DIR:-/etc/systemd/system}"
# Overrides for packaging and tests; a normal install leaves them unset.
SYSTEMCTL="${GPUHQ_SYSTEMCTL:-systemctl}"
BUN="${GPUHQ_BUN:-}"
BUN_VERSION="1.4.5"
UNIT="gpuhq-agent.service"

URL=""
TOKEN_FILE=""
TOKEN_STDIN=0
PORT_RANGE=""
PUBLIC_IP=""
SIMULATE=""
SOURCE=""
START=1

say() { printf 'gpuhq-agent install: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

usage() {
	cat <<'EOF'
usage: install.sh --url <PUBLIC_URL> (--token-file <path> | --token-stdin) [options]

  --url <PUBLIC_URL>     the address of gpuhq, e.g. https://gpuhq.example.com
  --token-file <path>    file holding the one-time init token (gpuhq_init_…)
  --token-stdin          read the init token from standard input
  --port-range A-B       ports this host offers to renters, e.g. 40000-40199
  --public-ip <ipv4>     the host's public address, when no local interface carries it
  --simulate N           run with N simulated GPUs (demos; dangerous commands become no-ops)
  --source <dir>         copy the agent from this directory (default: beside this script,
                         else downloaded from <PUBLIC_URL>/agent/gpuhq-agent.tar.gz)
  --no-start             write the unit but do not enable or start it

Without a token, an already enrolled host keeps its credential and only gets new agent files.
EOF
}

refuse_token_argument() {
	die "refusing to take a token on the command line: arguments are visible to every user of this host (ps, /proc/<pid>/cmdline) and stay in shell history; use --token-file <path> or --token-stdin"
}

need_value() {
	[ "$#" -ge 2 ] || die "$1 needs a value"
}

while [ "$#" -gt 0 ]; do
	case "$1" in
	--token | --token=* | --init-token | --init-token=* | gpuhq_init_* | gpuhq_agt_* | *=gpuhq_init_* | *=gpuhq_agt_*)
		refuse_token_argument ;;
	--url) need_value "$@"; URL="$2"; shift 2 ;;
	--url=*) URL="${1#*=}"; shift ;;
	--token-file) need_value "$@"; TOKEN_FILE="$2"; shift 2 ;;
	--token-file=*) TOKEN_FILE="${1#*=}"; shift ;;
	--token-stdin) TOKEN_STDIN=1; shift ;;
	--port-range) need_value "$@"; PORT_RANGE="$2"; shift 2 ;;
	--port-range=*) PORT_RANGE="${1#*=}"; shift ;;
	--public-ip) need_value "$@"; PUBLIC_IP="$2"; shift 2 ;;
	--public-ip=*) PUBLIC_IP="${1#*=}"; shift ;;
	--simulate) need_value "$@"; SIMULATE="$2"; shift 2 ;;
	--simulate=*) SIMULATE="${1#*=}"; shift ;;
	--source) need_value "$@"; SOURCE="$2"; shift 2 ;;
	--source=*) SOURCE="${1#*=}"; shift ;;
	--no-start) START=0; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown argument: $1 (see --help)" ;;
	esac
done

[ -n "$URL" ] || { usage >&2; die "--url is required"; }
case "$URL" in http://* | https://*) ;; *) die "--url must start with https:// (or http:// for a test service)" ;; esac
URL="${URL%/}"
[ -z "$TOKEN_FILE" ] || [ "$TOKEN_STDIN" -eq 0 ] || die "give either --token-file or --token-stdin, not both"
[ -z "$TOKEN_FILE" ] || [ -r "$TOKEN_FILE" ] || die "cannot read the token file $TOKEN_FILE"

[ "$(id -u)" -eq 0 ] || die "run this as root (sudo): the agent is installed under $PREFIX and runs as a system service"
if [ -z "$TOKEN_FILE" ] && [ "$TOKEN_STDIN" -eq 0 ] && [ ! -f "$STATE_DIR/credential.json" ]; then
	die "this host is not enrolled yet: give --token-file <path> or --token-stdin with an init token from gpuhq"
fi
if [ -z "${GPUHQ_SYSTEMCTL:-}" ]; then
	command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ] ||
		die "this installer needs systemd; without it, run \"bun $PREFIX/gpuhq-agent.ts run\" under your own supervisor"
fi

# --- agent source ----------------------------------------------------------------------------
CLEANUP=""
trap 'if [ -n "$CLEANUP" ]; then rm -rf "$CLEANUP"; fi' EXIT
if [ -z "$SOURCE" ]; then
	HERE="$(cd "$(dirname "$0")" 2>/dev/null && pwd || true)"
	if [ -n "$HERE" ] && [ -f "$HERE/gpuhq-agent.ts" ] && [ -d "$HERE/lib" ]; then
		SOURCE="$HERE"
	else
		CLEANUP="$(mktemp -d)"
		say "downloading the agent from $URL/agent/gpuhq-agent.tar.gz …"
		if command -v curl >/dev/null 2>&1; then
			curl -fsSL "$URL/agent/gpuhq-agent.tar.gz" -o "$CLEANUP/agent.tar.gz" || true
		elif command -v wget >/dev/null 2>&1; then
			wget -q -O "$CLEANUP/agent.tar.gz" "$URL/agent/gpuhq-agent.tar.gz" || true
		fi
		[ -s "$CLEANUP/agent.tar.gz" ] && tar -xzf "$CLEANUP/agent.tar.gz" -C "$CLEANUP" ||
			die "could not download the agent; unpack gpuhq-agent.tar.gz (or use a gpuhq checkout's agent/ folder) on this host and pass --source <dir>"
		SOURCE="$CLEANUP"
		[ -f "$SOURCE/gpuhq-agent.ts" ] || SOURCE="$CLEANUP/agent"
	fi
fi
[ -f "$SOURCE/gpuhq-agent.ts" ] && [ -d "$SOURCE/lib" ] || die "$SOURCE does not hold gpuhq-agent.ts and lib/"

# --- Bun -------------------------------------------------------------------------------------
if [ -z "$BUN" ]; then
	if command -v bun >/dev/null 2>&1; then
		BUN="$(command -v bun)"
	elif command -v npm >/dev/null 2>&1; then
		say "installing Bun $BUN_VERSION from the npm registry (npm install -g bun@$BUN_VERSION) …"
		npm install -g --no-audit --no-fund --loglevel=error "bun@$BUN_VERSION" >&2 ||
			die "npm could not install Bun; install it yourself (https://bun.sh) and run this again"
		BUN="$(npm prefix -g)/bin/bun"
	else
		die "the agent runs on Bun, which is not installed. Install Node.js and npm (e.g. apt-get install nodejs npm) and run this again, or install Bun yourself: https://bun.sh/docs/installation"
	fi
fi
"$BUN" --version >/dev/null 2>&1 || die "$BUN does not run"
say "using Bun $("$BUN" --version) at $BUN"

# --- agent files -----------------------------------------------------------------------------
umask 022
mkdir -p "$PREFIX"
rm -rf "$PREFIX/lib"
cp "$SOURCE/gpuhq-agent.ts" "$PREFIX/"
cp -R "$SOURCE/lib" "$PREFIX/lib"
# The agent imports the protocol's frames as #protocol (docs/agent.md "What the tarball holds"): the
# tarball brings protocol.js (the protocol bundled with TypeBox) and the package.json that maps it;
# a gpuhq checkout's agent/ folder has protocol/ beside it instead, bundled here the same way.
if [ -f "$SOURCE/protocol.js" ] && [ -f "$SOURCE/package.json" ]; then
	cp "$SOURCE/protocol.js" "$SOURCE/package.json" "$PREFIX/"
elif [ -f "$SOURCE/../protocol/index.ts" ]; then
	"$BUN" build "$SOURCE/../protocol/index.ts" --target=bun --format=esm --outfile="$PREFIX/protocol.js" >/dev/null ||
		die "could not bundle $SOURCE/../protocol for the agent (bun build)"
	cat >"$PREFIX/package.json" <<'EOF'
{
  "name": "gpuhq-agent",
  "private": true,
  "type": "module",
  "imports": {
    "#protocol": "./protocol.js"
  }
}
EOF
else
	die "$SOURCE holds neither protocol.js and package.json (an unpacked gpuhq-agent.tar.gz) nor ../protocol (a gpuhq checkout)"
fi
for f in README.md install.sh; do
	if [ -f "$SOURCE/$f" ]; then cp "$SOURCE/$f" "$PREFIX/"; fi
done
mkdir -p "$STATE_DIR"
chmod 700 "$STATE_DIR"
say "agent $("$BUN" "$PREFIX/gpuhq-agent.ts" version) installed in $PREFIX"

# --- enrolment -------------------------------------------------------------------------------
set -- --url "$URL" --state-dir "$STATE_DIR"
if [ -n "$PORT_RANGE" ]; then set -- "$@" --port-range "$PORT_RANGE"; fi
if [ -n "$PUBLIC_IP" ]; then set -- "$@" --public-ip "$PUBLIC_IP"; fi
if [ -n "$SIMULATE" ]; then set -- "$@" --simulate "$SIMULATE"; fi
if [ -n "$TOKEN_FILE" ]; then
	"$BUN" "$PREFIX/gpuhq-agent.ts" enroll "$@" --token-file "$TOKEN_FILE" || die "enrolment failed (see the message above)"
	say "enrolled; the init token in $TOKEN_FILE is used up and can be deleted"
elif [ "$TOKEN_STDIN" -eq 1 ]; then
	"$BUN" "$PREFIX/gpuhq-agent.ts" enroll "$@" --token-stdin || die "enrolment failed (see the message above)"
	say "enrolled"
elif [ -f "$STATE_DIR/credential.json" ]; then
	say "already enrolled ($STATE_DIR/credential.json); keeping that credential"
else
	die "this host is not enrolled yet: give --token-file <path> or --token-stdin with an init token from gpuhq"
fi

# --- service ---------------------------------------------------------------------------------
EXEC="$BUN $PREFIX/gpuhq-agent.ts run --state-dir $STATE_DIR"
if [ -n "$SIMULATE" ]; then EXEC="$EXEC --simulate $SIMULATE"; fi
if [ -n "$PUBLIC_IP" ]; then EXEC="$EXEC --public-ip $PUBLIC_IP"; fi
mkdir -p "$UNIT_DIR"
cat >"$UNIT_DIR/$UNIT" <<EOF
# Written by the gpuhq agent installer; re-running install.sh rewrites it.
[Unit]
Description=gpuhq agent (presence, telemetry and commands for gpuhq)
Documentation=file://$PREFIX/README.md
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
# root, because setting GPU power limits (nvidia-smi -pl), resetting a GPU and rebooting the
# host (commands from gpuhq) need it, and the credential lives in a root-only directory.
User=root
ExecStart=$EXEC
# Restart on crashes, network trouble and agent.restart (exit 75) …
Restart=always
RestartSec=5
# … but not after exit 78: not enrolled, credential revoked or agent too old. Enrol again.
RestartPreventExitStatus=78
PrivateTmp=true

[Install]
WantedBy=multi-user.target
EOF
chmod 644 "$UNIT_DIR/$UNIT"
say "wrote $UNIT_DIR/$UNIT"

if [ "$START" -eq 1 ]; then
	"$SYSTEMCTL" daemon-reload
	"$SYSTEMCTL" enable "$UNIT" >/dev/null 2>&1 || "$SYSTEMCTL" enable "$UNIT"
	"$SYSTEMCTL" restart "$UNIT"
	say "the agent is running; follow it with: journalctl -u gpuhq-agent -f"
else
	say "not started (--no-start); start it with: systemctl enable --now $UNIT"
fi
