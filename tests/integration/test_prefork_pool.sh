#!/usr/bin/env bash
# A pre-fork server: csserver --accept prefork, where two threads each
# block in accept4(), then serve that connection to its end before they
# accept again (gunicorn's sync workers, Apache's prefork MPM). Every
# request blocks its worker 40 ms and six clients connect in a loop, one
# request a connection: with both workers serving, new connections wait
# in the listen queue, the pool's queue. accept_queue leads the tail,
# pool_saturation is flagged with kind accept and 2 of 2 workers busy,
# and no worker that serves what it accepts is called an acceptor
# bottleneck.
# integration: plain build
# (its clients' timing is compared; the sanitized build replays what it
# recorded: test_sanitized_replay)
source "$(dirname "$0")/lib.sh"

cs_start_server --workers 2 --accept prefork
cs_profile prefork "$CS_LOAD" --port "$SERVER_PORT" --connections 6 --duration 3 --no-keepalive \
  --path /block/40 --json "$CS_TMP/client.json" --quiet
r=$CS_TMP/prefork.json
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, client from connect $(json_get "$CS_TMP/client.json" 'j["service_us"]["p99"]') us, from send $(json_get "$CS_TMP/client.json" 'j["from_send_us"]["p99"]') us"
note "causes $(json_get "$r" '[(c["cause"], round(c["share"], 3)) for c in j["tail"]["causes"][:3]]')"
note "pool_saturation $(json_get "$r" 'j["conditions"]["pool_saturation"]')"
note "findings $(json_get "$r" '[(f["code"], f["text"]) for f in j["findings"]]')"

[[ $(top_cause "$r") == accept_queue ]] || fail "top tail cause is $(top_cause "$r"), expected accept_queue"
echo "ok: top cause accept_queue"
flags=$(flagged "$r")
[[ " $flags " == *" pool_saturation "* ]] || fail "pool_saturation not flagged (flagged: $flags)"
[[ $(json_get "$r" 'j["conditions"]["pool_saturation"]["kind"]') == accept ]] || fail "pool kind is not accept"
assert_cmp "$(json_get "$r" 'j["conditions"]["pool_saturation"]["workers"]')" '==' 2 "workers seen"
assert_cmp "$(json_get "$r" 'j["conditions"]["pool_saturation"]["busy_workers"]')" '==' 2 "workers busy"
[[ $(json_get "$r" 'j["conditions"]["accept_contention"]["acceptor_bottleneck"]') == False ]] \
  || fail "acceptor_bottleneck flagged for workers that serve what they accept"
grep -q '"code":"accept_thread_bottleneck"' "$r" && fail "a worker was called the accept thread bottleneck"
echo "ok: pool_saturation (accept, 2 of 2 busy), no acceptor bottleneck"
assert_p99_agrees "$r" "$CS_TMP/client.json"
