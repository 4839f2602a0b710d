#!/usr/bin/env bash
# Every way attach can be misused or can fail gives one line saying what is
# wrong and what to do, and the right exit code: 2 for usage, 1 at run time.
# The target exiting mid-run ends the run cleanly with a report.
# integration: sanitized build
# (the same paths in either build; the sanitized one also checks memory)
source "$(dirname "$0")/lib.sh"

# expect CODE PATTERN CMD...: CMD exits CODE and its stderr matches PATTERN.
expect() {
  local code=$1 pattern=$2; shift 2
  local rc=0
  "$@" >"$CS_TMP/out" 2>"$CS_TMP/err" || rc=$?
  [[ $rc -eq $code ]] || { cat "$CS_TMP/err"; fail "'$*' exited $rc, expected $code"; }
  grep -Eq -- "$pattern" "$CS_TMP/err" || { cat "$CS_TMP/err"; fail "'$*': stderr lacks /$pattern/"; }
  head -n 1 "$CS_TMP/err" | grep -q '^connscope' || fail "'$*': message does not start with connscope"
  if [[ $code -eq 1 && $(wc -l <"$CS_TMP/err") -ne 1 ]]; then
    cat "$CS_TMP/err"; fail "'$*': a runtime error must be one line"
  fi
  echo "ok: exit $rc: $(head -n 1 "$CS_TMP/err")"
}

# usage errors
expect 2 "name a target" "$CS_BIN" attach
expect 2 "--pid expects a process id" "$CS_BIN" attach --pid abc
expect 2 "--pid expects a process id" "$CS_BIN" attach --pid 0
expect 2 "--port expects a TCP port \(1-65535\)" "$CS_BIN" attach --port 70000
expect 2 "--duration expects seconds" "$CS_BIN" attach --port 80 --duration -1
expect 2 "--ring-mb expects a power of two" "$CS_BIN" attach --port 80 --ring-mb 3
expect 2 "unknown option '--bogus'" "$CS_BIN" attach --bogus
expect 2 "option '--pid' needs a value" "$CS_BIN" attach --pid
expect 2 "unknown command 'atach'" "$CS_BIN" atach

# targets that are not there
expect 1 "no such process: pid 4000000" "$CS_BIN" attach --pid 4000000 --duration 1
sleep 30 & sleeper=$!; cs_pids+=("$sleeper")
expect 1 "pid $sleeper has no listening TCP socket" "$CS_BIN" attach --pid "$sleeper" --duration 1
port=$(cs_free_port)
expect 1 "nobody listens on TCP port $port" "$CS_BIN" attach --port "$port" --duration 1

# not root: a copy of the binary run as nobody with no capabilities
cp "$CS_BIN" "$CS_TMP/connscope"; chmod 755 "$CS_TMP" "$CS_TMP/connscope"
expect 1 "missing CAP_BPF and CAP_PERFMON: run as root, or grant them with 'sudo setcap" \
  setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$CS_TMP/connscope" attach --port 80 --duration 1

# connscoped: the capabilities it needs to start, named with how to grant them
cp "$CS_BUILD/connscoped" "$CS_TMP/connscoped"; chmod 755 "$CS_TMP/connscoped"
expect 1 "^connscoped: missing CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH .*AmbientCapabilities=CAP_BPF CAP_PERFMON CAP_SYS_PTRACE CAP_DAC_READ_SEARCH.*setcap cap_bpf,cap_perfmon,cap_sys_ptrace,cap_dac_read_search\+ep $CS_TMP/connscoped" \
  setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$CS_TMP/connscoped" --port 80
expect 1 "^connscoped: missing CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH \(" \
  setpriv --bounding-set -all,+bpf,+perfmon --inh-caps=-all "$CS_BUILD/connscoped" --port 80
