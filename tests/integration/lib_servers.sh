# The real servers the integration tests run (Apache, nginx, Redis,
# Tomcat, Netty, Jetty, a csserver backend for a target to call) and the
# TLS profiles they share. Sourced by lib.sh: every test has them.

# cs_start_backend [OPTIONS...]: a csserver on a free port for a target to
# call, its log in $CS_TMP/backend-PORT.log; BACKEND_PORT and BACKEND_PID.
cs_start_backend() {
  BACKEND_PORT=$(cs_free_port)
  "$CS_SERVER" --port "$BACKEND_PORT" "$@" >"$CS_TMP/backend-$BACKEND_PORT.log" 2>&1 &
  BACKEND_PID=$!
  cs_pids+=("$BACKEND_PID")
  cs_wait_port "$BACKEND_PORT"
}

# cs_start_apache MPM DIRECTIVES: Debian's Apache 2.4 with the MPM (prefork,
# event), in a private directory ($APACHE_DIR), on a free port, every
# request handled by a mod_lua handler that blocks its worker 40 ms;
# DIRECTIVES (lines) size the MPM and set keep-alive. Sets SERVER_PID (the
# parent, in a session of its own: at its stop Apache signals its whole
# process group, which would be the test's) and SERVER_PORT.
cs_start_apache() {
  local mpm=$1 directives=$2
  APACHE_DIR=$CS_TMP/apache
  mkdir -p "$APACHE_DIR"
  # The children run as nobody: they must reach the handler's script.
  chmod o+x "$CS_TMP"
  chmod 755 "$APACHE_DIR"
  cat >"$APACHE_DIR/block.lua" <<'LUA'
function handle(r)
  r.usleep(40000) -- the handler blocks its worker
  r.content_type = "text/plain"
  r:puts("ok\n")
  return apache2.OK
end
LUA
  chmod 644 "$APACHE_DIR/block.lua"
  SERVER_PORT=$(cs_free_port)
  cat >"$APACHE_DIR/apache.conf" <<CONF
LoadModule mpm_${mpm}_module /usr/lib/apache2/modules/mod_mpm_${mpm}.so
LoadModule lua_module /usr/lib/apache2/modules/mod_lua.so
LoadModule authz_core_module /usr/lib/apache2/modules/mod_authz_core.so
<Location />
  Require all granted
</Location>
ServerName localhost
Listen 127.0.0.1:$SERVER_PORT
PidFile $APACHE_DIR/apache.pid
DefaultRuntimeDir $APACHE_DIR
ErrorLog $APACHE_DIR/error.log
DocumentRoot $APACHE_DIR
User nobody
Group nogroup
$directives
LuaMapHandler ^/ $APACHE_DIR/block.lua handle
CONF
  cs_bg setsid apache2 -f "$APACHE_DIR/apache.conf" -DFOREGROUND
  SERVER_PID=$BG_PID
  cs_wait_port "$SERVER_PORT"
}

