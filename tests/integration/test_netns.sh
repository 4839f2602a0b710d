#!/usr/bin/env bash
# Servers in their own network namespaces, as containers run them. Two
# csserver in two namespaces listen on the same 127.0.0.1 port: attached by
# pid to one, connscope counts exactly the requests its clients sent there
# and none of the other's; '--port P --netns NS' attached to the other at
# the same time counts exactly the other's. Then a listen overflow in each
# namespace, one attached by pid, the other by --port --netns: each report's
# drops and kernel counters match that namespace's own ListenOverflows. The
# reports carry the namespace's inode. Each server's clients in its own
# namespace are its local clients, followed by its connscope alone. Last,
# clients in the other namespace over a veth pair: the server's side of
# their connections is counted, and they are remote clients.
source "$(dirname "$0")/lib.sh"

ns_a=cs-itest-a-$$
ns_b=cs-itest-b-$$
veth=csv$$ # the veth pair's ends, veth-a and veth-b: within the 15 bytes of a link name
netns_cleanup() {
  local rc=$?
  cs_cleanup "$rc" || rc=$?
  ip netns del "$ns_a" 2>/dev/null || true
  ip netns del "$ns_b" 2>/dev/null || true
  exit "$rc"
}
trap netns_cleanup EXIT
for ns in "$ns_a" "$ns_b"; do
  ip netns add "$ns"
  ip -n "$ns" link set lo up
done
ino_a=$(stat -L -c %i "/var/run/netns/$ns_a")
ino_b=$(stat -L -c %i "/var/run/netns/$ns_b")
port=8080 # the same in both: the namespaces are fresh, nobody else listens there

# ns_start NS VAR ARGS...: csserver in NS on $port; its pid in VAR.
ns_start() {
  local ns=$1 var=$2; shift 2
  cs_bg ip netns exec "$ns" "$CS_SERVER" --port "$port" --quiet "$@"
  # ip netns exec runs the server in its own process (exec after setns).
  printf -v "$var" '%s' "$BG_PID"
  for _ in $(seq 100); do
    ip netns exec "$ns" ss -Htln "sport = :$port" | grep -q . && return 0
    sleep 0.05
  done
  fail "nothing listens on port $port in $ns after 5 s"
}
# ns_overflows NS: ListenOverflows of namespace NS
ns_overflows() {
  ip netns exec "$1" awk '/^TcpExt:/ { if (!h) { for (i = 1; i <= NF; i++) col[$i] = i; h = 1 } else print $col["ListenOverflows"] }' /proc/net/netstat
}

note "--netns that names no network namespace"
for bad in "cs-itest-none-$$" /etc/hostname; do
  if "$CS_BIN" attach --port "$port" --netns "$bad" --duration 1 >/dev/null 2>"$CS_TMP/bad.err"; then
    fail "--netns $bad accepted"
  fi
  grep -q "^connscope: --netns $bad: not a network namespace" "$CS_TMP/bad.err" || fail "--netns $bad: $(cat "$CS_TMP/bad.err")"
done
echo "ok: --netns refuses what is not a network namespace"
# The port is free in the fresh namespace, whatever listens on it here.
if "$CS_BIN" attach --port "$port" --netns "$ns_a" --duration 1 >/dev/null 2>"$CS_TMP/empty.err"; then
  fail "--port $port --netns $ns_a accepted with nobody listening there"
fi
grep -q "^connscope: nobody listens on TCP port $port in network namespace $ns_a" "$CS_TMP/empty.err" \
  || fail "--netns with nobody listening: $(cat "$CS_TMP/empty.err")"
echo "ok: --port --netns looks in that namespace only"

note "isolation: the same port in two namespaces"
ns_start "$ns_a" server_a --workers 2
ns_start "$ns_b" server_b --workers 2
[[ $(readlink "/proc/$server_a/ns/net") == "net:[$ino_a]" ]] || fail "server a not in $ns_a"
"$CS_BIN" attach --pid "$server_a" --duration 120 --json >"$CS_TMP/a.json" 2>"$CS_TMP/a.err" &
cs_a=$!
cs_pids+=("$cs_a")
# b is recorded, then reported from its trace: the labels travel in the file.
"$CS_BIN" record --port "$port" --netns "$ns_b" --duration 120 -o "$CS_TMP/b.cstrace" 2>"$CS_TMP/b.err" &
cs_b=$!
cs_pids+=("$cs_b")
cs_wait_attached "$CS_TMP/a.err"
cs_wait_attached "$CS_TMP/b.err"
# Different counts, at the same time: a report holding the other's requests cannot match.
ip netns exec "$ns_a" "$CS_LOAD" --port "$port" --connections 3 --requests 700 --json "$CS_TMP/load_a.json" >/dev/null &
load_a=$!
ip netns exec "$ns_b" "$CS_LOAD" --port "$port" --connections 5 --requests 1100 --json "$CS_TMP/load_b.json" >/dev/null \
  || fail "csload in $ns_b failed"
