// SPDX-License-Identifier: BSD-2-Clause
/*
 * The words, one row per enum value (designated initializers: a row
 * cannot drift to another kind). The templates' syntax is template.h's;
 * the keys are the figures the analysis gives each kind (diagnose.c,
 * tail.c).
 */
#include "words.h"

#include "template.h"

/*
 * Waiting for a carrier, in Loom's words (worker_pool's and event_loop's
 * evidence when the threads are a JVM's virtual-thread carriers): one
 * blocked off its CPU while it served held its virtual thread (pinned);
 * one on its CPU ran virtual threads that are not preempted.
 */
#define CARRIER_WAIT \
		"[+virtual_threads|virtual threads waited {tail_wait} in all for one of {carriers} carrier(s) ({carrier_name}, "\
		"tid {carrier_tid})[+pinned|; pinned: the carrier was blocked off its CPU {carrier_blocked} of the "\
		"{carrier_served} it served[?carrier_blocked_share_by_length| "\
		"({carrier_blocked_share_by_length}% counting each handler by its length)], holding its virtual thread "\
		"(file I/O, native frames; synchronized before JDK 24): move that work off virtual threads, or raise "\
		"jdk.virtualThreadScheduler.maxPoolSize][!pinned|, busy {carrier_busy_share}% of the time they served"\
		"[?carrier_on_cpu_share_by_length|, its handlers on the CPU {carrier_on_cpu_share_by_length}% of their "\
		"time counting each by its length]: a virtual thread that runs on the CPU is not preempted; run CPU-bound "\
		"work on a platform thread pool, or raise jdk.virtualThreadScheduler.parallelism]]"

/* How busy a hand-off pool's threads were while requests waited for one (pool_waits.c). */
#define POOL_BUSY_WHILE_WAITING \
		"[?busy_while_waiting_share|, busy (serving others, or polling for the pool) "\
		"{busy_while_waiting_share}% of the time requests waited for one]"