# cs_start_nginx KEEPALIVE_TIMEOUT WORKER_CONNECTIONS [LISTEN_PARAMETERS]:
# Debian's nginx, one worker, in a private directory ($NGINX_DIR, its error
# log there) on a free port ($NGINX_PORT), answering "ok" to every request.
# LISTEN_PARAMETERS go on its listen line: "ssl" serves TLS 1.2 and 1.3
# with a self-signed certificate made here ($NGINX_DIR/cert.pem), "http2"
# HTTP/2 (without ssl: HTTP/2 with prior knowledge, as h2load speaks it).
# Sets NGINX_MASTER and SERVER_PID (the worker, which accepts and serves).
# NGINX_SERVER_EXTRA, if set, goes into the server block (more locations);
# NGINX_HTTP_EXTRA into the http block (an upstream block);
# NGINX_TLS_PROTOCOLS replaces "TLSv1.2 TLSv1.3" (ssl_protocols).
cs_start_nginx() {
  NGINX_DIR=$CS_TMP/nginx NGINX_PORT=$(cs_free_port)
  mkdir -p "$NGINX_DIR/tmp"
  local listen_parameters=${3:-} tls=
  if [[ " $listen_parameters " == *" ssl "* ]]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
      -keyout "$NGINX_DIR/key.pem" -out "$NGINX_DIR/cert.pem" 2>"$NGINX_DIR/openssl.log" \
      || { cat "$NGINX_DIR/openssl.log"; fail "openssl could not make a certificate"; }
    tls="ssl_protocols ${NGINX_TLS_PROTOCOLS:-TLSv1.2 TLSv1.3}; ssl_certificate $NGINX_DIR/cert.pem; ssl_certificate_key $NGINX_DIR/key.pem; ${NGINX_TLS_EXTRA:-}"
  fi
  cat >"$NGINX_DIR/nginx.conf" <<NGINX
daemon off;
worker_processes 1;
pid $NGINX_DIR/nginx.pid;
error_log $NGINX_DIR/error.log warn;
events { worker_connections $2; }
http {
  access_log off;
  keepalive_timeout $1;
  client_body_temp_path $NGINX_DIR/tmp;
  proxy_temp_path $NGINX_DIR/tmp;
  fastcgi_temp_path $NGINX_DIR/tmp;
  uwsgi_temp_path $NGINX_DIR/tmp;
  scgi_temp_path $NGINX_DIR/tmp;
  ${NGINX_HTTP_EXTRA:-}
  server { listen 127.0.0.1:$NGINX_PORT $listen_parameters; $tls location / { return 200 "ok\n"; } ${NGINX_SERVER_EXTRA:-} }
}
NGINX
  cs_bg nginx -c "$NGINX_DIR/nginx.conf" -e "$NGINX_DIR/error.log"
  NGINX_MASTER=$BG_PID
  cs_wait_port "$NGINX_PORT"
  SERVER_PID=$(pgrep -P "$NGINX_MASTER" | head -n 1)
  [[ -n $SERVER_PID ]] || fail "no nginx worker below the master ($NGINX_MASTER)"
}

# cs_start_redis [OPTIONS...]: Debian's redis-server on a free port
# ($REDIS_PORT), nothing saved, in $CS_TMP/redis; SERVER_PID is its pid.
# redis_processed: its own count of commands processed (INFO stats).
cs_start_redis() {
  REDIS_PORT=$(cs_free_port)
  mkdir -p "$CS_TMP/redis"
  cs_bg redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save "" --appendonly no --dir "$CS_TMP/redis" \
    --logfile "$CS_TMP/redis/redis.log" "$@"
  SERVER_PID=$BG_PID
  cs_wait_port "$REDIS_PORT"
}
redis_processed() {
  redis-cli -p "$REDIS_PORT" info stats | tr -d '\r' | awk -F: '$1 == "total_commands_processed" { print $2 }'
}

# cs_redis_app_run SLOW_MS CONNECTIONS DURATION APP_ARGS...: the blocking
# application server calling_app.py calling Redis (cs_start_redis, with its
# slow log on) as APP_ARGS say (--redis-port P or --redis-socket PATH),
# profiled as "app" under csload: /get, 5 % /slow/SLOW_MS. Leaves app.json,
# app.cstrace, slowest.json (the 100 slowest), client.json, client.log and
# slowlog (Redis's own time for each script) in $CS_TMP; sets APP_CALLS (the
# calls the application made and read the answers of) and CLIENT_SLOW (the
# slow requests the client sent).
cs_redis_app_run() {
  local slow_ms=$1 connections=$2 duration=$3 app_port app_pid
  shift 3
  app_port=$(cs_free_port)
  cs_bg python3 "$(dirname "$0")/calling_app.py" --port "$app_port" "$@" >"$CS_TMP/app.log" 2>&1
  SERVER_PID=$BG_PID app_pid=$BG_PID
  cs_wait_port "$app_port"
  cs_profile app "$CS_LOAD" --port "$app_port" --connections "$connections" --rate 100 --duration "$duration" \
    --path /get --mix "/slow/$slow_ms:0.05" --json "$CS_TMP/client.json" --log "$CS_TMP/client.log" --quiet
  "$CS_BIN" report --json --slowest 100 "$CS_TMP/app.cstrace" >"$CS_TMP/slowest.json" ||
    fail "connscope report --slowest failed"
  kill -TERM "$app_pid"
  wait "$app_pid" || true
  APP_CALLS=$(sed -n 's/^calls \([0-9]*\)$/\1/p' "$CS_TMP/app.log")
  [[ -n $APP_CALLS ]] || { cat "$CS_TMP/app.log"; fail "the application did not say how many calls it made"; }
  "$CS_PYTHON" "$(dirname "$0")/calling_app.py" --slowlog --redis-port "$REDIS_PORT" >"$CS_TMP/slowlog" ||
    fail "reading Redis's slow log failed"
  CLIENT_SLOW=$(awk -v p="/slow/$slow_ms" '$7 == p' "$CS_TMP/client.log" | wc -l)
}

