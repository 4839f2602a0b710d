#!/usr/bin/env bash
# MariaDB 10.11 (Debian's), a private datadir made by mariadb-install-db in
# the test's directory, on a private port, its general log on (every
# command the server ran). The server speaks first: its greeting, then the
# client's handshake response and authentication, all set-up, paid by the
# connection's first query; COM_QUIT is a goodbye.
# 1. mysqlslap with a connection per query: requests equal the queries
#    the server logged, every connection told as MySQL with its greeting,
#    and non_persistent flagged with the set-up split from the accept
#    (accept queue, then greeting and authentication).
# 2. mysqlslap on open connections: requests equal the queries, and
#    non_persistent is not flagged.
# 3. Attached to 4 clients already querying: their connections adopted,
#    the requests against the server's own count of SELECTs.
# (Shared: counts, and a condition whose set-up is a thread's start and an
# authentication per connection, far above what another test's load moves.)
# integration: plain build
source "$(dirname "$0")/lib.sh"

MDB_DIR=$CS_TMP/mariadb
MDB_PORT=$(cs_free_port)
mkdir -p "$MDB_DIR"
mariadb-install-db --no-defaults --datadir="$MDB_DIR/data" --user=root --skip-test-db \
  --auth-root-authentication-method=normal >"$CS_TMP/install-db.log" 2>&1 \
  || { cat "$CS_TMP/install-db.log"; fail "mariadb-install-db failed"; }
cs_bg mariadbd --no-defaults --datadir="$MDB_DIR/data" --port="$MDB_PORT" --bind-address=127.0.0.1 \
  --socket="$MDB_DIR/socket" --pid-file="$MDB_DIR/pid" --user=root --skip-log-bin \
  --innodb-buffer-pool-size=16M --max-connections=40 --log-error="$MDB_DIR/error.log" \
  --general-log --general-log-file="$MDB_DIR/general.log"
SERVER_PID=$BG_PID
cs_wait_port "$MDB_PORT"
client=(-h 127.0.0.1 -P "$MDB_PORT" -u root)
mariadb "${client[@]}" -e 'CREATE DATABASE slap' || fail "mariadb: CREATE DATABASE failed"

# The general log's lines of a kind since line FROM ("Query", "Connect").
logged() { tail -n +"$(($2 + 1))" "$MDB_DIR/general.log" | grep -c -P "\\d+ $1\\t" || true; }
log_lines() { wc -l <"$MDB_DIR/general.log"; }
slap() { mysqlslap "${client[@]}" --create-schema=slap --query='SELECT 1' "$@"; }

# 1. A connection per query: 2 clients, 150 rounds of one query each.
from=$(log_lines)
cs_profile connect slap --concurrency=2 --iterations=150 --number-of-queries=2 >"$CS_TMP/connect.log" 2>&1
r=$CS_TMP/connect.json
queries=$(logged Query "$from")
connections=$(logged Connect "$from")
note "mysqlslap: $(grep -E 'Average number of seconds' "$CS_TMP/connect.log" | tr -s ' \t' ' '); the server ran $queries queries on $connections connections"
note "connscope: requests $(json_get "$r" 'j["requests"]'), accepts $(json_get "$r" 'j["listeners"][0]["accepts"]'), protocol_setup $(json_get "$r" 'j["protocol_setup"]'), by protocol $(json_get "$r" 'j["connections_by_protocol"]'), p99 $(json_get "$r" 'j["latency_us"]["p99"]') us"
note "non_persistent: $(json_get "$r" 'j["conditions"]["non_persistent"]')"
note "tail: $(json_get "$r" '", ".join("%s %.1f%%" % (c["cause"], 100 * c["share"]) for c in j["tail"]["causes"] if c["share"] >= 0.005)')"
accepts=$(json_get "$r" 'j["listeners"][0]["accepts"]')
assert_cmp "$queries" == 300 "queries the server ran (the clients': 2 x 150)"
assert_cmp "$(json_get "$r" 'j["requests"]')" == "$queries" "requests: the queries the server ran"
assert_cmp "$accepts" == "$connections" "accepts: the connections the server logged"
assert_cmp "$(json_get "$r" 'j["connections_by_protocol"]["mysql"]')" == "$accepts" "connections told as MySQL"
assert_cmp "$(json_get "$r" 'j["protocol_setup"]["greetings"]')" == "$accepts" "greetings: the server spoke first on each"
assert_cmp "$(json_get "$r" 'j["protocol_setup"]["exchanges"]')" == "$accepts" "authentications: no requests"
assert_cmp "$(json_get "$r" 'j["protocol_setup"]["goodbyes"]')" == "$accepts" "COM_QUITs: no requests"
# mysqlslap's own first connection runs no query: it pays no set-up.
assert_cmp "$(json_get "$r" 'j["protocol_setup"]["connections"]')" == "$queries" "first queries that paid the set-up"
[[ $(json_get "$r" 'j["conditions"]["non_persistent"]["flagged"]') == True ]] || fail "non_persistent not flagged"
echo "ok: non_persistent flagged"
assert_cmp "$(json_get "$r" 'j["conditions"]["non_persistent"]["setup_protocol_us"]')" '>' 0 \
  "the greeting and authentication in the set-up split"
