#!/usr/bin/env bash
# Accept-side conditions judged by what they cost. A Go net/http server
# (golang-go) takes 16 persistent connections once, then serves 3 s of
# requests on them: its one accepting goroutine accepts until EAGAIN and
# parks, so its EAGAINs end its own drains (no herd: no other thread was
# woken for them), and accept waits are no part of the tail: no
# accept-side condition may be flagged. csserver --accept shared, one
# connection at a time, wakes every idle worker's epoll for each: that
# is a thundering herd, and stays flagged.
# integration: plain build
# (a real server; the Go build is cached in the build directory)
source "$(dirname "$0")/lib.sh"

# Built once per build directory (seconds), again when the source changes.
src=$(dirname "$0")/go/server.go
bin=$CS_BUILD/integration/cs-goserver
if [[ ! -x $bin || $src -nt $bin ]]; then
  mkdir -p "$CS_BUILD/integration"
  GOCACHE=$CS_BUILD/integration/go-cache GOPATH=$CS_BUILD/integration/go-path GO111MODULE=off \
    go build -o "$bin.partial" "$src" || fail "go build $src"
  mv "$bin.partial" "$bin"
fi
port=$(cs_free_port)
cs_bg "$bin" "$port"
SERVER_PID=$BG_PID SERVER_PORT=$port
cs_wait_port "$port"
cs_profile go "$CS_LOAD" --port "$port" --connections 16 --duration 3 --mix /sleep/:0.1 \
  --json "$CS_TMP/go.client.json" --quiet
r=$CS_TMP/go.json
note "go: p99 $(json_get "$r" 'j["latency_us"]["p99"]') us (client $(json_get "$CS_TMP/go.client.json" 'j["from_send_us"]["p99"]') us), causes $(json_get "$r" '[(c["cause"], round(c["share"], 3)) for c in j["tail"]["causes"][:3]]')"
note "go: accepts $(json_get "$r" '[(l["accepts"], l["eagain"], [(w["tid"], w["accepts"], w["eagain"]) for w in l["workers"]]) for l in j["listeners"]]')"
note "go: findings $(json_get "$r" '[(f["code"], f["text"]) for f in j["findings"]]')"
flags=$(flagged "$r")
note "go: flagged: $flags"
for c in accept_contention listen_overflow connection_limit pool_saturation; do
  [[ " $flags " != *" $c "* ]] || fail "go: $c flagged for 16 connections accepted once"
done
grep -q '"code":"thundering_herd"' "$r" && fail "go: one accepting thread's EAGAINs called a thundering herd"
echo "ok: go: no accept-side condition flagged"

# csserver, 4 epoll workers on one shared listener, one connection at a time.
cs_start_server --workers 4 --accept shared
cs_profile shared "$CS_LOAD" --port "$SERVER_PORT" --connections 1 --duration 2 --no-keepalive \
  --json "$CS_TMP/shared.client.json" --quiet
r=$CS_TMP/shared.json
note "shared: accepts $(json_get "$r" '[(l["accepts"], l["eagain"]) for l in j["listeners"]]'), causes $(json_get "$r" '[(c["cause"], round(c["share"], 3)) for c in j["tail"]["causes"][:3]]')"
note "shared: findings $(json_get "$r" '[(f["code"], f["text"]) for f in j["findings"]]')"
[[ $(json_get "$r" 'j["conditions"]["accept_contention"]["thundering_herd"]') == True ]] \
  || fail "shared: thundering_herd not flagged"
echo "ok: shared: thundering_herd flagged"