# assert_slow_calls_agree SLOW_MS: after cs_redis_app_run, each slow request
# kept (told by its connection and number on it, kept_paths.py) with its
# call to Redis joined, and their wait on Redis (the median) within 10 % or
# 1 ms of Redis's own time for the scripts (its slow log).
assert_slow_calls_agree() {
  local redis_count redis_median slow_count slow_median tolerance_us
  read -r redis_count redis_median < <(sort -n "$CS_TMP/slowlog" | awk '{ v[NR] = $1 } END { print NR, v[int((NR + 1) / 2)] + 0 }')
  "$CS_PYTHON" "$(dirname "$0")/kept_paths.py" "$CS_TMP/client.log" "$CS_TMP/slowest.json" >"$CS_TMP/kept"
  read -r slow_count slow_median < <(awk -v p="/slow/$1" '$1 == p { print $2 }' "$CS_TMP/kept" | sort -n |
    awk '{ v[NR] = $1 } END { print NR, v[int((NR + 1) / 2)] + 0 }')
  note "the client sent $CLIENT_SLOW slow request(s); Redis ran $redis_count script(s), median $redis_median us; connscope kept $slow_count of them joined to their call, first-byte wait median $slow_median us"
  assert_cmp "$redis_count" == "$CLIENT_SLOW" "Redis's slow log: a script for each slow request"
  assert_cmp "$slow_count" == "$CLIENT_SLOW" "slow requests kept, joined to their call to Redis"
  tolerance_us=$(python3 -c "print(max(0.1 * $redis_median, 1000))")
  assert_cmp "$(python3 -c "print(abs($slow_median - $redis_median))")" '<=' "$tolerance_us" \
    "the slow requests' wait on Redis (median) against Redis's own time for their scripts"
}

# cs_start_tomcat CONNECTOR_ATTRIBUTES [JSP_NAME JSP_TEXT]: Debian's Tomcat
# 10 in a private CATALINA_BASE ($TOMCAT_BASE) with one HTTP connector on a
# free port ($TOMCAT_PORT) and those attributes (maxThreads, ...), and a
# JSP in its ROOT webapp. With TOMCAT_TLS=1 the connector serves TLS 1.2
# and 1.3 through JSSE, from a PKCS12 keystore made here with openssl.
# Sets SERVER_PID (catalina.sh run execs java: the JVM). Startup takes
# about a second.
cs_start_tomcat() {
  [[ -x /usr/share/tomcat10/bin/catalina.sh ]] || fail "tomcat10 is not installed (scripts/deps.sh installs it)"
  TOMCAT_BASE=$CS_TMP/tomcat TOMCAT_PORT=$(cs_free_port)
  mkdir -p "$TOMCAT_BASE"/{conf,logs,temp,work,webapps/ROOT}
  local tls_attributes= tls_config=
  if [[ ${TOMCAT_TLS:-} == 1 ]]; then
    { openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
        -keyout "$TOMCAT_BASE/conf/key.pem" -out "$TOMCAT_BASE/conf/cert.pem" &&
      openssl pkcs12 -export -in "$TOMCAT_BASE/conf/cert.pem" -inkey "$TOMCAT_BASE/conf/key.pem" \
        -name tomcat -passout pass:changeit -out "$TOMCAT_BASE/conf/keystore.p12"; } \
      >"$TOMCAT_BASE/openssl.log" 2>&1 || { cat "$TOMCAT_BASE/openssl.log"; fail "openssl could not make a keystore"; }
    tls_attributes='SSLEnabled="true"'
    tls_config="<SSLHostConfig protocols=\"TLSv1.2+TLSv1.3\"><Certificate certificateKeystoreFile=\"$TOMCAT_BASE/conf/keystore.p12\" certificateKeystorePassword=\"changeit\" certificateKeystoreType=\"PKCS12\"/></SSLHostConfig>"
  fi
  cp /usr/share/tomcat10/etc/web.xml "$TOMCAT_BASE/conf/"
  echo ok >"$TOMCAT_BASE/webapps/ROOT/index.html"
  [[ -n ${2:-} ]] && echo "$3" >"$TOMCAT_BASE/webapps/ROOT/$2"
  cat >"$TOMCAT_BASE/conf/server.xml" <<XML
<?xml version="1.0" encoding="UTF-8"?>
<Server port="-1">
  <Service name="Catalina">
    <Connector port="$TOMCAT_PORT" address="127.0.0.1" protocol="org.apache.coyote.http11.Http11NioProtocol" $1 $tls_attributes>$tls_config</Connector>
    <Engine name="Catalina" defaultHost="localhost">
      <Host name="localhost" appBase="webapps" unpackWARs="false" autoDeploy="false"/>
    </Engine>
  </Service>
</Server>
XML
  CATALINA_HOME=/usr/share/tomcat10 CATALINA_BASE=$TOMCAT_BASE cs_bg /usr/share/tomcat10/bin/catalina.sh run \
    >"$CS_TMP/tomcat.log" 2>&1
  SERVER_PID=$BG_PID
  for _ in $(seq 300); do ss -Htln "sport = :$TOMCAT_PORT" | grep -q . && break; sleep 0.05; done
  cs_wait_port "$TOMCAT_PORT"
}

