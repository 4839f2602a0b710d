#!/usr/bin/env bash
# Bad input on the command lines of connscope and connscoped, table-driven:
# every option with values out of range, of the wrong form, missing or
# unexpected, and unknown options. A usage error exits 2 with a first line
# that names the option (and the values it takes); a bad target (no such
# pid, a thread's id, a process that is not a server, a port nobody listens
# on) exits 1 with one line saying what to do. None of them may load a BPF
# program: each runs under a 10 s timeout and must not print "attached".
# integration: sanitized build
# (bad options go through the same parsing in either build; the sanitized
# one also checks its memory)
source "$(dirname "$0")/lib.sh"
CS_DAEMON=$CS_BUILD/connscoped

checked=0
# check CODE PATTERN PROGRAM ARGS...: PROGRAM exits CODE, its first stderr
# line matches PATTERN (an extended regex, matched literally where it
# quotes an option), and nothing reaches stdout.
check() {
  local code=$1 pattern=$2; shift 2
  local rc=0
  timeout 10 "$@" >"$CS_TMP/out" 2>"$CS_TMP/err" </dev/null || rc=$?
  local first
  first=$(head -n 1 "$CS_TMP/err")
  [[ $rc -eq $code ]] || { cat "$CS_TMP/err"; fail "'${*#"$CS_BUILD/"}' exited $rc, want $code"; }
  grep -Eq -- "$pattern" <<<"$first" || fail "'$*': first line '$first' lacks /$pattern/"
  [[ $first == "$(basename "$1")"* ]] || fail "'$*': '$first' does not start with the program's name"
  [[ ! -s $CS_TMP/out ]] || fail "'$*': wrote to stdout: $(head -c 200 "$CS_TMP/out")"
  if [[ $code -eq 2 ]]; then
    grep -q -- "--help" "$CS_TMP/err" || fail "'$*': a usage error must point to --help"
  else
    [[ $(wc -l <"$CS_TMP/err") -eq 1 ]] || { cat "$CS_TMP/err"; fail "'$*': a run-time error is one line"; }
  fi
  checked=$((checked + 1))
  echo "ok: exit $rc: $first"
}

# ---- usage errors: CODE | PATTERN | ARGUMENTS (word-split)

# Options that attach and record share; each row runs for both commands
# (record with -o, which it requires).
shared_rows=(
  "2|name a target with --pid PID, --port PORT|"
  "2|--name expects a process name \(1-255 bytes\), not ''|--name="
  "2|--cgroup expects a cgroup v2 path|--cgroup="
  "2|option '--name' needs a value|--port 80 --name"
  "2|--pid expects a process id \(1-4194304\), not 'abc'|--pid abc"
  "2|--pid expects a process id \(1-4194304\), not '0'|--pid 0"
  "2|--pid expects a process id \(1-4194304\), not '-5'|--pid -5"
  "2|--pid expects a process id \(1-4194304\), not '4194305'|--pid 4194305"
  "2|--pid expects a process id \(1-4194304\), not '12x'|--pid 12x"
  "2|--pid expects a process id \(1-4194304\), not '99999999999999999999'|--pid 99999999999999999999"
  "2|--port expects a TCP port \(1-65535\), not '0'|--port 0"
  "2|--port expects a TCP port \(1-65535\), not '65536'|--port 65536"
  "2|--port expects a TCP port \(1-65535\), not '0x50'|--port 0x50"
  "2|--port expects a TCP port \(1-65535\), not '\+80'|--port +80"
  "2|--port expects a TCP port \(1-65535\), not '8080.5'|--port 8080.5"
  "2|--duration expects seconds \(0.1-31536000\), not '0'|--port 80 --duration 0"
  "2|--duration expects seconds \(0.1-31536000\), not '-1'|--port 80 --duration -1"
  "2|--duration expects seconds \(0.1-31536000\), not 'nan'|--port 80 --duration nan"
  "2|--duration expects seconds \(0.1-31536000\), not 'inf'|--port 80 --duration inf"
  "2|--duration expects seconds \(0.1-31536000\), not '10s'|--port 80 --duration 10s"
  "2|--duration expects seconds \(0.1-31536000\), not '31536001'|--port 80 -d 31536001"
  "2|--tail expects a percentile from 50 to 99.999, not '49'|--port 80 --tail 49"
  "2|--tail expects a percentile from 50 to 99.999, not '100'|--port 80 --tail 100"
  "2|--tail expects a percentile from 50 to 99.999, not 'p99'|--port 80 -t p99"
  "2|--sample-hz expects 1-1000, not '0'|--port 80 --sample-hz 0"
  "2|--sample-hz expects 1-1000, not '1001'|--port 80 --sample-hz 1001"
  "2|--sample-hz expects 1-1000, not 'fast'|--port 80 --sample-hz fast"
  "2|--ring-mb expects a power of two from 1 to 1024, not '3'|--port 80 --ring-mb 3"
  "2|--ring-mb expects a power of two from 1 to 1024, not '0'|--port 80 --ring-mb 0"
  "2|--ring-mb expects a power of two from 1 to 1024, not '2048'|--port 80 --ring-mb 2048"
  "2|option '--pid' needs a value|--pid"
  "2|option '-p' needs a value|-p"
  "2|option '-P' needs a value|-qP"
  "2|option '--duration' needs a value|--port 80 --duration"
  "2|option '--no-handshakes' takes no value|--port 80 --no-handshakes=1"
  "2|option '--quiet' takes no value|--port 80 --quiet=yes"
  "2|unknown option '--bogus' \(options: --pid, --port, --name, --cgroup, --netns, --duration|--port 80 --bogus"
  "2|unknown option '-x' \(options: --pid, --port|--port 80 -x"
  "2|unknown option '-x' \(options:|--port 80 -qx"
  "2|unexpected argument 'extra'|--port 80 extra"
  "2|at most [0-9]+ --port options|$(printf -- '--port %d ' $(seq 1000 1100))"
)
for row in "${shared_rows[@]}"; do
  IFS='|' read -r code pattern args <<<"$row"
  # shellcheck disable=SC2086 # the arguments are meant to split
  check "$code" "^connscope attach: $pattern" "$CS_BIN" attach $args
  # shellcheck disable=SC2086
  check "$code" "^connscope record: $pattern" "$CS_BIN" record -o "$CS_TMP/never.cstrace" $args
