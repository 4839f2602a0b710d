#!/usr/bin/env bash
# Two csservers, each watched by its own connscoped, scraped by a real
# Prometheus (exemplar storage on) that loads dist/prometheus-rules.yml.
# Checks: the rules pass promtool's check and unit tests; a scrape without
# Accept is Prometheus text that promtool accepts, one that asks for
# OpenMetrics is OpenMetrics (# EOF, exemplars whose thread is the server's,
# whose time is within the test, one above 25 ms where the /sleep/30
# requests are, each one of the daemon's kept requests with that request's
# value and top cause); every metric dist/ uses is exported; Prometheus
# scrapes both targets without error, its query results equal what each
# daemon exports, its exemplar API returns the slow requests of both, and
# the recording rules give a p99 per listener. Then Debian's nginx behind a
# third daemon: its requests, exemplars and both formats.
source "$(dirname "$0")/lib.sh"

CS_DAEMON=$CS_BUILD/connscoped
root=$(cd "$(dirname "$0")/../.." && pwd)
requests=1000
slow_path=/sleep/30 # 2 % of the requests: slow ones, all in the handler

note "the rules: promtool check and unit tests"
promtool check rules "$root/dist/prometheus-rules.yml" || fail "promtool check rules"
(cd "$root/dist" && promtool test rules prometheus-rules.test.yml) || fail "promtool test rules"

started_s=$(date +%s)
servers=() ports=() mports=()
for i in 0 1; do
  cs_start_server --workers 2
  servers[i]=$SERVER_PID ports[i]=$SERVER_PORT mports[i]=$(cs_free_port)
  cs_bg "$CS_DAEMON" --port "${ports[i]}" --trace always --metrics "${mports[i]}" --socket "$CS_TMP/run$i/connscoped.sock" \
    2>"$CS_TMP/daemon$i.log"
done
for i in 0 1; do
  attached="(attached to|now watching) pid ${servers[i]} "
  for _ in $(seq 300); do grep -Eq "$attached" "$CS_TMP/daemon$i.log" && break; sleep 0.1; done
  grep -Eq "$attached" "$CS_TMP/daemon$i.log" || { cat "$CS_TMP/daemon$i.log"; fail "daemon $i not attached"; }
done
echo "ok: two daemons on metrics ports ${mports[*]}, watching ports ${ports[*]}"

prom_port=$(cs_free_port)
cat >"$CS_TMP/prometheus.yml" <<YML
global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: [ '$root/dist/prometheus-rules.yml' ]
scrape_configs:
  - job_name: connscope
    static_configs: [ { targets: ['127.0.0.1:${mports[0]}', '127.0.0.1:${mports[1]}'] } ]
YML
cs_bg prometheus --config.file="$CS_TMP/prometheus.yml" --storage.tsdb.path="$CS_TMP/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" --enable-feature=exemplar-storage --log.level=warn \
  2>"$CS_TMP/prometheus.log"