# cs_start_netty LOOPS EXECUTORS: tests/integration/netty/CsNetty.java on
# Debian's libnetty-java, LOOPS event loops and the handlers on the loops
# (EXECUTORS 0) or on an executor group of EXECUTORS threads; sets
# NETTY_PORT and SERVER_PID. The JVM's first requests and connections run
# cold (class loading, the JIT): hundreds of milliseconds that are no part
# of what a test measures, so a warm-up load runs first (600 requests/s,
# 2 % blocking 50 ms, as the tests' own loads).
cs_start_netty() {
  local jars=() m cp
  for m in buffer codec codec-http common handler transport resolver; do
    [[ -e /usr/share/java/netty-$m.jar ]] || fail "libnetty-java is not installed (scripts/deps.sh)"
    jars+=("/usr/share/java/netty-$m.jar")
  done
  cp=$(IFS=:; echo "${jars[*]}")
  javac -cp "$cp" -d "$CS_TMP/classes" "$(dirname "$0")/netty/CsNetty.java" || fail "javac CsNetty.java"
  NETTY_PORT=$(cs_free_port)
  cs_bg java -cp "$cp:$CS_TMP/classes" CsNetty "$NETTY_PORT" "$1" "$2"
  SERVER_PID=$BG_PID
  for _ in $(seq 300); do ss -Htln "sport = :$NETTY_PORT" | grep -q . && break; sleep 0.1; done
  cs_wait_port "$NETTY_PORT"
  "$CS_LOAD" --port "$NETTY_PORT" --connections 32 --rate 600 --duration 1.5 --mix /block/50:0.02 --quiet \
    >/dev/null || fail "warm-up load failed"
}

# cs_start_jetty "PROPERTY=VALUE..." [JSP_NAME JSP_TEXT]: Debian's Jetty 9
# in a private base ($JETTY_BASE: modules http, deploy, jsp) on a free port
# ($JETTY_PORT) with those start properties (jetty.threadPool.maxThreads=N,
# ...), and a JSP in its ROOT webapp. Sets SERVER_PID (the JVM that
# listens). Making the base and starting take about a second each.
cs_start_jetty() {
  [[ -e /usr/share/jetty9/start.jar ]] || fail "jetty9 is not installed (scripts/deps.sh installs it)"
  JETTY_BASE=$CS_TMP/jetty JETTY_PORT=$(cs_free_port)
  mkdir -p "$JETTY_BASE/webapps/ROOT"
  java -jar /usr/share/jetty9/start.jar jetty.home=/usr/share/jetty9 jetty.base="$JETTY_BASE" \
    --add-to-start=http,deploy,jsp >"$CS_TMP/jetty-base.log" 2>&1 || { cat "$CS_TMP/jetty-base.log"; fail "jetty's base"; }
  echo ok >"$JETTY_BASE/webapps/ROOT/index.html"
  [[ -n ${2:-} ]] && echo "$3" >"$JETTY_BASE/webapps/ROOT/$2"
  # shellcheck disable=SC2086 # the properties are words
  cs_bg java -jar /usr/share/jetty9/start.jar jetty.home=/usr/share/jetty9 jetty.base="$JETTY_BASE" \
    jetty.http.host=127.0.0.1 jetty.http.port="$JETTY_PORT" $1 >"$CS_TMP/jetty.log" 2>&1
  SERVER_PID=$BG_PID
  for _ in $(seq 300); do ss -Htln "sport = :$JETTY_PORT" | grep -q . && break; sleep 0.05; done
  cs_wait_port "$JETTY_PORT"
}