done
[[ ! -e $CS_TMP/never.cstrace ]] || fail "a refused record left a trace file"

own_rows=(
  "2|attach: -o/--output expects a file name, not ''|attach --port 80 --output="
  "2|record: unknown option '--json' \(use 'connscope report --json'\)|record --port 80 -o $CS_TMP/x --json"
  "2|record: name the trace file with -o FILE|record --port 80"
  "2|record: -o/--output expects a file name, not ''|record --port 80 --output="
  "2|report: name one trace file|report"
  "2|report: name one trace file|report a b"
  "2|report: --tail expects a percentile from 50 to 99.999, not '2'|report --tail 2 x"
  "2|report: option '--json' takes no value|report --json=yes x"
  "2|report: unknown option '--bogus' \(options: --json, --tail, --interval, --slowest, --from, --to, --help\)|report --bogus x"
  "2|report: --interval expects seconds from 0.001 to 86400, not '0'|report --interval 0 x"
  "2|report: --interval prints a table: it takes no --json|report --interval 1 --json x"
  "2|report: --slowest expects 1 to 512, not '0'|report --slowest 0 x"
  "2|record: --slowest is for the report: 'connscope report --slowest N FILE'|record --port 80 -o x --slowest 3"
  "2|: unknown command 'atach'|atach"
  "2|version: unexpected argument 'x'|version x"
)
for row in "${own_rows[@]}"; do
  IFS='|' read -r code pattern args <<<"$row"
  # shellcheck disable=SC2086
  check "$code" "^connscope( |)$pattern" "$CS_BIN" $args
done
rc=0; "$CS_BIN" >"$CS_TMP/out" 2>"$CS_TMP/err" || rc=$?
[[ $rc -eq 2 ]] && grep -q "^Usage: connscope COMMAND" "$CS_TMP/err" || fail "connscope without a command: exit $rc"

daemon_rows=(
  "2|name a target with --port PORT, --pid PID, --name NAME or --cgroup PATH|"
  "2|--port expects a TCP port \(1-65535\), not '0'|--port 0"
  "2|--port expects a TCP port \(1-65535\), not '65536'|--port 65536"
  "2|--pid expects a process id \(1-4194304\), not 'x'|--pid x"
  "2|--pid expects a process id \(1-4194304\), not '0'|--pid 0"
  "2|--sample-hz expects 1-1000, not '0'|--port 80 --sample-hz 0"
  "2|--ring-mb expects a power of two from 1 to 1024, not '3'|--port 80 --ring-mb 3"
  "2|--metrics expects ADDR:PORT, \[ADDR6\]:PORT or PORT, not 'bogus'|--port 80 --metrics bogus"
  "2|--metrics expects ADDR:PORT, \[ADDR6\]:PORT or PORT, not '127.0.0.1:99999'|--port 80 --metrics 127.0.0.1:99999"
  "2|--metrics expects ADDR:PORT, \[ADDR6\]:PORT or PORT, not 'localhost:9464'|--port 80 --metrics localhost:9464"
  "2|option '--metrics' needs a value|--port 80 --metrics"
  "2|option '--verbose' takes no value|--port 80 --verbose=2"
  "2|unknown option '--bogus' \(options: --port, --pid, --name, --cgroup, --netns, --config, --metrics|--port 80 --bogus"
  "2|unknown option '-x' \(options:|--port 80 -x"
  "2|unexpected argument 'extra'|--port 80 extra"
  "2|--name expects a process name \(1-255 bytes\), not ''|--name="
  "2|--cgroup expects a cgroup v2 path|--cgroup="
  "2|option '--config' needs a value|--config"
  "2|option '--name' needs a value|--port 80 --name"
)
for row in "${daemon_rows[@]}"; do
  IFS='|' read -r code pattern args <<<"$row"
  # shellcheck disable=SC2086
  check "$code" "^connscoped: $pattern" "$CS_DAEMON" $args
