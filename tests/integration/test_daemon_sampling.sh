#!/usr/bin/env bash
# connscoped's windows: requests traced 1 s in every P s (the default P is
# 10; here 6, the same code in less wait), the request probes detached
# in between. Two daemons watch the same steady load at once, one in
# windows and one with --trace always:
#   (a) the sampled daemon's accepts and closes are exact against the
#       client's connections (the lifecycle probes stay attached), and so
#       are its idle closes of connections made between windows, which it
#       keeps no request state for (TCP's own stamps tell their idle time);
#   (b) its p99 and top tail cause share (beside the run queue's, the
#       machine's own load) are within 10 % of the full tracing daemon's
#       on the same requests;
#   (c) bpftool link show lists its request probes (sk_data_ready,
#       sock_recv_length, sock_send_length) during a window and not between
#       windows, while inet_sock_set_state stays (the load starts between
#       the first two windows: they see it steady);
#   (d) status, the JSON snapshot, the text snapshot, top and /metrics say
#       what share of the time was traced.
# The load: 3 % of requests are answered 20 ms after they are read
# (/sleep/20: a timer, the loop keeps serving), so nothing queues behind
# them: the p99 lies among them (20 ms, handler time), far above what a
# busy machine's run-queue waits add to the others, a value that does not
# move with which requests a window happens to see. (A loop that blocks
# instead spreads the tail over the requests queued behind each block: a
# few hundred traced requests then put a different handful in the tail.)
# integration: exclusive
# Runs alone: both p99s are compared with each other and with the client's,
# which another test's load would move by milliseconds.
# integration: plain build
# Once, with the plain build: its comparison needs 13 s of steady load, and
# the windows' bookkeeping is unit-tested under ASan and valgrind.
source "$(dirname "$0")/lib.sh"

CS_DAEMON=$CS_BUILD/connscoped
CONNECTIONS=16
PERIOD_S=4
LOAD_S=13 # three windows of the load: some 1500 requests traced, 15 in the tail
IDLE_CONNECTIONS=6
IDLE_TIMEOUT_MS=1500 # the load's connections are never idle that long

cs_start_server --workers 2 --accept reuseport --idle-timeout-ms "$IDLE_TIMEOUT_MS"
sampled_sock=$CS_TMP/run/sampled.sock
always_sock=$CS_TMP/run/always.sock
sampled_mport=$(cs_free_port)
always_mport=$(cs_free_port)
# (--bpf-stats always: the two costs per request compared below are then both measured whole)
cs_bg "$CS_DAEMON" --port "$SERVER_PORT" --trace "1/$PERIOD_S" --metrics "$sampled_mport" --socket "$sampled_sock" --bpf-stats always \
  2>"$CS_TMP/sampled.log"
sampled=$BG_PID
cs_bg "$CS_DAEMON" --port "$SERVER_PORT" --trace always --metrics "$always_mport" --socket "$always_sock" \
  --bpf-stats always 2>"$CS_TMP/always.log"
always=$BG_PID
for log in sampled always; do
  for _ in $(seq 300); do grep -q "capabilities dropped" "$CS_TMP/$log.log" && break; sleep 0.1; done
  grep -q "capabilities dropped" "$CS_TMP/$log.log" || { cat "$CS_TMP/$log.log"; fail "$log daemon did not attach in 30 s"; }
done
echo "ok: both daemons attached"

request_probes_in() { grep -c -E '^tp:(sk_data_ready|sock_recv_length|sock_send_length)$' "$1" || true; }

# (c) The first window opens at the attach: wait for its end (the request
# probes detached), then start the load, so that the windows see it steady
# (its connections' setup, the accept queue's first requests, falls in no
# window: the lifecycle probes still count it), and wait for the next window.
links_until() { # links_until 0|3 NAME: until the sampled daemon holds that many request probes (at most 12 s)
  for i in $(seq 60); do
    daemon_links "$sampled" >"$CS_TMP/links.$2"
    grep -qx 'tp:inet_sock_set_state' "$CS_TMP/links.$2" || fail "inet_sock_set_state not attached ($2, sample $i)"
    [[ $(request_probes_in "$CS_TMP/links.$2") == "$1" ]] && { echo "ok: $1 request probes attached ($2, sample $i)"; return 0; }
    sleep 0.2
  done
  fail "the request probes were not seen $2 in 12 s"
}
links_until 0 detached
note "between windows: $(sort "$CS_TMP/links.detached" | tr '\n' ' ')"
for tp in inet_sock_set_state kfree_skb tcp_send_reset tcp_receive_reset; do
  grep -qx "tp:$tp" "$CS_TMP/links.detached" || fail "$tp detached between windows"