# tls_ab_profile NAME PROTOCOL URL: ab over https (PROTOCOL: TLS1.2,
# TLS1.3), 1000 requests on as many connections, 10 at a time, profiled as
# NAME ($r: its report). connscope must count ab's requests, no more (the
# handshakes are set-up), one a connection, with the TLS handshake in
# non_persistent's set-up; the clients' close_notify alerts after the
# server's close are no keep-alive race.
tls_ab_profile() {
  local url=$3
  cs_profile "$1" ab -q -f "$2" -n 1000 -c 10 "$url" >"$CS_TMP/$1-ab.log"
  r=$CS_TMP/$1.json
  local done failed
  done=$(awk '/^Complete requests:/ { print $3 }' "$CS_TMP/$1-ab.log")
  failed=$(awk '/^Failed requests:/ { print $3 }' "$CS_TMP/$1-ab.log")
  note "$2: ab $(grep 'SSL/TLS Protocol' "$CS_TMP/$1-ab.log"), $done complete, $failed failed; connscope $(json_get "$r" 'j["requests"]') requests, tls $(json_get "$r" 'j["tls"]')"
  note "$2: non_persistent $(json_get "$r" 'j["conditions"]["non_persistent"]')"
  assert_cmp "$failed" '==' 0 "ab's failed requests ($2)"
  assert_cmp "$(json_get "$r" 'j["requests"]')" '==' "$done" "connscope's requests vs ab's ($2)"
  assert_cmp "$(json_get "$r" 'j["conditions"]["non_persistent"]["requests_per_connection"]')" '==' 1 \
    "requests per connection ($2)"
  [[ $(json_get "$r" 'j["conditions"]["non_persistent"]["flagged"]') == True ]] || fail "non_persistent not flagged ($2)"
  # Every request's connection made a handshake first: at least as many as requests.
  assert_cmp "$(json_get "$r" 'j["tls"]["handshakes"]')" '==' "$done" "TLS handshakes before a request ($2)"
  assert_cmp "$(json_get "$r" 'j["tls"]["connections"]')" '>=' "$done" "TLS connections ($2)"
  assert_cmp "$(json_get "$r" 'j["tls"]["not_told"]')" '==' 0 "TLS connections whose records were lost ($2)"
  # Each handshake took at least the ClientHello's exchange; the set-up includes it.
  assert_cmp "$(json_get "$r" 'j["tls"]["handshake_exchanges"]')" '>=' "$done" "handshake exchanges ($2)"
  assert_cmp "$(json_get "$r" 'j["conditions"]["non_persistent"]["setup_tls_us"]')" '>' 0 "TLS in the set-up ($2)"
  assert_cmp "$(json_get "$r" 'j["conditions"]["non_persistent"]["setup_cost_us"]')" '>=' \
    "$(json_get "$r" 'j["conditions"]["non_persistent"]["setup_tls_us"]')" "set-up cost includes TLS ($2)"
  # The server closes after each answer; ab's close_notify comes after that close.
  assert_cmp "$(json_get "$r" 'j["conditions"]["idle_timeout"]["keepalive_race_resets"]')" '==' 0 \
    "keep-alive race resets: close_notify resets are none ($2)"
  assert_cmp "$(json_get "$r" 'j["tls"]["close_notify_resets"]')" '>' 0 "close_notify resets ($2)"
  assert_cmp "$(json_get "$r" 'j["multiplexed"]["connections"]')" '==' 0 "multiplexed connections ($2)"
  # ab offers no ALPN: its connections are HTTP/1.x for sure, nothing to say about HTTP/2.
  assert_cmp "$(json_get "$r" 'j["tls"]["alpn_h2"] + j["tls"]["alpn_not_told"]')" '==' 0 "ALPN h2 offers, or not read ($2)"
}