wait "$load_a" || fail "csload in $ns_a failed"
cs_wait_closed "$port" "$ns_a"
cs_wait_closed "$port" "$ns_b"
kill -INT "$cs_a" "$cs_b"
wait "$cs_a" || { cat "$CS_TMP/a.err"; fail "connscope --pid failed"; }
wait "$cs_b" || { cat "$CS_TMP/b.err"; fail "connscope record --port --netns failed"; }
"$CS_BIN" report --json "$CS_TMP/b.cstrace" >"$CS_TMP/b.json" || fail "connscope report of b's trace failed"
sent_a=$(json_get "$CS_TMP/load_a.json" 'j["requests"]')
sent_b=$(json_get "$CS_TMP/load_b.json" 'j["requests"]')
note "clients: $sent_a requests in $ns_a, $sent_b in $ns_b"
note "a: $(json_get "$CS_TMP/a.json" 'j["target"], j["target_labels"], j["requests"]')"
note "b: $(json_get "$CS_TMP/b.json" 'j["target"], j["target_labels"], j["requests"]')"
assert_cmp "$(json_get "$CS_TMP/a.json" 'j["requests"]')" '==' "$sent_a" "--pid in $ns_a: requests = its clients'"
assert_cmp "$(json_get "$CS_TMP/a.json" 'j["listeners"][0]["accepts"]')" '==' 3 "--pid in $ns_a: accepts = its connections"
assert_cmp "$(json_get "$CS_TMP/b.json" 'j["requests"]')" '==' "$sent_b" "--port --netns $ns_b: requests = its clients'"
assert_cmp "$(json_get "$CS_TMP/b.json" 'j["listeners"][0]["accepts"]')" '==' 5 "--port --netns $ns_b: accepts = its connections"
# Each namespace's clients are local to its server, and followed from their end by its connscope alone.
assert_cmp "$(json_get "$CS_TMP/a.json" '[c["connections"] for c in j["clients"] if c["comm"] == "csload"][0]')" '==' 3 "--pid in $ns_a: its local client's connections"
assert_cmp "$(json_get "$CS_TMP/b.json" '[c["connections"] for c in j["clients"] if c["comm"] == "csload"][0]')" '==' 5 "--port --netns $ns_b: its local client's connections"
assert_cmp "$(json_get "$CS_TMP/a.json" 'len(j["clients"])')" '==' 1 "--pid in $ns_a: one local client"
assert_cmp "$(json_get "$CS_TMP/a.json" 'j["remote_connections"]')" '==' 0 "--pid in $ns_a: no remote client"
assert_cmp "$(json_get "$CS_TMP/a.json" 'j["target_labels"]["netns"]')" '==' "$ino_a" "report a's netns label"
assert_cmp "$(json_get "$CS_TMP/b.json" 'j["target_labels"]["netns"]')" '==' "$ino_b" "report b's netns label"
# The listener samples come from each namespace's own sock_diag.
assert_cmp "$(json_get "$CS_TMP/a.json" 'j["listeners"][0]["backlog_samples"]')" '>' 0 "listener samples in $ns_a"
assert_cmp "$(json_get "$CS_TMP/b.json" 'j["listeners"][0]["backlog_samples"]')" '>' 0 "listener samples in $ns_b"
kill -TERM "$server_a" "$server_b"
wait "$server_a" "$server_b" 2>/dev/null || true

note "listen overflow in each namespace"
# As test_listen_overflow: a 4-deep backlog drained at 10 ms a connection, 30 clients.
ns_start "$ns_a" server_a --accept acceptor --workers 2 --accept-delay-us 10000 --backlog 4 --no-keepalive
ns_start "$ns_b" server_b --accept acceptor --workers 2 --accept-delay-us 10000 --backlog 4 --no-keepalive
before_a=$(ns_overflows "$ns_a")
before_b=$(ns_overflows "$ns_b")
# a is recorded (its report read from the trace after): a rare miscount
# keeps the records that show it.
"$CS_BIN" record --pid "$server_a" --duration 120 -o "$CS_TMP/oa.cstrace" 2>"$CS_TMP/oa.err" &
cs_a=$!
cs_pids+=("$cs_a")
"$CS_BIN" attach --port "$port" --netns "/proc/$server_b/ns/net" --duration 120 --json >"$CS_TMP/ob.json" 2>"$CS_TMP/ob.err" &
cs_b=$!
cs_pids+=("$cs_b")
cs_wait_attached "$CS_TMP/oa.err"
cs_wait_attached "$CS_TMP/ob.err"
# One namespace at a time: two overflow loads on a shared 2-core machine would starve each other's clients.
ip netns exec "$ns_a" "$CS_LOAD" --port "$port" --connections 30 --no-keepalive --requests 300 --duration 10 \
  --json "$CS_TMP/oload_a.json" >/dev/null || fail "csload in $ns_a failed"
ip netns exec "$ns_b" "$CS_LOAD" --port "$port" --connections 20 --no-keepalive --requests 150 --duration 10 \
  --json "$CS_TMP/oload_b.json" >/dev/null || fail "csload in $ns_b failed"
