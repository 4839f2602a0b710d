#!/usr/bin/env bash
# Connections older than the attach: connscope adopts them at their first
# idle moment, counts the request each had in flight then as partial, and
# never makes up what happened before the attach.
#   A: 10 keep-alive connections accepted and used before the attach (idle
#      at it), used again after it, then closed: adopted at their next
#      request, which is whole; their closes are partial (lifetime unknown).
#   B: 10 connections that entered the accept queue before the attach (the
#      server holds its accepts) and are accepted after it: their queue
#      waits are measured whole (TCP stamped their handshakes' end), at
#      least as long as the test held them; their first request (in flight
#      at the attach) is partial, their second whole (adopted).
#   C: 10 connections made after the attach: followed whole.
#   D: 10 connections accepted before the attach that had sent nothing:
#      their requests after it are whole (followed from their first byte),
#      their closes partial (their start was not seen).
source "$(dirname "$0")/lib.sh"

# A threaded HTTP/1.1 keep-alive server whose accept loop runs only while
# the gate file exists.
cat >"$CS_TMP/gated.py" <<'EOF'
import os, socket, sys, threading, time
port, gate = int(sys.argv[1]), sys.argv[2]
ls = socket.socket()
ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
ls.bind(("127.0.0.1", port))
ls.listen(64)
ls.settimeout(0.05)
def serve(c):
    buf = b""
    while True:
        while b"\r\n\r\n" not in buf:
            d = c.recv(4096)
            if not d:
                c.close()
                return
            buf += d
        buf = buf[buf.index(b"\r\n\r\n") + 4:]
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n")
while True:
    if not os.path.exists(gate):
        time.sleep(0.02)
        continue
    try:
        c, _ = ls.accept()
    except socket.timeout:
        continue
    c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF

# A client driven by commands on its stdin (one per line), answering "done":
#   open NAME N     open N connections as group NAME (no request yet)
#   get NAME        one GET / on each connection of NAME, wait for the answers
#   send NAME       one GET / on each, without waiting
#   wait NAME       read the answers to send
#   close NAME      close them
cat >"$CS_TMP/client.py" <<'EOF'
import socket, sys
port = int(sys.argv[1])
groups = {}
def answer(c):
    buf = b""
    while not buf.endswith(b"ok\n"):
        d = c.recv(4096)
        if not d:
            raise SystemExit("connection closed early")
        buf += d
for line in sys.stdin:
    cmd, name, *rest = line.split()
    if cmd == "open":
        groups[name] = [socket.create_connection(("127.0.0.1", port)) for _ in range(int(rest[0]))]
    for c in groups[name]:
        if cmd in ("get", "send"):
            c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        if cmd in ("get", "wait"):
            answer(c)
        if cmd == "close":
            c.close()
    print("done", flush=True)
EOF

port=$(cs_free_port)
gate=$CS_TMP/gate
touch "$gate"
cs_bg python3 "$CS_TMP/gated.py" "$port" "$gate"
SERVER_PID=$BG_PID
cs_wait_port "$port"

mkfifo "$CS_TMP/to_client" "$CS_TMP/from_client"
# (Not cs_bg: a function's redirections would open the fifos in this shell.)
"$CS_PYTHON" "$CS_TMP/client.py" "$port" <"$CS_TMP/to_client" >"$CS_TMP/from_client" &
cs_pids+=("$!")
exec 3>"$CS_TMP/to_client" 4<"$CS_TMP/from_client"
client() { # client COMMAND...: one command, wait for its "done"
  echo "$*" >&3
  local reply
  read -r -t 30 reply <&4 || fail "the client did not answer '$*'"
  [[ $reply == done ]] || fail "the client answered '$reply' to '$*'"
}

note "before the attach: A accepted and used, D accepted and silent, B queued with its requests"
client open A 10
client get A
client open D 10
# D accepted (the queue empty) before the gate goes: B alone must wait in it.
for _ in $(seq 100); do
  [[ $(ss -Htln "sport = :$port" | awk '{print $2}') -eq 0 ]] && break
  sleep 0.05
