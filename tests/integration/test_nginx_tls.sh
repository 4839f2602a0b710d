#!/usr/bin/env bash
# Debian's nginx serving TLS with a certificate made here, to keep-alive
# clients: connscope's p99 against the clients' (the handshakes' counts:
# test_nginx_tls_handshakes).
# 1. csload --tls --busy-poll with keep-alive: connscope's requests equal
#    csload's, one handshake a connection, and its p99 lies between
#    csload's p99 from the send (less the client's own waits for a CPU)
#    and its p99 from the connect, handshake included: both bounds.
# 2. wrk over https with keep-alive, as users run it: connscope's requests
#    equal wrk's, and its p99 is at most wrk's (wrk's own event-loop and
#    CPU waits are in its p99 and nothing takes them out: no lower bound).
# integration: exclusive
# Runs alone: connscope's p99 is compared with its clients'.
# integration: plain build
# (timed alone once; the sanitized build replays what it recorded:
# test_sanitized_replay)
source "$(dirname "$0")/lib.sh"

cs_start_nginx 60s 512 ssl
url=https://127.0.0.1:$NGINX_PORT/
ab -q -n 1 "$url" >"$CS_TMP/ab-warm.log" 2>&1 || { cat "$CS_TMP/ab-warm.log"; fail "nginx does not answer over TLS"; }

# 10 keep-alive connections for 3 s each.
csload_tls_profile csload "$NGINX_PORT"
wrk_tls_profile wrk "$url"
