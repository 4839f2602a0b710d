#!/usr/bin/env bash
# Scenario 4: the server closes keep-alive connections idle for 200 ms.
# Clients pausing 300 ms between requests find their connection closed and
# reconnect: idle_timeout is flagged with an inferred timeout of about
# 200 ms. Clients pausing 200 ms race the server's close: some requests land
# on a connection the server has just closed (or is closing), and the
# kernel answers with a reset: the keep-alive race. Each such reset is a
# request the client lost (it reads EOF or a reset).
# integration: exclusive
# Runs alone: connscope's p99 is compared with the client's: another
# test's load moves the client's own wake-ups by milliseconds.
# integration: plain build
# (timed alone once; the sanitized build replays what it recorded:
# test_sanitized_replay)
source "$(dirname "$0")/lib.sh"

cs_start_server --workers 2 --idle-timeout-ms 200
cs_profile s4a "$CS_LOAD" --busy-poll --port "$SERVER_PORT" --connections 8 --gap-ms 300 --duration 5 \
  --json "$CS_TMP/client_a.json" --quiet
r=$CS_TMP/s4a.json
note "pausing 300 ms: $(json_get "$r" 'j["conditions"]["idle_timeout"]'), server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us"
[[ $(json_get "$r" 'j["conditions"]["idle_timeout"]["flagged"]') == True ]] || fail "idle_timeout not flagged"
assert_cmp "$(json_get "$r" 'j["conditions"]["idle_timeout"]["server_idle_closes"]')" '>=' 20 "server idle closes"
inferred=$(json_get "$r" 'j["conditions"]["idle_timeout"]["inferred_timeout_ms"]')
assert_cmp "$inferred" '>=' 190 "inferred timeout (ms) near 200"
assert_cmp "$inferred" '<=' 230 "inferred timeout (ms) near 200"
assert_cmp "$(json_get "$r" 'j["conditions"]["idle_timeout"]["reconnects"]')" '>=' 20 "reconnects after idle closes"
assert_p99_agrees "$r" "$CS_TMP/client_a.json"

# Pausing just the timeout: the race.
cs_profile s4b "$CS_LOAD" --busy-poll --port "$SERVER_PORT" --connections 16 --gap-ms 200 --duration 6 \
  --json "$CS_TMP/client_b.json" --quiet
r=$CS_TMP/s4b.json
races=$(json_get "$r" 'j["conditions"]["idle_timeout"]["keepalive_race_resets"]')
lost=$(json_get "$CS_TMP/client_b.json" 'j["errors"]["eof_before_response"] + j["errors"]["resets"]')
note "pausing 200 ms: race resets $races; client lost $lost request(s)"
assert_cmp "$races" '>' 0 "keep-alive race resets"
assert_cmp "$lost" '>' 0 "clients lost requests to the race"
assert_cmp "$races" '>=' "$(python3 -c "print(0.8 * $lost)")" "race resets account for the lost requests"
assert_cmp "$races" '<=' "$(python3 -c "print(1.2 * $lost + 2)")" "race resets account for the lost requests"
