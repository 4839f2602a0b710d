#!/usr/bin/env bash
# Two hops on one host, both attached in one run: nginx proxies each request
# on a new connection (proxy_pass, no keepalive) to a backend whose one
# accept thread pauses 5 ms before each accept (csserver --accept acceptor
# --accept-delay-us 5000), under 16 clients at once: the backend's accept
# queue holds their connections (about 80 ms each) and is its bottleneck. connscope, attached to nginx and to the backend
# before the load (--pid twice): nginx's tail waits on the upstream, and
# the upstream's evidence goes one hop further: the backend's own requests
# for those exchanges (half of them at least), found by their connection
# and time, waited in its accept queue first. The chained wait agrees with the backend listener's
# own accept waits (about their p50 to their max), and the advice points at it.
# (Shared: the backend's accept queue, tens of ms, is far above what
# another test's load adds. Plain build only: the
# sanitized build replays its trace.)
# integration: plain build
source "$(dirname "$0")/lib.sh"

cs_start_backend --accept acceptor --workers 2 --accept-delay-us 5000
backend_port=$BACKEND_PORT backend_pid=$BACKEND_PID
NGINX_SERVER_EXTRA="location /c/ { proxy_pass http://127.0.0.1:$backend_port/; }"
cs_start_nginx 65s 1024

CS_ATTACH_OPTS="--pid $backend_pid" cs_profile chained "$CS_LOAD" --port "$NGINX_PORT" --connections 16 \
  --duration 3 --path /c/ --json "$CS_TMP/client.json" --quiet
kill -TERM "$backend_pid"
wait "$backend_pid" || true

r=$CS_TMP/chained.json
cause='[c for c in j["tail"]["causes"] if c["cause"] == "upstream"][0]'
backend='[l for l in j["listeners"] if l["port"] == '"$backend_port"'][0]'
note "tail: $(json_get "$r" '", ".join("%s %.1f%%" % (c["cause"], 100 * c["share"]) for c in j["tail"]["causes"] if c["share"] >= 0.005)')"
note "upstream evidence: $(json_get "$r" "$cause[\"evidence\"]")"
note "its advice: $(json_get "$r" "$cause[\"advice\"]")"
note "the backend's listener: accept wait $(json_get "$r" "$backend[\"accept_wait_us\"]")"

assert_cmp "$(json_get "$r" "$cause[\"share\"]")" '>=' 0.3 "the upstream's share of the tail (nginx's requests)"
assert_cmp "$(json_get "$r" "$cause[\"figures\"][\"upstream_port\"]")" == "$backend_port" "the evidence names the backend's port"
tail_requests=$(json_get "$r" "$cause[\"figures\"][\"tail_requests\"]")
chained=$(json_get "$r" "$cause[\"figures\"][\"chained_requests\"]")
# (The backend's request is found when it is among the slowest requests
# kept, 512 of both targets': a tail request slow for nginx's own reasons,
# on a busy machine, may have had a backend request too fast to be kept.)
assert_cmp "$chained" '>=' "$(python3 -c "print(0.5 * $tail_requests)")" \
  "tail requests whose exchange was found on the backend's side (half)"
first=$(json_get "$r" "$cause[\"figures\"][\"chained_first_cause\"]")
[[ $first == accept_queue ]] || fail "the backend's own top cause for them is $first, expected accept_queue (where it was made slow)"
echo "ok: the backend's own top cause for them: its accept queue"
per_request=$(json_get "$r" "$cause[\"figures\"][\"chained_first_us\"] / $chained")
assert_cmp "$per_request" '>=' "$(json_get "$r" "0.9 * $backend[\"accept_wait_us\"][\"p50\"]")" \
  "their accept-queue wait (mean) against the backend listener's accept waits: about its p50 at least (90 %)"
assert_cmp "$per_request" '<=' "$(json_get "$r" "$backend[\"accept_wait_us\"][\"max\"]")" \
  "their accept-queue wait (mean): at most its max"
json_get "$r" "$cause[\"advice\"]" | grep -q "accept_queue" || fail "the advice does not point at the backend's accept queue"
echo "ok: the advice points at the backend's accept queue"
assert_cmp "$(json_get "$r" 'j["events"]["lost"]')" == 0 "events lost"