static const struct {
	const char *summary;
	const char *evidence;
} cause_words[CS_CAUSE_COUNT] = {
	[CS_CAUSE_ACCEPT_QUEUE] = { "in the accept queue, waiting for the server's accept()",
		"listener :{port} accept wait p99 {accept_wait_p99}, backlog max {backlog_max} of {backlog_limit}; "
		"{worker_comm} (tid {worker_tid}) took {worker_accept_share}% of accepts" },
	[CS_CAUSE_LISTEN_OVERFLOW] = { "waiting for a SYN retransmit after the backlog overflowed",
		"listener :{port} dropped {syn_drops} SYN(s)[+ack_drops| and {ack_drops} handshake ACK(s)]; "
		"{handshakes_delayed_1s} connection(s) delayed >= 1 s "
		"(max {handshake_extra_max})" },
	[CS_CAUSE_RUN_QUEUE] = { "the serving thread runnable, waiting for a CPU",
		"{thread_comm} (tid {thread_tid}) was runnable but not running for {thread_time} of {tail_requests} "
		"tail request(s); its longest wait for a CPU [+runq_max_mean|at least ]{runq_max}"
		"[+runq_max_mean| (its mean wait: the kernel's longest is older than the attach)]" },
	[CS_CAUSE_EVENT_LOOP] = { "data ready while the event loop was busy elsewhere",
		"[!virtual_threads|on {thread_comm} (tid {thread_tid}): {tail_requests} tail request(s) waited "
		"{thread_time} in all [!after_read_time|with data ready ]while the loop was busy elsewhere"
		"[+after_read_time|, {after_read_time} of it once read: the loop ran the requests it read after "
		"them before it wrote their answers]]"
		CARRIER_WAIT },
	[CS_CAUSE_WORKER_POOL] = { "handed off by a poller, waiting for a free pool thread",
		"[!virtual_threads|{poller_comm} (tid {poller_tid}) polled and handed the ready requests on; tail "
		"requests waited {tail_wait} in all for one of {pool_threads} pool thread(s), busy {busy_share}% of "
		"the time they served[?busy_while_waiting_share|; the threads that took them were busy (serving "
		"others, or polling for the pool) {busy_while_waiting_share}% of those waits[!busy_while_waiting|: not a full pool, its "
		"threads were idle[+paused|, or stopped by the runtime (runtime_pause)][+cpu_waits|, or waiting for a CPU "
		"(run_queue)]]]]"
		CARRIER_WAIT },
	[CS_CAUSE_HANDLER] = { "in the handler: first read to first send",
		"{thread_comm} (tid {thread_tid}) spent {thread_time} handling {tail_requests} tail request(s)" },
	[CS_CAUSE_SEND_DRAIN] = { "draining the response: first send to its last byte out",
		"[+mostly_held_back|{held_back} of {responses} tail responses (median {median_bytes} bytes) sat in the "
		"send queue after the server's last write: Nagle's algorithm waiting for the client's delayed ACK, or "
		"a closed window; set TCP_NODELAY, or write each response in one call]"
		"[!mostly_held_back|tail responses: median {median_bytes} bytes, largest {largest_bytes}; "
		"{send_eagain} send(s) found the buffer full; {held_back} held back in the send queue]" },
	[CS_CAUSE_TLS_HANDSHAKE] = { "the TLS handshake before a connection's first request", "" },
	[CS_CAUSE_PROTOCOL_SETUP] = { "a database backend's start-up before its first query", "" },
	[CS_CAUSE_RUNTIME_PAUSE] = { "stopped with the server's threads at a JVM safepoint",
		"[!named|{pauses} JVM safepoint(s) overlapped the tail's requests: p50 {pause_p50}, max {pause_max} "
		"(what they were is not told: uprobes, not HotSpot's USDT probes)]"
		"[+named|{pauses} JVM pause(s) overlapped the tail's requests: p50 {pause_p50}, max {pause_max}; "
		"{gc_pauses} collection(s)[?gc_operation| ({gc_operation})], {other_pauses} other VM operation(s)"
		"[?other_operation| ({other_operation})]; time to safepoint p50 {time_to_safepoint_p50}, max "
		"{time_to_safepoint_max}]" },
	[CS_CAUSE_UPSTREAM] = { "waiting on an upstream: a server it called",
		"{upstream}: {tail_requests} tail request(s) waited {tail_wait} on it: "
		"[+connection_wait|for a free connection to it {connection_wait} (its connections all busy), ]connect {connect}"
		"[+syn_retransmits| ({syn_retransmits} SYN retransmit(s))], waiting for the first byte "
		"{first_byte_wait}, reading the answer {read}[+loop_waits|; {loop_waits} of them waited for their "
		"loop, blocked on it][+other_upstreams|; {other_upstreams} other upstream(s) in the tail]"
		"[+chained_requests|; where {chained_requests} of them were seen (the upstream is a target too), "
		"their requests waited {chained_first} in {chained_first_cause}[?chained_second_cause| and "
		"{chained_second} in {chained_second_cause}]]" },
};

/* A cause's own advice; NULL: it has none (the conditions advise). */
static const struct {
	const char *text;
} cause_advice[CS_CAUSE_COUNT] = {
	[CS_CAUSE_UPSTREAM] = { "[+mostly_connection_wait|the requests waited for a connection to {upstream}, all of "
		"this server's busy: raise its limit (HAProxy's maxconn on the server line, a pool's size) if the upstream "
		"has room, else ]the upstream answered late, not this server: look at {upstream} itself"
		"[!chained_requests| (connscope attach --port {upstream_port} where it runs)]"
		"[?chained_first_cause|, where the time went to {chained_first_cause} (its listener :{upstream_port} "
		"in this report)][+syn_retransmits|; its listen backlog overflowed: raise it]"
		"[+loop_waits|; and call it off the event loop's thread: a loop blocked in the call holds every "
		"request behind it]" },
};

const char *cs_cause_pool_frame(enum cs_cause cause)
{
	if (cause == CS_CAUSE_WORKER_POOL)
		return "[pool threads busy]";
	if (cause == CS_CAUSE_ACCEPT_QUEUE)
		return "[pool workers busy]"; /* threads or processes that accept for themselves */
	return NULL;
}

