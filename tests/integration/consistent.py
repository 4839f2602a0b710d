#!/usr/bin/env python3
"""consistent.py REPORT.json... | --reports-in DIR: no flagged condition
contradicts its own evidence, nor the tail it is said to explain. Every
report an integration test leaves in its directory goes through it
(lib.sh's cs_cleanup, when the test passed), and the golden outputs too
(tests/golden/golden.sh): a verdict
that names the nearest symptom (a pool called full whose threads were
idle, an accept-side verdict for a tail spent elsewhere) fails here
whichever scenario shows it. Prints each contradiction; exits 1 on any."""
import json
import os
import sys

POOL_TAIL_SHARE_MIN = 0.2       # pool_saturation: its wait this share of the tail
POOL_BUSY_WHILE_WAITING_MIN = 0.5
ACCEPT_TAIL_SHARE_MIN = 0.05    # accept-side verdicts: accept waits this share of the tail
CLIENT_DELAY_MIN_US = 50        # client_bound: a client's read delay p99 at least this
CLIENT_READS_MIN = 100          # ... over this many answers


def tail_shares(report):
    shares = {}
    for cause in report["tail"]["causes"]:
        shares[cause["cause"]] = cause["share"]
    return shares


def pool_contradictions(pool, tail):
    if not pool["flagged"]:
        if pool["wait_cause"] == "pool":
            yield "pool_saturation: not flagged, yet its wait_cause says the pool"
        return
    if not pool["busy"]:
        yield "pool_saturation: flagged for a pool that was not busy"
    if pool["kind"] == "handoff" and pool.get("accept_held"):
        # Its poller stopped accepting while no pool thread was free: the
        # wait is in the accept queue too, and the pool busy over its serving.
        if pool["busy_share"] < POOL_BUSY_WHILE_WAITING_MIN:
            yield "pool_saturation: flagged (accept held), its threads busy %.3f" % pool["busy_share"]
        waited = tail.get("worker_pool", 0.0) + tail.get("accept_queue", 0.0)
    elif pool["kind"] == "handoff":
        busy = pool["busy_while_waiting_share"]
        if busy is None or busy < POOL_BUSY_WHILE_WAITING_MIN:
            yield "pool_saturation: flagged, its threads serving others %s of the waits" % busy
        waited = tail.get("worker_pool", 0.0)
    else:
        if pool["busy_workers"] != pool["workers"]:
            yield "pool_saturation: flagged with %s of %s workers busy" % (pool["busy_workers"], pool["workers"])
        waited = tail.get("accept_queue", 0.0)
    if waited < POOL_TAIL_SHARE_MIN:
        yield "pool_saturation: flagged, its wait %.3f of the tail" % waited
    if pool["wait_cause"] != "pool":
        yield "pool_saturation: flagged, its wait_cause %s" % pool["wait_cause"]


def upstream_contradictions(report, tail):
    """upstream: the upstream its evidence names is one of upstreams[]; its
    split (the wait for a connection, connect, first byte, read) adds up to
    its time, and "mostly a wait for a connection" is so; each upstream's
    exchanges are joined or counted as not joined; their tail shares add up
    to at most the cause's."""
    upstreams = report.get("upstreams", [])
    for u in upstreams:
        if u["joined"] + u["not_joined"] != u["exchanges"]:
            yield "upstreams: %s:%d joined %d + not joined %d != %d exchanges" % (
                u["address"], u["port"], u["joined"], u["not_joined"], u["exchanges"])
    share = tail.get("upstream", 0.0)
    if sum(u["tail_share"] for u in upstreams) > share + 0.001:
        yield "upstreams: their tail shares add up to more than upstream's %.4f" % share
    cause = next((c for c in report["tail"]["causes"] if c["cause"] == "upstream"), None)
    if not cause or share < 0.005 or not cause["figures"]:
        return
    f = cause["figures"]
    named = [u for u in upstreams if u["port"] == f["upstream_port"]]
    if not named or not any(u["requests_waited"] for u in named):
        yield "upstream: its evidence names :%d, no upstream whose requests waited on it" % f["upstream_port"]
    parts = f.get("connection_wait_us", 0) + f["connect_us"] + f["first_byte_wait_us"] + f["read_us"]
    if abs(parts - f["tail_wait_us"]) > 0.001 * f["tail_requests"] + 0.01:
        yield "upstream: connection wait + connect + first byte + read %.3f us, not its %.3f us" % (
            parts, f["tail_wait_us"])
    if f.get("mostly_connection_wait") and 2 * f.get("connection_wait_us", 0) < f["tail_wait_us"]:
        yield "upstream: mostly a wait for a connection, but %.3f of its %.3f us" % (
            f["connection_wait_us"], f["tail_wait_us"])


