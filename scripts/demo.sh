#!/usr/bin/env bash
# make demo: the reference server with an accept bottleneck (one accept
# thread pausing 2 ms before each accept, a 16-deep backlog), ab from Debian
# driving non-keep-alive load, connscope attached to the running server.
# Prints what ab sees, then what connscope says about why. Under a minute.
set -euo pipefail
build=$(cd "${1:-build}" && pwd)
port=${DEMO_PORT:-18080}
tmp=$(mktemp -d /tmp/connscope-demo.XXXXXX)
server_pid=""
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

if [[ $(id -u) -ne 0 ]]; then
  echo "make demo: connscope loads BPF programs; run it as root (sudo make demo)" >&2
  exit 1
fi
if ss -Htln "sport = :$port" | grep -q .; then
  echo "make demo: port $port is taken; run with DEMO_PORT=another-port" >&2
  exit 1
fi

echo "== 1. reference server: one accept thread, 2 ms per accept, backlog 16"
"$build/csserver" --port "$port" --accept acceptor --workers 2 --accept-delay-us 2000 \
  --backlog 16 --no-keepalive >"$tmp/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do ss -Htln "sport = :$port" | grep -q . && break; sleep 0.05; done
head -n 1 "$tmp/server.log"

echo "== 2. connscope attaches to pid $server_pid (no restart), until the load ends"
"$build/connscope" attach --pid "$server_pid" --duration 50 >"$tmp/report.txt" &
cs_pid=$!
sleep 1

echo "== 3. ab: 3000 requests, 64 concurrent, no keep-alive (what users see today)"
ab -q -n 3000 -c 64 -s 20 "http://127.0.0.1:$port/" >"$tmp/ab.txt" 2>&1 || true
grep -E "^(Requests per second|Time per request|Failed requests)" "$tmp/ab.txt" | head -n 3
sed -n '/Percentage of the requests/,$p' "$tmp/ab.txt"

kill -INT "$cs_pid"   # Ctrl-C: stop and report
wait "$cs_pid"
echo
echo "== 4. connscope: why"
cat "$tmp/report.txt"