done
scrape() { curl -sf "http://127.0.0.1:$1/metrics"; }
metric() { scrape "$1" | awk -v m="$2" 'index($0, m "{") == 1 { s += $NF } END { print s + 0 }'; }
closed_by() { scrape "$1" | awk -v b="by=\"$2\"" 'index($0, "connscope_connections_closed_total{") == 1 && index($0, b) { s += $NF } END { print s + 0 }'; }
closes_seen() { # closes_seen N: until both daemons have read N closes from their rings (at most 30 s)
  for _ in $(seq 300); do
    [[ $(metric "$sampled_mport" connscope_connections_closed_total) -ge $1 &&
       $(metric "$always_mport" connscope_connections_closed_total) -ge $1 ]] && return 0
    sleep 0.1
  done
}
# (a) Right after the first window: connections made between two windows,
# one request each, then left idle until the server closes them (2 s of
# the 5 s before the next window: a machine at a load average of 10
# took more than 4). The sampled daemon keeps no request
# state for them, and counts their closes and idle closes all the same.
windows_before=$("$CS_BIN" status --json --socket "$sampled_sock" | json_get /dev/stdin 'j["tracing"]["windows"]')
idle_closed=$(timeout 20 python3 - "$SERVER_PORT" "$IDLE_CONNECTIONS" <<'PY'
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
conns = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(n)]
for c in conns:
    c.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
closed = 0
for c in conns:
    data = b""
    while True:  # the answer, then the server's close after its idle timeout
        chunk = c.recv(65536)
        if not chunk:
            break
        data += chunk
    closed += data.startswith(b"HTTP/1.1 200")
    c.close()
print(closed)
PY
) || fail "the idle clients failed"
windows_after=$("$CS_BIN" status --json --socket "$sampled_sock" | json_get /dev/stdin 'j["tracing"]["windows"]')
assert_cmp "$idle_closed" '==' "$IDLE_CONNECTIONS" "connections answered, then closed by the server when idle"
assert_cmp "$windows_after" '==' "$windows_before" "the idle connections were made and closed between two windows: windows opened"
"$CS_LOAD" --port "$SERVER_PORT" --connections "$CONNECTIONS" --rate 500 --duration "$LOAD_S" \
  --mix /sleep/20:0.03 --json "$CS_TMP/client.json" --quiet &
load=$!
cs_pids+=("$load")
links_until 3 attached
note "during a window: $(sort "$CS_TMP/links.attached" | tr '\n' ' ')"
echo "ok: request probes detached between windows, attached during one; lifecycle probes stay"
always_n=$(daemon_links "$always" | request_probes_in /dev/stdin)
[[ $always_n == 3 ]] || fail "--trace always: $always_n of the 3 request probes attached"
echo "ok: --trace always keeps its request probes attached"

wait "$load" || fail "the load failed"
connections=$(json_get "$CS_TMP/client.json" 'j["connections"]')
client_requests=$(json_get "$CS_TMP/client.json" 'j["requests"]')
[[ $(json_get "$CS_TMP/client.json" 'j["errors"]["total"]') == 0 ]] || fail "the client saw errors"

# csload closes its connections at its end; the daemons see the closes.
closes_seen $((connections + IDLE_CONNECTIONS))

# (b) the same requests seen by both: p99 and the tail's top cause.
"$CS_BIN" snapshot --json --socket "$sampled_sock" >"$CS_TMP/sampled.json" || fail "snapshot (sampled) failed"
"$CS_BIN" snapshot --json --socket "$always_sock" >"$CS_TMP/always.json" || fail "snapshot (always) failed"
for r in sampled always; do
  note "$r: p99 $(json_get "$CS_TMP/$r.json" 'j["latency_us"]["p99"]') us, requests $(json_get "$CS_TMP/$r.json" 'j["requests"]'), causes $(json_get "$CS_TMP/$r.json" '[(c["cause"], c["share"]) for c in j["tail"]["causes"][:3]]')"
