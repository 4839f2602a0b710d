#!/usr/bin/env bash
# Scenario 5: the same request rate with and without keep-alive. Without
# it, every request pays a handshake and an accept: non_persistent is
# flagged with 1 request per connection. With it, it is not.
# integration: exclusive
# Runs alone: connscope's p99 is compared with the client's: another
# test's load moves the client's own wake-ups by milliseconds.
# integration: plain build
# (timed alone once; the sanitized build replays what it recorded:
# test_sanitized_replay)
source "$(dirname "$0")/lib.sh"

cs_start_server --workers 2 --no-keepalive
cs_profile s5close "$CS_LOAD" --busy-poll --port "$SERVER_PORT" --connections 8 --no-keepalive --rate 400 \
  --duration 5 --json "$CS_TMP/client_close.json" --quiet
kill "$SERVER_PID"; wait "$SERVER_PID" 2>/dev/null || true
cs_start_server --workers 2
cs_profile s5keep "$CS_LOAD" --busy-poll --port "$SERVER_PORT" --connections 8 --rate 400 \
  --duration 5 --json "$CS_TMP/client_keep.json" --quiet

c=$CS_TMP/s5close.json k=$CS_TMP/s5keep.json
note "no keep-alive: $(json_get "$c" 'j["conditions"]["non_persistent"]'); keep-alive: $(json_get "$k" 'j["conditions"]["non_persistent"]')"
[[ $(json_get "$c" 'j["conditions"]["non_persistent"]["flagged"]') == True ]] || fail "non_persistent not flagged without keep-alive"
assert_cmp "$(json_get "$c" 'j["conditions"]["non_persistent"]["requests_per_connection"]')" '==' 1 "requests per connection without keep-alive"
assert_cmp "$(json_get "$c" 'j["conditions"]["non_persistent"]["setup_share"]')" '==' 1 "every request paid set-up"
[[ $(json_get "$k" 'j["conditions"]["non_persistent"]["flagged"]') == False ]] || fail "non_persistent flagged with keep-alive"
assert_cmp "$(json_get "$k" 'j["conditions"]["non_persistent"]["requests_per_connection"]')" '>=' 100 "requests per connection with keep-alive"
echo "ok: non_persistent flagged only without keep-alive"
assert_p99_agrees "$c" "$CS_TMP/client_close.json"
assert_p99_agrees "$k" "$CS_TMP/client_keep.json"