static const struct {
	const char *seen;
	const char *advice;
} finding_words[CS_FINDING_KIND_COUNT] = {
	[CS_FINDING_EVENTS_LOST] = {
		"{events_lost} event(s) could not be recorded (ring buffer full): figures are a lower bound",
		"raise --ring-mb, or shorten the run" },
	[CS_FINDING_BACKLOG_FULL] = {
		"backlog full {backlog_full_share}% of the time (limit {backlog_limit}) with {syn_drops} SYN(s)"
		"[+ack_drops| and {ack_drops} handshake ACK(s)] dropped"
		"[+handshakes_delayed_1s|; {handshakes_delayed_1s} local connection(s) waited >= 1 s for SYN "
		"retransmits (max {handshake_extra_max})]"
		"[+handshakes_failed|; {handshakes_failed} local connection(s) never got in: their clients gave up "
		"while still retrying the SYN]",
		"raise the listen backlog (listen(fd, N), capped by net.core.somaxconn[+syncookies_sent|; SYN cookies "
		"were sent too]) and make accepting faster: a full queue drops SYNs, which clients retry after 1 s, "
		"2 s, 3 s" },
	[CS_FINDING_QUEUED_UNSEEN] = {
		"{queued} connection(s) waited in the accept queue through the whole run, {queued_for} and more "
		"each, never accepted while watched ({accepts} accept(s) of others): their requests are in no other "
		"figure here[?pool_threads|; the hand-off pool's {pool_threads} thread(s) were busy "
		"{pool_busy_share}% of the time they served]",
		"the server did not come back to accept() for them: look at what holds its acceptor (a full "
		"pool, a connection limit, a blocked thread), and attach for longer to see their waits end" },
	[CS_FINDING_CONNECTION_LIMIT] = {
		"the server stopped accepting at its connection limit: with {open_connections} connection(s) open "
		"(held there {plateau}) its acceptor {acceptor_comm} (tid {acceptor_tid}) did not call accept() and "
		"was blocked, not busy ([?blocked_share|blocked {blocked_share}%, on a CPU {on_cpu_share}%, ]in "
		"handlers {handler_share}% of its time outside accept()); {wait_share}% of the time connections "
		"queued for it ended right after a connection closed ({waits} waits), freed by {freed_by_idle_close} "
		"idle close(s) by the server, {freed_by_client} by clients, {freed_other} other; accept wait p50 "
		"{accept_wait_p50}, p99 {accept_wait_p99}",
		"raise the server's connection limit (Tomcat maxConnections, nginx worker_connections, "
		"Node server.maxConnections), or free slots sooner: a shorter keep-alive timeout, or "
		"clients that close idle connections" },
	[CS_FINDING_ACCEPT_THREAD_BOTTLENECK] = {
		"the accept thread is the bottleneck: {acceptor_comm} (tid {acceptor_tid}) took {accept_share}% of "
		"{accepts} accepts, was busy outside accept() {busy_share}% of the time, and left "
		"{waiting_per_accept:1} connections waiting per accept (queue non-empty in {queue_nonempty_share}% "
		"of samples); accept wait p50 {accept_wait_p50}, p99 {accept_wait_p99}; it came back to accept() on "
		"its own schedule, not when connections closed (not a connection limit)"
		"[?on_cpu_share|; outside accept() it was on a CPU {on_cpu_share}%, in handlers {handler_share}%, "
		"waiting for a CPU {runq_share}%, sleeping or blocked {blocked_share}%]",
		"accept in more threads (SO_REUSEPORT or EPOLLEXCLUSIVE listeners per worker), "
		"or take the work off the accept thread (it should only accept and hand off)" },
	[CS_FINDING_ACCEPT_QUEUE_WAIT] = {
		"connections wait in the accept queue: p50 {accept_wait_p50}, p99 {accept_wait_p99} (queue "
		"non-empty {queue_nonempty_share}% of the time)"
		"[?workers|; {busy_workers} of {workers} workers that accept and serve their own connections were "
		"busy, serving {busy_share}% of their time away from accept(): something else held them "
		"([?on_cpu_share|on a CPU {on_cpu_share}%, ]waiting for a CPU {runq_share}%, blocked off a CPU in "
		"handlers {blocked_share}%)]",
		"the accepting threads are busy elsewhere: check event-loop blocking and CPU "
		"saturation, or accept in more threads" },
	[CS_FINDING_ACCEPT_POOL_FULL] = {
		"connections waited in the accept queue for a free worker: {busy_workers} of {workers} workers that "
		"accept and serve their own connections were busy, serving {busy_share}% of their time away from "
		"accept()[?queue_nonempty_share|; queue non-empty in {queue_nonempty_share}% of samples]; accept "
		"wait p50 {accept_wait_p50}, p99 {accept_wait_p99}; their time away: [?on_cpu_share|on a CPU "
		"{on_cpu_share}%, ]waiting for a CPU {runq_share}%, blocked off a CPU in handlers {blocked_share}%",
		"see pool_saturation: more workers, or handlers that do not block" },
	[CS_FINDING_HANDOFF_POOL_FULL] = {
		"connections waited in the accept queue for a free pool thread: {acceptor_comm} (tid {acceptor_tid}) "
		"accepts and hands ready connections to {pool_threads} pool thread(s), busy {busy_share}% of the time "
		"they served, and stopped accepting while none was free ([+waits|{wait_share}% of the time "
		"connections queued for it ended right after a close ({waits} waits); ]accept wait p50 {accept_wait_p50}, p99 {accept_wait_p99}): the pool's limit, no connection "
		"limit",
		"see pool_saturation: more pool threads, or handlers that do not block" },
	[CS_FINDING_UNFAIR_ACCEPTS] = {
		"one worker took {worker_share}% of accepts: {worker_comm} (tid {worker_tid}) took {worker_accepts} "
		"of {accepts} across {threads} threads (a fair share is {fair_share}%)",
		"epoll wakes the most recent waiter first (LIFO): use one SO_REUSEPORT listener "
		"per worker to spread connections evenly" },
	[CS_FINDING_THUNDERING_HERD] = {
		"{eagain} accept() calls found the queue empty ({eagain_per_accept:2} per accepted connection): "
		"workers were woken for connections another worker took",
		"register the listener with EPOLLEXCLUSIVE, or give each worker its own "
		"SO_REUSEPORT listener" },
	[CS_FINDING_ACCEPT_NEGLIGIBLE] = {
		"[+unfair|one worker took most accepts[+thundering_herd|; ]][+thundering_herd|accept() calls found "
		"the queue empty]: accept waits are {tail_accept_share:1}% of the tail's time ({accepts} accepts, "
		"{eagain} EAGAIN), no cause of it",
		"nothing to change on the accept side: the tail's time is elsewhere" },
	[CS_FINDING_SYN_COOKIES] = {
		"the kernel sent {syncookies_sent} SYN cookie(s): the SYN queue overflowed, and clients may "
		"believe they are connected while their data is dropped",
		"raise the listen backlog (it also sizes the SYN queue) and net.ipv4.tcp_max_syn_backlog" },
};

