// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope top: a full-screen view refreshed every second: latency and a
 * sparkline of each second's p99 over the last minute, the listeners'
 * accepts, backlog and drops, where the tail's time goes, the flagged
 * conditions with advice, and the server threads.
 *
 * Its data: connscoped's STREAM when a daemon answers on the control
 * socket; otherwise, given --port or --pid, the engine in this process
 * (cli/top_source.c). Either way a frame is the snapshot JSON
 * (daemon/render/live.h) read into a model and laid out (cli/top_view.c); this
 * file only chooses the source and moves the frames.
 */
#include <curses.h>
#include <errno.h>
#include <locale.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "ctl_client.h"
#include "target_args.h"
#include "top_source.h"
#include "top_view.h"
#include "units.h"

static const char usage[] =
	"Usage: connscope top [--socket PATH] [(--port PORT | --pid PID)...] [--once] [--tail P]\n"
	"       [--no-bpf-stats]\n"
	"\n"
	"A live full-screen view, refreshed every second: latency over the last minute\n"
	"with each second's p99, the listeners (accepts/s, backlog, drops, accept wait),\n"
	"where the tail's time goes, the conditions behind it with advice, and the\n"
	"server threads (requests/s, accepts, run-queue p99, busy share).\n"
	"\n"
	"Data comes from the connscope daemon when one answers on the socket; otherwise,\n"
	"with --port or --pid, top attaches the probes itself (as root) and says so.\n"
	"\n"
	"  -s, --socket PATH  the daemon's control socket (default " CS_CTL_DEFAULT_SOCKET ")\n"
	"  -P, --port PORT    without a daemon: watch every process listening on PORT\n"
	"  -p, --pid PID      without a daemon: watch process PID\n"
	"  -N, --netns NS     --port's listeners are in network namespace NS ('ip netns'\n"
	"                     name, PID or /proc/PID/ns/net)\n"
	"  -1, --once         print one frame as plain text and exit (for scripts)\n"
	"  -t, --tail P       the tail percentile to start with (50-99.999, default " CS_STR(CS_TAIL_DEFAULT) ")\n"
	"      --no-bpf-stats without a daemon: do not turn on the kernel's BPF run-time\n"
	"                     statistics (the cost line's BPF time is then not measured)\n"
	"  -h, --help         this help\n"
	"\n"
	"Keys: q quit, p pause, s cycle the threads' sort, t change the tail percentile\n"
	"(p99, p99.9, p90), ? help. Colours only on a terminal, never with NO_COLOR set.\n";

/* One top's run: its options, its source, its screen. */
struct top {
	const char *path;          /* the daemon's control socket */
	bool once;
	double tail;               /* at the start; the view's changes with t */
	struct cs_ctl_conn conn;
	bool from_daemon;
	struct local_source local; /* without a daemon */
	struct top_view view;
	uint64_t next_frame_ns, next_reconnect_ns;
	bool failed_shown;         /* the session's end is on the status line */
};

/* Its options, in the order a usage error lists them (cli.c defines each). */
static const char top_options[] = "socket port pid netns once tail no-bpf-stats help";

static int take(struct cs_cli *cli, int opt, const char *arg, void *ctx)
{
	struct top *top = ctx;
	if (cs_target_option(opt))
		return cs_target_take(cli, opt, arg, &top->local.opts);
	if (opt == 's')
		top->path = arg;
	else if (opt == '1')
		top->once = true;
	else if (opt == CS_OPT_NO_BPF_STATS)
		top->local.opts.probe.no_bpf_stats = true;
	else if (!cs_cli_real(cli, &cs_number_tail, arg, &top->tail))
		return CS_EXIT_USAGE;
	return CS_CLI_GO_ON;
}

static void view_request(double tail, uint8_t request[CS_CTL_VIEW_LEN])
{
	struct cs_ctl_view_request view = { .format = CS_CTL_FORMAT_JSON,
					    .tail_milli_pct = (uint32_t)(tail * 1000.0 + 0.5) };
	cs_ctl_view_encode(request, &view);
}

/* Ask the daemon for a frame a second, at the view's tail. */
static int daemon_stream(struct top *top, char *errmsg, size_t errlen)
{
	uint8_t request[CS_CTL_VIEW_LEN];
	view_request(top->view.tail, request);
	int err = cs_ctl_send(&top->conn, CS_CTL_STREAM, request, sizeof(request));
	if (err)
		snprintf(errmsg, errlen, "cannot ask the daemon: %s", strerror(-err));
	return err;
}

