#!/usr/bin/env bash
# A server at its connection limit: csserver --max-conns 4 stops calling
# accept() while 4 connections are open and waits, off-CPU, for one to
# close; its idle timeout (300 ms) closes them. 12 keep-alive clients that
# pause 400 ms between requests reconnect each time and queue for a slot.
# connscope must call it connection_limit at 4 open connections, freed by
# idle closes, and must not call the acceptor a bottleneck; its p99 agrees
# with the clients'.
# integration: exclusive
# Runs alone: connscope's p99 is compared with the client's, and the
# acceptor's wake-up after a close is timed against its time away.
# integration: plain build
# (timed alone once; the sanitized build replays what it recorded:
# test_sanitized_replay)
source "$(dirname "$0")/lib.sh"

limit=4
cs_start_server --accept acceptor --workers 2 --max-conns "$limit" --idle-timeout-ms 300
cs_profile limit "$CS_LOAD" --busy-poll --port "$SERVER_PORT" --connections 12 --gap-ms 400 --duration 3 \
  --json "$CS_TMP/client.json" --quiet
r=$CS_TMP/limit.json
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, client p99 from send $(json_get "$CS_TMP/client.json" 'j["from_send_us"]["p99"]') us, from connect $(json_get "$CS_TMP/client.json" 'j["service_us"]["p99"]') us"
note "flagged: '$(flagged "$r")'; connection_limit $(json_get "$r" 'j["conditions"]["connection_limit"]')"

[[ $(json_get "$r" 'j["conditions"]["connection_limit"]["flagged"]') == True ]] || fail "connection_limit not flagged"
echo "ok: connection_limit flagged"
[[ $(json_get "$r" 'j["conditions"]["accept_contention"]["acceptor_bottleneck"]') == False ]] \
  || fail "acceptor_bottleneck flagged: the acceptor waits on a limit, it is not busy"
echo "ok: acceptor_bottleneck not flagged"
grep -q '"code":"accept_thread_bottleneck"' "$r" && fail "the acceptor was called the bottleneck"
grep -q '"code":"connection_limit"' "$r" || fail "no connection_limit finding"
assert_cmp "$(json_get "$r" 'j["conditions"]["connection_limit"]["open_connections"]')" == "$limit" \
  "open connections at the plateau (the server was told --max-conns $limit)"
assert_cmp "$(json_get "$r" 'j["conditions"]["connection_limit"]["blocked_share"]')" '>=' 0.5 \
  "the acceptor's share of its time outside accept() spent blocked"
# The server closed idle connections (--idle-timeout-ms); the clients never close first.
assert_cmp "$(json_get "$r" 'j["conditions"]["connection_limit"]["freed_by_idle_close"]')" '>' \
  "$(json_get "$r" 'j["conditions"]["connection_limit"]["freed_by_client"]')" "slots freed by idle closes vs client closes"
[[ $(top_cause "$r") == accept_queue ]] || fail "top tail cause is $(top_cause "$r"), expected accept_queue"
echo "ok: top cause accept_queue"
assert_p99_agrees "$r" "$CS_TMP/client.json"
"$CS_BIN" report "$CS_TMP/limit.cstrace" >"$CS_TMP/limit.txt" || fail "text report failed"
grep -q 'stopped accepting at its connection limit' "$CS_TMP/limit.txt" || fail "the text report does not say so"
sed -n '/^diagnosis/,$p' "$CS_TMP/limit.txt"
