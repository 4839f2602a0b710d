#!/usr/bin/env bash
# nginx as a reverse proxy (proxy_pass to an upstream with keepalive 16)
# in front of csserver, where 5 % of the requests wait 30 ms (/sleep/30,
# without blocking its loop): the tail is the backend's, and connscope,
# attached to nginx before the load, says so: upstream leads, naming the
# backend's port; connscope's p99 agrees with the clients'; the slow
# requests' upstream wait is the 30 ms the backend was told to take
# (their median within 10 % or 1 ms; 90 % of them at least that long);
# every exchange is joined or counted as not joined, and there are as
# many exchanges as the
# backend served requests, each one's record replayed before its
# request's (none left waiting for its request, none unmatched).
# (Shared, and run with each build: a light load, 200 requests/s, whose
# tail is the backend's 30 ms, far above what another test's load adds.)
source "$(dirname "$0")/lib.sh"

slow_ms=30
backend_port=$(cs_free_port)
"$CS_SERVER" --port "$backend_port" --workers 1 >"$CS_TMP/backend.log" 2>&1 &
backend_pid=$!
cs_pids+=("$backend_pid")
cs_wait_port "$backend_port"

NGINX_HTTP_EXTRA="upstream backend { server 127.0.0.1:$backend_port; keepalive 16; }"
NGINX_SERVER_EXTRA='location /b/ { proxy_pass http://backend/; proxy_http_version 1.1; proxy_set_header Connection ""; }'
cs_start_nginx 65s 1024

cs_profile upstream "$CS_LOAD" --port "$NGINX_PORT" --connections 16 --rate 200 --duration 5 \
  --path /b/ --mix "/b/sleep/$slow_ms:0.05" --json "$CS_TMP/client.json" --log "$CS_TMP/client.log" --quiet
"$CS_BIN" report --json --slowest 100 "$CS_TMP/upstream.cstrace" >"$CS_TMP/slowest.json" ||
  fail "connscope report --slowest failed"
kill -TERM "$backend_pid"
wait "$backend_pid" || true
backend_requests=$(sed -n 's/.*worker 0: .*, requests \([0-9]*\),.*/\1/p' "$CS_TMP/backend.log")
[[ -n $backend_requests ]] || { cat "$CS_TMP/backend.log"; fail "the backend did not say how many requests it served"; }
client_slow=$(awk -v p="/b/sleep/$slow_ms" '$7 == p' "$CS_TMP/client.log" | wc -l)

r=$CS_TMP/upstream.json
note "p99: connscope $(json_get "$r" 'j["latency_us"]["p99"]') us, the client $(json_get "$CS_TMP/client.json" 'j["from_send_us"]["p99"]') us from its send"
note "tail: $(json_get "$r" '", ".join("%s %.1f%%" % (c["cause"], 100 * c["share"]) for c in j["tail"]["causes"] if c["share"] >= 0.005)')"
note "upstream evidence: $(json_get "$r" '[c for c in j["tail"]["causes"] if c["cause"] == "upstream"][0]["evidence"]')"
note "upstreams: $(json_get "$r" 'j["upstreams"]')"

# The tail's cause, and the upstream it names.
[[ $(top_cause "$r") == upstream ]] || fail "the tail's top cause is $(top_cause "$r"), expected upstream"
echo "ok: upstream leads the tail"
assert_cmp "$(json_get "$r" '[c for c in j["tail"]["causes"] if c["cause"] == "upstream"][0]["figures"]["upstream_port"]')" \
  == "$backend_port" "the evidence names the backend's port"
assert_p99_agrees "$r" "$CS_TMP/client.json"

# The slow requests' wait on the backend: what it was told to take.
# (A request whose wait is half the backend's or more: the slow ones, and
# on a busy machine a fast one the backend itself answered late; those
# at the backend's 30 ms or more are the slow ones, less any it slept
# short of, which it never does.)
read -r slow_count slow_median full_count < <(json_get "$CS_TMP/slowest.json" '" ".join(str(x) for x in (lambda w: (len(w), w[len(w) // 2] if w else 0, sum(v >= '"$((slow_ms * 1000 - 1000))"' for v in w)))(sorted(s["upstream"]["wait_us"] for s in j["slowest"] if s["upstream"] and s["upstream"]["wait_us"] >= 15000)))')
note "$slow_count slow request(s) joined to their exchange (the client sent $client_slow): first-byte wait median $slow_median us, $full_count of them at the backend's $slow_ms ms or more"
tolerance_us=$(python3 -c "print(max(0.1 * $slow_ms * 1000, 1000))")
assert_cmp "$(python3 -c "print(abs($slow_median - $slow_ms * 1000))")" '<=' "$tolerance_us" \
  "the slow requests' upstream wait (median) against the backend's $slow_ms ms"
assert_cmp "$full_count" '>=' "$(python3 -c "print(0.9 * $client_slow)")" \
  "slow requests joined with the backend's $slow_ms ms wait (90 % of those sent)"

# Every exchange counted once, as many as the backend served; none waiting for its request.
u='[x for x in j["upstreams"] if x["port"] == '$backend_port'][0]'
exchanges=$(json_get "$r" "$u[\"exchanges\"]")
assert_cmp "$(json_get "$r" "$u[\"joined\"] + $u[\"not_joined\"]")" == "$exchanges" "joined + not joined = exchanges"
assert_cmp "$exchanges" == "$backend_requests" "exchanges = the backend's requests"
assert_cmp "$(json_get "$r" "$u[\"not_joined_by\"][\"awaiting_request\"] + $u[\"not_joined_by\"][\"unmatched\"]")" == 0 \
  "exchanges replayed before their requests (none awaiting, none unmatched)"
assert_cmp "$(json_get "$r" 'j["events"]["lost"]')" == 0 "events lost"
