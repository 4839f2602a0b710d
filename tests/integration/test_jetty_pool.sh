#!/usr/bin/env bash
# Debian's Jetty 9 with an exhausted QueuedThreadPool: maxThreads=6, shared
# by the acceptor, the selector and the request threads, and a JSP that
# blocks its thread 10 ms. 16 keep-alive connections send their next
# request as soon as the last is answered: requests queue for a thread of
# the pool (a mean of about 50 ms each, for 10 ms of work).
#
# Jetty's pool threads take turns selecting (its EatWhatYouKill strategy:
# while threads are free, the thread that selected runs the task it found
# and another one selects; with the pool exhausted, the selector queues the
# task and a pool thread runs it later). connscope decides per request who
# learned it was ready: a pool thread that runs a task another thread
# selected was handed the socket. What is asserted: worker_pool leads the
# tail and pool_saturation is flagged; the pool's threads by their JVM names
# serve, poll in turn and are workers too (some of their reads were handed
# to them); Jetty's acceptor thread is the one acceptor; the p99 agrees
# with the client's.
# integration: exclusive
# integration: plain build
# Runs alone: a JVM starting beside other tests' load takes seconds more,
# and connscope's p99 is compared with the client's.
source "$(dirname "$0")/lib.sh"

cs_start_jetty "jetty.threadPool.maxThreads=6 jetty.threadPool.minThreads=6" block.jsp '<% Thread.sleep(10); %>ok'
port=$JETTY_PORT
# The JSP compiles on its first request, the JIT warms: not measured.
curl -sf --max-time 30 "http://127.0.0.1:$port/block.jsp" | grep -q ok || fail "the JSP does not answer"
"$CS_LOAD" --port "$port" --connections 16 --duration 1 --path /block.jsp --quiet >/dev/null || fail "warm-up load failed"

cs_profile jetty "$CS_LOAD" --port "$port" --connections 16 --duration 3 --path /block.jsp \
  --json "$CS_TMP/client.json" --quiet
r=$CS_TMP/jetty.json
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, client p99 $(json_get "$CS_TMP/client.json" 'j["from_send_us"]["p99"]') us, causes $(json_get "$r" '[(c["cause"], round(c["share"], 3)) for c in j["tail"]["causes"][:3]]'), flagged: '$(flagged "$r")'"
note "roles $(json_get "$r" 'sorted((t["tid"], t["java_name"], t["roles"], t["requests"], t["ready_polls"], t["reads_own"], t["reads_handed"]) for t in j["threads"] if t["roles"])')"

[[ $(top_cause "$r") == worker_pool ]] || fail "top tail cause is $(top_cause "$r"), expected worker_pool"
echo "ok: top cause worker_pool"
[[ " $(flagged "$r") " == *" pool_saturation "* ]] || fail "pool_saturation not flagged: '$(flagged "$r")'"
echo "ok: pool_saturation flagged"
acceptors=$(json_get "$r" '[t["java_name"] for t in j["threads"] if "acceptor" in t["roles"]]')
[[ $acceptors =~ ^\[\'qtp[0-9]+-[0-9]+-acceptor-0 ]] || fail "the acceptor is not Jetty's acceptor thread: $acceptors"
serving() { json_get "$r" "sum(1 for t in j['threads'] if t['requests'] and __import__('re').fullmatch(r'qtp\d+-\d+', t['java_name'] or '')$1)"; }
assert_cmp "$(serving '')" '==' "$(json_get "$r" 'sum(1 for t in j["threads"] if t["requests"])')" \
  "threads that read requests, all of them pool threads by their JVM names"
assert_cmp "$(serving '')" '<=' 5 "pool threads that read requests (maxThreads=6, one of them the acceptor)"
assert_cmp "$(serving ' and t["ready_polls"]')" '>=' 2 "pool threads that read requests and polled in turn"
assert_cmp "$(serving ' and "worker" in t["roles"]')" '>=' 2 "pool threads that read requests with the role worker"
assert_p99_agrees "$r" "$CS_TMP/client.json"
