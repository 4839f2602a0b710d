#!/usr/bin/env bash
# JVM pauses: Debian's OpenJDK 17, the JDK's own HttpServer
# (tests/integration/jvm/CsPauses.java), 4 pool threads, a quick handler,
# TCP_NODELAY on; 16 keep-alive clients at 200 requests/s.
#
# 1. SerialGC with a live set of 100 MB and a full collection forced every
#    700 ms, and a thread dump (Thread.getAllStackTraces: the VM operation
#    ThreadDump, no collection) every second, in the same JVM and the same
#    attach. Asserted: runtime_pause leads the tail and runtime_pauses is
#    flagged; pool_saturation is not (the pool's threads were stopped, not
#    busy); the pauses against the JVM's own -Xlog:gc,safepoint (stamped
#    with CLOCK_MONOTONIC, the probes' clock) both ways over connscope's
#    window: the same collections, each collection's time within 10 % (less
#    the VM thread's waits for a CPU outside the part the JVM times; those
#    waits no more than the kernel's schedstat of the VM thread says), no
#    pause longer than the safepoint's total, the thread dumps counted and
#    named ThreadDump, not GC; the p99 agrees with the clients'.
# 2. G1 with garbage allocated at about 250 MB/s (the latest 12 MB of it kept:
#    young collections of several ms, not 1 ms, against which a constant
#    difference of the probes and the JVM's timer of 0.1 ms would be 10 %)
#    and no forced collection:
#    young collections counted, each within 10 % of -Xlog:gc's (whatever
#    leads the tail).
# integration: exclusive
# integration: plain build
# Runs alone: connscope's p99 is compared with the client's (see scenario 6),
# and the pauses' lengths with the JVM's log.
source "$(dirname "$0")/lib.sh"

java=/usr/lib/jvm/java-17-openjdk-amd64/bin/java
[[ -x $java ]] || fail "Debian's OpenJDK 17 is not installed (scripts/deps.sh installs openjdk-17-jdk-headless)"
"${java%/java}/javac" -d "$CS_TMP/classes" "$(dirname "$0")/jvm/CsPauses.java" || fail "javac CsPauses.java"
compare="$CS_PYTHON $(dirname "$0")/jvm/pauses_vs_log.py"

# start_jvm NAME GC_FLAGS LIVE_MB GC_MS DUMP_MS ALLOC_CHUNKS: CsPauses on a free
# port ($port), its log in $CS_TMP/NAME.log, warmed up (the JIT compiles
# the server's path first).
start_jvm() {
  port=$(cs_free_port)
  # shellcheck disable=SC2086 # the flags are words
  cs_bg "$java" $2 -Xms512m -Xmx512m -Dsun.net.httpserver.nodelay=true \
    "-Xlog:gc,safepoint:file=$CS_TMP/$1.log:tn" -cp "$CS_TMP/classes" CsPauses "$port" 4 "$3" "$4" "$5" "$6"
  SERVER_PID=$BG_PID
  for _ in $(seq 300); do ss -Htln "sport = :$port" | grep -q . && break; sleep 0.05; done
  cs_wait_port "$port"
  "$CS_LOAD" --port "$port" --connections 16 --rate 200 --duration 1 --quiet >/dev/null || fail "warm-up load failed"
  find_vm_thread
}

