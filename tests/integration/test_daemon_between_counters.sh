#!/usr/bin/env bash
# connscoped --between-windows counters: between tracing windows no probe
# runs for a connection (bpftool shows neither inet_sock_set_state nor the
# request probes then, and both in a window), and the kernel's TCP
# counters of the target's network namespace count the gaps. csserver
# runs in a namespace of the test's own, where nothing else opens a
# connection; a client in it makes a connection per request for 6 s while
# windows of 0.5 s open every 2 s:
#   - the connections accepted in windows (the listener's accepts) and
#     those the gaps' counters saw opened add up to the client's, give or
#     take one a window edge (a connection whose handshake and accept fall
#     on both sides of one);
#   - both parts are there, the gaps' the larger (three quarters of the
#     time), and the namespace's own PassiveOpens over the run is the
#     client's count;
#   - nothing overflowed, nothing was reset;
#   - status (JSON and text), the snapshot (JSON and text), top and
#     /metrics say the mode
#     and the counts, with the namespace's inode.
source "$(dirname "$0")/lib.sh"

CS_DAEMON=$CS_BUILD/connscoped
RATE=100
LOAD_S=6
ns=cs-itest-between-$$
between_cleanup() {
  local rc=$?
  cs_cleanup "$rc" || rc=$?
  ip netns del "$ns" 2>/dev/null || true
  exit "$rc"
}
trap between_cleanup EXIT
ip netns add "$ns"
ip -n "$ns" link set lo up
ino=$(stat -L -c %i "/var/run/netns/$ns")
port=8080 # the namespace is fresh: nobody else listens there
cs_bg ip netns exec "$ns" "$CS_SERVER" --port "$port" --quiet
server=$BG_PID
for _ in $(seq 100); do
  ip netns exec "$ns" ss -Htln "sport = :$port" | grep -q . && break
  sleep 0.05
done
# passive_opens: the namespace's own count, the truth of the run
passive_opens() {
  ip netns exec "$ns" awk '/^Tcp:/ { if (!h) { for (i = 1; i <= NF; i++) col[$i] = i; h = 1 } else print $col["PassiveOpens"] }' /proc/net/snmp
}

sock=$CS_TMP/run/between.sock
mport=$(cs_free_port)
opens_before=$(passive_opens)
cs_bg "$CS_DAEMON" --pid "$server" --trace 0.5/2 --between-windows counters --metrics "$mport" --socket "$sock" \
  2>"$CS_TMP/daemon.log"
daemon=$BG_PID
for _ in $(seq 300); do grep -q "capabilities dropped" "$CS_TMP/daemon.log" && break; sleep 0.1; done
grep -q "capabilities dropped" "$CS_TMP/daemon.log" || { cat "$CS_TMP/daemon.log"; fail "the daemon did not attach in 30 s"; }

cs_bg ip netns exec "$ns" "$CS_LOAD" --port "$port" --no-keepalive --connections 4 --rate "$RATE" \
  --duration "$LOAD_S" --json "$CS_TMP/load.json" --quiet
load=$BG_PID
# The links, looked at until both a gap and a window were seen.
saw_gap=0 saw_window=0
for i in $(seq 40); do
  daemon_links "$daemon" >"$CS_TMP/links.$i"
  # (a look while the probes are being attached or detached sees some of them: neither)
  if grep -qx 'tp:sk_data_ready' "$CS_TMP/links.$i" && grep -qx 'tp:inet_sock_set_state' "$CS_TMP/links.$i"; then
    saw_window=1
  elif ! grep -qE 'tp:(inet_sock_set_state|sock_recv_length|sock_send_length|kfree_skb|tcp_send_reset)|prog:on_(enter|exit)_accept' \
    "$CS_TMP/links.$i" && grep -q . "$CS_TMP/links.$i"; then
    saw_gap=1
  fi
  [[ $saw_gap == 1 && $saw_window == 1 ]] && break
  sleep 0.1