done

# ---- bad targets: run-time errors, exit 1

free_port=$(cs_free_port)
sleep 60 & not_a_server=$!; cs_pids+=("$not_a_server")
cs_start_server --workers 2
worker_tid=$(ls "/proc/$SERVER_PID/task" | grep -vx "$SERVER_PID" | head -n 1)
[[ -n $worker_tid ]] || fail "csserver has no worker thread"
# A pid that existed and is gone: a process that exited (and was reaped).
sh -c 'exit 0' & gone=$!; wait "$gone"

for cmd in attach record; do
  out=()
  [[ $cmd == record ]] && out=(-o "$CS_TMP/never.cstrace")
  check 1 "^connscope: no such process: pid 4194304" "$CS_BIN" $cmd "${out[@]}" --pid 4194304 --duration 1
  check 1 "^connscope: no such process: pid $gone" "$CS_BIN" $cmd "${out[@]}" --pid "$gone" --duration 1
  check 1 "^connscope: pid $not_a_server has no listening TCP socket" "$CS_BIN" $cmd "${out[@]}" --pid "$not_a_server" --duration 1
  check 1 "^connscope: pid $worker_tid is a thread of process $SERVER_PID: use --pid $SERVER_PID" \
    "$CS_BIN" $cmd "${out[@]}" --pid "$worker_tid" --duration 1
  check 1 "^connscope: nobody listens on TCP port $free_port" "$CS_BIN" $cmd "${out[@]}" --port "$free_port" --duration 1
  check 1 "^connscope: no process matching name cs-no-such-name listens" "$CS_BIN" $cmd "${out[@]}" --name cs-no-such-name --duration 1
  check 1 "^connscope: no cgroup /cs-no-such-cgroup" "$CS_BIN" $cmd "${out[@]}" --cgroup /cs-no-such-cgroup --duration 1
  # One good target does not excuse a bad one.
  check 1 "^connscope: nobody listens on TCP port $free_port" \
    "$CS_BIN" $cmd "${out[@]}" --pid "$SERVER_PID" --port "$free_port" --duration 1
done
[[ ! -e $CS_TMP/never.cstrace ]] || fail "a failed record left a trace file"
check 1 "^connscope: cannot open $CS_TMP/none.cstrace: No such file" "$CS_BIN" report "$CS_TMP/none.cstrace"
printf 'not a trace' >"$CS_TMP/junk.cstrace"
check 1 "^connscope: $CS_TMP/junk.cstrace: " "$CS_BIN" report "$CS_TMP/junk.cstrace"

check 1 "^connscoped: cannot read config $CS_TMP/none.conf: No such file" "$CS_DAEMON" --config "$CS_TMP/none.conf"
# A daemon that fails on its targets has said where its control socket is
# first: the error is its last line, and its only error.
check_daemon_target() {
  local pattern=$1; shift
  local rc=0
  timeout 10 "$CS_DAEMON" --socket "$CS_TMP/ctl/cs.sock" "$@" >"$CS_TMP/out" 2>"$CS_TMP/err" </dev/null || rc=$?
  [[ $rc -eq 1 ]] || { cat "$CS_TMP/err"; fail "connscoped $* exited $rc, want 1"; }
  tail -n 1 "$CS_TMP/err" | grep -Eq -- "$pattern" || { cat "$CS_TMP/err"; fail "connscoped $*: last line lacks /$pattern/"; }
  [[ $(grep -Evc "^connscoped: control socket " "$CS_TMP/err") -eq 1 ]] || { cat "$CS_TMP/err"; fail "connscoped $*: more than the error"; }
  checked=$((checked + 1))
  echo "ok: exit $rc: $(tail -n 1 "$CS_TMP/err")"
}
mkdir -m 0700 "$CS_TMP/ctl"
check_daemon_target "^connscoped: no such process: pid 4194304" --pid 4194304
check_daemon_target "^connscoped: pid $not_a_server has no listening TCP socket" --pid "$not_a_server"
check_daemon_target "^connscoped: pid $worker_tid is a thread of process $SERVER_PID" --pid "$worker_tid"

echo "ok: $checked command lines checked"