done
note "client: $client_requests requests, p99 $(json_get "$CS_TMP/client.json" 'j["latency_us"]["p99"]') us (from send: $(json_get "$CS_TMP/client.json" 'j["from_send_us"]["p99"]') us)"
# The comparison needs the load steady: a machine that stalls the server or
# the client for longer than the slow requests take (other work on it) puts
# a tail in some seconds that the windows may or may not see. The client
# measures that: its p99, from each request's intended send time.
client_p99=$(json_get "$CS_TMP/client.json" 'j["latency_us"]["p99"]')
assert_cmp "$client_p99" '<' 40000 "the load was steady: the client's p99 (us) below twice the 20 ms requests"
p99_s=$(json_get "$CS_TMP/sampled.json" 'j["latency_us"]["p99"]')
p99_a=$(json_get "$CS_TMP/always.json" 'j["latency_us"]["p99"]')
assert_cmp "$(python3 -c "print(abs($p99_s - $p99_a) / $p99_a)")" '<=' 0.10 "sampled p99 $p99_s us within 10 % of full tracing's $p99_a us"
# The top cause and its share of the tail time that was not spent waiting
# for a CPU: the run queue's share is the machine's own load (its other
# work), which the windows see in some seconds and not in others.
top_beside_run_queue() {
  json_get "$1" '[c["cause"] for c in j["tail"]["causes"] if c["cause"] != "run_queue"][0]'
}
share_beside_run_queue() {
  json_get "$1" '(lambda rest: round(rest[0]["share"] / sum(c["share"] for c in rest), 4))([c for c in j["tail"]["causes"] if c["cause"] != "run_queue"])'
}
top_s=$(top_beside_run_queue "$CS_TMP/sampled.json")
top_a=$(top_beside_run_queue "$CS_TMP/always.json")
[[ $top_s == "$top_a" ]] || fail "top tail cause beside the run queue: $top_s sampled, $top_a traced fully"
share_s=$(share_beside_run_queue "$CS_TMP/sampled.json")
share_a=$(share_beside_run_queue "$CS_TMP/always.json")
assert_cmp "$(python3 -c "print(abs($share_s - $share_a) / $share_a)")" '<=' 0.10 \
  "top cause $top_s: share beside the run queue $share_s within 10 % of $share_a"
# The full tracing daemon saw every request; the sampled one a share of them.
assert_cmp "$(json_get "$CS_TMP/always.json" 'j["requests"]')" '>=' "$(python3 -c "print($client_requests * 0.99)")" "full tracing: requests (client sent $client_requests)"

# (d) every output says what was traced.
share=$(json_get "$CS_TMP/sampled.json" 'j["tracing"]["traced_share"]')
note "sampled: tracing $(json_get "$CS_TMP/sampled.json" 'j["tracing"]')"
[[ $(json_get "$CS_TMP/sampled.json" 'j["tracing"]["mode"]') == windows ]] || fail "snapshot: tracing mode not windows"
assert_cmp "$share" '>=' "$(python3 -c "print(0.5 / $PERIOD_S)")" "traced share"
assert_cmp "$share" '<=' "$(python3 -c "print(2.0 / $PERIOD_S)")" "traced share"
traced=$(json_get "$CS_TMP/sampled.json" 'j["tracing"]["requests_traced"]')
assert_cmp "$traced" '==' "$(json_get "$CS_TMP/sampled.json" 'j["requests"]')" "requests_traced is the report's requests"
assert_cmp "$traced" '<' "$(python3 -c "print($client_requests * 0.5)")" "the sampled daemon traced a share of the requests"
# What each costs per request: the sampled daemon's request probes ran a
# tenth of the time, and its BPF time is shared over every request served
# (estimated as tracing does), not over the tenth it traced.
note "cost: sampled $(json_get "$CS_TMP/sampled.json" 'j["cost"]'), always $(json_get "$CS_TMP/always.json" 'j["cost"]')"
[[ $(json_get "$CS_TMP/sampled.json" 'j["cost"]["requests_estimated"]') == True ]] || fail "sampled: cost requests not estimated"
# (the same estimate; the cost counts every request record, unanswered ones too)
assert_cmp "$(json_get "$CS_TMP/sampled.json" 'abs(j["cost"]["requests_served"] / j["tracing"]["requests_estimated"] - 1)')" '<=' 0.02 \
  "sampled: cost's requests served vs tracing's estimate"
assert_cmp "$(json_get "$CS_TMP/sampled.json" 'j["cost"]["requests_served"]')" '>=' "$(python3 -c "print($client_requests * 0.5)")" \
  "sampled: cost's requests served, estimated (client sent $client_requests)"