api() { curl -sf "http://127.0.0.1:$prom_port/api/v1/$1" "${@:2}"; }
query() { api query --data-urlencode "query=$1"; }
# The value of each series of a query result, one "INSTANCE VALUE" a line.
by_instance() { python3 -c '
import json, sys
for r in json.loads(sys.argv[1])["data"]["result"]:
    print(r["metric"].get("instance", "-"), r["value"][1])' "$1"; }
for _ in $(seq 120); do [[ $(by_instance "$(query 'count(up == 1)' || echo '{"data":{"result":[]}}')") == "- 2" ]] && break; sleep 0.5; done
[[ $(by_instance "$(query 'count(up == 1)')") == "- 2" ]] || { cat "$CS_TMP/prometheus.log"; fail "Prometheus does not scrape both targets"; }
echo "ok: Prometheus scrapes both targets"

for i in 0 1; do
  "$CS_LOAD" --port "${ports[i]}" --connections 4 --requests "$requests" --mix "$slow_path:0.02" --quiet \
    --json "$CS_TMP/load$i.json" || fail "load $i failed"
done
scrape() { curl -sf "${@:2}" "http://127.0.0.1:${mports[$1]}/metrics"; }
metric() { scrape "$1" | awk -v m="$2" 'index($0, m "{") == 1 { s += $NF } END { print s + 0 }'; }
# The count once the daemon has read the last records off its ring: two
# reads 0.3 s apart agree (the first read at 990 could be followed by the
# ring's last ten, and Prometheus would then rightly scrape 1000).
for i in 0 1; do
  last=-1
  for _ in $(seq 100); do
    served[i]=$(metric "$i" connscope_requests_total)
    [[ ${served[i]} -ge $((requests - 10)) && ${served[i]} == "$last" ]] && break
    last=${served[i]}
    sleep 0.3
  done
  assert_cmp "${served[i]}" '>=' "$((requests - 10))" "daemon $i's requests ($requests sent)"
  assert_cmp "${served[i]}" '<=' "$requests" "daemon $i's requests ($requests sent)"
done

note "the two formats"
curl -sf -D "$CS_TMP/text.head" "http://127.0.0.1:${mports[0]}/metrics" >"$CS_TMP/metrics.txt"
grep -qi '^Content-Type: text/plain; version=0.0.4' "$CS_TMP/text.head" || fail "text scrape: $(cat "$CS_TMP/text.head")"
promtool check metrics <"$CS_TMP/metrics.txt" || fail "promtool rejects the Prometheus text"
grep -q ' # {' "$CS_TMP/metrics.txt" && fail "exemplars in the Prometheus text format"
echo "ok: Prometheus text, promtool check metrics passes"
accept='application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5'
curl -sf -D "$CS_TMP/om.head" -H "Accept: $accept" "http://127.0.0.1:${mports[0]}/metrics" >"$CS_TMP/metrics.om"
grep -qi '^Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8' "$CS_TMP/om.head" ||
  fail "OpenMetrics scrape: $(cat "$CS_TMP/om.head")"
[[ $(tail -n 1 "$CS_TMP/metrics.om") == '# EOF' ]] || fail "OpenMetrics does not end in # EOF"
grep -q '^# TYPE connscope_requests counter$' "$CS_TMP/metrics.om" || fail "OpenMetrics counter family keeps _total"
# Every exemplar: a request read by one of csserver's threads, ended during
# the test, and one of the slow requests the daemon keeps, with that
# request's own top cause (its list: snapshot --slowest). The /sleep/30
# requests put one in the buckets above 25 ms; which request a bucket shows
# (the most recent in it) depends on how busy the machine was, so its cause
# is checked against the daemon's list, not assumed to be the handler.
"$CS_BIN" snapshot --json --slowest 512 --socket "$CS_TMP/run0/connscoped.sock" >"$CS_TMP/kept.json" ||
  fail "snapshot --slowest of daemon 0 failed"
python3 - "$CS_TMP/metrics.om" "${servers[0]}" "$started_s" "$(($(date +%s) + 1))" "$CS_TMP/kept.json" <<'PY' || fail "the exemplars are not csserver's requests"
import json, os, re, sys
path, pid, start, end = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
# A request: its thread, its client's port and its index on that connection.
kept = {(str(r["tid"]), str(r["peer_port"]), str(r["index"])): r for r in json.load(open(sys.argv[5]))["slowest"]}
exemplars = []
for line in open(path):
    m = re.match(r"(\S+)\{(.*?)\} \d+ # \{(.*)\} (\S+) (\S+)$", line)
    if m:
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3)))
        exemplars.append((m.group(1), labels, float(m.group(4)), float(m.group(5)), line.strip()))
strangers = [e for e in exemplars if not os.path.isdir("/proc/%s/task/%s" % (pid, e[1]["tid"]))]
outside = [e for e in exemplars if not start <= e[3] <= end]
durations = [e for e in exemplars if e[0] == "connscope_request_duration_seconds_bucket"]
slow = [e for e in durations if e[2] > 0.025]
def matches(e):
    r = kept.get((e[1]["tid"], e[1].get("peer_port"), e[1]["request"]))
    return r is not None and abs(r["total_us"] / 1e6 - e[2]) < 2e-6 and \
        max(r["causes_us"], key=r["causes_us"].get) == e[1]["top_cause"]
unmatched = [e for e in durations if not matches(e)]
print("%d exemplars, %d not csserver's threads, %d outside the test's time, %d above 25 ms, %d not a kept request "
      "with its top cause" % (len(exemplars), len(strangers), len(outside), len(slow), len(unmatched)))
