#!/usr/bin/env bash
# Netty 4 (Debian's libnetty-java) with its handlers on an executor group:
# our small HTTP server (tests/integration/netty/CsNetty.java) with one boss
# loop, 2 event loops and a DefaultEventExecutorGroup of 2 threads; 2 % of
# requests block their executor thread 50 ms. Each channel is pinned to one
# executor thread, so the requests of the channels behind a blocked one wait
# for it with their request already read: the loop read each request, gave
# it to the executor and went back to epoll_wait; the executor's answer is
# written by the loop once the executor wakes it. (At 600 requests/s about
# 15 arrive for an executor during each block, as in test_netty_loops.sh.)
#
# What is asserted: worker_pool (read -> the executor began the request) is
# the top tail cause and pool_saturation is flagged; the 2 loops have the
# role event_loop (they poll and read what they polled) and are no workers;
# the boss is the one acceptor; the 2 executor threads, which never touch a
# socket, have the role worker (they ran the handlers of requests the loops
# read) and read nothing; connscope's p99 agrees with the client's.
# integration: exclusive
# integration: plain build
# Runs alone: connscope's p99 is compared with the client's (see scenario 6).
source "$(dirname "$0")/lib.sh"

cs_start_netty 2 2
port=$NETTY_PORT

cs_profile netty "$CS_LOAD" --busy-poll --port "$port" --connections 32 --rate 600 --duration 3 \
  --mix /block/50:0.02 --json "$CS_TMP/client.json" --quiet
r=$CS_TMP/netty.json
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, causes $(json_get "$r" '[(c["cause"], round(c["share"], 3)) for c in j["tail"]["causes"][:4]]'), flagged: '$(flagged "$r")'"
note "roles $(json_get "$r" 'sorted((t["tid"], t["java_name"], t["roles"], t["requests"], t["accepts"], t["parked_out"], t["executed"]) for t in j["threads"] if t["roles"])')"

[[ $(top_cause "$r") == worker_pool ]] || fail "top tail cause is $(top_cause "$r"), expected worker_pool"
echo "ok: top cause worker_pool"
[[ " $(flagged "$r") " == *" pool_saturation "* ]] || fail "pool_saturation not flagged: '$(flagged "$r")'"
echo "ok: pool_saturation flagged"
count_role() { json_get "$r" "sum(1 for t in j['threads'] if '$1' in t['roles'])"; }
assert_cmp "$(count_role event_loop)" '==' 2 "threads with the role event_loop (2 loops)"
assert_cmp "$(count_role acceptor)" '==' 1 "threads with the role acceptor (the boss loop)"
assert_cmp "$(count_role worker)" '==' 2 "threads with the role worker (2 executor threads)"
assert_cmp "$(json_get "$r" "sum(1 for t in j['threads'] if 'worker' in t['roles'] and ('event_loop' in t['roles'] or t['requests']))")" \
  '==' 0 "workers that are loops too or read requests"
assert_p99_agrees "$r" "$CS_TMP/client.json"
# The JVM's names for them, asked at the end: the workers are the executor
# group's threads (defaultEventExecutorGroup-N-M), the loops a NioEventLoopGroup's.
note "java names $(json_get "$r" 'sorted((t["roles"], t["java_name"]) for t in j["threads"] if t["roles"])')"
workers=$(json_get "$r" "sorted(t['java_name'] or '' for t in j['threads'] if 'worker' in t['roles'])")
[[ $workers =~ ^\[\'defaultEventExecutorGroup-[0-9]+-[0-9]+\',\ \'defaultEventExecutorGroup-[0-9]+-[0-9]+\'\]$ ]] ||
  fail "the workers are not the executor group's threads: $workers"
echo "ok: the workers are the executor group's threads: $workers"
