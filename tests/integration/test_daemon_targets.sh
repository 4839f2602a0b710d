#!/usr/bin/env bash
# connscoped's targets by name and by cgroup, its config file and its
# capabilities. Each daemon starts before its server exists; the server is
# picked up, restarted and picked up again (seen in the --metrics output);
# a server that is not a target is not counted. The daemon keeps only the
# capabilities it documents, in every thread, after the drop and still
# follows a restart. Config files: a good one, a bad line, a file others may
# write, a missing one, SIGHUP with a new port, a bad reload that keeps the
# running settings.
source "$(dirname "$0")/lib.sh"

CS_DAEMON=$CS_BUILD/connscoped
# The capabilities connscoped(8) documents it keeps once attached:
# CAP_SYS_PTRACE | CAP_DAC_READ_SEARCH | CAP_PERFMON | CAP_BPF.
KEPT_CAPS=$(sed -n 's/.*CapEff: \([0-9a-f]\{16\}\).*/\1/p' "$(dirname "$0")/../../man/connscoped.8")
[[ $KEPT_CAPS == 000000c000080004 ]] || fail "connscoped.8 documents CapEff '$KEPT_CAPS', not CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH, CAP_PERFMON and CAP_BPF"

# A copy of csserver under a name no other process has.
server_name=cstgt$$
cp "$CS_SERVER" "$CS_TMP/$server_name"

scrape() { curl -sf "http://127.0.0.1:$1/metrics"; }
# metric MPORT NAME: the sum of NAME's series
metric() { scrape "$1" | awk -v m="$2" 'index($0, m "{") == 1 { s += $NF } END { print s + 0 }'; }
# wait_log FILE PATTERN: until the daemon's log has a line matching PATTERN (at most 30 s)
wait_log() {
  for _ in $(seq 300); do grep -Eq -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  cat "$1" >&2; fail "no line /$2/ in the daemon's log after 30 s"
}
# accepts_reach MPORT N WHAT: wait (at most 30 s: the daemon may lag on a busy
# machine) until connscope_accepts_total is N or more, then it must be N.
accepts_reach() {
  local value=0
  for _ in $(seq 300); do
    value=$(metric "$1" connscope_accepts_total)
    [[ $value -ge $2 ]] && break
    sleep 0.1
  done
  assert_cmp "$value" '==' "$2" "$3"
}
wait_metrics() { for _ in $(seq 100); do scrape "$1" >/dev/null && return 0; sleep 0.1; done; fail "no metrics on $1"; }
# load PORT N: N connections, 200 requests
load() { "$CS_LOAD" --port "$1" --connections "$2" --requests 200 --quiet --json /dev/null || fail "load on $1 failed"; }
# start_server CMD...: a server in the background; sets SRV
start_server() { "$@" >/dev/null 2>&1 & SRV=$!; cs_pids+=("$SRV"); }
stop_daemon() {
  kill -TERM "$1"; local rc=0
  timeout 10 tail --pid="$1" -f /dev/null || fail "connscoped did not stop within 10 s"
  wait "$1" || rc=$?
  [[ $rc -eq 0 ]] || fail "connscoped exited $rc on SIGTERM"
}

