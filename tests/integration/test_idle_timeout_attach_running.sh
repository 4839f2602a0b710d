#!/usr/bin/env bash
# Scenario 4's idle timeout (the server closes keep-alive connections idle
# for 200 ms), attached while its clients already run:
#   csload, 8 connections pausing 300 ms between requests (closed by the
#   server, reconnected), as in scenario 4;
#   8 connections pausing 20 ms (never closed), opened before the attach
#   and used after it, then left silent: adopted at their first idle
#   moment, followed from there, and closed by the server 200 ms after
#   their last answer.
# The timeout is inferred as when attached first (scenario 4: 190-230 ms),
# and the adopted connections' idle closes count among the server's.
# integration: exclusive
# Runs alone: the idle gaps are timed, and another test's load delays the
# server's timer.
# integration: plain build
source "$(dirname "$0")/lib.sh"

cs_start_server --workers 2 --idle-timeout-ms 200

# Keep-alive connections: N of them, a GET on each every GAP ms for SECONDS, then silent until the server closes each.
cat >"$CS_TMP/steady.py" <<'PY'
import socket, sys, time
port, n, gap_s, seconds = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
conns = [socket.create_connection(("127.0.0.1", port)) for _ in range(n)]
for c in conns:
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
def get(c):
    c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    buf = b""
    while not buf.endswith(b"ok\n"):
        d = c.recv(4096)
        if not d:
            raise SystemExit("closed by the server while in use: the gap is too long for this machine")
        buf += d
end = time.monotonic() + seconds
while time.monotonic() < end:
    for c in conns:
        get(c)
    time.sleep(gap_s)
closed = 0
for c in conns:
    c.settimeout(5)
    closed += c.recv(1) == b""
print(closed, flush=True)
PY

cs_bg "$CS_LOAD" --busy-poll --port "$SERVER_PORT" --connections 8 --gap-ms 300 --duration 7 \
  --json "$CS_TMP/client.json" --quiet
load_pid=$BG_PID
"$CS_PYTHON" "$CS_TMP/steady.py" "$SERVER_PORT" 8 0.02 4 >"$CS_TMP/steady.out" &
steady_pid=$!; cs_pids+=("$steady_pid")
sleep 1.5

note "attached while both run"
"$CS_BIN" attach --pid "$SERVER_PID" --json >"$CS_TMP/report.json" 2>"$CS_TMP/cs.err" &
cs=$!; cs_pids+=("$cs")
cs_wait_attached "$CS_TMP/cs.err"
wait "$steady_pid" || fail "the steady client failed: $(cat "$CS_TMP/steady.out")"
wait "$load_pid" || fail "csload failed"
sleep 0.3
kill -INT "$cs"; wait "$cs" || { cat "$CS_TMP/cs.err"; fail "connscope failed"; }

r=$CS_TMP/report.json
note "idle_timeout $(json_get "$r" 'j["conditions"]["idle_timeout"]'); adopted $(json_get "$r" 'j["connections_adopted"]'), in flight at the attach $(json_get "$r" 'j["requests_in_flight_at_attach"]')"
assert_cmp "$(cat "$CS_TMP/steady.out")" == 8 "steady connections the server closed when they went silent"
assert_cmp "$(json_get "$r" 'j["connections_adopted"]')" == 8 "connections adopted (the steady ones)"
[[ $(json_get "$r" 'j["conditions"]["idle_timeout"]["flagged"]') == True ]] || fail "idle_timeout not flagged"
echo "ok: idle_timeout flagged"
# csload's: about 5 s / 0.3 s a connection less the first; the steady ones: 8.
assert_cmp "$(json_get "$r" 'j["conditions"]["idle_timeout"]["server_idle_closes"]')" '>=' 28 "server idle closes"
inferred=$(json_get "$r" 'j["conditions"]["idle_timeout"]["inferred_timeout_ms"]')
assert_cmp "$inferred" '>=' 190 "inferred timeout (ms) near 200, as when attached first"
assert_cmp "$inferred" '<=' 230 "inferred timeout (ms) near 200, as when attached first"
# The steady connections' requests after the attach: 2.5 s at one per 20 ms at most, at least 20 each.
assert_cmp "$(json_get "$r" 'j["requests"]')" '>=' 160 "requests timed"
assert_cmp "$(json_get "$r" 'j["events"]["lost"]')" == 0 "events lost"