static void set_status(struct top *top, const char *text)
{
	snprintf(top->view.ui.status, sizeof(top->view.ui.status), "%s", text);
}

/* The daemon if one answers, else (given targets) the probes here: 0, or 1 after saying why. */
static int open_source(struct top *top)
{
	char errmsg[CS_ERRMSG_LEN];
	bool have_targets = top->local.opts.port_count || top->local.opts.pid_count;
	int err = cs_ctl_connect(&top->conn, top->path, errmsg, sizeof(errmsg));
	top->from_daemon = err == 0;
	if (err && (!have_targets || (err != -ENOENT && err != -ECONNREFUSED))) {
		fprintf(stderr, "connscope: %s%s\n", errmsg,
			have_targets ? "" : " (or run 'connscope top --port PORT' to attach here)");
		return 1;
	}
	if (top_view_init(&top->view, top->tail)) {
		cs_ctl_close(&top->conn);
		return 1;
	}
	if (top->from_daemon) {
		snprintf(top->view.ui.status, sizeof(top->view.ui.status), "daemon %s", top->path);
		return 0;
	}
	if (local_start(&top->local)) {
		fprintf(stderr, "connscope: %s\n", top->local.errmsg);
		top_view_free(&top->view);
		return 1;
	}
	snprintf(top->view.ui.status, sizeof(top->view.ui.status),
		 "in-process: no daemon on %s, probes attached by this top", top->path);
	return 0;
}

/* --once from the daemon: one SNAPSHOT as JSON. */
static int daemon_once(struct top *top)
{
	char errmsg[CS_ERRMSG_LEN];
	uint8_t request[CS_CTL_VIEW_LEN];
	view_request(top->tail, request);
	struct cs_ctl_header hdr = { 0 };
	const uint8_t *reply;
	int rc = 0;
	if (cs_ctl_call(&top->conn, CS_CTL_SNAPSHOT, request, sizeof(request), &hdr, &reply, errmsg,
			sizeof(errmsg)) ||
	    !top_view_take(&top->view, (const char *)reply, hdr.length)) {
		fprintf(stderr, "connscope: %s\n",
			hdr.type == (CS_CTL_SNAPSHOT | CS_CTL_RESPONSE) ? top->view.ui.status : errmsg);
		rc = 1;
	} else {
		top_view_print_once(&top->view);
	}
	cs_ctl_close(&top->conn);
	return rc;
}

/* --once in-process: attach, let two seconds pass, one frame. */
static int local_once(struct top *top)
{
	struct local_source *local = &top->local;
	int rc = 0;
	local_settle(local);
	/* The seconds are ticked already: a tick now would close a short one. */
	json_t *snapshot = local_frame(local, top->tail, false);
	if (local_done(local) && local->rc) {
		fprintf(stderr, "connscope: %s\n", local->errmsg);
		rc = 1;
	} else if (!top_view_take_value(&top->view, snapshot)) {
		fprintf(stderr, "connscope: %s\n", top->view.ui.status);
		rc = 1;
	} else {
		top_view_print_once(&top->view);
	}
	json_decref(snapshot);
	local_stop(local);
	return rc;
}

/* The keys typed since the last turn: whether to redraw; *tail_changed by t. */
static bool read_keys(struct top *top, bool *tail_changed)
{
	bool redraw = false;
	int key;
	while ((key = getch()) != ERR) {
		if (key != KEY_RESIZE && !top_view_key(&top->view, key, tail_changed))
			cs_cli_stop = 1;
		redraw = true;
	}
	return redraw;
}

/* The daemon's frames since the last turn (reconnecting once a second when it went away). */
static bool daemon_update(struct top *top, uint64_t now, bool tail_changed)
{
	char errmsg[CS_ERRMSG_LEN];
	bool redraw = false;
	if (top->conn.fd < 0 && now >= top->next_reconnect_ns) {
		top->next_reconnect_ns = now + NS_PER_SEC;
		if (cs_ctl_connect(&top->conn, top->path, errmsg, sizeof(errmsg)) == 0 &&
		    daemon_stream(top, errmsg, sizeof(errmsg)) == 0)
			snprintf(top->view.ui.status, sizeof(top->view.ui.status), "daemon %s", top->path);
		else
			cs_ctl_close(&top->conn);
	} else if (top->conn.fd >= 0 && tail_changed) {
		daemon_stream(top, errmsg, sizeof(errmsg));
	}
	/* Take every frame that arrived; show the latest. */
	struct cs_ctl_header hdr;
	const uint8_t *payload;
	int got;
	while (top->conn.fd >= 0 &&
	       (got = cs_ctl_recv(&top->conn, 0, &hdr, &payload, errmsg, sizeof(errmsg))) != 0) {
		redraw = true;
		if (got < 0) {
			snprintf(top->view.ui.status, sizeof(top->view.ui.status), "daemon: %s; retrying", errmsg);
			cs_ctl_close(&top->conn);
			break;
		}
		if (hdr.type == (CS_CTL_STREAM | CS_CTL_RESPONSE) &&
		    top_view_take(&top->view, (const char *)payload, hdr.length))
			snprintf(top->view.ui.status, sizeof(top->view.ui.status), "daemon %s", top->path);
	}
	return redraw;
}