# tls_ab_both URL: tls_ab_profile over TLS 1.2 (ab12), then 1.3 (ab13), each
# connection told its version; the 1.3 run's requests and set-up printed.
tls_ab_both() {
  tls_ab_profile ab12 TLS1.2 "$1"
  assert_cmp "$(json_get "$r" 'j["tls"]["tls12"]')" '>=' 1000 "connections told TLS 1.2 (TLS1.2)"
  tls_ab_profile ab13 TLS1.3 "$1"
  assert_cmp "$(json_get "$r" 'j["tls"]["tls13"]')" '>=' 1000 "connections told TLS 1.3 (TLS1.3)"
  "$CS_BIN" report "$CS_TMP/ab13.cstrace" | sed -n '/^requests/,/^latency/p;/non_persistent/,/->/p'
}

# csload_tls_profile NAME PORT: csload --tls --busy-poll, 10 keep-alive
# connections for 3 s (at most 20 000 requests), each pausing 2 ms after an
# answer as wrk_tls_profile's wrk does, profiled as NAME ($r: its report;
# csload's in $CS_TMP/NAME-client.json). connscope counts csload's
# requests, and at most those csload gave up on at the end (unanswered in
# time). csload closes each connection with a close_notify, which a server
# may answer with its own (JSSE does, nginx does not): that exchange is TLS
# control, no request (tls.control_exchanges, at most one a connection).
# One TLS handshake a connection, as many as csload made. connscope's p99
# lies between csload's two (assert_p99_agrees), both bounds asserted: from
# the request's last record written, less the client thread's own waits
# for a CPU (busy-polling, it reads each answer as soon as it is there and
# decrypted), and from the connect (a connection's first request: its TCP
# connect and TLS handshake, which connscope counts in it too).
csload_tls_profile() {
  local client=$CS_TMP/$1-client.json requests unfinished alerts
  cs_profile "$1" "$CS_LOAD" --tls --busy-poll --port "$2" --connections 10 --gap-ms 2 \
    --duration 3 --requests 20000 --json "$client" --quiet
  r=$CS_TMP/$1.json
  requests=$(json_get "$client" 'j["requests"]')
  unfinished=$(json_get "$client" 'j["errors"]["unfinished"]')
  alerts=$(json_get "$client" 'j["tls_close_notify"]')
  note "csload: $requests requests, p99 from the send $(json_get "$client" 'j["from_send_us"]["p99"]') us, less its CPU waits $(json_get "$client" 'j["from_send_running_us"]["p99"]') us, from the connect $(json_get "$client" 'j["service_us"]["p99"]') us; handshakes $(json_get "$client" 'j["tls_handshakes"]'), close_notify $(json_get "$client" 'j["tls_close_notify"]')"
  note "connscope: $(json_get "$r" 'j["requests"]') requests, p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, tls $(json_get "$r" 'j["tls"]')"
  assert_cmp "$(json_get "$client" 'j["errors"]["total"] - j["errors"]["unfinished"]')" '==' 0 \
    "csload's failed requests (TLS handshakes included)"
  assert_cmp "$(json_get "$client" 'j["tls_handshakes"]["count"]')" '==' "$(json_get "$client" 'j["connect_us"]["count"]')" \
    "csload's TLS handshakes, one per connection"
  assert_cmp "$(json_get "$r" 'j["requests"]')" '>=' "$requests" "connscope's requests vs csload's"
  assert_cmp "$(json_get "$r" 'j["requests"]')" '<=' "$((requests + unfinished))" \
    "connscope's requests vs csload's and those it stopped waiting for ($alerts close_notify alerts sent)"
  assert_cmp "$(json_get "$r" 'j["tls"]["control_exchanges"]')" '<=' "$(json_get "$r" 'j["connections"]')" \
    "TLS control exchanges (a close_notify answered), at most one a connection"
  assert_cmp "$(json_get "$r" 'j["tls"]["handshakes"]')" '==' "$(json_get "$r" 'j["connections"]')" \
    "TLS handshakes (one per connection)"
  assert_cmp "$(json_get "$r" 'j["tls"]["handshakes"]')" '==' "$(json_get "$client" 'j["tls_handshakes"]["count"]')" \
    "connscope's TLS handshakes vs csload's"
  assert_cmp "$(json_get "$r" 'j["tls"]["not_told"]')" '==' 0 "TLS connections whose records were lost (csload)"
  assert_p99_agrees "$r" "$client"
}

