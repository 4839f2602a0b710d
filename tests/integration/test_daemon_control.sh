#!/usr/bin/env bash
# connscoped's control socket: created 0600 in a 0700 directory; a peer
# that is neither root nor the daemon's user is refused (the file modes
# stop it first; with them opened up, SO_PEERCRED does) and logged;
# malformed, unknown-version, oversized, unknown and half-sent requests get
# an error while the daemon stays up and keeps serving; a stream reader that
# stops reading is dropped and counted; status, snapshot (text and JSON),
# reset work; a stream yields an update a second; without a daemon the
# commands say so in one line; a stale socket is replaced, a symlink or
# another daemon's live socket is not.
source "$(dirname "$0")/lib.sh"

CS_DAEMON=$CS_BUILD/connscoped
client() { python3 "$(dirname "$0")/ctl_client.py" "$@"; }
cs_start_server --workers 2 --quiet
dir=$CS_TMP/run
sock=$dir/connscoped.sock
# Request counts are compared exactly: traced all the time (test_daemon_sampling.sh covers the default windows).
"$CS_DAEMON" --port "$SERVER_PORT" --trace always --socket "$sock" 2>"$CS_TMP/daemon.log" &
daemon=$!; cs_pids+=("$daemon")
cs_wait_attached "$CS_TMP/daemon.log"
alive() { kill -0 "$daemon" 2>/dev/null || { cat "$CS_TMP/daemon.log"; fail "connscoped died"; }; }

# ---- the socket file
[[ $(stat -c %a "$dir") == 700 ]] || fail "socket directory mode $(stat -c %a "$dir"), not 700"
[[ $(stat -c %a "$sock") == 600 ]] || fail "socket mode $(stat -c %a "$sock"), not 600"
[[ -S $sock ]] || fail "$sock is not a socket"
echo "ok: directory 0700, socket 0600"

# ---- status, snapshot
"$CS_BIN" status --socket "$sock" >"$CS_TMP/status.txt" || fail "status failed"
cat "$CS_TMP/status.txt"
grep -q "connscoped is up (pid $daemon" "$CS_TMP/status.txt" || fail "status does not name the daemon"
grep -q "target     port $SERVER_PORT" "$CS_TMP/status.txt" || fail "status does not name the target"
grep -Eq "^  events     [0-9]+ taken in, [0-9]+ lost, [0-9]+ probe runs skipped by the kernel; [0-9]+ requests" \
  "$CS_TMP/status.txt" || fail "status lacks the events line with lost and skipped"

"$CS_LOAD" --port "$SERVER_PORT" --connections 4 --requests 2000 --quiet --json /dev/null || fail "load failed"
sleep 1.3 # a tick (once a second) after the last request: the windows hold them all
"$CS_BIN" snapshot --json --socket "$sock" >"$CS_TMP/snap.json" || fail "snapshot --json failed"
requests=$(json_get "$CS_TMP/snap.json" 'j["requests"]')
assert_cmp "$requests" '>=' 1990 "requests in the snapshot (2000 sent)"
assert_cmp "$requests" '<=' 2000 "requests in the snapshot (2000 sent)"
assert_cmp "$(json_get "$CS_TMP/snap.json" 'j["listeners"][0]["accepts"]')" '==' 4 "accepts in the snapshot"
assert_cmp "$(json_get "$CS_TMP/snap.json" 'sum(s["requests"] for s in j["live"]["seconds"])')" '==' "$requests" \
  "the per-second windows add up to the requests"
json_get "$CS_TMP/snap.json" 'j["live"]["source"]' | grep -qx daemon || fail "live.source is not daemon"
"$CS_BIN" snapshot --socket "$sock" >"$CS_TMP/snap.txt" || fail "snapshot failed"
grep -q "^requests    $requests " "$CS_TMP/snap.txt" || { cat "$CS_TMP/snap.txt"; fail "text snapshot: no requests line"; }
grep -q "^listener :$SERVER_PORT" "$CS_TMP/snap.txt" || fail "text snapshot: no listener"
echo "ok: snapshot (JSON and text) of the daemon's window"
"$CS_BIN" snapshot --json --slowest 5 --socket "$sock" >"$CS_TMP/slow.json" || fail "snapshot --slowest failed"
python3 - "$CS_TMP/slow.json" "$SERVER_PORT" <<'PY' || fail "snapshot --slowest: not the daemon's slowest requests"
import json, sys
j = json.load(open(sys.argv[1]))
s = j["slowest"]
assert len(s) == 5 and "live" in j, (len(s), list(j))
assert [r["total_us"] for r in s] == sorted((r["total_us"] for r in s), reverse=True), s
assert abs(s[0]["total_us"] - j["latency_us"]["max"]) < 0.002, (s[0], j["latency_us"]["max"])
assert all(r["port"] == int(sys.argv[2]) and r["peer"] == "127.0.0.1" and r["end_utc"] for r in s), s
print("ok: snapshot --slowest 5: slowest first, the first the max, each with its peer and time")
PY
"$CS_BIN" status --socket "$sock" | grep -q "^  processes  $SERVER_PID (csserver)" || fail "status does not name the server process"
echo "ok: status names the server process"