assert_cmp "$(json_get "$r" 'j["conditions"]["non_persistent"]["setup_accept_us"]')" '>' 0 \
  "the accept queue in the set-up split: the set-up began at the accept, before the client's first bytes"

# 2. Open connections: 4 clients, 2000 queries.
from=$(log_lines)
cs_profile persistent slap --concurrency=4 --iterations=1 --number-of-queries=2000 >"$CS_TMP/persistent.log" 2>&1
p=$CS_TMP/persistent.json
queries=$(logged Query "$from")
note "mysqlslap: $(grep -E 'Average number of seconds' "$CS_TMP/persistent.log" | tr -s ' \t' ' '); the server ran $queries queries; connscope: requests $(json_get "$p" 'j["requests"]'), protocol_setup $(json_get "$p" 'j["protocol_setup"]'), p99 $(json_get "$p" 'j["latency_us"]["p99"]') us"
assert_cmp "$queries" == 2000 "queries the server ran"
assert_cmp "$(json_get "$p" 'j["requests"]')" == "$queries" "requests: the queries the server ran"
[[ $(json_get "$p" 'j["conditions"]["non_persistent"]["flagged"]') == False ]] || fail "non_persistent flagged on open connections"
echo "ok: non_persistent not flagged"
assert_cmp "$(json_get "$p" 'j["events"]["lost"]')" == 0 "events lost"

# 3. Attached to a busy server: 4 clients already querying (each query a
#    millisecond's sleep), their
#    connections older than the attach, adopted at an idle moment (a
#    command's header, read alone). Requests against the server's own
#    count of SELECTs, read just after the attach and just before the stop
#    (each by a connection of its own, one SHOW each): at least those, and
#    no more than that rate over connscope's whole window (5 %: the rate
#    moves, on a busy machine).
com_select() { mariadb "${client[@]}" -N -e "SHOW GLOBAL STATUS LIKE 'Com_select'" | awk '{ print $2 }'; }
# (A millisecond's sleep in each query keeps the clients to about 3 000
# queries a second: other tests share the machine.)
selects_before=$(com_select)
cs_bg mysqlslap "${client[@]}" --create-schema=slap --query='SELECT SLEEP(0.001)' --concurrency=4 --iterations=1 \
  --number-of-queries=100000
slap_pid=$BG_PID
until [[ $(com_select) -gt $((selects_before + 200)) ]]; do sleep 0.1; done
SERVER_PID=$(cat "$MDB_DIR/pid")
CS_ON_ATTACHED='selects_from=$(com_select); from_ns=$(cs_monotonic_ns)' \
  CS_ON_STOPPING='to_ns=$(cs_monotonic_ns); selects_to=$(com_select)' cs_attach_window busy 2
kill "$slap_pid" 2>/dev/null || true
b=$CS_TMP/busy.json
selects=$((selects_to - selects_from))
most=$(python3 -c "print(int(1.05 * $selects * ($WINDOW_TO_NS - $WINDOW_FROM_NS) / ($to_ns - $from_ns)) + 2)")
note "the server ran $selects SELECTs over $(((to_ns - from_ns) / 1000000)) ms of connscope's $(((WINDOW_TO_NS - WINDOW_FROM_NS) / 1000000)) ms window; connscope: $(json_get "$b" 'j["requests"]') requests, $(json_get "$b" 'j["connections_adopted"]') connections adopted, $(json_get "$b" 'j["requests_in_flight_at_attach"]') in flight at the attach, by protocol $(json_get "$b" 'j["connections_by_protocol"]'), adopted $(json_get "$b" 'j["adopted"]'), multiplexed $(json_get "$b" 'j["multiplexed"]'), p99 $(json_get "$b" 'j["latency_us"]["p99"]') us"
assert_cmp "$(json_get "$b" 'j["connections_adopted"]')" == 4 "the clients' connections adopted"
assert_cmp "$(json_get "$b" 'j["adopted"]["not_a_message_start"]')" == 0 "adoptions refused"
assert_cmp "$(json_get "$b" 'j["connections_multiplexed"]')" == 0 "connections whose commands could not be counted"
assert_cmp "$(json_get "$b" 'j["requests"]')" '>=' "$selects" "requests: the SELECTs the server ran inside the window"
assert_cmp "$(json_get "$b" 'j["requests"]')" '<=' "$most" "requests: the server's rate over the whole window, and the two SHOWs"
