#!/usr/bin/env bash
# Java frames in a flame graph: Debian's Tomcat 10 (frame pointers kept in
# compiled code, -XX:+PreserveFramePointer, so that the stacks walk through
# it) with a JSP that computes for a few milliseconds. At the end of the
# run connscope has the JVM write its perf map (Compiler.perfmap, through
# its attach mechanism): the JSP's compiled method is named in the graph,
# and the map, written for connscope, is removed once read.
# integration: exclusive
# integration: plain build
# Runs alone: the JIT must have compiled the JSP's method within the
# warm-up, which other tests' load can delay. With the plain build only:
# the sanitized connscope symbolises csserver's frames the same way.
source "$(dirname "$0")/lib.sh"

JAVA_OPTS=-XX:+PreserveFramePointer cs_start_tomcat 'maxThreads="4"' spin.jsp \
  '<% long x = 0; for (int i = 0; i < 3000000; i++) x += i * 31; %><%= x %>'
port=$TOMCAT_PORT
curl -sf --max-time 30 "http://127.0.0.1:$port/spin.jsp" >/dev/null || fail "the JSP does not answer"
# The JIT compiles the JSP's method under this load: it is compiled code when measured.
"$CS_LOAD" --port "$port" --connections 4 --duration 2 --path /spin.jsp --quiet >/dev/null || fail "warm-up load failed"

"$CS_BIN" flamegraph --pid "$SERVER_PID" --duration 3 -o "$CS_TMP/tail.folded" 2>"$CS_TMP/fg.err" &
fg=$!
cs_pids+=("$fg")
cs_wait_attached "$CS_TMP/fg.err"
"$CS_LOAD" --port "$port" --connections 4 --duration 2 --path /spin.jsp --quiet >/dev/null || fail "load failed"
wait "$fg" || { cat "$CS_TMP/fg.err"; fail "connscope flamegraph failed"; }
grep 'JVM\|java pid' "$CS_TMP/fg.err" || true
jsp=$(grep -c 'org\.apache\.jsp\.spin_jsp\._jspService' "$CS_TMP/tail.folded" || true)
note "stacks through the JSP's compiled method: $jsp of $(wc -l <"$CS_TMP/tail.folded")"
assert_cmp "$jsp" '>=' 1 "stacks naming the JSP's compiled method (from the JVM's perf map)"
[[ ! -e /tmp/perf-$SERVER_PID.map ]] || fail "the perf map written for connscope was left in /tmp"
echo "ok: the perf map was removed once read"