/* seen: what the run showed, after the condition's name; detail: a second line, where it has one. */
static const struct {
	const char *summary;
	const char *seen;
	const char *detail;
	const char *advice;
	const char *brief;
} condition_words[CS_CONDITION_COUNT] = {
	[CS_COND_NON_PERSISTENT] = { "few requests per connection, each paying its set-up",
		"{requests_per_connection:2} requests per connection; {setup_share}% of requests paid connection "
		"set-up ({setup_cost} on average, {setup_time_share}% of the requests' time; the median request "
		"takes {median_latency})",
		"set-up per connection: TCP (SYN retries) {setup_tcp}, accept queue {setup_accept}, TLS handshake "
		"{setup_tls}[+setup_protocol|, the protocol's start-up and authentication (a database "
		"backend's) {setup_protocol}]",
		"turn on keep-alive (HTTP/1.1 persistent connections, client connection pools; a database's "
		"clients: a pooler such as pgbouncer or ProxySQL, or the application's own pool); over TLS, "
		"have clients resume TLS sessions (session tickets or a session cache) to shorten each handshake",
		"turn on keep-alive (persistent connections, client pools); TLS session resumption" },
	[CS_COND_IDLE_TIMEOUT] = { "the server closes idle keep-alive connections first",
		"the server closed {server_idle_closes} idle keep-alive connection(s) after ~{inferred_timeout_ms:1} ms "
		"idle; {reconnects} reconnect(s) followed; {keepalive_race_resets} keep-alive race reset(s) (a request "
		"hit a connection the server had just closed)", NULL,
		"make the server's idle timeout longer than the clients' (or have clients close first)",
		"make the server's idle timeout longer than the clients'" },
	[CS_COND_LISTEN_OVERFLOW] = { "the listen backlog overflowed: SYNs dropped and retried",
		"{syn_drops} SYN(s)[+ack_drops| and {ack_drops} handshake ACK(s)] dropped; {delayed_connections} local connection(s) delayed >= 1 s, {failed_connections} "
		"never got in (their clients gave up retrying)", NULL,
		"raise the listen backlog and net.core.somaxconn; accept faster",
		"raise the listen backlog and somaxconn; accept faster" },
	/* Which of its findings holds, with its own advice, is in the diagnosis. */
	[CS_COND_ACCEPT_CONTENTION] = { "accepting lags, is unfair, or wakes a thundering herd",
		"[+acceptor_bottleneck|accepting lags; ][+unfair|unfair spread; ][+thundering_herd|thundering herd; ]"
		"accept wait p99 {accept_wait_p99}, busiest worker {busiest_worker_share}% of accepts, {eagain} EAGAIN",
		NULL, "see the diagnosis below",
		"accept in more threads, or hand work off the acceptor" },
	[CS_COND_CONNECTION_LIMIT] = { "the server stopped accepting at its connection limit",
		":{port} stopped accepting at {open_connections} open connection(s) (held there {plateau_s:1} s); its "
		"acceptor waited for closes, blocked, not busy; accept wait p99 {accept_wait_p99}; slots freed by "
		"{freed_by_idle_close} idle close(s), {freed_by_client} client close(s)", NULL,
		"raise the connection limit (Tomcat maxConnections, nginx worker_connections, Node "
		"maxConnections) or free slots sooner (shorter keep-alive timeout)",
		"connection limit reached: raise it, or close idle sooner" },
	[CS_COND_CPU_SATURATION] = { "the server's threads waited for a CPU",
		"server threads waited {runq_total} for a CPU; most {top_comm} (tid {top_tid}): {top_runq} "
		"({top_runq_share:1}% of the run); longest wait [+runq_max_mean|at least ]{runq_max}"
		"[+runq_max_mean| (a mean wait: the kernel's longest is older than the attach)]",
		NULL,
		"reduce parallelism (fewer threads than cores), or move other work off these CPUs",
		"fewer threads than cores, or move other work elsewhere" },
	[CS_COND_POOL_SATURATION] = { "work waited for a busy pool of threads or workers",
		"[!accept_pool|(handoff pool) [!accept_held|ready requests waited for a pool thread ({tail_share}% of "
		"the tail's time, {tail_wait_mean} per tail request): {poller_comm} (tid {poller_tid}) polls and hands "
		"them to {pool_threads} pool thread(s)" POOL_BUSY_WHILE_WAITING " (busy {busy_share}% of the time they "
		"served)]"
		"[+accept_held|connections and requests waited for a pool thread ({tail_share}% of the tail's time, "
		"{tail_wait_mean} per tail request; accept wait p99 {accept_wait_p99}): {poller_comm} (tid "
		"{poller_tid}) accepts on :{port}, polls and hands them to {pool_threads} pool thread(s) (busy "
		"{busy_share}% of the time they served), and stopped accepting while "
		"none was free"
		"[+dropped_closes|; it closed {dropped_closes} keep-alive connection(s) with a request waiting "
		"({dropped_wait_mean} on average) rather than wait for one: not idle, no timeout]"
		"[+idle_closes|; it closed {idle_closes} idle keep-alive connection(s) within a request's serving "
		"time (idle at most {idle_gap_max}, handlers p99 {handler_p99}): a worker freeing, no timeout]]]"
		"[+accept_pool|(accept pool) connections waited in :{port}'s accept queue for a free worker "
		"({tail_share}% of the tail's time, {tail_wait_mean} per tail request; accept wait p99 {wait_p99}): "
		"{busy_threads} of {pool_threads} workers that accept and serve were busy, serving {busy_share}% of "
		"their time away from accept()[?queue_nonempty_share| (queue non-empty in {queue_nonempty_share}% of "
		"samples)]; that time: [?on_cpu_share|on a CPU {on_cpu_share}%, ]waiting for a CPU {runq_share}%, "
		"blocked in handlers {blocked_share}%]", NULL,
		"size the pool for the load (Tomcat maxThreads, Jetty QueuedThreadPool, Netty's "
		"executor group), or stop handlers blocking (virtual threads: pinned carriers)",
		"a bigger pool (maxThreads, executor group), or no blocking" },
	[CS_COND_RUNTIME_PAUSES] = { "a JVM's safepoints stopped the server's threads",
		"the JVM stopped the server's threads {pauses} time(s), {total} in all ({stopped_share:1}% of the "
		"run; p50 {pause_p50}, max {pause_max}), {tail_share}% of the tail's time; {tail_pauses} pause(s) "
		"overlapped tail requests[!named|; what they were is not told (uprobes)][+named|; {gc_pauses} "
		"collection(s)[?gc_operation| ({gc_operation})], {other_pauses} other VM operation(s)"
		"[?other_operation| ({other_operation} {other_operation_pauses})]; longest time to safepoint "
		"{time_to_safepoint_max}]", NULL,
		"size the heap for the live set and pick a collector for short pauses (-Xmx, G1's "
		"-XX:MaxGCPauseMillis, ZGC), allocate less per request; for pauses that are no "
		"collection, -Xlog:safepoint names the VM operations (thread dumps, deoptimisation, biased locking)",
		"JVM pauses: heap size and collector, allocation rate; -Xlog:safepoint" },
	[CS_COND_CLIENT_BOUND] = { "a local client's own delay is in the latency it measures",
		"{client} (pid {pid}, {threads} thread(s), {connections} connection(s)) read its answers "
		"{read_delay_p99} late at p99 (waiting for a CPU {runq_p99} of it): it measured p99 "
		"{measured_p99} where the server's own p99 was {server_p99}; its busiest thread was on a CPU "
		"{busy_share}% of its time and waited for one {runq_share}%", NULL,
		"the client, not the server, makes that tail: give the load generator more threads or cores, "
		"pin it and the server on different CPUs (or run it on another machine), and measure latency "
		"with a constant-rate client (wrk2) rather than a closed loop",
		"the client is the bottleneck: more client threads/cores, pin apart, or another machine" },
};