expect 2 "^connscoped: name a target with --port PORT, --pid PID, --name NAME or --cgroup PATH" "$CS_BUILD/connscoped"
expect 2 "^connscoped: --name expects a process name .*not 'a/b'" "$CS_BUILD/connscoped" --name a/b
expect 2 "^connscoped: --cgroup expects a cgroup v2 path .*not '/a/../b'" "$CS_BUILD/connscoped" --cgroup /a/../b
expect 2 "^connscoped: --port expects a TCP port \(1-65535\), not '0'" "$CS_BUILD/connscoped" --port 0
expect 2 "^connscoped: unknown option '--bogus'" "$CS_BUILD/connscoped" --bogus
# connscope attach by name and cgroup: nothing there
expect 1 "no process matching name cs-no-such-server listens on a TCP port" "$CS_BIN" attach --name cs-no-such-server --duration 1
expect 1 "no cgroup /cs-no-such-cgroup in the cgroup v2 hierarchy" "$CS_BIN" attach --cgroup /cs-no-such-cgroup --duration 1
expect 2 "--name expects a process name" "$CS_BIN" attach --name ""

cs_start_server --workers 1
# no BTF: hide /sys/kernel/btf in a private mount namespace
expect 1 "this kernel has no BTF" \
  unshare -m sh -c "mount -t tmpfs none /sys/kernel/btf && exec \"\$0\" \"\$@\"" "$CS_BIN" attach --pid "$SERVER_PID" --duration 1
# tracefs_view DIR [no-reason]: a tracefs of the trace events the start-up
# check asks for (kernel_check.c), and nothing else; no-reason: as a kernel
# before 6.10 shows tcp_send_reset, without its reason.
tracefs_view() {
  local view=$1 event real=/sys/kernel/tracing
  [[ -d $real/events ]] || real=/sys/kernel/debug/tracing
  for event in tcp/tcp_send_reset sock/sk_data_ready sock/sock_recv_length sock/sock_send_length; do
    mkdir -p "$view/events/$event"
    cp "$real/events/$event/format" "$view/events/$event/format"
  done
  [[ ${2:-} != no-reason ]] || sed -i '/ reason;/d' "$view/events/tcp/tcp_send_reset/format"
}
# attach seeing only VIEW as tracefs, in a private mount namespace
attach_with_tracefs() {
  unshare -m sh -c "mount --bind '$1' /sys/kernel/tracing && mount -t tmpfs none /sys/kernel/debug && exec \"\$0\" \"\$@\"" \
    "$CS_BIN" attach --pid "$SERVER_PID" --duration 1
}
# a kernel older than the minimum: told at start-up, by the feature it lacks
tracefs_view "$CS_TMP/old-kernel" no-reason
expect 1 "has no trace event tcp/tcp_send_reset with its field reason \(Linux 6\.10\): connscope needs Linux 6\.10 or later" \
  attach_with_tracefs "$CS_TMP/old-kernel"
# a tracepoint missing past the check: a tracefs view without the syscall
# tracepoints (the first program on one is named, with its hook)
tracefs_view "$CS_TMP/no-syscalls"
expect 1 "cannot attach probe on_[a-z0-9_]+ \(tracepoint/syscalls/sys_(enter|exit)_[a-z0-9_]+\).*lack the hook" \
  attach_with_tracefs "$CS_TMP/no-syscalls"

# the target exits mid-run: a clean end with the report of what was seen
"$CS_BIN" attach --pid "$SERVER_PID" >"$CS_TMP/report.txt" 2>"$CS_TMP/exit.err" &
cs=$!
cs_wait_attached "$CS_TMP/exit.err"
ab -q -n 50 -c 5 "http://127.0.0.1:$SERVER_PORT/" >/dev/null 2>&1 || true
kill "$SERVER_PID"
rc=0; timeout 10 tail --pid="$cs" -f /dev/null || rc=$?
[[ $rc -eq 0 ]] || fail "connscope did not end after the target exited"
wait "$cs" || fail "connscope exited non-zero after the target exited"
grep -q "the target exited" "$CS_TMP/exit.err" || fail "no line saying the target exited"
grep -Eq "accepts +[0-9]+" "$CS_TMP/report.txt" || fail "no report after the target exited"
echo "ok: target exit ends the run with a report: $(grep -E 'accepts +[0-9]+' "$CS_TMP/report.txt" | head -1)"
