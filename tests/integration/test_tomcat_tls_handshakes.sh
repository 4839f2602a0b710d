#!/usr/bin/env bash
# Debian's Tomcat 10 with its TLS connector (JSSE, a PKCS12 keystore made
# here with openssl), the handshakes counted. JSSE reads a whole flight at
# once into its buffer (Java NIO's read() into a direct buffer) where
# OpenSSL reads a record header, then its body: the probe follows the
# records either way. JSSE answers a TLS 1.3 client's Finished with a
# session ticket, and sends its ServerHello apart from the rest of its
# flight, so the client's middlebox ChangeCipherSpec can come in between:
# connscope must still count the handshake as set-up and every request once.
# 1. ab over https, no keep-alive, TLS 1.2 then 1.3: connscope's requests
#    equal ab's, one request a connection, TLS in non_persistent's set-up.
# 2. A client resuming its TLS 1.2 session (JSSE's session cache).
# (The p99s over TLS: test_tomcat_tls, alone.)
# integration: plain build
# (every count is exact whatever else the machine runs; a JVM starting
# beside another test takes seconds more, and cs_start_tomcat waits for it)
source "$(dirname "$0")/lib.sh"

TOMCAT_TLS=1 cs_start_tomcat 'maxThreads="4" maxKeepAliveRequests="-1"'
url=https://127.0.0.1:$TOMCAT_PORT/
# The first requests load JSSE's classes: before measuring.
ab -q -n 20 "$url" >"$CS_TMP/ab-warm.log" 2>&1 || { cat "$CS_TMP/ab-warm.log"; fail "tomcat does not answer over TLS"; }
grep -q 'https-jsse-nio' "$CS_TMP/tomcat.log" || { cat "$CS_TMP/tomcat.log"; fail "the connector is not JSSE's"; }

tls_ab_both "$url"

tls_resume_profile resume "$TOMCAT_PORT"
