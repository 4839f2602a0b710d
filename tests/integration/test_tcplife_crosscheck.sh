#!/usr/bin/env bash
# Cross-check with an established tool: libbpf-tools' tcplife (tracepoint
# based, so it runs on this kernel) watches the same server connections as
# connscope. Connection counts and lifetimes must agree; who closed must be
# what was arranged: 4 clients pause 100 ms between 10 requests each, so
# the server's 50 ms idle timeout closes 9 of each one's connections (the
# client closes its last one when it is done, unless it takes 50 ms to:
# then the server does); then 6 keep-alive clients run for 2 s and close
# their connections themselves. Who closed is also the server's word: it
# counts its idle closes, and prints them as it exits.
# (Connection: close would not do: both ends close at once, and either
# may be first.)
source "$(dirname "$0")/lib.sh"

TCPLIFE=$(command -v tcplife || echo /usr/sbin/tcplife)
[[ -x $TCPLIFE ]] || fail "tcplife is missing (Debian package libbpf-tools)"

cs_start_server --workers 2 --idle-timeout-ms 50
# -L: server-side sockets only (local port = the server's).
# Line-buffered: its header says it is attached.
stdbuf -oL "$TCPLIFE" -L "$SERVER_PORT" >"$CS_TMP/tcplife.txt" 2>"$CS_TMP/tcplife.err" &
tcplife_pid=$!
cs_pids+=("$tcplife_pid")
for _ in $(seq 50); do grep -q PID "$CS_TMP/tcplife.txt" && break; sleep 0.1; done
grep -q PID "$CS_TMP/tcplife.txt" || { cat "$CS_TMP/tcplife.err"; fail "tcplife did not start"; }

load() {
  "$CS_LOAD" --port "$SERVER_PORT" --connections 4 --requests 40 --gap-ms 100 --quiet --json "$CS_TMP/paused.json" &&
  "$CS_LOAD" --port "$SERVER_PORT" --connections 6 --duration 2 --gap-ms 10 --quiet --json "$CS_TMP/keepalive.json"
}
cs_profile life load
sleep 0.5
kill -INT "$tcplife_pid"; wait "$tcplife_pid" 2>/dev/null || true

r=$CS_TMP/life.json
tl_count=$(awk 'NR > 1 && $1 ~ /^[0-9]+$/' "$CS_TMP/tcplife.txt" | wc -l)
read -r tl_p50 tl_max < <(awk 'NR > 1 && $1 ~ /^[0-9]+$/ { print $NF }' "$CS_TMP/tcplife.txt" | sort -n |
  awk '{ v[NR] = $1 } END { i = int((NR + 1) / 2); print v[i], v[NR] }')
cs_closed=$(json_get "$r" 'j["lifecycle"]["closed_by_server"] + j["lifecycle"]["closed_by_client"] + j["lifecycle"]["aborted"]')
cs_p50=$(json_get "$r" 'j["lifecycle"]["lifetime_p50_ms"]')
cs_max=$(json_get "$r" 'j["lifecycle"]["lifetime_max_ms"]')
note "tcplife: $tl_count connections, lifetime p50 $tl_p50 ms, max $tl_max ms; connscope: $cs_closed, p50 $cs_p50 ms, max $cs_max ms; $(json_get "$r" 'j["lifecycle"]')"

# The clients' connections: 4 + 36 after the idle closes, and 6 (more if a
# busy machine holds a keep-alive client past the 50 ms: the server closes
# its connection too, and it connects again).
opened() { json_get "$CS_TMP/$1.json" 'j["connections"] + j["reconnects"]'; }
assert_cmp "$(opened paused)" '==' 40 "the paused clients' connections"
assert_cmp "$tl_count" '==' "$(( $(opened paused) + $(opened keepalive) ))" "tcplife saw the clients' connections"
assert_cmp "$cs_closed" '==' "$tl_count" "connscope's connection count == tcplife's"
kill -TERM "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
idle_closes=$(grep -o 'idle closes [0-9]*' "$CS_TMP/server.$SERVER_PORT.log" | awk '{n += $3} END {print n + 0}')
assert_cmp "$(json_get "$r" 'j["lifecycle"]["closed_by_server"]')" '==' "$idle_closes" "closed by the server == the server's own count of idle closes"
assert_cmp "$(json_get "$r" 'j["lifecycle"]["closed_by_server"]')" '>=' 36 "closed by the server (idle timeout: 9 of each paused client's 10)"
assert_cmp "$(json_get "$r" 'j["lifecycle"]["closed_by_client"]')" '>=' 6 "closed by the clients (the 6 keep-alive ones at least)"
# connscope's lifetime ends when the connection leaves ESTABLISHED,
# tcplife's when it reaches CLOSE: one round trip later on loopback.
assert_cmp "$(python3 -c "print(abs($cs_p50 - $tl_p50))")" '<=' "$(python3 -c "print(max(0.1 * $tl_p50, 0.5))")" "lifetime p50 agrees"
assert_cmp "$(python3 -c "print(abs($cs_max - $tl_max))")" '<=' "$(python3 -c "print(0.02 * $tl_max)")" "longest lifetime agrees"