/*
 * The in-process frame, once a second (or at once for a new tail). Returns
 * whether to redraw; -1 when the session never attached (no such target,
 * no privilege): top ends with its message.
 */
static int local_update(struct top *top, uint64_t now, bool tail_changed)
{
	struct local_source *local = &top->local;
	if (now < top->next_frame_ns && !tail_changed)
		return 0;
	bool tick = now >= top->next_frame_ns;
	if (tick)
		top->next_frame_ns += NS_PER_SEC;
	if (top->next_frame_ns < now)
		top->next_frame_ns = now + NS_PER_SEC;
	if (!local_done(local)) {
		json_t *snapshot = local_frame(local, top->view.tail, tick);
		top_view_take_value(&top->view, snapshot);
		json_decref(snapshot);
	} else if (local->rc && local->meta.duration_s == 0) {
		return -1;
	} else if (!top->failed_shown) {
		set_status(top, local->rc ? local->errmsg : "the target exited; the figures are final");
		top->failed_shown = true;
	}
	return 1;
}

/* The full screen until q or a signal: 0, or 1 when the in-process session never attached. */
static int run_screen(struct top *top)
{
	char errmsg[CS_ERRMSG_LEN];
	int rc = 0;
	top_view_start(&top->view);
	if (top->from_daemon && daemon_stream(top, errmsg, sizeof(errmsg)))
		set_status(top, errmsg);
	top_view_draw(&top->view);
	top->next_frame_ns = top_now_ns() + NS_PER_SEC;
	while (!cs_cli_stop) {
		struct pollfd pfds[2] = { { .fd = STDIN_FILENO, .events = POLLIN },
					  { .fd = top->conn.fd, .events = POLLIN } };
		poll(pfds, top->from_daemon && top->conn.fd >= 0 ? 2 : 1, 100);
		bool tail_changed = false;
		bool redraw = read_keys(top, &tail_changed);
		if (cs_cli_stop)
			break;
		uint64_t now = top_now_ns();
		int update = top->from_daemon ? daemon_update(top, now, tail_changed)
					      : local_update(top, now, tail_changed);
		if (update < 0) {
			rc = 1;
			break;
		}
		if (redraw || update)
			top_view_draw(&top->view);
	}
	top_view_end();
	if (rc)
		fprintf(stderr, "connscope: %s\n", top->local.errmsg);
	if (top->from_daemon)
		cs_ctl_close(&top->conn);
	else
		local_stop(&top->local);
	return rc;
}

static int run_top(struct top *top)
{
	setlocale(LC_ALL, "");
	cs_cli_catch_stop();
	signal(SIGPIPE, SIG_IGN);
	if (!top->once && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) {
		fprintf(stderr, "connscope: top needs a terminal (use 'connscope top --once' in scripts)\n");
		return 1;
	}
	if (open_source(top))
		return 1;
	int rc;
	if (top->once)
		rc = top->from_daemon ? daemon_once(top) : local_once(top);
	else
		rc = run_screen(top);
	top_view_free(&top->view);
	return rc;
}

static int run(struct cs_cli *cli, int argc, char **argv)
{
	/* On the heap: the in-process source holds the last minute's window. */
	struct top *top = calloc(1, sizeof(*top));
	if (!top) {
		fprintf(stderr, "connscope: out of memory\n");
		return 1;
	}
	top->path = CS_CTL_DEFAULT_SOCKET;
	top->tail = CS_TAIL_DEFAULT;
	top->conn.fd = -1;
	cs_cli_session_defaults(&top->local.opts);
	int rc = cs_cli_parse(cli, argc, argv, top_options, take, top);
	if (rc == CS_CLI_GO_ON)
		rc = run_top(top);
	free(top);
	return rc;
}

/* Its entry in connscope.c's command table. */
const struct cs_cmd cs_cmd_top = {
	"top", "live full-screen view (from the daemon, or attached in-process)",
	run, usage, 0, NULL, false,
};