# caps_of PID: every thread's CapEff and CapPrm, one per line, de-duplicated
caps_of() { cat /proc/"$1"/task/*/status | awk '/^Cap(Eff|Prm):/ { print $2 }' | sort -u; }

note "by name: $server_name"
port=$(cs_free_port); other_port=$(cs_free_port); mport=$(cs_free_port)
cs_bg "$CS_DAEMON" --name "$server_name" --metrics "$mport" --socket "$CS_TMP/run/name.sock" 2>"$CS_TMP/name.log"
daemon=$BG_PID
wait_metrics "$mport"
wait_log "$CS_TMP/name.log" "capabilities dropped"

# Capabilities: only the documented ones, in every thread (the metrics thread too).
[[ $(caps_of "$daemon") == "$KEPT_CAPS" ]] || fail "daemon threads' capabilities: $(caps_of "$daemon" | tr '\n' ' '), want $KEPT_CAPS"
grep -q '^NoNewPrivs:[[:space:]]*1' /proc/"$daemon"/status || fail "no_new_privs not set"
[[ $(awk '/^CapBnd:/ { print $2 }' /proc/"$daemon"/status) == "$KEPT_CAPS" ]] || fail "bounding set not reduced"
echo "ok: after the drop every thread has CapEff = CapPrm = CapBnd = $KEPT_CAPS, NoNewPrivs 1"

for run in 1 2; do
  [[ $run == 2 ]] && { kill "$server"; wait "$server" 2>/dev/null || true; }
  start_server "$CS_TMP/$server_name" --port "$port" --workers 2 --quiet
  server=$SRV
  cs_wait_port "$port"
  wait_log "$CS_TMP/name.log" "now watching pid $server \\($server_name\\) on port $port"
  load "$port" 4
  accepts_reach "$mport" $((4 * run)) "by name: accepts after server run $run"
done
echo "ok: followed by name across a restart, after the capability drop"

# A csserver under its own name is not a target: its 3 accepts never count
# (the target's one after them, through the same ring, shows they would have).
start_server "$CS_SERVER" --port "$other_port" --workers 1 --quiet
cs_wait_port "$other_port"
load "$other_port" 3
load "$port" 1
accepts_reach "$mport" 9 "by name: another server's accepts not counted"

# connscope attach takes the same target: the server by its name only.
"$CS_BIN" attach --name "$server_name" --json >"$CS_TMP/attach.json" 2>"$CS_TMP/attach.err" &
attach=$!
cs_wait_attached "$CS_TMP/attach.err"
grep -q "attached to pid $server ($server_name) port $port" "$CS_TMP/attach.err" || { cat "$CS_TMP/attach.err"; fail "attach --name found another target"; }
load "$other_port" 2
load "$port" 3
sleep 0.3 # the last closes
kill -INT "$attach"; wait "$attach" || fail "connscope attach --name failed"
assert_cmp "$(json_get "$CS_TMP/attach.json" 'sum(l["accepts"] for l in j["listeners"])')" '==' 3 "connscope attach --name: the named server's accepts only"
kill "$SRV" "$server"; wait "$SRV" "$server" 2>/dev/null || true
stop_daemon "$daemon"

note "by cgroup"
cg_root=$(findmnt -n -t cgroup2 -o TARGET | head -n 1)
[[ -n $cg_root ]] || fail "no cgroup v2 hierarchy mounted"
cgroup=/cs-itest-$$
cg_dir=$cg_root$cgroup
mkdir "$cg_dir" "$cg_dir/sub"
# Only this test's processes can be in them: any left is killed.
cg_cleanup() {
  local rc=$?
  cs_cleanup "$rc" || rc=$?
  for _ in $(seq 50); do
    cat "$cg_dir/sub/cgroup.procs" "$cg_dir/cgroup.procs" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    rmdir "$cg_dir/sub" "$cg_dir" 2>/dev/null || true
    [[ -d $cg_dir ]] || break
    sleep 0.1
  done
  exit "$rc"
}
trap cg_cleanup EXIT
echo "cgroup $cg_dir"
# in_cgroup DIR CMD...: CMD run inside the cgroup DIR
in_cgroup() { local dir=$1; shift; exec sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$dir" "$@"; }

port=$(cs_free_port); mport=$(cs_free_port)
cs_bg "$CS_DAEMON" --cgroup "$cgroup" --metrics "$mport" --socket "$CS_TMP/run/cgroup.sock" 2>"$CS_TMP/cgroup.log"
daemon=$BG_PID
wait_metrics "$mport"
wait_log "$CS_TMP/cgroup.log" "capabilities dropped"
# Run 1 in a cgroup below the target, run 2 in the target itself.
for run in 1 2; do
  dir=$cg_dir/sub; [[ $run == 2 ]] && { dir=$cg_dir; kill "$server"; wait "$server" 2>/dev/null || true; }
  start_server in_cgroup "$dir" "$CS_SERVER" --port "$port" --workers 2 --quiet
  server=$SRV
  cs_wait_port "$port"
  grep -qx "0::$cgroup${dir#"$cg_dir"}" /proc/"$server"/cgroup || fail "server not in $dir: $(cat /proc/"$server"/cgroup)"
  wait_log "$CS_TMP/cgroup.log" "now watching pid $server \\(csserver\\) on port $port"
  load "$port" 4
  accepts_reach "$mport" $((4 * run)) "by cgroup: accepts after server run $run"
done
echo "ok: followed by cgroup (and a cgroup below it) across a restart"
start_server "$CS_SERVER" --port "$other_port" --workers 1 --quiet
cs_wait_port "$other_port"
load "$other_port" 3
load "$port" 1
accepts_reach "$mport" 9 "by cgroup: a server outside the cgroup not counted"
kill "$SRV" "$server"; wait "$SRV" "$server" 2>/dev/null || true
stop_daemon "$daemon"

note "config file"
conf_dir=$CS_TMP/etc; mkdir -m 755 "$conf_dir"; conf=$conf_dir/connscoped.conf
port_a=$(cs_free_port); port_b=$(cs_free_port); mport=$(cs_free_port)
# expect_start CODE PATTERN ARGS...: connscoped exits CODE at once with one line matching PATTERN
expect_start() {
  local code=$1 pattern=$2; shift 2; local rc=0
  timeout 20 "$CS_DAEMON" "$@" 2>"$CS_TMP/err" || rc=$?
  [[ $rc -eq $code ]] || { cat "$CS_TMP/err"; fail "connscoped $* exited $rc, expected $code"; }
  grep -Eq -- "$pattern" "$CS_TMP/err" || { cat "$CS_TMP/err"; fail "connscoped $*: no /$pattern/"; }
  [[ $code -eq 2 || $(wc -l <"$CS_TMP/err") -eq 1 ]] || { cat "$CS_TMP/err"; fail "connscoped $*: more than one line"; }
  echo "ok: exit $rc: $(head -n 1 "$CS_TMP/err")"
}
printf 'port = %s\nprot = 1\n' "$port_a" >"$conf"; chmod 644 "$conf"
expect_start 1 "^connscoped: $conf:2: unknown key 'prot' \(expected one of: port, pid, name, cgroup" --config "$conf"
printf 'port = %s\n' "$port_a" >"$conf"; chmod 666 "$conf"
expect_start 1 "^connscoped: refusing config $conf: others may write it" --config "$conf"
chmod 644 "$conf"; chmod 777 "$conf_dir"
expect_start 1 "^connscoped: refusing config $conf: its directory $conf_dir is not safe: others may write it" --config "$conf"
chmod 755 "$conf_dir"
expect_start 1 "^connscoped: cannot read config $conf_dir/missing.conf: No such file or directory" --config "$conf_dir/missing.conf"
printf '# no targets\nsample-hz = 20\n' >"$conf"
expect_start 2 "^connscoped: name a target with --port PORT, --pid PID, --name NAME or --cgroup PATH \(or in $conf\)" --config "$conf"

# Good: port A, then SIGHUP with port B instead.
printf '# connscoped test\nport = %s\n\nmetrics = 127.0.0.1:%s\nsample-hz = 20\n' "$port_a" "$mport" >"$conf"
cs_bg "$CS_DAEMON" --config "$conf" --socket "$CS_TMP/run/conf.sock" 2>"$CS_TMP/conf.log"
daemon=$BG_PID
wait_metrics "$mport"
wait_log "$CS_TMP/conf.log" "attached to"
start_server "$CS_SERVER" --port "$port_a" --workers 1 --quiet; server_a=$SRV
start_server "$CS_SERVER" --port "$port_b" --workers 1 --quiet; server_b=$SRV
cs_wait_port "$port_a"; cs_wait_port "$port_b"
wait_log "$CS_TMP/conf.log" "now watching pid $server_a on port $port_a"
load "$port_a" 4
load "$port_b" 2
load "$port_a" 1
accepts_reach "$mport" 5 "config: port A counted, port B not"

printf 'port = %s\nmetrics = 127.0.0.1:%s\n' "$port_b" "$mport" >"$conf"
kill -HUP "$daemon"
wait_log "$CS_TMP/conf.log" "now watching pid $server_b on port $port_b"
grep -q "reloaded $conf" "$CS_TMP/conf.log" || fail "no 'reloaded' line"
load "$port_b" 3
load "$port_a" 2
load "$port_b" 1
accepts_reach "$mport" 9 "after SIGHUP: port B counted, port A no longer"

# A bad reload is logged; the running settings stay (B is still counted).
printf 'port = %s\nport = 0\n' "$port_a" >"$conf"
kill -HUP "$daemon"
wait_log "$CS_TMP/conf.log" "reload: $conf:2: port expects a TCP port \(1-65535\), not '0'; keeping the running settings"
chmod 666 "$conf"; kill -HUP "$daemon"
wait_log "$CS_TMP/conf.log" "reload: refusing config $conf: others may write it.*; keeping the running settings"
load "$port_b" 5
accepts_reach "$mport" 14 "after bad reloads: port B still counted"
kill -0 "$daemon" || fail "the daemon died on a bad reload"
stop_daemon "$daemon"
echo "ok: config file: good start, SIGHUP to a new port, bad reloads keep the running settings"
