#!/bin/sh
# Installs the gpuhq agent as a systemd service on a Linux GPU server. Needs only curl (or wget),
# sha256sum and systemd: the agent is one executable (gpuhq-agent-linux-x64 or -arm64), checked
# against the SHA-256 the service publishes before anything is installed.
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
# Re-running the installer without a token installs the service's current agent (the one it
# replaces kept as gpuhq-agent.previous) and restarts the service, keeping the enrolment. The agent
# also updates itself when the service asks (docs/agent.md "Self-update").
set -eu

PREFIX="${GPUHQ_AGENT_PREFIX:-/opt/gpuhq-agent}"
STATE_DIR="${GPUHQ_AGENT_STATE_DIR:-/var/lib/gpuhq-agent}"
UNIT_DIR="${GPUHQ_SYSTEMD_DIR:-/etc/systemd/system}"
# Overrides for packaging and tests; a normal install leaves them unset.
SYSTEMCTL="${GPUHQ_SYSTEMCTL:-systemctl}"
UNIT="gpuhq-agent.service"

URL=""
TOKEN_FILE=""
TOKEN_STDIN=0
PORT_RANGE=""
PUBLIC_IP=""
SIMULATE=""
BINARY=""
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
  --binary <file>        install this copy of gpuhq-agent-linux-<arch> instead of downloading it;
                         it is still checked against <PUBLIC_URL>/agent/gpuhq-agent-linux-<arch>.sha256
  --no-start             write the unit but do not enable or start it

Without a token, an already enrolled host keeps its credential and only gets the current agent.
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
	--binary) need_value "$@"; BINARY="$2"; shift 2 ;;
	--binary=*) BINARY="${1#*=}"; shift ;;
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
		die "this installer needs systemd; without it, run \"$PREFIX/gpuhq-agent run\" under your own supervisor and start it again on exit code 75"
fi
command -v sha256sum >/dev/null 2>&1 || die "sha256sum is missing (coreutils): it checks the agent before it is installed"

# --- the executable --------------------------------------------------------------------------
case "$(uname -m)" in
x86_64 | amd64) TARGET="linux-x64" ;;
aarch64 | arm64) TARGET="linux-arm64" ;;
*) die "no agent build for this machine ($(uname -m)); gpuhq builds linux-x64 and linux-arm64" ;;
esac
FILE="gpuhq-agent-$TARGET"

fetch() { # fetch <url> <output file>
	if command -v curl >/dev/null 2>&1; then
		curl -fsSL --retry 3 -o "$2" "$1"
	elif command -v wget >/dev/null 2>&1; then
		wget -q -O "$2" "$1"
	else
		die "neither curl nor wget is installed"
	fi
}

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
fetch "$URL/agent/$FILE.sha256" "$WORK/$FILE.sha256" ||
	die "could not download $URL/agent/$FILE.sha256 (is --url the address of gpuhq, and is the $TARGET agent built there?)"
EXPECTED="$(cut -c1-64 "$WORK/$FILE.sha256")"
case "$EXPECTED" in *[!0-9a-f]* | "") die "$URL/agent/$FILE.sha256 does not hold a SHA-256" ;; esac
[ "${#EXPECTED}" -eq 64 ] || die "$URL/agent/$FILE.sha256 does not hold a SHA-256"
if [ -n "$BINARY" ]; then
	[ -f "$BINARY" ] || die "cannot read $BINARY"
	cp "$BINARY" "$WORK/$FILE"
else
	say "downloading $URL/agent/$FILE …"
	fetch "$URL/agent/$FILE" "$WORK/$FILE" || die "could not download $URL/agent/$FILE"
fi
# Checked before anything on this host changes; a mismatch is refused in one line.
ACTUAL="$(sha256sum "$WORK/$FILE" | cut -d' ' -f1)"
[ "$ACTUAL" = "$EXPECTED" ] ||
	die "refusing to install: $FILE has SHA-256 $ACTUAL but $URL publishes $EXPECTED (corrupted or tampered with); nothing was changed"
chmod 755 "$WORK/$FILE"
VERSION="$("$WORK/$FILE" version)" || die "the downloaded agent does not run on this machine"