# The JVM's VM thread (VM_SCHEDSTAT: its schedstat file), found once.
find_vm_thread() {
  local task comm
  for task in /proc/"$SERVER_PID"/task/*; do
    read -r comm <"$task/comm" 2>/dev/null || continue
    [[ $comm == "VM Thread" ]] && { VM_SCHEDSTAT=$task/schedstat; return; }
  done
  fail "no VM Thread in the JVM $SERVER_PID"
}

# read_vm_run_delay VAR: its waits for a CPU so far (schedstat's second
# field, ns) into VAR, read in this shell: done before the next command.
read_vm_run_delay() {
  local run_delay
  read -r _ run_delay _ <"$VM_SCHEDSTAT"
  printf -v "$1" '%s' "$run_delay"
}

# profile NAME: 4 s of load, connscope's window in FROM_NS..TO_NS, the VM
# thread's waits for a CPU over it in VM_WAITED_US: read before the window
# begins and after it ends, so that every wait of a pause inside the window
# falls between the two reads.
profile() {
  CS_ON_ATTACHED='read_vm_run_delay VM_DELAY_FROM; FROM_NS=$(cs_monotonic_ns)' \
    CS_ON_STOPPING='TO_NS=$(cs_monotonic_ns); read_vm_run_delay VM_DELAY_TO' \
    cs_profile "$1" "$CS_LOAD" --busy-poll --port "$port" --connections 16 --rate 200 --duration 4 \
    --json "$CS_TMP/$1-client.json" --quiet
  # the last lines of the log: written by the JVM while it still runs
  $compare "$CS_TMP/$1.json" "$CS_TMP/$1.log" "$FROM_NS" "$TO_NS" >"$CS_TMP/$1-vs-log.json" ||
    fail "comparing with the JVM's log"
  note "$1 vs -Xlog: $(cat "$CS_TMP/$1-vs-log.json")"
  VM_WAITED_US=$(((VM_DELAY_TO - VM_DELAY_FROM) / 1000))
}

vs() { json_get "$CS_TMP/$1-vs-log.json" "j$2"; }

# ---- 1. SerialGC: full collections and thread dumps
start_jvm serial -XX:+UseSerialGC 100 700 1000 0
profile serial
r=$CS_TMP/serial.json
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, causes $(json_get "$r" '[(c["cause"], round(c["share"], 3)) for c in j["tail"]["causes"][:3]]'), flagged: '$(flagged "$r")'"
note "runtime_pauses $(json_get "$r" 'j["conditions"]["runtime_pauses"]')"
[[ $(top_cause "$r") == runtime_pause ]] || fail "top tail cause is $(top_cause "$r"), expected runtime_pause"
echo "ok: top cause runtime_pause"
[[ " $(flagged "$r") " == *" runtime_pauses "* ]] || fail "runtime_pauses not flagged: '$(flagged "$r")'"
[[ " $(flagged "$r") " != *" pool_saturation "* ]] || fail "pool_saturation flagged for a pool the JVM stopped"
echo "ok: runtime_pauses flagged, pool_saturation not"
[[ $(json_get "$r" 'j["tail"]["causes"][0]["evidence"]') == *"collection(s) (GenCollectFull)"* ]] ||
  fail "the evidence does not name the collections: $(json_get "$r" 'j["tail"]["causes"][0]["evidence"]')"
assert_cmp "$(vs serial '["gc_lines"]')" '>=' 4 "full collections in the JVM's log over the window"
assert_cmp "$(vs serial '["gc_matched"]')" '==' "$(vs serial '["gc_lines"]')" "the JVM's collections connscope saw"
assert_cmp "$(vs serial '["gc_pauses_matched"]')" '==' "$(vs serial '["gc_pauses"]')" \
  "connscope's collections in the JVM's log"
assert_cmp "$(vs serial '["gc_worst_error"]')" '<=' 0.10 "each collection's time against -Xlog:gc's"
assert_cmp "$(vs serial '["vm_cpu_wait_us"]')" '<=' "$VM_WAITED_US" "the VM thread's waits for a CPU in the pauses vs its schedstat over the window"
# A pause ends with its operation, before the bookkeeping -Xlog:safepoint's
# total goes on to (the VM thread preempted there lengthens that, not the pause).
assert_cmp "$(vs serial '["pause_over_total"]')" '<=' 0.01 "each pause of 1 ms or more over -Xlog:safepoint's total"
assert_cmp "$(vs serial '["safepoints_matched"]')" '==' "$(vs serial '["safepoints"]')" "the JVM's safepoints connscope saw, by name"
assert_cmp "$(vs serial '["pauses_matched"]')" '==' "$(vs serial '["pauses_in_window"]')" "connscope's pauses in the JVM's log"
# The thread dumps: as many as the JVM logged, named, no collection.
dumps=$(vs serial '["operations"]["ThreadDump"][0]')
assert_cmp "$dumps" '>=' 3 "thread dumps in the JVM's log"
# (a dump begun just before the window is the JVM's there, logged after its start, not connscope's)
assert_cmp "$(vs serial '["operations"]["ThreadDump"][1]')" '>=' $((dumps - 1)) "thread dumps connscope counted"
assert_cmp "$(vs serial '["operations"]["ThreadDump"][1]')" '<=' "$dumps" "thread dumps connscope counted"
assert_cmp "$(vs serial '["operations"]["ThreadDump"][2]')" '==' 0 "thread dumps counted as collections"
[[ $(json_get "$r" 'j["conditions"]["runtime_pauses"]["other_operation"]') == ThreadDump ]] ||
  fail "runtime_pauses does not name the thread dumps"
echo "ok: the thread dumps named ThreadDump"
assert_p99_agrees "$r" "$CS_TMP/serial-client.json"
kill "$SERVER_PID"

# ---- 2. G1: young collections from the allocation rate
# (a young generation of 96 MB: a young collection every third of a second or so)
start_jvm g1 "-XX:+UseG1GC -Xmn96m" 20 0 0 4
profile g1
r=$CS_TMP/g1.json
note "g1: causes $(json_get "$r" '[(c["cause"], round(c["share"], 3)) for c in j["tail"]["causes"][:3]]'), runtime_pauses $(json_get "$r" 'j["conditions"]["runtime_pauses"]')"
assert_cmp "$(vs g1 '["gc_lines"]')" '>=' 5 "young collections in the JVM's log over the window"
assert_cmp "$(vs g1 '["gc_matched"]')" '==' "$(vs g1 '["gc_lines"]')" "the JVM's young collections connscope saw"
assert_cmp "$(vs g1 '["gc_pauses_matched"]')" '==' "$(vs g1 '["gc_pauses"]')" "connscope's collections in the JVM's log"
assert_cmp "$(vs g1 '["gc_worst_error"]')" '<=' 0.10 "each young collection's time against -Xlog:gc's"
assert_cmp "$(vs g1 '["vm_cpu_wait_us"]')" '<=' "$VM_WAITED_US" "the VM thread's waits for a CPU in the pauses vs its schedstat over the window"
[[ $(json_get "$r" 'j["conditions"]["runtime_pauses"]["gc_operation"]') == G1CollectForAllocation ]] ||
  fail "the young collections are not G1CollectForAllocation's"
echo "ok: G1's young collections named G1CollectForAllocation"