/* An accept pool's advice, per server: the settings that size it, or an async worker. */
static const struct {
	const char *advice;
	const char *brief;
} pool_server_words[CS_POOL_SERVER_COUNT] = {
	[CS_POOL_SERVER_OTHER] = {
		"more workers (processes or threads that accept), or handlers that do not block",
		"more workers, or handlers that do not block" },
	[CS_POOL_SERVER_GUNICORN] = {
		"raise gunicorn's --workers (or --threads), or use an async worker class "
		"(-k gevent, -k uvicorn.workers.UvicornWorker) for handlers that wait",
		"gunicorn: more --workers/--threads, or an async worker class" },
	[CS_POOL_SERVER_APACHE] = {
		"raise Apache's MaxRequestWorkers (and ServerLimit), or move to the event MPM "
		"with handlers that do not block",
		"Apache: raise MaxRequestWorkers, or the event MPM" },
	[CS_POOL_SERVER_PHP_FPM] = {
		"raise PHP-FPM's pm.max_children, or make the scripts stop blocking",
		"PHP-FPM: raise pm.max_children" },
	[CS_POOL_SERVER_UWSGI] = {
		"raise uWSGI's processes (or threads), or use its async mode for handlers that wait",
		"uWSGI: more processes/threads" },
};

/*
 * A hand-off pool's advice, per server whose words differ from the
 * condition's own (Tomcat, Jetty, Netty): NULL keeps those.
 */