# ---- a stream: one update a second (≥ 3), each a whole snapshot
client "$sock" stream 3 >"$CS_TMP/stream.txt" || { cat "$CS_TMP/stream.txt"; fail "stream failed"; }
cat "$CS_TMP/stream.txt"
[[ $(grep -c '^update ' "$CS_TMP/stream.txt") -eq 3 ]] || fail "fewer than 3 stream updates"
echo "ok: 3 stream updates"

# ---- hostile clients: errors, and the daemon keeps serving
client "$sock" slow-reader 12 >"$CS_TMP/slow.txt" &
slow=$!
client "$sock" bad-magic | tee "$CS_TMP/c.txt"
grep -q "^ERROR .* error 1 " "$CS_TMP/c.txt" && grep -q closed "$CS_TMP/c.txt" || fail "bad magic: no error, or left open"
client "$sock" bad-version | tee "$CS_TMP/c.txt"
grep -q "^ERROR .* error 2 " "$CS_TMP/c.txt" && grep -q closed "$CS_TMP/c.txt" || fail "version 2: no error"
client "$sock" oversized | tee "$CS_TMP/c.txt"
grep -q "^ERROR .* error 3 .*over the limit" "$CS_TMP/c.txt" && grep -q closed "$CS_TMP/c.txt" || fail "oversized: no error"
client "$sock" unknown | tee "$CS_TMP/c.txt"
grep -q "^ERROR .* error 4 unknown request type 77" "$CS_TMP/c.txt" || fail "unknown type: no error"
grep -q "^ERROR .* error 5 " "$CS_TMP/c.txt" || fail "bad view payload: no error"
grep -q "^0x85 " "$CS_TMP/c.txt" || fail "no STATUS answer after the errors on the same connection"
client "$sock" partial | tee "$CS_TMP/c.txt"
grep -q "^ERROR .* error 9 " "$CS_TMP/c.txt" || fail "half a request: no timeout error"
alive
wait "$slow" || true
cat "$CS_TMP/slow.txt"
grep -q "closed by the daemon" "$CS_TMP/slow.txt" || fail "the slow stream reader was not dropped"
grep -q "dropped a stream reader" "$CS_TMP/daemon.log" || fail "the slow reader's drop is not logged"
[[ $(grep -c "rejected a request" "$CS_TMP/daemon.log") -ge 6 ]] || fail "rejections not logged"
alive
client "$sock" status | tail -1 >"$CS_TMP/st.json"
assert_cmp "$(json_get "$CS_TMP/st.json" 'j["control"]["rejected"]')" '>=' 6 "rejected requests counted"
assert_cmp "$(json_get "$CS_TMP/st.json" 'j["control"]["streams_dropped"]')" '>=' 1 "dropped stream readers counted"
"$CS_BIN" status --socket "$sock" >/dev/null || fail "status after the hostile clients"
echo "ok: malformed, other-version, oversized, unknown and partial requests refused; slow reader dropped; still serving"