# wrk_tls_profile NAME URL: wrk over https, 10 keep-alive connections for
# 3 s, each pausing 2 ms after an answer, profiled as NAME ($r: its
# report): connscope's requests and p99 agree with wrk's, one handshake a
# connection. wrk times a request from its write to its reading of the answer
# in its event loop: flat out, on two busy CPUs, its thread's own waits for
# a CPU (milliseconds) are most of its p99, and no server sees them. The
# pause leaves the CPUs time to serve both sides, and wrk runs at a
# real-time priority (chrt), woken as soon as its answer is there.
# On loopback the request reaches the server's socket in a softirq, which a
# machine short of CPUs defers to ksoftirqd, a thread that waits its turn:
# that delay is before the first server probe, and wrk's p99 has it, as it
# has its own loop's delays. So only the upper bound (no server sees more
# than its client) is asserted; the lower one and the CPU pressure are said.
wrk_tls_profile() {
  local url=$2 wrk_p99 wrk_requests low high server_p99 pressure_share
  echo 'function delay() return 2 end' >"$CS_TMP/pause.lua"
  CS_ON_ATTACHED='pressure_before=$(cpu_pressure_us); pressure_from_ns=$(date +%s%N)'
  CS_ON_STOPPING='pressure_after=$(cpu_pressure_us); pressure_to_ns=$(date +%s%N)'
  cs_profile "$1" chrt -f 10 wrk -t1 -c10 -d3s --latency -s "$CS_TMP/pause.lua" "$url" >"$CS_TMP/$1.log"
  unset CS_ON_ATTACHED CS_ON_STOPPING
  pressure_share=$(python3 -c "print(round(($pressure_after - $pressure_before) * 1e3 / ($pressure_to_ns - $pressure_from_ns), 4))")
  r=$CS_TMP/$1.json
  # wrk's "99%   1.23ms" in microseconds; its request count.
  wrk_p99=$(awk '$1 == "99%" { v = $2; u = v; sub(/[0-9.]+/, "", u); sub(/[a-z]+$/, "", v);
    print v * (u == "us" ? 1 : u == "ms" ? 1000 : 1000000) }' "$CS_TMP/$1.log")
  wrk_requests=$(awk '/requests in/ { print $1 }' "$CS_TMP/$1.log")
  note "wrk: $wrk_requests requests, p99 $wrk_p99 us; connscope: $(json_get "$r" 'j["requests"]') requests, p99 $(json_get "$r" 'j["latency_us"]["p99"]') us, tls $(json_get "$r" 'j["tls"]')"
  grep -q 'Socket errors' "$CS_TMP/$1.log" && { cat "$CS_TMP/$1.log"; fail "wrk saw socket errors"; }
  # wrk stops with up to one request in flight on each connection: answered, connscope counts it.
  assert_cmp "$(json_get "$r" 'j["requests"]')" '>=' "$wrk_requests" "connscope's requests vs wrk's"
  assert_cmp "$(json_get "$r" 'j["requests"]')" '<=' "$((wrk_requests + 10))" "connscope's requests vs wrk's and those in flight"
  # The server ends a connection after so many requests (nginx keepalive_requests,
  # Tomcat maxKeepAliveRequests): wrk connects again.
  assert_cmp "$(json_get "$r" 'j["connections"]')" '>=' 10 "connections that carried requests"
  assert_cmp "$(json_get "$r" 'j["tls"]["handshakes"]')" '==' "$(json_get "$r" 'j["connections"]')" \
    "TLS handshakes (one per connection)"
  assert_cmp "$(json_get "$r" 'j["tls"]["not_told"]')" '==' 0 "TLS connections whose records were lost (wrk)"
  read -r low high < <(python3 -c "t = lambda x: max(0.1 * x, 1000.0)
print($wrk_p99 - t($wrk_p99), $wrk_p99 + t($wrk_p99))")
  server_p99=$(json_get "$r" 'j["latency_us"]["p99"]')
  note "CPU pressure: tasks waited for a CPU during $pressure_share of the run"
  # Not asserted: wrk's one event loop also reads each answer behind its
  # other connections' TLS work, a delay in its p99 that nothing measures
  # out (on a quiet machine: wrk 2870 us against connscope's 482 us).
  note "lower bound, said not judged: connscope $server_p99 us, wrk $wrk_p99 us less its tolerance $low us"
  assert_cmp "$server_p99" '<=' "$high" "p99 agreement: connscope $server_p99 us vs wrk $wrk_p99 us"
}

# tls_resume_profile NAME PORT [VERSION]: twenty TLS connections (VERSION
# TLSv1_2, the default, or TLSv1_3) of two requests each, the last nineteen
# resuming the previous one's session, profiled as NAME ($r: its report):
# connscope counts the resumed handshakes the client saw resumed (1.2: the
# abbreviated handshake; 1.3: the ClientHello's pre_shared_key and the
# server's short first flight), and the 40 requests. With TLS 1.3 the
# first connection offers a session from another server (a thread of the
# client): offered, not resumed, a full handshake.
tls_resume_profile() {
  local version=${3:-TLSv1_2}
  cat >"$CS_TMP/$1.py" <<'PY'
import socket, ssl, sys
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
ctx.minimum_version = ctx.maximum_version = getattr(ssl.TLSVersion, sys.argv[2])
session, resumed = None, 0
if len(sys.argv) > 3:
    import threading
    sctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    sctx.load_cert_chain(sys.argv[3], sys.argv[4])
    other = socket.create_server(("127.0.0.1", 0))
    def serve():
        c, _ = other.accept()
        with sctx.wrap_socket(c, server_side=True) as t:
            t.recv(4096)
            t.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    thread = threading.Thread(target=serve)
    thread.start()
    with ctx.wrap_socket(socket.create_connection(other.getsockname(), timeout=10)) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
        assert s.recv(4096).startswith(b"HTTP/1.1 200"), "no answer from the other server"
        session = s.session
    thread.join(10)
    other.close()
for _ in range(20):
    with ctx.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10), session=session) as s:
        for _ in range(2):
            s.sendall(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
            assert s.recv(4096).startswith(b"HTTP/1.1 200"), "no answer"
        resumed += s.session_reused
        # TLS 1.3: the session tickets came after the handshake, with the answers.
        session = s.session
print(resumed)
PY
  local resumed=$CS_TMP/$1.resumed other=
  if [[ $version == TLSv1_3 ]]; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -keyout "$CS_TMP/other.key" \
      -out "$CS_TMP/other.pem" 2>"$CS_TMP/other.log" || { cat "$CS_TMP/other.log"; fail "no certificate for the other server"; }
    other="'$CS_TMP/other.pem' '$CS_TMP/other.key'"
  fi
  cs_profile "$1" sh -c "timeout 60 '$CS_PYTHON' '$CS_TMP/$1.py' $2 $version $other >'$resumed'"
  r=$CS_TMP/$1.json
  note "resumption ($version): the client resumed $(cat "$resumed") session(s); connscope: tls $(json_get "$r" 'j["tls"]'), $(json_get "$r" 'j["requests"]') requests"
  assert_cmp "$(cat "$resumed")" '>=' 1 "sessions the client resumed"
  assert_cmp "$(json_get "$r" 'j["tls"]["resumed"]')" '==' "$(cat "$resumed")" "resumed handshakes vs the client's ($version)"
  if [[ $version == TLSv1_3 ]]; then
    assert_cmp "$(json_get "$r" 'j["tls"]["tls13"]')" '==' 20 "connections told TLS 1.3"
    assert_cmp "$(json_get "$r" 'j["tls"]["tls13_psk_resumed"]')" '==' "$(cat "$resumed")" "TLS 1.3 resumed (session offered, first flight without a certificate)"
    assert_cmp "$(json_get "$r" 'j["tls"]["tls13_psk_offered"]')" '==' 20 "TLS 1.3 ClientHellos that offered a session (the first, another server's)"
    assert_cmp "$(json_get "$r" 'j["tls"]["psk_not_told"]')" '==' 0 "ClientHellos whose offer could not be told"
  else
    assert_cmp "$(json_get "$r" 'j["tls"]["resumed_tls12"]')" '==' "$(cat "$resumed")" "resumed TLS 1.2 handshakes"
  fi
  assert_cmp "$(json_get "$r" 'j["requests"]')" '==' 40 "requests (20 connections, 2 each)"
  assert_cmp "$(json_get "$r" 'j["connections"]')" '==' 20 "connections that carried requests"
}