static const struct {
	const char *advice;
	const char *brief;
} handoff_server_words[CS_POOL_SERVER_COUNT] = {
	[CS_POOL_SERVER_APACHE] = {
		"raise Apache's ThreadsPerChild (each child's worker threads) and MaxRequestWorkers (with "
		"ServerLimit for more children), or make the handlers stop blocking: with no worker free, the "
		"event MPM's listener stops accepting and closes its keep-alive connections",
		"Apache: raise ThreadsPerChild and MaxRequestWorkers" },
};

const char *cs_cause_summary(enum cs_cause cause)
{
	return (unsigned)cause < CS_CAUSE_COUNT ? cause_words[cause].summary : NULL;
}

const char *cs_cause_evidence_template(enum cs_cause cause)
{
	return (unsigned)cause < CS_CAUSE_COUNT ? cause_words[cause].evidence : NULL;
}

size_t cs_cause_evidence(char *out, size_t len, const struct cs_tail_cause *cause)
{
	const char *template = cause->evidence.count ? cs_cause_evidence_template(cause->cause) : NULL;
	return cs_template_expand(out, len, template, &cause->evidence);
}

const char *cs_cause_advice_template(enum cs_cause cause)
{
	return (unsigned)cause < CS_CAUSE_COUNT ? cause_advice[cause].text : NULL;
}