done
[[ $saw_window == 1 ]] || fail "no window seen in 40 looks at the daemon's links"
[[ $saw_gap == 1 ]] || fail "no gap without a connection probe seen in 40 looks at the daemon's links"
echo "ok: in a gap no probe of connections or packets is attached; in a window they are"
wait "$load" || fail "the load failed"
cs_wait_closed "$port" "$ns"
sleep 1.2 # the last closes' records, and the live figures' next refresh (once a second, a gap's so far)
"$CS_BIN" status --json --socket "$sock" >"$CS_TMP/status.json" || fail "status --json failed"
"$CS_BIN" status --socket "$sock" >"$CS_TMP/status.txt" || fail "status failed"
"$CS_BIN" snapshot --socket "$sock" >"$CS_TMP/snapshot.txt" || fail "snapshot failed"
"$CS_BIN" snapshot --json --socket "$sock" >"$CS_TMP/snapshot.json" || fail "snapshot --json failed"
"$CS_BIN" top --once --socket "$sock" >"$CS_TMP/top.txt" || fail "top --once failed"
curl -sf "http://127.0.0.1:$mport/metrics" >"$CS_TMP/metrics.txt" || fail "no /metrics"
opens_after=$(passive_opens)

s=$CS_TMP/status.json
client=$(json_get "$CS_TMP/load.json" 'j["requests"]')
errors=$(json_get "$CS_TMP/load.json" 'j["errors"]["total"]')
kernel_opens=$((opens_after - opens_before))
in_windows=$(json_get "$CS_TMP/snapshot.json" "sum(l['accepts'] for l in j['listeners'] if l['port'] == $port)")
gaps=$(json_get "$s" 'j["tracing"]["between_counts"]["connections_opened"]')
edges=$(json_get "$s" '2 * j["tracing"]["windows"]')
note "client: $client connections ($errors errors); the namespace's PassiveOpens: $kernel_opens; connscope: $in_windows accepted in windows + $gaps opened in the gaps ($(json_get "$s" 'j["tracing"]["between_counts"]["gaps"]') gap(s), $(json_get "$s" 'j["tracing"]["between_counts"]["gap_s"]') s; $edges window edges)"
assert_cmp "$errors" == 0 "client errors"
assert_cmp "$kernel_opens" == "$client" "the namespace's PassiveOpens over the run vs the client's connections"
[[ $(json_get "$s" 'j["tracing"]["between_windows"]') == counters ]] || fail "status: between_windows is not counters"
[[ $(json_get "$s" 'j["tracing"]["between_counts"]["valid"]') == True ]] || fail "the gaps' counters were not all read"
assert_cmp "$(json_get "$s" 'j["tracing"]["between_counts"]["netns"]')" == "$ino" "the namespace counted"
assert_cmp "$in_windows" '>' 0 "connections accepted in windows"
assert_cmp "$gaps" '>' "$in_windows" "connections opened in the gaps (three quarters of the time) vs in windows"
assert_cmp "$((in_windows + gaps))" '>=' "$((client - edges))" "windows' accepts + gaps' opens vs the client's connections"
assert_cmp "$((in_windows + gaps))" '<=' "$((client + edges))" "windows' accepts + gaps' opens vs the client's connections"
assert_cmp "$(json_get "$s" 'j["tracing"]["between_counts"]["listen_overflows"] + j["tracing"]["between_counts"]["established_resets"]')" \
  == 0 "overflows and resets in the gaps"
assert_cmp "$(json_get "$s" 'len(j["tracing"]["exact"])')" == 1 "figures said exact (the backlog samples)"

grep -q "the kernel counted in network namespace $ino (every port and process in it)" "$CS_TMP/status.txt" ||
  { cat "$CS_TMP/status.txt"; fail "status does not say what the kernel counted between windows"; }
grep -q "the kernel counted in network namespace $ino" "$CS_TMP/snapshot.txt" ||
  fail "the snapshot does not say what the kernel counted between windows"
grep -q "gaps, netns $ino (all ports): $gaps opened" "$CS_TMP/top.txt" ||
  { cat "$CS_TMP/top.txt"; fail "top does not say what the kernel counted between windows"; }
metric_opens=$(awk -v ns="netns=\"$ino\"" '/^connscope_between_windows_connections_opened_total[{]/ && index($0, ns) { print $NF }' \
  "$CS_TMP/metrics.txt")
[[ -n $metric_opens ]] || { grep between "$CS_TMP/metrics.txt"; fail "no connscope_between_windows_connections_opened_total for netns $ino"; }
# (the scrape came after status: the gap under way may have counted more since)
assert_cmp "$metric_opens" '>=' "$gaps" "/metrics' connections opened between windows vs status's"
grep -E '^  (tracing|between) ' "$CS_TMP/status.txt"
grep -A1 '^traced' "$CS_TMP/top.txt"
echo "ok: status, snapshot, top and /metrics say what the kernel counted between windows"
kill "$daemon" && wait "$daemon" || fail "connscoped did not stop cleanly"