cs_wait_closed "$port" "$ns_a"
cs_wait_closed "$port" "$ns_b"
# The namespaces' counters just before connscope's stop and just after:
# its own read at the stop falls between. (A client's connection that the
# kernel answered with a SYN cookie can still overflow the queue as its
# close comes in after the client exited: 4 at a load average of 10.)
stopping_a=$(($(ns_overflows "$ns_a") - before_a))
stopping_b=$(($(ns_overflows "$ns_b") - before_b))
kill -INT "$cs_a" "$cs_b"
wait "$cs_a" || { cat "$CS_TMP/oa.err"; fail "connscope record --pid failed"; }
"$CS_BIN" report --json "$CS_TMP/oa.cstrace" >"$CS_TMP/oa.json" || fail "the report of a's trace failed"
wait "$cs_b" || { cat "$CS_TMP/ob.err"; fail "connscope --port --netns failed"; }
kernel_a=$(($(ns_overflows "$ns_a") - before_a))
kernel_b=$(($(ns_overflows "$ns_b") - before_b))
for side in a b; do
  r=$CS_TMP/o$side.json
  kernel=kernel_$side
  kernel=${!kernel}
  stopping=stopping_$side
  stopping=${!stopping}
  drops=$(json_get "$r" 'j["listeners"][0]["drops"]')
  skipped=$(json_get "$r" 'j["events"]["skipped"]')
  note "$side: drops $drops, its namespace's ListenOverflows +$stopping before the stop, +$kernel after, report's kernel counters $(json_get "$r" 'j["kernel"]'), probe runs skipped $skipped"
  assert_cmp "$stopping" '>' 0 "$side: the namespace saw overflows"
  reported=$(json_get "$r" 'j["kernel"]["listen_overflows"]')
  assert_cmp "$reported" '>=' "$stopping" "$side: the report reads its namespace's ListenOverflows (before the stop)"
  assert_cmp "$reported" '<=' "$kernel" "$side: the report reads its namespace's ListenOverflows (after the stop)"
  # As test_listen_overflow: a skipped kfree_skb probe run leaves one drop too many.
  assert_cmp "$drops" '>=' "$stopping" "$side: drops >= the namespace's ListenOverflows before the stop"
  assert_cmp "$drops" '<=' "$((kernel + skipped))" "$side: drops <= the namespace's ListenOverflows after it + skipped probe runs"
  # A client that gives up on a request (its time-out, on a machine busy
  # enough to stretch the load past its 10 s) may do so after the server
  # answered: the server served it, the client did not count it.
  client_requests=$(json_get "$CS_TMP/oload_$side.json" 'j["requests"]')
  client_timeouts=$(json_get "$CS_TMP/oload_$side.json" 'j["errors"]["timeouts"]')
  assert_cmp "$(json_get "$r" 'j["requests"]')" '>=' "$client_requests" "$side: requests >= its clients' answered ones"
  assert_cmp "$(json_get "$r" 'j["requests"]')" '<=' "$((client_requests + client_timeouts))" \
    "$side: requests <= its clients' answered ones + those they gave up on"
done

note "clients in the other namespace, over a veth pair"
kill -TERM "$server_a" "$server_b"
wait "$server_a" "$server_b" 2>/dev/null || true
ip link add "${veth}a" netns "$ns_a" type veth peer name "${veth}b" netns "$ns_b"
ip -n "$ns_a" addr add 10.199.0.1/24 dev "${veth}a"
ip -n "$ns_b" addr add 10.199.0.2/24 dev "${veth}b"
ip -n "$ns_a" link set "${veth}a" up
ip -n "$ns_b" link set "${veth}b" up
ns_start "$ns_a" server_a --bind 10.199.0.1 --workers 2
"$CS_BIN" attach --pid "$server_a" --duration 120 --json >"$CS_TMP/v.json" 2>"$CS_TMP/v.err" &
cs_a=$!
cs_pids+=("$cs_a")
cs_wait_attached "$CS_TMP/v.err"
# csload talks to loopback only: curl, one connection a request.
for _ in $(seq 12); do
  ip netns exec "$ns_b" curl -sf -o /dev/null --max-time 5 http://10.199.0.1:$port/ || fail "curl from $ns_b failed"
done
cs_wait_closed "$port" "$ns_a"
kill -INT "$cs_a"
wait "$cs_a" || { cat "$CS_TMP/v.err"; fail "connscope failed"; }
assert_cmp "$(json_get "$CS_TMP/v.json" 'j["requests"]')" '==' 12 "veth clients: requests"
assert_cmp "$(json_get "$CS_TMP/v.json" 'j["listeners"][0]["accepts"]')" '==' 12 "veth clients: accepts"
# Their sockets are in a namespace no target is in: remote, their side not seen.
assert_cmp "$(json_get "$CS_TMP/v.json" 'len(j["clients"])')" '==' 0 "veth clients: none local"
assert_cmp "$(json_get "$CS_TMP/v.json" 'j["remote_connections"]')" '==' 12 "veth clients: remote connections"
