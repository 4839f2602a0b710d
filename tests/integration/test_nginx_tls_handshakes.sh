#!/usr/bin/env bash
# Debian's nginx serving TLS 1.2 and 1.3 with a certificate made here, the
# handshakes counted. A TLS handshake is bytes in, then bytes out, as a
# request is: connscope must tell the handshake's exchanges from the
# requests by the records the client sent, count them as connection
# set-up (tls_handshake), and count only the requests.
# 1. ab over https, no keep-alive, TLS 1.2 then 1.3: connscope's requests
#    equal ab's, one request a connection, non_persistent flagged with the
#    TLS handshake in its set-up; the clients' close_notify alerts after
#    nginx's close are no keep-alive race.
# 2. A client resuming its TLS session on every connection after the
#    first, TLS 1.2 then 1.3: the abbreviated handshakes (1.2) and the
#    handshakes whose ClientHello offered a session and whose server's
#    first flight had no certificate (1.3) are counted as resumed; a 1.3
#    connection offering another server's session is offered, not resumed.
# 3. TLS 1.3 with a HelloRetryRequest: nginx offers P-256 only, and ab's
#    ClientHello carries an X25519 key share, so nginx asks for another
#    ClientHello on every connection: that second hello is set-up too, and
#    the handshake is told TLS 1.3, not a TLS 1.2 resumption.
# (The p99s over TLS: test_nginx_tls, alone.)
# integration: plain build
# (every count is exact whatever else the machine runs; the sanitized build
# replays what it recorded: test_sanitized_replay)
source "$(dirname "$0")/lib.sh"

cs_start_nginx 60s 512 ssl
url=https://127.0.0.1:$NGINX_PORT/
ab -q -n 1 "$url" >"$CS_TMP/ab-warm.log" 2>&1 || { cat "$CS_TMP/ab-warm.log"; fail "nginx does not answer over TLS"; }

tls_ab_both "$url"

# 2. A client resuming its TLS session.
tls_resume_profile resume "$NGINX_PORT"
tls_resume_profile resume13 "$NGINX_PORT" TLSv1_3
"$CS_BIN" report "$CS_TMP/resume13.cstrace" | grep '^tls '

# 3. A HelloRetryRequest on every connection.
kill "$NGINX_MASTER" && wait "$NGINX_MASTER" 2>/dev/null
NGINX_TLS_EXTRA="ssl_ecdh_curve prime256v1;" cs_start_nginx 60s 512 ssl
url=https://127.0.0.1:$NGINX_PORT/
tls_ab_profile hrr TLS1.3 "$url"
assert_cmp "$(json_get "$r" 'j["tls"]["tls13"]')" '>=' 1000 "connections told TLS 1.3 after a HelloRetryRequest"
assert_cmp "$(json_get "$r" 'j["tls"]["tls12"] + j["tls"]["resumed"]')" '==' 0 "connections told TLS 1.2 or resumed"
# One a connection: every handshake that ended had one (and a connection
# cut before its request may have had one too).
assert_cmp "$(json_get "$r" 'j["tls"]["hello_retries"]')" '>=' "$(json_get "$r" 'j["tls"]["handshakes"]')" \
  "second ClientHellos vs handshakes"
assert_cmp "$(json_get "$r" 'j["tls"]["hello_retries"]')" '<=' "$(json_get "$r" 'j["tls"]["connections"]')" \
  "second ClientHellos vs TLS connections"