for e in unmatched[:3] + slow[-1:]:
    print("exemplar as served: " + e[4])
sys.exit(0 if exemplars and not strangers and not outside and slow and not unmatched else 1)
PY

note "every metric dist/ uses is exported"
python3 - "$root/dist/grafana-connscope.json" "$root/dist/prometheus-rules.yml" "$CS_TMP/metrics.txt" <<'PY' || fail "dist/ uses metrics the daemon does not export"
import re, sys
exported = {line.split("{")[0].split(" ")[0] for line in open(sys.argv[3]) if line[0] != "#"}
missing = set()
for path in sys.argv[1:3]:
    for name in re.findall(r"(?<![\w:])connscope_[a-z0-9_]+(?![\w:])", open(path).read()):
        if name not in exported:
            missing.add(name)
print("dist/ uses %d names, all exported" % len(exported) if not missing else "missing: " + " ".join(sorted(missing)))
sys.exit(1 if missing else 0)
PY

note "Prometheus: targets, queries, exemplars, recording rules"
# Both targets up at their last scrape. A scrape has 1 s (the interval):
# on a busy machine one can time out, and the next one succeed; so wait
# for a moment when both last scrapes succeeded, 15 s at most. An error
# other than a timeout (a page Prometheus cannot parse) fails at once.
targets_ok() {
  api targets >"$CS_TMP/targets.json" || return 1
  python3 - "$CS_TMP/targets.json" <<'PY'
import json, sys
targets = json.load(open(sys.argv[1]))["data"]["activeTargets"]
for t in targets:
    print(t["scrapeUrl"], t["health"], repr(t["lastError"]))
    if t["lastError"] and "deadline exceeded" not in t["lastError"]:
        sys.exit(2)
sys.exit(0 if len(targets) == 2 and all(t["health"] == "up" for t in targets) else 1)
PY
}
rc=1
for _ in $(seq 30); do
  rc=0; targets_ok >"$CS_TMP/targets.txt" || rc=$?
  [[ $rc == 1 ]] || break
  sleep 0.5
