#!/usr/bin/env bash
# Attached to a server that already holds connections in its accept queue
# and will not accept them while it is watched: csserver's acceptor with a
# connection limit of 2 (--max-conns), both slots held by a keep-alive
# client, and 3 more clients connected, their requests sent, queued before
# the attach. No accept of theirs is ever seen, and none of their requests:
# connscope must still say they waited the whole window (the listener's
# queued_through and the queued_unseen finding), exactly 3, as the test
# and the kernel's own queue depth know; the held client's requests are
# counted as usual. Once the slots free, the 3 get their answers.
# integration: plain build
# (shared: counts only, on a queue no other test's load moves)
source "$(dirname "$0")/lib.sh"

queued=3
cs_start_server --accept acceptor --workers 2 --max-conns 2
cs_bg "$CS_LOAD" --port "$SERVER_PORT" --connections 2 --gap-ms 20 --duration 8 --json "$CS_TMP/held.json" --quiet
held_pid=$BG_PID
# The queue's depth as the kernel gives it (ss: a listener's Recv-Q).
queue_depth() { ss -Hltn "sport = :$SERVER_PORT" | awk '{ print $2; exit }'; }
# Both slots held (the server's side of the two connections) before the others connect.
for _ in $(seq 100); do
  [[ $(ss -Htn state established "sport = :$SERVER_PORT" | wc -l) -ge 2 ]] && break
  sleep 0.05
done
# The queued clients: each connects, sends its request and waits for the answer (10 s at most).
cat >"$CS_TMP/queued.py" <<'PY'
import socket, sys, time
port, count, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
socks = []
for _ in range(count):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.1\r\nHost: queued\r\n\r\n")
    s.settimeout(10)
    socks.append(s)
answered = 0
for s in socks:
    try:
        if s.recv(4096).startswith(b"HTTP/1.1 200"):
            answered += 1
    except OSError:
        pass
    s.close()  # its slot free for the next
open(out, "w").write("%d\n" % answered)
PY
cs_bg python3 "$CS_TMP/queued.py" "$SERVER_PORT" "$queued" "$CS_TMP/queued.out"
queued_pid=$BG_PID
for _ in $(seq 100); do [[ $(queue_depth) == "$queued" ]] && break; sleep 0.05; done
assert_cmp "$(queue_depth)" == "$queued" "the kernel's accept queue before the attach"

CS_ON_STOPPING='depth_at_stop=$(queue_depth)' cs_attach_window queued 1.5
r=$CS_TMP/queued.json
note "queue at the stop: $depth_at_stop; listener: $(json_get "$r" '{k: v for k, v in j["listeners"][0].items() if k in ("accepts", "backlog_max", "backlog_nonempty_share", "queued_through", "queued_through_us")}'); requests $(json_get "$r" 'j["requests"]')"
note "findings: $(json_get "$r" '[(f["code"], f["text"]) for f in j["findings"]]')"
assert_cmp "$depth_at_stop" == "$queued" "the kernel's accept queue at the stop: none accepted"
assert_cmp "$(json_get "$r" 'j["listeners"][0]["queued_through"]')" == "$queued" \
  "connections queued through the window (the $queued clients queued before the attach)"
assert_cmp "$(json_get "$r" 'j["listeners"][0]["queued_through_us"]')" '>=' \
  "$(python3 -c "print(0.9 * ($WINDOW_TO_NS - $WINDOW_FROM_NS) / 1000)")" "their wait: the whole window"
assert_cmp "$(json_get "$r" '[f["figures"]["queued"] for f in j["findings"] if f["code"] == "queued_unseen"][0]')" \
  == "$queued" "the queued_unseen finding's count"
assert_cmp "$(json_get "$r" 'j["requests"]')" '>' 0 "the held connections' requests, counted"
"$CS_BIN" report "$CS_TMP/queued.cstrace" >"$CS_TMP/queued.txt" || fail "text report failed"
grep -q "^  queued *$queued connection(s) in the queue through the whole run" "$CS_TMP/queued.txt" \
  || { cat "$CS_TMP/queued.txt"; fail "the text report's listener does not say so"; }
echo "ok: the text report's listener says so"

# The slots free: the queued clients are accepted and answered.
wait "$held_pid" || fail "csload failed (the held connections)"
wait "$queued_pid" || fail "the queued clients failed"
assert_cmp "$(cat "$CS_TMP/queued.out")" == "$queued" "the queued clients answered once the slots freed"