size_t cs_cause_advice(char *out, size_t len, const struct cs_tail_cause *cause)
{
	const char *template = cause->evidence.count ? cs_cause_advice_template(cause->cause) : NULL;
	return cs_template_expand(out, len, template, &cause->evidence);
}

const char *cs_finding_template(enum cs_finding_kind kind)
{
	return (unsigned)kind < CS_FINDING_KIND_COUNT ? finding_words[kind].seen : NULL;
}

const char *cs_finding_advice_template(enum cs_finding_kind kind)
{
	return (unsigned)kind < CS_FINDING_KIND_COUNT ? finding_words[kind].advice : NULL;
}

size_t cs_finding_text(char *out, size_t len, const struct cs_finding *finding)
{
	return cs_template_expand(out, len, cs_finding_template(finding->kind), &finding->figures);
}

size_t cs_finding_advice(char *out, size_t len, const struct cs_finding *finding)
{
	return cs_template_expand(out, len, cs_finding_advice_template(finding->kind), &finding->figures);
}

const char *cs_condition_summary(enum cs_condition condition)
{
	return (unsigned)condition < CS_CONDITION_COUNT ? condition_words[condition].summary : NULL;
}

const char *cs_condition_template(enum cs_condition condition)
{
	return (unsigned)condition < CS_CONDITION_COUNT ? condition_words[condition].seen : NULL;
}

size_t cs_condition_text(char *out, size_t len, const struct cs_conditions *conditions, enum cs_condition condition)
{
	if ((unsigned)condition >= CS_CONDITION_COUNT)
		return cs_template_expand(out, len, NULL, NULL);
	return cs_template_expand(out, len, condition_words[condition].seen, &conditions->seen[condition]);
}

size_t cs_condition_detail(char *out, size_t len, const struct cs_conditions *conditions, enum cs_condition condition)
{
	if ((unsigned)condition >= CS_CONDITION_COUNT)
		return cs_template_expand(out, len, NULL, NULL);
	return cs_template_expand(out, len, condition_words[condition].detail, &conditions->seen[condition]);
}

const char *cs_condition_advice(enum cs_condition condition)
{
	return (unsigned)condition < CS_CONDITION_COUNT ? condition_words[condition].advice : NULL;
}

const char *cs_condition_brief(enum cs_condition condition)
{
	return (unsigned)condition < CS_CONDITION_COUNT ? condition_words[condition].brief : NULL;
}

/* A hand-off pool keeps the condition's own advice (Tomcat, Jetty, Netty) unless its server has its own. */
const char *cs_pool_advice(enum cs_pool_kind kind, enum cs_pool_server server)
{
	if ((unsigned)server >= CS_POOL_SERVER_COUNT)
		return cs_condition_advice(CS_COND_POOL_SATURATION);
	if (kind != CS_POOL_ACCEPT)
		return handoff_server_words[server].advice ? handoff_server_words[server].advice
							   : cs_condition_advice(CS_COND_POOL_SATURATION);
	return pool_server_words[server].advice;
}

const char *cs_pool_brief(enum cs_pool_kind kind, enum cs_pool_server server)
{
	if ((unsigned)server >= CS_POOL_SERVER_COUNT)
		return cs_condition_brief(CS_COND_POOL_SATURATION);
	if (kind != CS_POOL_ACCEPT)
		return handoff_server_words[server].brief ? handoff_server_words[server].brief
							  : cs_condition_brief(CS_COND_POOL_SATURATION);
	return pool_server_words[server].brief;
}

void cs_words_print_kinds(FILE *out)
{
	fputs("Causes of the tail's time (report: where the tail goes; JSON tail.causes):\n", out);
	for (int c = 0; c < CS_CAUSE_COUNT; c++)
		fprintf(out, "  %-18s %s\n", cs_cause_names[c], cs_cause_summary((enum cs_cause)c));
	fputs("Conditions behind the tail (report: conditions; JSON conditions):\n", out);
	for (int c = 0; c < CS_CONDITION_COUNT; c++)
		fprintf(out, "  %-18s %s\n", cs_condition_name((enum cs_condition)c),
			cs_condition_summary((enum cs_condition)c));
}
