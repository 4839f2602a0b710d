#!/usr/bin/env bash
# PostgreSQL 15 (Debian's), a private cluster made by initdb in the test's
# directory, on a private port. The postmaster accepts, a forked backend
# serves: one connection's life.
# 1. pgbench -C -S: a new connection for every one-query transaction.
#    Each connection's start-up and authentication is set-up, not a
#    request (protocol_setup, paid by its query), and its Terminate is a
#    goodbye: requests equal pgbench's transactions, one per connection,
#    and non_persistent is flagged with the backend's start-up in its
#    set-up split.
# 2. pgbench -S on open connections: requests equal its transactions, and
#    non_persistent is not flagged.
# (Shared: counts, and a condition whose set-up is milliseconds a
# connection, far above what another test's load moves.)
# integration: plain build
source "$(dirname "$0")/lib.sh"

pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
PG_DIR=$CS_TMP/pg
PG_PORT=$(cs_free_port)
mkdir -p "$PG_DIR"
chown postgres: "$PG_DIR"
chmod 711 "$CS_TMP" # the server runs as postgres: it passes through, lists nothing
as_pg() { runuser -u postgres -- "$@"; }
as_pg "$pg_bin/initdb" -D "$PG_DIR/data" --auth=trust -U postgres >"$CS_TMP/initdb.log" 2>&1 \
  || { cat "$CS_TMP/initdb.log"; fail "initdb failed"; }
cs_bg runuser -u postgres -- "$pg_bin/postgres" -D "$PG_DIR/data" -p "$PG_PORT" -k "$PG_DIR" \
  -c listen_addresses=127.0.0.1 -c ssl=off -c fsync=off -c max_connections=20 \
  -c logging_collector=on -c log_directory="$PG_DIR" -c log_filename=server.log -c log_statement=all
cs_wait_port "$PG_PORT"
SERVER_PID=$(head -n 1 "$PG_DIR/data/postmaster.pid")
[[ -n $SERVER_PID ]] || fail "no postmaster pid"
pgbench=("$pg_bin/pgbench" -h 127.0.0.1 -p "$PG_PORT" -U postgres)
"${pgbench[@]}" -i -s 1 -q postgres >"$CS_TMP/pgbench-init.log" 2>&1 || { cat "$CS_TMP/pgbench-init.log"; fail "pgbench -i failed"; }

# transactions LOG: the transactions pgbench processed.
transactions() { awk -F': ' '/number of transactions actually processed/ { split($2, a, "/"); print a[1] }' "$1"; }
# statements: the statements the server has logged so far (log_statement=all), each one query.
statements() { grep -c ' LOG:  statement: ' "$PG_DIR/server.log" || true; }

# 1. A connection per transaction.
before=$(statements)
cs_profile connect "${pgbench[@]}" -C -S -c 2 -T 2 postgres >"$CS_TMP/connect.log" 2>&1
r=$CS_TMP/connect.json
sent=$(transactions "$CS_TMP/connect.log")
[[ -n $sent ]] || { cat "$CS_TMP/connect.log"; fail "pgbench printed no count"; }
# pgbench's own first queries (the scale, its vacuum) on one more connection are requests too.
queries=$(($(statements) - before))
note "pgbench -C: $sent transactions, $(grep -E 'average connection time|latency average' "$CS_TMP/connect.log" | tr '\n' ' '); the server ran $queries statements"
note "connscope: requests $(json_get "$r" 'j["requests"]'), accepts $(json_get "$r" 'j["listeners"][0]["accepts"]'), protocol_setup $(json_get "$r" 'j["protocol_setup"]'), by protocol $(json_get "$r" 'j["connections_by_protocol"]'), p99 $(json_get "$r" 'j["latency_us"]["p99"]') us"
note "non_persistent: $(json_get "$r" 'j["conditions"]["non_persistent"]')"
note "tail: $(json_get "$r" '", ".join("%s %.1f%%" % (c["cause"], 100 * c["share"]) for c in j["tail"]["causes"] if c["share"] >= 0.005)')"
accepts=$(json_get "$r" 'j["listeners"][0]["accepts"]')
assert_cmp "$(json_get "$r" 'j["requests"]')" == "$queries" "requests: the statements the server ran"
assert_cmp "$queries" '>=' "$sent" "(pgbench's transactions among them)"
assert_cmp "$accepts" == "$((sent + 1))" "accepts: a connection a transaction, and pgbench's first"
assert_cmp "$(json_get "$r" 'j["connections_by_protocol"]["postgresql"]')" == "$accepts" "connections told as PostgreSQL"
assert_cmp "$(json_get "$r" 'j["protocol_setup"]["connections"]')" == "$accepts" "first queries that paid the start-up"
assert_cmp "$(json_get "$r" 'j["protocol_setup"]["goodbyes"]')" == "$accepts" "Terminates: no requests"
[[ $(json_get "$r" 'j["conditions"]["non_persistent"]["flagged"]') == True ]] || fail "non_persistent not flagged"
echo "ok: non_persistent flagged"
assert_cmp "$(json_get "$r" 'j["conditions"]["non_persistent"]["setup_protocol_us"]')" '>' 0 "the backend's start-up in the set-up split"
"$CS_BIN" report "$CS_TMP/connect.cstrace" | sed -n '/^conditions/,/^$/p' | tee "$CS_TMP/connect.conditions"
grep -q "start-up and authentication (a database backend's)" "$CS_TMP/connect.conditions" || fail "the set-up split does not name the backend's start-up"
grep -q "pgbouncer" "$CS_TMP/connect.conditions" || fail "the advice names no pooler"
# The backends served and exited: named by their exit, not "?".
"$CS_BIN" report "$CS_TMP/connect.cstrace" >"$CS_TMP/connect.txt"
if grep -q '? (tid' "$CS_TMP/connect.txt"; then grep -m 3 '? (tid' "$CS_TMP/connect.txt"; fail "threads without a name"; fi
echo "ok: every thread named"

# 2. Open connections.
before=$(statements)
cs_profile persistent "${pgbench[@]}" -S -c 2 -T 2 postgres >"$CS_TMP/persistent.log" 2>&1
p=$CS_TMP/persistent.json
sent=$(transactions "$CS_TMP/persistent.log")
queries=$(($(statements) - before))
note "pgbench: $sent transactions, the server ran $queries statements; connscope: requests $(json_get "$p" 'j["requests"]'), protocol_setup $(json_get "$p" 'j["protocol_setup"]'), p99 $(json_get "$p" 'j["latency_us"]["p99"]') us"
assert_cmp "$(json_get "$p" 'j["requests"]')" == "$queries" "requests: the statements the server ran"
assert_cmp "$queries" '>=' "$sent" "(pgbench's transactions among them)"
[[ $(json_get "$p" 'j["conditions"]["non_persistent"]["flagged"]') == False ]] || fail "non_persistent flagged on open connections"
echo "ok: non_persistent not flagged"
assert_cmp "$(json_get "$p" 'j["events"]["lost"]')" == 0 "events lost"