# ---- a non-root peer (its copy of the client where it can read it)
chmod 711 "$CS_TMP"; mkdir -m 755 "$CS_TMP/pub"; cp "$(dirname "$0")/ctl_client.py" "$CS_TMP/pub/"
as_nobody() { setpriv --reuid nobody --regid nogroup --clear-groups "$@"; }
out=$(as_nobody /usr/bin/python3 "$CS_TMP/pub/ctl_client.py" "$sock" hello || true)
echo "nobody, default modes: $out"
[[ $out == *"Permission denied"* ]] || fail "nobody reached the socket through its 0600/0700 modes"
chmod 755 "$dir"; chmod 666 "$sock"   # open the doors: SO_PEERCRED must still say no
out=$(as_nobody /usr/bin/python3 "$CS_TMP/pub/ctl_client.py" "$sock" hello || true)
echo "nobody, opened modes: $out"
[[ $out == *"error 6 permission denied"* ]] || fail "nobody was not refused by the daemon"
grep -q "refused a connection from pid [0-9]* (uid 65534)" "$CS_TMP/daemon.log" || fail "the refusal is not logged"
out=$(as_nobody "$CS_BIN" status --socket "$sock" 2>&1 || true)
echo "connscope status as nobody: $out"
[[ $out == *"refused"* ]] || fail "connscope status as nobody: '$out'"
chmod 700 "$dir"; chmod 600 "$sock"
alive
echo "ok: a non-root peer is refused (file modes, then SO_PEERCRED) and logged"

# ---- reset
"$CS_BIN" reset --socket "$sock" | grep -q "reset" || fail "reset failed"
"$CS_BIN" snapshot --json --socket "$sock" >"$CS_TMP/snap2.json"
assert_cmp "$(json_get "$CS_TMP/snap2.json" 'j["requests"]')" '==' 0 "requests right after reset"
"$CS_LOAD" --port "$SERVER_PORT" --connections 2 --requests 500 --quiet --json /dev/null || fail "load failed"
# Until the daemon has read the last records (a busy machine delays it), 10 s at most.
for _ in $(seq 50); do
  "$CS_BIN" snapshot --json --socket "$sock" >"$CS_TMP/snap3.json"
  [[ $(json_get "$CS_TMP/snap3.json" 'j["requests"]') -ge 495 ]] && break
  sleep 0.2
done
assert_cmp "$(json_get "$CS_TMP/snap3.json" 'j["requests"]')" '>=' 495 "requests after reset (500 sent)"
assert_cmp "$(json_get "$CS_TMP/snap3.json" 'j["requests"]')" '<=' 500 "requests after reset (500 sent)"
grep -q "statistics reset by pid" "$CS_TMP/daemon.log" || fail "reset not logged"

# ---- one socket, one daemon; stale sockets, symlinks
rc=0; "$CS_DAEMON" --port "$SERVER_PORT" --socket "$sock" 2>"$CS_TMP/second.log" || rc=$?
[[ $rc -eq 1 ]] && grep -q "another connscoped already serves" "$CS_TMP/second.log" || fail "second daemon on a live socket (rc $rc)"
kill -TERM "$daemon"; wait "$daemon" || fail "connscoped exited $? on SIGTERM"
[[ ! -e $sock ]] || fail "the socket was left behind after SIGTERM"
echo "ok: one daemon per socket; the socket is removed on exit"

no=$CS_TMP/none.sock
for cmd in status snapshot reset; do
  rc=0; "$CS_BIN" $cmd --socket "$no" >"$CS_TMP/no.out" 2>"$CS_TMP/no.err" || rc=$?
  [[ $rc -eq 1 && $(wc -l <"$CS_TMP/no.err") -eq 1 ]] || fail "$cmd without a daemon: rc $rc, $(cat "$CS_TMP/no.err")"
  grep -q "no connscoped is running" "$CS_TMP/no.err" && grep -q "connscope attach" "$CS_TMP/no.err" || fail "$cmd: unclear message"
done
cat "$CS_TMP/no.err"
echo "ok: without a daemon, one line and exit 1"

python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])" "$sock"  # a stale socket
"$CS_DAEMON" --port "$SERVER_PORT" --socket "$sock" 2>"$CS_TMP/daemon2.log" &
daemon=$!; cs_pids+=("$daemon")
cs_wait_attached "$CS_TMP/daemon2.log"
grep -q "replaced the stale socket" "$CS_TMP/daemon2.log" || fail "stale socket not replaced"
"$CS_BIN" status --socket "$sock" >/dev/null || fail "status after replacing a stale socket"
kill -TERM "$daemon"; wait "$daemon" || true
ln -s /etc/passwd "$sock"
rc=0; "$CS_DAEMON" --port "$SERVER_PORT" --socket "$sock" 2>"$CS_TMP/sym.log" || rc=$?
[[ $rc -eq 1 ]] && grep -q "not a socket (a symlink)" "$CS_TMP/sym.log" || fail "a symlink at the socket path was not refused"
[[ -L $sock ]] || fail "the symlink was touched"
echo "ok: stale socket replaced; symlink refused and left alone"