done
rm "$gate"
sleep 0.2 # the accept loop has seen the gate go
client open B 10
b_queued_ns=$(date +%s%N)
client send B
[[ $(ss -Htln "sport = :$port" | awk '{print $2}') -eq 10 ]] || fail "B is not waiting in the accept queue: $(ss -Htln "sport = :$port")"

note "attach"
"$CS_BIN" attach --pid "$SERVER_PID" --json >"$CS_TMP/report.json" 2>"$CS_TMP/cs.err" &
cs=$!; cs_pids+=("$cs")
cs_wait_attached "$CS_TMP/cs.err"

note "after the attach: B accepted and answered, everyone used again, C new"
b_held_us=$((($(date +%s%N) - b_queued_ns) / 1000))
touch "$gate"
client wait B
client get A
client get B
client open C 10
client get C
client get C
client get D
client close A
client close B
client close C
client close D
sleep 0.5
kill -INT "$cs"
rc=0; wait "$cs" || rc=$?
[[ $rc -eq 0 ]] || { cat "$CS_TMP/cs.err"; fail "connscope exited $rc"; }

r=$CS_TMP/report.json
note "the report: $(json_get "$r" 'j["events"]')"
assert_cmp "$(json_get "$r" 'j["listeners"][0]["accepts"]')" == 20 "accepts seen (B and C)"
assert_cmp "$(json_get "$r" 'j["listeners"][0]["accepts_partial"]')" == 0 "accepts without their queue wait"
assert_cmp "$(json_get "$r" 'j["events"]["partial_accepts"]')" == 0 "events.partial_accepts"
assert_cmp "$(json_get "$r" 'j["listeners"][0]["accept_wait_us"]["count"]')" == 20 "accept waits measured (B and C)"
# B waited from before the attach until the gate came back: at least that long.
assert_cmp "$(json_get "$r" 'j["listeners"][0]["accept_wait_us"]["max"]')" '>=' "$b_held_us" \
  "longest accept wait (B's) against the time the test held B (us)"
# B's first request is partial: its bytes came before the attach. A's
# request after the attach found it idle (its previous answer read and
# acknowledged): adopted there, whole; B's second likewise.
assert_cmp "$(json_get "$r" 'j["events"]["partial_requests"]')" == 10 "partial requests (B's first)"
assert_cmp "$(json_get "$r" 'j["requests_in_flight_at_attach"]')" == 10 "requests in flight at the attach (B's first)"
assert_cmp "$(json_get "$r" 'j["connections_adopted"]')" == 20 "connections adopted (A and B)"
assert_cmp "$(json_get "$r" 'j["events"]["partial_closes"]')" == 30 "partial closes (A, B and D)"
# C's 20 requests, D's 10, A's one and B's second are whole.
assert_cmp "$(json_get "$r" 'j["requests"]')" == 50 "whole requests (C, D, A, B's second)"
assert_cmp "$(json_get "$r" 'j["connections"]')" == 20 "requests that paid a set-up (C's and D's first)"
assert_cmp "$(json_get "$r" 'j["requests"] + j["events"]["partial_requests"]')" == 60 "requests seen in all"
# Nothing made up: only first requests of connections followed from their
# start take an accept-queue share; B's first is partial and its second,
# adopted, not its first. Had any of B's waits (each at least b_held_us)
# gone into one, the sum would reach it.
assert_cmp "$(json_get "$r" 'sum(t["accept_queue_us"] for t in j["threads"])')" '<' \
  "$b_held_us" "accept-queue time of requests (C's alone) against B's least wait (us)"
assert_cmp "$(json_get "$r" 'j["latency_us"]["max"]')" '<' \
  "$(json_get "$r" 'j["duration_s"] * 1e6')" "longest request within the run"
assert_cmp "$(json_get "$r" 'j["events"]["lost"]')" == 0 "events lost"
