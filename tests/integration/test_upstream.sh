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
# Then 32 clients, 800 requests/s in all, each request waiting 20 ms on a
# second backend (some 16 in flight: closed-loop, 1 600 a second kept both
# CPUs busy, and with another test beside it nginx's waits for a CPU
# outgrew the backend's 20 ms in the tail): nginx has every request open
# over every exchange, none joined by what was open, and its loop's turns
# join them (it writes each answer right after reading the backend's):
# upstream leads (or comes right after run_queue where the kernel says
# nginx's worker waited for a CPU), nine exchanges in ten at least joined,
# each joined request's upstream time the backend's 20 ms and less than
# the client's.
# (Shared, and run with each build: a light load, 200 requests/s, whose
# tail is the backend's 30 ms, far above what another test's load adds.)
source "$(dirname "$0")/lib.sh"

slow_ms=30
cs_start_backend --workers 1
backend_port=$BACKEND_PORT backend_pid=$BACKEND_PID
cs_start_backend --workers 1
busy_port=$BACKEND_PORT busy_pid=$BACKEND_PID

NGINX_HTTP_EXTRA="upstream backend { server 127.0.0.1:$backend_port; keepalive 16; }
  upstream busy { server 127.0.0.1:$busy_port; keepalive 32; }"
NGINX_SERVER_EXTRA='location /b/ { proxy_pass http://backend/; proxy_http_version 1.1; proxy_set_header Connection ""; }
  location /c/ { proxy_pass http://busy/; proxy_http_version 1.1; proxy_set_header Connection ""; }'
cs_start_nginx 65s 1024

cs_profile upstream "$CS_LOAD" --port "$NGINX_PORT" --connections 16 --rate 200 --duration 5 \
  --path /b/ --mix "/b/sleep/$slow_ms:0.05" --json "$CS_TMP/client.json" --log "$CS_TMP/client.log" --quiet
"$CS_BIN" report --json --slowest 100 "$CS_TMP/upstream.cstrace" >"$CS_TMP/slowest.json" ||
  fail "connscope report --slowest failed"
kill -TERM "$backend_pid"
wait "$backend_pid" || true
backend_requests=$(sed -n 's/.*worker 0: .*, requests \([0-9]*\),.*/\1/p' "$CS_TMP/backend-$backend_port.log")
[[ -n $backend_requests ]] || { cat "$CS_TMP/backend-$backend_port.log"; fail "the backend did not say how many requests it served"; }
client_slow=$(awk -v p="/b/sleep/$slow_ms" '$7 == p' "$CS_TMP/client.log" | wc -l)

r=$CS_TMP/upstream.json
note_upstream_tail "$r" "$CS_TMP/client.json"
assert_upstream_leads "$r" "$backend_port" "the backend's port"
assert_p99_agrees "$r" "$CS_TMP/client.json"

# The slow requests' wait on the backend: what it was told to take. Each
# kept request is told by its path, from the client's log (kept_paths.py):
# the slow ones joined with the backend's 30 ms (less any it slept short
# of, which it never does), and no other given a slow one's exchange (as a
# wrong join by a loop's turn would).
"$CS_PYTHON" "$(dirname "$0")/kept_paths.py" "$CS_TMP/client.log" "$CS_TMP/slowest.json" >"$CS_TMP/kept"
full_us=$((slow_ms * 1000 - 1000))
read -r slow_count slow_median full_count < <(awk -v p="/b/sleep/$slow_ms" '$1 == p { print $2 }' "$CS_TMP/kept" | sort -n |
  awk -v full="$full_us" '{ v[NR] = $1; if ($1 >= full) n++ } END { print NR, v[int((NR + 1) / 2)] + 0, n + 0 }')
misjoined=$(awk -v p="/b/sleep/$slow_ms" -v full="$full_us" '$1 != p && $2 >= full' "$CS_TMP/kept" | wc -l)
note "$slow_count slow request(s) kept joined to their exchange (the client sent $client_slow): first-byte wait median $slow_median us, $full_count of them at the backend's $slow_ms ms or more; other requests with such a wait: $misjoined"
tolerance_us=$(python3 -c "print(max(0.1 * $slow_ms * 1000, 1000))")
assert_cmp "$(python3 -c "print(abs($slow_median - $slow_ms * 1000))")" '<=' "$tolerance_us" \
  "the slow requests' upstream wait (median) against the backend's $slow_ms ms"
assert_cmp "$full_count" '>=' "$(python3 -c "print(0.9 * $client_slow)")" \
  "slow requests joined with the backend's $slow_ms ms wait (90 % of those sent)"
assert_cmp "$misjoined" == 0 "other requests joined to a slow request's exchange"

# Every exchange counted once, as many as the backend served; none waiting for its request.
u='[x for x in j["upstreams"] if x["port"] == '$backend_port'][0]'
exchanges=$(json_get "$r" "$u[\"exchanges\"]")
assert_cmp "$(json_get "$r" "$u[\"joined\"] + $u[\"not_joined\"]")" == "$exchanges" "joined + not joined = exchanges"
assert_cmp "$exchanges" == "$backend_requests" "exchanges = the backend's requests"
assert_cmp "$(json_get "$r" "$u[\"not_joined_by\"][\"awaiting_request\"] + $u[\"not_joined_by\"][\"unmatched\"]")" == 0 \
  "exchanges replayed before their requests (none awaiting, none unmatched)"
assert_cmp "$(json_get "$r" 'j["events"]["lost"]')" == 0 "events lost"

# 2. 32 clients at once, every request waiting 20 ms on the busy backend.
busy_ms=20
CS_ON_ATTACHED='runq_snapshot "$SERVER_PID" "$CS_TMP/runq.before"; run_start_ns=$(date +%s%N)'
CS_ON_STOPPING='runq_snapshot "$SERVER_PID" "$CS_TMP/runq.after"; run_end_ns=$(date +%s%N)'
cs_profile busy "$CS_LOAD" --port "$NGINX_PORT" --connections 32 --rate 800 --duration 3 --path "/c/sleep/$busy_ms" \
  --json "$CS_TMP/busy-client.json" --quiet
unset CS_ON_ATTACHED CS_ON_STOPPING
run_s=$(python3 -c "print(($run_end_ns - $run_start_ns) / 1e9)")
read -r kernel_runq_us _ kernel_top_share < <(runq_delta "$CS_TMP/runq.before" "$CS_TMP/runq.after" "$run_s")
kill -TERM "$busy_pid"
wait "$busy_pid" || true
busy_requests=$(sed -n 's/.*worker 0: .*, requests \([0-9]*\),.*/\1/p' "$CS_TMP/backend-$busy_port.log")
b=$CS_TMP/busy.json
u='[x for x in j["upstreams"] if x["port"] == '$busy_port'][0]'
note "32 clients: p99 connscope $(json_get "$b" 'j["latency_us"]["p99"]') us, the client $(json_get "$CS_TMP/busy-client.json" 'j["from_send_us"]["p99"]') us; tail: $(json_get "$b" '", ".join("%s %.1f%%" % (c["cause"], 100 * c["share"]) for c in j["tail"]["causes"] if c["share"] >= 0.005)')"
note "the busy backend: $(json_get "$b" "$u")"
note "32 clients: nginx's worker waited $kernel_runq_us us for a CPU (the kernel's schedstat: $kernel_top_share of the run)"
# With another test beside it, nginx's worker may wait as long for a CPU
# as on the backend in the tail (40 ms at p99 against the backend's 20).
assert_leads_unless_starved "$b" upstream "$kernel_top_share" "32 clients: "
exchanges=$(json_get "$b" "$u[\"exchanges\"]")
assert_cmp "$exchanges" == "$busy_requests" "32 clients: exchanges = the busy backend's requests"
assert_cmp "$(json_get "$b" "$u[\"joined\"]")" '>=' "$(python3 -c "print(0.9 * $exchanges)")" \
  "32 clients: exchanges joined (90 %), by the loop's turns"
# Each joined request's time on the backend: its 20 ms at least (it never
# sleeps short), and less than the whole of what the client waited.
per_request=$(json_get "$b" "$u[\"waited_us\"] / $u[\"requests_waited\"]")
client_mean=$(json_get "$CS_TMP/busy-client.json" 'j["latency_us"]["mean"]')
note "32 clients: the joined requests waited $per_request us each on the backend (mean; the client's mean latency $client_mean us)"
assert_cmp "$per_request" '>=' "$((busy_ms * 1000))" "32 clients: the joined requests' upstream time (mean): the backend's $busy_ms ms"
assert_cmp "$per_request" '<' "$client_mean" "32 clients: the joined requests' upstream time (mean) within the client's"