done
cat "$CS_TMP/targets.txt"
[[ $rc == 0 ]] || fail "a target is not scraped cleanly"
echo "ok: both targets up"
for i in 0 1; do
  instance=127.0.0.1:${mports[i]}
  for _ in $(seq 60); do
    got=$(by_instance "$(query "sum by (instance) (connscope_requests_total{instance=\"$instance\"})")")
    [[ $got == "$instance ${served[i]}" ]] && break
    sleep 0.5
  done
  [[ $got == "$instance ${served[i]}" ]] || fail "Prometheus has '$got' for $instance, the daemon exports ${served[i]}"
  echo "ok: Prometheus: $got requests, as daemon $i exports"
done
api query_exemplars --data-urlencode 'query=connscope_request_duration_seconds_bucket' \
  --data-urlencode "start=$started_s" --data-urlencode "end=$(($(date +%s) + 1))" >"$CS_TMP/exemplars.json"
python3 - "$CS_TMP/exemplars.json" "${mports[0]}:${servers[0]}" "${mports[1]}:${servers[1]}" <<'PY' || fail "Prometheus returned no slow exemplar of a server thread for each target"
import json, os, sys
result = json.load(open(sys.argv[1]))["data"]
ok = True
for pair in sys.argv[2:]:
    mport, pid = pair.split(":")
    mine = [e for s in result if s["seriesLabels"]["instance"] == "127.0.0.1:" + mport for e in s["exemplars"]]
    # Above 25 ms: the bucket of the /sleep/30 requests (its cause is the
    # handler's on a quiet machine; the OpenMetrics check above ties causes
    # to the daemon's own list).
    slow = [e for e in mine if float(e["value"]) > 0.025
            and os.path.isdir("/proc/%s/task/%s" % (pid, e["labels"]["tid"]))]
    print("instance 127.0.0.1:%s: %d exemplars, %d above 25 ms by csserver %s's threads; one: %s"
          % (mport, len(mine), len(slow), pid, json.dumps(slow[0]) if slow else "-"))
    ok = ok and bool(slow)
sys.exit(0 if ok else 1)
PY
rule=listener:connscope_request_duration_seconds:p99_5m
# The rule is read once Prometheus has scraped each daemon's final count,
# and evaluated twice since: a scrape in the middle of a load gives a p99
# of the requests before it, which may hold none of the slow 2 %.
for _ in $(seq 60); do
  scraped=$(by_instance "$(query 'sum by (instance) (connscope_requests_total)')" | sort)
  [[ $scraped == "$(printf '127.0.0.1:%s %s\n' "${mports[0]}" "${served[0]}" "${mports[1]}" "${served[1]}" | sort)" ]] && break
  sleep 0.5
done
note "Prometheus's last scrapes of the requests: $(echo $scraped)"
sleep 2.5
for _ in $(seq 60); do
  p99s=$(by_instance "$(query "$rule")" | grep -vc NaN || true)
  [[ $p99s == 2 ]] && break
  sleep 0.5
done
by_instance "$(query "$rule")"
[[ $p99s == 2 ]] || fail "no $rule for both listeners"
# 2 % of the requests took 30 ms or more: the p99 lies above 25 ms, and in
# the (25 ms, 50 ms] bucket unless the clients saw a p99 above 50 ms (a
# machine busy enough to slow 1 % of the others that much).
client_p99_s=$(python3 -c "import json; print(max(json.load(open('$CS_TMP/load%d.json' % i))['latency_us']['p99'] for i in (0, 1)) / 1e6)")
while read -r instance p99; do
  assert_cmp "$p99" '>' 0.025 "$instance p99 by the recording rule"
  if python3 -c "import sys; sys.exit(0 if $client_p99_s <= 0.05 else 1)"; then
    assert_cmp "$p99" '<=' 0.05 "$instance p99 by the recording rule (the clients' p99 ${client_p99_s} s)"
  fi
done < <(by_instance "$(query "$rule")")

note "Debian's nginx behind a third daemon: the same two formats"
cs_start_nginx 75s 256
ng_mport=$(cs_free_port)
# (--trace always: in the default windows, a load that a busy machine ends
# more than 1 s after the attach falls between the first two windows, and
# its requests are not traced: what this part checks is the formats)
cs_bg "$CS_DAEMON" --port "$NGINX_PORT" --trace always --metrics "$ng_mport" --socket "$CS_TMP/run-nginx/connscoped.sock" \
  2>"$CS_TMP/daemon-nginx.log"
# The master and its worker both listen on the port: both are targets.
attached="(attached to|now watching) pids? ([0-9]+,)*$SERVER_PID[ ,]"
for _ in $(seq 300); do grep -Eq "$attached" "$CS_TMP/daemon-nginx.log" && break; sleep 0.1; done
grep -Eq "$attached" "$CS_TMP/daemon-nginx.log" ||
  { cat "$CS_TMP/daemon-nginx.log"; fail "the nginx daemon did not attach to the worker"; }
"$CS_LOAD" --port "$NGINX_PORT" --connections 4 --requests 400 --quiet --json /dev/null || fail "load on nginx failed"
om() { curl -sf -H "Accept: $accept" "http://127.0.0.1:$ng_mport/metrics"; }
for _ in $(seq 300); do
  [[ $(om | awk 'index($0, "connscope_requests_total{") == 1 { s += $NF } END { print s + 0 }') -ge 400 ]] && break
  sleep 0.1
done
om >"$CS_TMP/nginx.om"
assert_cmp "$(awk 'index($0, "connscope_requests_total{") == 1 { s += $NF } END { print s + 0 }' "$CS_TMP/nginx.om")" == 400 \
  "nginx's requests in OpenMetrics (400 sent)"
[[ $(tail -n 1 "$CS_TMP/nginx.om") == "# EOF" ]] || fail "nginx's OpenMetrics does not end with # EOF"
grep -q '^connscope_request_duration_seconds_bucket{.* # {top_cause=' "$CS_TMP/nginx.om" || fail "no exemplar for nginx's requests"
curl -sf "http://127.0.0.1:$ng_mport/metrics" | promtool check metrics || fail "promtool rejects nginx's Prometheus text"
echo "ok: nginx: OpenMetrics with exemplars, Prometheus text that promtool accepts"
