#!/usr/bin/env bash
# A 4-deep backlog and an accept thread taking 10 ms per connection, hit by a
# burst of 30 connecting clients: the queue overflows, the kernel drops SYNs
# (ListenOverflows) and handshakes' last ACKs, and local clients wait 1 s
# and more: for SYN retransmits, or with their connect done, for the data
# they retransmit until the server lets the connection in. connscope's
# drops must equal the kernel counter's delta, and it must find the slow
# connects behind the >= 1 s requests the clients measured.
# Local clients' handshakes are followed only while the queue could delay
# them (half full, or just dropped): one client at a time first, which
# never finds the queue so (each connection is accepted before its answer),
# has none followed; the burst has its delayed ones followed. A second
# connscope watches the burst as if the kernel had skipped every run of its
# state probe at a client's ESTABLISHED (connscope-test's
# CONNSCOPE_SKIP_RUNS, tests/hooks/probes_hooks.c: a softirq's
# run, while the probe runs in a task on that CPU, is skipped, and one such
# moment can take a whole burst): it must find the delayed connects all the
# same, from the clients' retransmits.
# The server and its clients run in a network namespace of the test's own,
# whose ListenOverflows counter no other test moves: the test shares the
# machine (nothing here is timed closer than the 1 s of a SYN's retry).
# integration: plain build
# (the sanitized build replays scenario 3's overflow recordings in
# test_sanitized_replay)
source "$(dirname "$0")/lib.sh"


cs_private_netns
cs_start_server --accept acceptor --workers 2 --accept-delay-us 10000 --backlog 4 --no-keepalive

# --verbose: its last line counts the local handshakes followed.
handshakes_followed() {
  grep -Eo '[0-9]+ local handshake\(s\) followed' "$1" | grep -Eo '^[0-9]+' || fail "no count of handshakes followed in $1"
}
"$CS_BIN" attach --pid "$SERVER_PID" --duration 30 --json --verbose >"$CS_TMP/calm.json" 2>"$CS_TMP/calm.err" &
cs=$!
cs_wait_attached "$CS_TMP/calm.err"
cs_netns_exec "$CS_LOAD" --port "$SERVER_PORT" --connections 1 --no-keepalive --requests 20 --duration 10 \
  --quiet || fail "csload (one client) failed"
sleep 0.3 # let the last close arrive
kill -INT "$cs"
wait "$cs" || { cat "$CS_TMP/calm.err"; fail "connscope failed (one client)"; }
calm_followed=$(handshakes_followed "$CS_TMP/calm.err")
note "one client at a time: $(json_get "$CS_TMP/calm.json" 'j["requests"]') requests, $calm_followed handshakes followed"
assert_cmp "$(json_get "$CS_TMP/calm.json" 'j["requests"]')" '==' 20 "requests of the one client"
assert_cmp "$calm_followed" '==' 0 "handshakes followed with the queue never half full"

overflows_before=$(netstat_counter ListenOverflows)
"$CS_BIN" attach --pid "$SERVER_PID" --duration 14 --json --verbose >"$CS_TMP/report.json" 2>"$CS_TMP/cs.err" &
cs=$!
cs_wait_attached "$CS_TMP/cs.err"
CONNSCOPE_SKIP_RUNS=client-established "$CS_TEST_BIN" attach --pid "$SERVER_PID" --duration 14 --json --verbose \
  >"$CS_TMP/skip.json" 2>"$CS_TMP/skip.err" &
cs_skip=$!
cs_wait_attached "$CS_TMP/skip.err"
cs_netns_exec "$CS_LOAD" --port "$SERVER_PORT" --connections 30 --no-keepalive --requests 300 --duration 10 \
  --json "$CS_TMP/load.json" --log "$CS_TMP/load.log" >/dev/null || fail "csload failed"
wait "$cs" || { cat "$CS_TMP/cs.err"; fail "connscope failed"; }
wait "$cs_skip" || { cat "$CS_TMP/skip.err"; fail "connscope failed (runs skipped)"; }
overflows_after=$(netstat_counter ListenOverflows)
kernel_overflows=$((overflows_after - overflows_before))

r=$CS_TMP/report.json
drops=$(json_get "$r" 'j["listeners"][0]["drops"]')
delayed=$(json_get "$r" 'j["listeners"][0]["handshakes"]["delayed_1s"]')
full=$(json_get "$r" 'j["listeners"][0]["backlog_full_share"]')
limit=$(json_get "$r" 'j["listeners"][0]["backlog_limit"]')
client_slow=$(awk '$4 >= 1000000000' "$CS_TMP/load.log" | wc -l)
note "drops $drops, kernel ListenOverflows +$kernel_overflows, connscope connects delayed>=1s $delayed, client requests>=1s $client_slow, full share $full, probe runs skipped $(json_get "$r" 'j["events"]["skipped"]')"
note "handshakes $(json_get "$r" 'j["listeners"][0]["handshakes"]'); events $(json_get "$r" 'j["events"]')"

assert_cmp "$limit" '==' 4 "backlog limit"
assert_cmp "$kernel_overflows" '>' 0 "the kernel saw overflows"
# connscope's drops are the listener's sk_drops less the third ACKs its
# kfree_skb probe saw dropped on the full queue (the kernel counts those
# twice there): a run of that probe the kernel skipped (counted in
# events.skipped) leaves one drop too many. Exact otherwise.
skipped=$(json_get "$r" 'j["events"]["skipped"]')
assert_cmp "$drops" '>=' "$kernel_overflows" "connscope drops >= ListenOverflows delta"
assert_cmp "$drops" '<=' "$((kernel_overflows + skipped))" "connscope drops <= ListenOverflows delta + skipped probe runs"
assert_cmp "$client_slow" '>' 0 "clients measured requests >= 1 s"
assert_cmp "$delayed" '>' 0 "connscope found connects delayed >= 1 s"
followed=$(handshakes_followed "$CS_TMP/cs.err")
note "local handshakes followed: $followed"
# Each delayed connect was followed, from its SYN or from its first retransmit.
assert_cmp "$followed" '>=' "$delayed" "handshakes followed >= connects found delayed"
skip_delayed=$(json_get "$CS_TMP/skip.json" 'j["listeners"][0]["handshakes"]["delayed_1s"]')
note "with every client's ESTABLISHED skipped: connects delayed>=1s $skip_delayed, handshakes $(json_get "$CS_TMP/skip.json" 'j["listeners"][0]["handshakes"]')"
assert_cmp "$skip_delayed" '>=' "$(python3 -c "print(int(0.8 * $client_slow))")" \
  "with the clients' ESTABLISHED runs skipped, connscope still finds >= 80% of the clients' >= 1 s requests"
# A request that waited >= 1 s in a closed loop waited behind a dropped SYN
# or last ACK (the accept queue itself drains in 4 x 20 ms): connscope
# should account for nearly all of them.
assert_cmp "$delayed" '>=' "$(python3 -c "print(int(0.8 * $client_slow))")" "connscope finds >= 80% of the clients' >= 1 s requests"
assert_cmp "$full" '>' 0.05 "backlog full share"
grep -q '"code":"backlog_full"' "$r" || fail "no backlog_full finding"
echo "ok: backlog_full finding"
