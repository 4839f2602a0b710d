#!/usr/bin/env bash
# Debian's Tomcat 10 with its TLS connector (JSSE, a PKCS12 keystore made
# here with openssl), to keep-alive clients: connscope's p99 against the
# clients' (the handshakes' counts: test_tomcat_tls_handshakes).
# 1. csload --tls --busy-poll with keep-alive: connscope's requests equal
#    csload's, one handshake a connection, and its p99 lies between
#    csload's p99 from the send (less the client's own waits for a CPU)
#    and its p99 from the connect, handshake included: both bounds.
# 2. wrk over https with keep-alive, as users run it: connscope's requests
#    equal wrk's, and its p99 is at most wrk's (wrk's own event-loop and
#    CPU waits are in its p99 and nothing takes them out: no lower bound).
# integration: exclusive
# integration: plain build
# Runs alone: a JVM starting beside other tests' load takes seconds more,
# and connscope's p99 is compared with its clients'.
source "$(dirname "$0")/lib.sh"

# maxKeepAliveRequests="-1": the clients' connections last the whole run
# (wrk starts its clock after a handshake, connscope counts the handshake in
# the connection's first request: 10 of thousands, not enough to move the
# p99; csload's p99 from the connect counts it as connscope does).
TOMCAT_TLS=1 cs_start_tomcat 'maxThreads="4" maxKeepAliveRequests="-1"'
url=https://127.0.0.1:$TOMCAT_PORT/
# The first requests load JSSE's classes: before measuring.
ab -q -n 20 "$url" >"$CS_TMP/ab-warm.log" 2>&1 || { cat "$CS_TMP/ab-warm.log"; fail "tomcat does not answer over TLS"; }
grep -q 'https-jsse-nio' "$CS_TMP/tomcat.log" || { cat "$CS_TMP/tomcat.log"; fail "the connector is not JSSE's"; }

csload_tls_profile csload "$TOMCAT_PORT"
wrk_tls_profile wrk "$url"
