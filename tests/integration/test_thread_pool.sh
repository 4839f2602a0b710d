#!/usr/bin/env bash
# A Tomcat-shaped server: csserver --accept pool, where cs-acceptor
# accepts, cs-poller waits in epoll_wait() and queues ready connections,
# and two pool threads (cs-pool-N) read and serve them. Every request
# blocks its pool thread 10 ms, and 160 requests/s arrive over 32
# keep-alive connections: the pool is 80 % busy, so ready requests queue
# for a free pool thread. worker_pool leads the tail, pool_saturation is
# flagged, and the threads' roles come out of what they did: acceptor,
# poller, worker. The 32 connections, accepted once, are no accept
# bottleneck.
# integration: exclusive
# Runs alone: connscope's p99 is compared with the client's (see scenario 6).
# integration: plain build
# (timed alone once; the sanitized build replays what it recorded:
# test_sanitized_replay)
source "$(dirname "$0")/lib.sh"

cs_start_server --workers 2 --accept pool
cs_profile pool "$CS_LOAD" --port "$SERVER_PORT" --connections 8 --duration 3 \
  --path /block/10 --json "$CS_TMP/client.json" --quiet
r=$CS_TMP/pool.json
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, causes $(json_get "$r" '[(c["cause"], round(c["share"], 3)) for c in j["tail"]["causes"][:3]]')"
note "roles $(json_get "$r" 'sorted((t["comm"], t["roles"]) for t in j["threads"])')"
note "pool_saturation $(json_get "$r" 'j["conditions"]["pool_saturation"]')"

[[ $(top_cause "$r") == worker_pool ]] || fail "top tail cause is $(top_cause "$r"), expected worker_pool"
echo "ok: top cause worker_pool"
flags=$(flagged "$r")
[[ " $flags " == *" pool_saturation "* ]] || fail "pool_saturation not flagged (flagged: $flags)"
[[ " $flags " != *" accept_contention "* ]] || fail "accept_contention flagged for 8 connections accepted once"
echo "ok: pool_saturation flagged, accept_contention not"
assert_cmp "$(json_get "$r" 'j["conditions"]["pool_saturation"]["pool_threads"]')" '==' 2 "pool threads seen"
[[ $(json_get "$r" 'j["conditions"]["pool_saturation"]["poller_comm"]') == cs-poller ]] \
  || fail "the poller named is not cs-poller"

roles_of() { json_get "$r" "sorted(set(r for t in j['threads'] if t['comm'].startswith('$1') for r in t['roles']))"; }
[[ $(roles_of cs-acceptor) == "['acceptor']" ]] || fail "cs-acceptor roles: $(roles_of cs-acceptor)"
[[ $(roles_of cs-poller) == "['poller']" ]] || fail "cs-poller roles: $(roles_of cs-poller)"
[[ $(roles_of cs-pool) == "['worker']" ]] || fail "cs-pool-N roles: $(roles_of cs-pool)"
echo "ok: roles acceptor, poller, worker"
json_get "$r" 'all(any(t["tid"] == w["tid"] for t in j["threads"]) for l in j["listeners"] for w in l["workers"])' \
  | grep -qx True || fail "a listener's accepting thread is missing from threads[]"
echo "ok: the accepting threads are in threads[]"
assert_p99_agrees "$r" "$CS_TMP/client.json"
