#!/usr/bin/env bash
# connscoped --cgroup follows a server started after it, in a network
# namespace made after it (a container started on a watched host): the
# daemon has dropped CAP_SYS_ADMIN by then and cannot enter the namespace,
# yet finds the server's port there and counts exactly its clients'
# requests. A server on the same port in another namespace, outside the
# cgroup, is not counted. The container replaced by one in yet another new
# namespace is followed there too. A daemon given '--port P --netns' of that other
# namespace counts exactly its requests. The metrics say which namespace
# and unit.
source "$(dirname "$0")/lib.sh"

CS_DAEMON=$CS_BUILD/connscoped
cg_root=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
[[ -n $cg_root ]] || fail "no cgroup v2 hierarchy mounted"
# Named as a systemd unit: the container label shows it.
unit=cs-itest-$$.service
cgroup=/$unit
cg_dir=$cg_root$cgroup
ns_in=cs-itest-in-$$
ns_next=cs-itest-next-$$
ns_out=cs-itest-out-$$
netns_daemon_cleanup() {
  local rc=$?
  cs_cleanup "$rc" || rc=$?
  for _ in $(seq 50); do
    xargs -r kill -KILL <"$cg_dir/cgroup.procs" 2>/dev/null || true
    rmdir "$cg_dir" 2>/dev/null || true
    [[ -d $cg_dir ]] || break
    sleep 0.1
  done
  ip netns del "$ns_in" 2>/dev/null || true
  ip netns del "$ns_next" 2>/dev/null || true
  ip netns del "$ns_out" 2>/dev/null || true
  exit "$rc"
}
trap netns_daemon_cleanup EXIT
mkdir "$cg_dir"

scrape() { curl -sf "http://127.0.0.1:$1/metrics"; }
# metric MPORT NAME: the sum of NAME's series
metric() { scrape "$1" | awk -v m="$2" 'index($0, m "{") == 1 { s += $NF } END { print s + 0 }'; }
wait_log() {
  for _ in $(seq 300); do grep -Eq -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  cat "$1" >&2; fail "no line /$2/ in the daemon's log after 30 s"
}
# reach MPORT NAME N WHAT: wait (at most 30 s) until NAME is N or more, then it must be N.
reach() {
  local value=0
  for _ in $(seq 300); do
    value=$(metric "$1" "$2")
    [[ $value -ge $3 ]] && break
    sleep 0.1
  done
  assert_cmp "$value" '==' "$3" "$4"
}
ns_wait_port() {
  for _ in $(seq 100); do
    ip netns exec "$1" ss -Htln "sport = :$2" | grep -q . && return 0
    sleep 0.05
  done
  fail "nothing listens on port $2 in $1 after 5 s"
}

mport=$(cs_free_port); mport_out=$(cs_free_port)
port=8080 # in fresh namespaces: free
ip netns add "$ns_out"
ip -n "$ns_out" link set lo up
# Request counts are compared exactly: traced all the time (test_daemon_sampling.sh covers the default windows).
cs_bg "$CS_DAEMON" --cgroup "$cgroup" --trace always --metrics "$mport" --socket "$CS_TMP/run/netns.sock" 2>"$CS_TMP/daemon.log"
# A second daemon waits for a server on the port in the other namespace.
cs_bg "$CS_DAEMON" --port "$port" --netns "$ns_out" --trace always --metrics "$mport_out" --socket "$CS_TMP/run/out.sock" \
  2>"$CS_TMP/daemon_out.log"
for m in "$mport" "$mport_out"; do
  for _ in $(seq 100); do scrape "$m" >/dev/null && break; sleep 0.1; done
done
wait_log "$CS_TMP/daemon.log" "capabilities dropped"
wait_log "$CS_TMP/daemon_out.log" "capabilities dropped"

note "a server in a new namespace, in the cgroup; another on the same port outside both"
ip netns add "$ns_in"
ip -n "$ns_in" link set lo up
ino_in=$(stat -L -c %i "/var/run/netns/$ns_in")
# Into the cgroup first: 'ip netns exec' mounts the namespace's own /sys, without the cgroup tree.
cs_bg sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg_dir" ip netns exec "$ns_in" "$CS_SERVER" --port "$port" --quiet
server_in=$BG_PID
cs_bg ip netns exec "$ns_out" "$CS_SERVER" --port "$port" --quiet
server_out=$BG_PID
ns_wait_port "$ns_in" "$port"
ns_wait_port "$ns_out" "$port"
grep -qx "0::$cgroup" /proc/"$server_in"/cgroup || fail "server not in $cgroup: $(cat /proc/"$server_in"/cgroup)"
wait_log "$CS_TMP/daemon.log" "now watching pid $server_in \\(csserver\\) on port $port"
wait_log "$CS_TMP/daemon_out.log" "now watching pid $server_out on port $port"
ip netns exec "$ns_in" "$CS_LOAD" --port "$port" --connections 3 --requests 450 --json "$CS_TMP/load_in.json" >/dev/null \
  || fail "csload in $ns_in failed"
ip netns exec "$ns_out" "$CS_LOAD" --port "$port" --connections 4 --requests 800 --json "$CS_TMP/load_out.json" >/dev/null \
  || fail "csload in $ns_out failed"
sent=$(json_get "$CS_TMP/load_in.json" 'j["requests"]')
reach "$mport" connscope_requests_total "$sent" "requests counted = the clients' in $ns_in"
reach "$mport" connscope_accepts_total 3 "accepts = the connections in $ns_in"
sent_out=$(json_get "$CS_TMP/load_out.json" 'j["requests"]')
reach "$mport_out" connscope_requests_total "$sent_out" "--port --netns $ns_out: requests = the clients' there"
reach "$mport_out" connscope_accepts_total 4 "--port --netns $ns_out: accepts = the connections there"
# The labels follow the target once it is found (the scrape may come first).
for _ in $(seq 300); do
  info=$(scrape "$mport" | grep '^connscope_target_info{' || true)
  [[ $info == *"netns=\"$ino_in\""* ]] && break
  sleep 0.1
done
note "$info"
[[ $info == *"netns=\"$ino_in\""* ]] || fail "connscope_target_info lacks netns $ino_in: $info"
[[ $info == *"cgroup=\"$cgroup\""* && $info == *"container=\"systemd:$unit\""* ]] \
  || fail "connscope_target_info lacks the cgroup or unit: $info"
echo "ok: connscope_target_info names the namespace, cgroup and unit"

note "the server replaced by one in another new namespace"
kill -TERM "$server_in"
wait "$server_in" 2>/dev/null || true
ip netns add "$ns_next"
ip -n "$ns_next" link set lo up
cs_bg sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$cg_dir" ip netns exec "$ns_next" "$CS_SERVER" --port "$port" --quiet
server_next=$BG_PID
ns_wait_port "$ns_next" "$port"
wait_log "$CS_TMP/daemon.log" "now watching pid $server_next \\(csserver\\) on port $port"
ip netns exec "$ns_next" "$CS_LOAD" --port "$port" --connections 2 --requests 250 --json "$CS_TMP/load_next.json" >/dev/null \
  || fail "csload in $ns_next failed"
sent_next=$(json_get "$CS_TMP/load_next.json" 'j["requests"]')
reach "$mport" connscope_requests_total "$((sent + sent_next))" "requests counted = the clients' in $ns_in and $ns_next"
reach "$mport" connscope_accepts_total 5 "accepts = the connections in $ns_in and $ns_next"
