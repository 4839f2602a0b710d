#!/usr/bin/env bash
# Debian's nginx listening with `deferred` (TCP_DEFER_ACCEPT): the kernel
# holds each connection out of the accept queue until its first data
# arrives, and discards the client's bare handshake ACK meanwhile (the
# listener's sk_drops, `ss -ltm`'s d, rises by one a connection). Those
# discarded ACKs are not drops: with connections made one per request
# (ab's way, csload --no-keepalive), connscope counts no more drops than the
# kernel's own ListenOverflows, flags no listen_overflow, and its p99
# agrees with the clients' from their connect.
# integration: plain build
# (a real server's behaviour)
source "$(dirname "$0")/lib.sh"

cs_start_nginx 5s 512 deferred
port=$NGINX_PORT
ss -Hltn "sport = :$port" | grep -q . || fail "nginx does not listen on :$port"
overflows_before=$(netstat_counter ListenOverflows)
cs_profile nginx "$CS_LOAD" --busy-poll --port "$port" --connections 4 --requests 2000 --no-keepalive \
  --json "$CS_TMP/client.json" --quiet
overflows=$(( $(netstat_counter ListenOverflows) - overflows_before ))
r=$CS_TMP/nginx.json c=$CS_TMP/client.json
note "server p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, client from connect $(json_get "$c" 'j["service_us"]["p99"]') us"
note "flagged: '$(flagged "$r")'; drops $(json_get "$r" '[l["drops"] for l in j["listeners"]]'), kernel ListenOverflows +$overflows"

assert_cmp "$(json_get "$c" 'j["errors"]["total"]')" '==' 0 "the client's errors"
# (without keep-alive, each attempt is a connection of its own)
assert_cmp "$(json_get "$r" 'j["listeners"][0]["accepts"]')" '==' "$(json_get "$c" 'j["attempts"]')" \
  "nginx's accepts vs the client's connections"
assert_cmp "$(json_get "$r" 'j["requests"]')" '==' "$(json_get "$c" 'j["requests"]')" "requests vs the client's"
assert_cmp "$(json_get "$r" 'sum(l["drops"] for l in j["listeners"])')" '<=' "$overflows" \
  "drops counted against the kernel's ListenOverflows"
[[ " $(flagged "$r") " != *" listen_overflow "* ]] || fail "listen_overflow flagged for deferred accepts"
echo "ok: no listen_overflow for the bare ACKs a deferred listener discards"
assert_p99_agrees "$r" "$c"
