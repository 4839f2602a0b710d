# Shared helpers for integration tests. Source it; it sets `set -euo pipefail`
# and an EXIT trap that stops every process the test started.
set -euo pipefail
: "${CS_BUILD:?CS_BUILD must name the build directory}"
CS_BIN=$CS_BUILD/connscope
CS_SERVER=$CS_BUILD/csserver
CS_LOAD=$CS_BUILD/csload
CS_TMP=$(mktemp -d /tmp/cs-itest.XXXXXX)
cs_pids=()

cs_cleanup() {
  local p
  for p in "${cs_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 0.2
  for p in "${cs_pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$CS_TMP"
}
trap cs_cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
note() { echo "== $*"; }

# A TCP port nobody listens on, picked at random in 20000-39999.
cs_free_port() {
  local port
  for _ in $(seq 50); do
    port=$((20000 + RANDOM % 20000))
    if ! ss -Htln "sport = :$port" | grep -q .; then echo "$port"; return; fi
  done
  fail "no free port found"
}

# Wait until something listens on 127.0.0.1:$1 (at most 5 s).
cs_wait_port() {
  for _ in $(seq 100); do
    ss -Htln "sport = :$1" | grep -q . && return 0
    sleep 0.05
  done
  fail "nothing listens on port $1 after 5 s"
}

# cs_start_server ARGS...: starts the reference server on a free port.
# Sets SERVER_PID and SERVER_PORT.
cs_start_server() {
  SERVER_PORT=$(cs_free_port)
  "$CS_SERVER" --port "$SERVER_PORT" "$@" >"$CS_TMP/server.$SERVER_PORT.log" 2>&1 &
  SERVER_PID=$!
  cs_pids+=("$SERVER_PID")
  cs_wait_port "$SERVER_PORT"
}

# Run a command in the background, remembered for cleanup. Sets BG_PID.
cs_bg() { "$@" & BG_PID=$!; cs_pids+=("$BG_PID"); }

# jq-free JSON reading: python3 is on every Debian image we use.
# json_get FILE EXPR: prints the value of the Python expression EXPR over `j`.
json_get() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

# assert_cmp A OP B [what]: numeric comparison with floats, OP one of < <= > >= ==.
assert_cmp() {
  python3 -c 'import sys; a=float(sys.argv[1]); b=float(sys.argv[3]); sys.exit(0 if eval("a "+sys.argv[2]+" b") else 1)' "$1" "$2" "$3" \
    || fail "${4:-check}: expected $1 $2 $3"
  echo "ok: ${4:-check}: $1 $2 $3"
}
