#!/usr/bin/env bash
# A 4-deep backlog and an accept thread taking 20 ms per connection, hit by a
# burst of 60 connecting clients: the queue overflows, the kernel drops SYNs
# (ListenOverflows), and local clients wait >= 1 s for their SYN retransmits.
# connscope's drops must equal the kernel counter's delta, and it must find
# the >= 1 s handshakes that the clients themselves measured.
source "$(dirname "$0")/lib.sh"

netstat_counter() {  # netstat_counter NAME: TcpExt value from /proc/net/netstat
  awk -v name="$1" '/^TcpExt:/ { if (!h) { for (i = 1; i <= NF; i++) col[$i] = i; h = 1 } else print $col[name] }' /proc/net/netstat
}

cs_start_server --accept acceptor --workers 2 --accept-delay-us 20000 --backlog 4 --no-keepalive
overflows_before=$(netstat_counter ListenOverflows)
"$CS_BIN" attach --pid "$SERVER_PID" --duration 12 --json >"$CS_TMP/report.json" 2>"$CS_TMP/cs.err" &
cs=$!
sleep 1
"$CS_LOAD" --port "$SERVER_PORT" --connections 60 --no-keepalive --duration 8 \
  --json "$CS_TMP/load.json" >/dev/null || fail "csload failed"
wait "$cs" || { cat "$CS_TMP/cs.err"; fail "connscope failed"; }
overflows_after=$(netstat_counter ListenOverflows)
kernel_overflows=$((overflows_after - overflows_before))

r=$CS_TMP/report.json
drops=$(json_get "$r" 'j["listeners"][0]["drops"]')
delayed=$(json_get "$r" 'j["listeners"][0]["handshakes"]["delayed_1s"]')
full=$(json_get "$r" 'j["listeners"][0]["backlog_full_share"]')
limit=$(json_get "$r" 'j["listeners"][0]["backlog_limit"]')
client_slow=$(json_get "$CS_TMP/load.json" 'j["connects_over_1s"]')
note "drops $drops, kernel ListenOverflows +$kernel_overflows, connscope delayed>=1s $delayed, client connects>=1s $client_slow, full share $full"

assert_cmp "$limit" '==' 4 "backlog limit"
assert_cmp "$kernel_overflows" '>' 0 "the kernel saw overflows"
assert_cmp "$drops" '==' "$kernel_overflows" "connscope drops == ListenOverflows delta"
assert_cmp "$client_slow" '>' 0 "clients measured connects >= 1 s"
assert_cmp "$delayed" '>' 0 "connscope found handshakes delayed >= 1 s"
# Each client-side slow connect is a SYN retransmit connscope should see;
# clients still retrying when the load stopped are not counted by either.
assert_cmp "$delayed" '>=' "$(python3 -c "print(int(0.8 * $client_slow))")" "connscope finds >= 80% of the clients' slow connects"
assert_cmp "$full" '>' 0.05 "backlog full share"
grep -q '"code":"backlog_full"' "$r" || fail "no backlog_full finding"
echo "ok: backlog_full finding"