umask 022
mkdir -p "$PREFIX"
AGENT="$PREFIX/gpuhq-agent"
# An older install ran the agent's sources on Bun: they go (the unit is rewritten below).
rm -rf "$PREFIX/lib" "$PREFIX/gpuhq-agent.ts" "$PREFIX/protocol.js" "$PREFIX/package.json"
cp "$WORK/$FILE" "$AGENT.new"
if [ -f "$AGENT" ]; then mv -f "$AGENT" "$AGENT.previous"; fi
mv -f "$AGENT.new" "$AGENT"
mkdir -p "$STATE_DIR"
chmod 700 "$STATE_DIR"
say "agent $VERSION installed as $AGENT (sha256 $ACTUAL)"

# --- enrolment -------------------------------------------------------------------------------
set -- --url "$URL" --state-dir "$STATE_DIR"
if [ -n "$PORT_RANGE" ]; then set -- "$@" --port-range "$PORT_RANGE"; fi
if [ -n "$PUBLIC_IP" ]; then set -- "$@" --public-ip "$PUBLIC_IP"; fi
if [ -n "$SIMULATE" ]; then set -- "$@" --simulate "$SIMULATE"; fi
if [ -n "$TOKEN_FILE" ]; then
	"$AGENT" enroll "$@" --token-file "$TOKEN_FILE" || die "enrolment failed (see the message above)"
	say "enrolled; the init token in $TOKEN_FILE is used up and can be deleted"
elif [ "$TOKEN_STDIN" -eq 1 ]; then
	"$AGENT" enroll "$@" --token-stdin || die "enrolment failed (see the message above)"
	say "enrolled"
elif [ -f "$STATE_DIR/credential.json" ]; then
	say "already enrolled ($STATE_DIR/credential.json); keeping that credential"
else
	die "this host is not enrolled yet: give --token-file <path> or --token-stdin with an init token from gpuhq"
fi

# --- service ---------------------------------------------------------------------------------
EXEC="$AGENT run --state-dir $STATE_DIR"
if [ -n "$SIMULATE" ]; then EXEC="$EXEC --simulate $SIMULATE"; fi
if [ -n "$PUBLIC_IP" ]; then EXEC="$EXEC --public-ip $PUBLIC_IP"; fi
# systemd creates and owns the state directory when it lies under /var/lib (the default).
case "$STATE_DIR" in
/var/lib/?*) STATE_LINES="StateDirectory=${STATE_DIR#/var/lib/}
StateDirectoryMode=0700" ;;
*) STATE_LINES="ReadWritePaths=$STATE_DIR" ;;
esac
mkdir -p "$UNIT_DIR"
cat >"$UNIT_DIR/$UNIT" <<EOF
# Written by the gpuhq agent installer; re-running install.sh rewrites it.
[Unit]
Description=gpuhq agent (presence, telemetry and commands for gpuhq)
Documentation=$URL/agent/install.sh
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
# root, because setting GPU power limits (nvidia-smi -pl), resetting a GPU and rebooting the
# host (commands from gpuhq) need it, and the credential lives in a root-only directory.
User=root
ExecStart=$EXEC
$STATE_LINES
# Restart on crashes, network trouble, agent.restart and a self-update (exit 75) …
Restart=always
RestartSec=5
# … but not after exit 78: not enrolled, credential revoked or agent too old. Enrol again.
RestartPreventExitStatus=78
# Hardening the commands allow. Nothing the agent runs needs new privileges (it is root already;
# nvidia-smi and systemctl reboot need no setuid), so NoNewPrivileges holds. /usr, /boot and /etc
# are read-only to it (ProtectSystem=full, not strict: $PREFIX must stay writable, since the
# agent replaces its own file when it updates). No kernel-module or /proc/sys protection: nvidia-smi
# may load the driver and set GPU state through them.
NoNewPrivileges=yes
ProtectSystem=full
ProtectHome=read-only
PrivateTmp=yes
ProtectControlGroups=yes
RestrictSUIDSGID=yes
RestrictRealtime=yes
LockPersonality=yes
UMask=0077
# A self-update's trial child runs beside the old process; stopping the service stops both.
KillMode=control-group
TimeoutStopSec=30

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