[[ $(json_get "$CS_TMP/always.json" 'j["cost"]["requests_estimated"]') == False ]] || fail "always: cost requests estimated"
cost_s=$(json_get "$CS_TMP/sampled.json" 'j["cost"]["bpf_ns_per_request"]')
cost_a=$(json_get "$CS_TMP/always.json" 'j["cost"]["bpf_ns_per_request"]')
assert_cmp "$cost_s" '<' "$(python3 -c "print(0.5 * $cost_a)")" "BPF ns per request: sampled below half of full tracing's ($cost_a)"
[[ $(json_get "$CS_TMP/always.json" 'j["tracing"]["mode"]') == always ]] || fail "--trace always: mode not always"
assert_cmp "$(json_get "$CS_TMP/always.json" 'j["tracing"]["traced_share"]')" '==' 1 "--trace always: traced share"
"$CS_BIN" status --socket "$sampled_sock" >"$CS_TMP/status.txt" || fail "status failed"
grep -E '^  tracing +1 s in every '"$PERIOD_S"' s: [0-9.]+ % of the time, [0-9]+ requests traced of ~[0-9]+' "$CS_TMP/status.txt" ||
  { cat "$CS_TMP/status.txt"; fail "status does not say what was traced"; }
"$CS_BIN" status --json --socket "$sampled_sock" >"$CS_TMP/status.json" || fail "status --json failed"
[[ $(json_get "$CS_TMP/status.json" 'j["tracing"]["mode"]') == windows ]] || fail "status --json: no tracing"
"$CS_BIN" snapshot --socket "$sampled_sock" >"$CS_TMP/sampled.txt" || fail "snapshot (text) failed"
grep -E '^traced [0-9.]+ s of [0-9.]+ s \([0-9.]+ %: 1 s windows every '"$PERIOD_S"' s' "$CS_TMP/sampled.txt" ||
  { head -5 "$CS_TMP/sampled.txt"; fail "the text snapshot does not say what was traced"; }
"$CS_BIN" top --once --socket "$sampled_sock" >"$CS_TMP/top.txt" 2>&1 || fail "top --once failed"
grep -E '^traced [0-9.]+ % \(1 s every '"$PERIOD_S"' s\)' "$CS_TMP/top.txt" || { cat "$CS_TMP/top.txt"; fail "top does not say what was traced"; }
scrape "$sampled_mport" >"$CS_TMP/metrics.txt"
for name in connscope_traced_seconds_total connscope_traced_ratio connscope_trace_windows_total \
            connscope_requests_estimated connscope_requests_cut_total; do
  grep -q "^$name{" "$CS_TMP/metrics.txt" || fail "no $name series"
done
promtool check metrics <"$CS_TMP/metrics.txt" || fail "promtool rejects the metrics"
ratio=$(metric "$sampled_mport" connscope_traced_ratio)
assert_cmp "$ratio" '<=' "$(python3 -c "print(2.0 / $PERIOD_S)")" "connscope_traced_ratio"
echo "ok: status, snapshots, top and /metrics say what was traced"

kill -TERM "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
total=$((connections + IDLE_CONNECTIONS))
closes_seen "$total"
for mport in "$sampled_mport" "$always_mport"; do
  assert_cmp "$(metric "$mport" connscope_accepts_total)" '==' "$total" "accepts on :$mport (client's connections)"
  assert_cmp "$(metric "$mport" connscope_connections_closed_total)" '==' "$total" "closes on :$mport (client's connections)"
  assert_cmp "$(closed_by "$mport" server)" '==' "$IDLE_CONNECTIONS" "closed by the server on :$mport (the idle ones)"
  assert_cmp "$(closed_by "$mport" client)" '==' "$connections" "closed by the client on :$mport (csload's)"
  assert_cmp "$(metric "$mport" connscope_idle_closes_total)" '==' "$IDLE_CONNECTIONS" "idle closes on :$mport"
done
echo "ok: accepts, closes by side and idle closes exact, between windows too"

for d in "$sampled" "$always"; do
  kill -TERM "$d"
  timeout 10 tail --pid="$d" -f /dev/null || fail "connscoped $d did not stop within 10 s"
  wait "$d" || fail "connscoped $d exited $? on SIGTERM"
done
grep "tracing window" "$CS_TMP/sampled.log" || true
echo "PASS"