def contradictions(report):
    cond = report["conditions"]
    tail = tail_shares(report)
    yield from pool_contradictions(cond["pool_saturation"], tail)
    accept = tail.get("accept_queue", 0.0) + tail.get("listen_overflow", 0.0)
    if cond["accept_contention"]["flagged"] and accept < ACCEPT_TAIL_SHARE_MIN:
        yield "accept_contention: flagged, accept waits %.3f of the tail" % accept
    idle = cond["idle_timeout"]
    if idle["flagged"] and idle["server_idle_closes"] < 3 and not idle["keepalive_race_resets"]:
        yield "idle_timeout: flagged with %d idle closes" % idle["server_idle_closes"]
    overflow = cond["listen_overflow"]
    if overflow["flagged"] and not (overflow["drops"] or overflow["delayed_connections"]):
        yield "listen_overflow: flagged with no drop and no delayed connection"
    if cond["runtime_pauses"]["flagged"] and not cond["runtime_pauses"]["pauses"]:
        yield "runtime_pauses: flagged with no pause"
    if cond["cpu_saturation"]["flagged"] and not cond["cpu_saturation"]["runq_total_us"]:
        yield "cpu_saturation: flagged with no wait for a CPU"
    limit = cond["connection_limit"]
    if limit["flagged"] and not (limit["open_connections"] and limit["waits"]):
        yield "connection_limit: flagged with %s open, %s waits" % (limit["open_connections"], limit["waits"])
    if limit["flagged"] and limit.get("held_by_pool"):
        yield "connection_limit: flagged for a limit its own full pool held"
    yield from upstream_contradictions(report, tail)
    yield from client_contradictions(report)


def client_contradictions(report):
    """client_bound names a local client whose own delay is in what it measured."""
    bound = report["conditions"].get("client_bound")
    if not bound:
        return  # a report from before the clients' side
    clients = report.get("clients", [])
    said = [c for c in clients if c["bound"]]
    if bound["flagged"] != bool(said):
        yield "client_bound: flagged %s, clients said bound: %d" % (bound["flagged"], len(said))
    for c in said:
        if c["read_delay_us"]["p99"] < CLIENT_DELAY_MIN_US or c["reads"] < CLIENT_READS_MIN:
            yield "client_bound: %s said bound, read delay p99 %.1f us over %d reads" % (
                c["comm"], c["read_delay_us"]["p99"], c["reads"])


def is_report(value):
    return (isinstance(value, dict) and isinstance(value.get("conditions"), dict)
            and "pool_saturation" in value["conditions"] and isinstance(value.get("tail"), dict))


def reports_in(directory):
    """The JSON files there that are connscope reports (a client's, a status reply's are not)."""
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        if not name.endswith(".json") or not os.path.isfile(path):
            continue
        try:
            with open(path) as f:
                value = json.load(f)
        except (ValueError, UnicodeDecodeError):
            continue
        if is_report(value):
            yield path, value


def main(args):
    if args[:1] == ["--reports-in"]:
        found = list(reports_in(args[1]))
    else:
        found = []
        for path in args:
            with open(path) as f:
                found.append((path, json.load(f)))
    bad = 0
    for path, report in found:
        for problem in contradictions(report):
            print("%s: %s" % (path, problem))
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
