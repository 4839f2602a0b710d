// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope top: a full-screen view refreshed every second: latency and a
 * sparkline of each second's p99 over the last minute, the listeners'
 * accepts, backlog and drops, where the tail's time goes, the flagged
 * conditions with advice, and the server threads.
 *
 * Its data: connscoped's STREAM when a daemon answers on the control
 * socket; otherwise, given --port or --pid, the engine in this process
 * (the probes attached by a session in a thread, as `attach` does). Either
 * way a frame is the snapshot JSON (daemon/render/live.h) read into a model
 * (daemon/render/top_model.c) and laid out by daemon/render/top_render.c; this file only
 * moves bytes, keys and cells.
 */
#include <curses.h>
#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "target_args.h"
#include "ctl_client.h"
#include "ctl_commands.h"
#include "live.h"
#include "session.h"
#include "top_model.h"
#include "top_render.h"
#include "units.h"
#include "window.h"

static volatile sig_atomic_t top_stop;

static void on_signal(int sig)
{
	(void)sig;
	top_stop = 1;
}

static void help(FILE *out)
{
	fprintf(out,
		"Usage: connscope top [--socket PATH] [(--port PORT | --pid PID)...] [--once] [--tail P]\n"
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
		"  -t, --tail P       the tail percentile to start with (50-99.999, default 99)\n"
		"  -h, --help         this help\n"
		"\n"
		"Keys: q quit, p pause, s cycle the threads' sort, t change the tail percentile\n"
		"(p99, p99.9, p90), ? help. Colours only on a terminal, never with NO_COLOR set.\n");
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* ---- the in-process source: a session in a thread --------------------------- */

struct local_source {
	struct cs_session_options opts;
	struct cs_engine *engine;
	pthread_mutex_t lock;
	struct cs_report_meta meta;        /* kept current by the session */
	struct cs_window window;
	pthread_t thread;
	volatile int done;                 /* the session returned */
	int rc;
	char errmsg[CS_ERRMSG_LEN];
	struct cs_session_result result;
	char target[64];
	uint64_t start_ns;
};

static void *local_run(void *arg)
{
	struct local_source *src = arg;
	src->rc = cs_session_run(&src->opts, src->engine, &src->result, src->errmsg, sizeof(src->errmsg));
	__atomic_store_n(&src->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int local_start(struct local_source *src)
{
	src->engine = cs_engine_new();
	if (!src->engine || cs_window_init(&src->window)) {
		snprintf(src->errmsg, sizeof(src->errmsg), "out of memory");
		return -1;
	}
	pthread_mutex_init(&src->lock, NULL);
	src->opts.engine_lock = &src->lock;
	src->opts.live_meta = &src->meta;
	src->opts.stop = &top_stop;
	src->opts.quiet = true;
	src->start_ns = now_ns();
	cs_window_tick(&src->window, src->engine, src->start_ns);
	if (pthread_create(&src->thread, NULL, local_run, src)) {
		snprintf(src->errmsg, sizeof(src->errmsg), "cannot start the session thread");
		return -1;
	}
	return 0;
}

static void local_stop(struct local_source *src)
{
	top_stop = 1;
	pthread_join(src->thread, NULL);
	cs_window_free(&src->window);
	cs_engine_free(src->engine);
}

/*
 * Render the snapshot JSON, after ticking the window when a second has
 * ended (tick: the caller's once-a-second beat). Returns malloc'd text or NULL.
 */
static char *local_frame(struct local_source *src, double tail, bool tick, size_t *len)
{
	char *text = NULL;
	FILE *out = open_memstream(&text, len);
	if (!out)
		return NULL;
	uint64_t now = now_ns();
	pthread_mutex_lock(&src->lock);
	if (tick)
		cs_window_tick(&src->window, src->engine, now);
	struct cs_report_meta meta = src->meta;
	meta.target = src->target;
	meta.duration_s = (double)(now - src->start_ns) / 1e9;
	meta.tail_percentile = tail;
	struct cs_live_info info = { .source = "in-process", .uptime_s = meta.duration_s,
				     .since_reset_s = meta.duration_s };
	cs_snapshot_json(out, src->engine, &meta, &src->window, &info);
	pthread_mutex_unlock(&src->lock);
	if (fclose(out)) {
		free(text);
		return NULL;
	}
	return text;
}

/* ---- the daemon source -------------------------------------------------------- */

static int daemon_stream(struct cs_ctl_conn *conn, double tail, char *errmsg, size_t errlen)
{
	struct cs_ctl_view_request view = { .format = CS_CTL_FORMAT_JSON,
					    .tail_milli_pct = (uint32_t)(tail * 1000.0 + 0.5) };
	uint8_t request[CS_CTL_VIEW_LEN];
	cs_ctl_view_encode(request, &view);
	int err = cs_ctl_send(conn, CS_CTL_STREAM, request, sizeof(request));
	if (err)
		snprintf(errmsg, errlen, "cannot ask the daemon: %s", strerror(-err));
	return err;
}

/* ---- drawing ------------------------------------------------------------------- */

struct view {
	struct cs_top_model *model;
	struct cs_top_ui ui;
	struct cs_top_screen screen;
	bool color;
	double tail;
};

static const double tail_cycle[] = { 99.0, 99.9, 90.0 };

static int attr_of(uint8_t attr, bool color)
{
	switch (attr) {
	case CS_TOP_TITLE:
		return A_REVERSE;
	case CS_TOP_HEADER:
		return A_BOLD;
	case CS_TOP_GOOD:
		return color ? COLOR_PAIR(1) : A_NORMAL;
	case CS_TOP_WARN:
		return color ? COLOR_PAIR(2) | A_BOLD : A_BOLD;
	case CS_TOP_BAD:
		return color ? COLOR_PAIR(3) | A_BOLD : A_BOLD;
	case CS_TOP_BAR:
		return color ? COLOR_PAIR(4) : A_NORMAL;
	case CS_TOP_DIM:
		return A_DIM;
	default:
		return A_NORMAL;
	}
}

static void draw(struct view *v)
{
	int rows = LINES, cols = COLS;
	if (v->screen.rows != rows || v->screen.cols != cols) {
		cs_top_screen_free(&v->screen);
		if (cs_top_screen_init(&v->screen, rows, cols))
			return;
	}
	cs_top_render(&v->screen, v->model, &v->ui);
	erase();
	for (int r = 0; r < v->screen.rows && r < rows; r++) {
		for (int c = 0; c < v->screen.cols && c < cols; c++) {
			const struct cs_top_cell *cell = &v->screen.cells[(size_t)r * (size_t)v->screen.cols + (size_t)c];
			/* The bottom-right cell would scroll the screen: leave it. */
			if (r == rows - 1 && c == cols - 1)
				break;
			attrset(attr_of(cell->attr, v->color));
			mvaddnstr(r, c, cell->glyph, cell->len);
		}
	}
	attrset(A_NORMAL);
	refresh();
}

/* A key: true to go on, false to quit. */
static bool on_key(struct view *v, int key, bool *tail_changed)
{
	if (key == 'q' || key == 'Q')
		return false;
	if (v->ui.help) {
		v->ui.help = false; /* any key closes the help */
		return true;
	}
	switch (key) {
	case 'p':
	case 'P':
	case ' ':
		v->ui.paused = !v->ui.paused;
		break;
	case 's':
	case 'S':
		v->ui.sort = (enum cs_top_sort)((v->ui.sort + 1) % CS_TOP_SORT_COUNT);
		break;
	case 't':
	case 'T': {
		size_t next = 0;
		for (size_t i = 0; i < sizeof(tail_cycle) / sizeof(tail_cycle[0]); i++)
			if (tail_cycle[i] == v->tail)
				next = (i + 1) % (sizeof(tail_cycle) / sizeof(tail_cycle[0]));
		v->tail = tail_cycle[next];
		v->model->tail_percentile = v->tail;
		*tail_changed = true;
		break;
	}
	case '?':
	case 'h':
		v->ui.help = true;
		break;
	default:
		break;
	}
	return true;
}

static bool want_color(void)
{
	return isatty(STDOUT_FILENO) && getenv("NO_COLOR") == NULL;
}

static bool utf8_locale(void)
{
	const char *codeset = nl_langinfo(CODESET);
	return codeset && !strcmp(codeset, "UTF-8");
}

/* One frame as text (--once). */
static void print_once(struct view *v)
{
	if (cs_top_screen_init(&v->screen, 200, 80))
		return;
	v->ui.once = true;
	cs_top_render(&v->screen, v->model, &v->ui);
	cs_top_screen_print(&v->screen, stdout, want_color());
	cs_top_screen_free(&v->screen);
}

/* Read one frame's JSON into the model; false (status says why) when it is unreadable. */
static bool take_frame(struct view *v, const char *json, size_t len)
{
	if (v->ui.paused)
		return true;
	int err = cs_top_model_from_json(v->model, json, len);
	if (err) {
		snprintf(v->ui.status, sizeof(v->ui.status), "unreadable frame (%s)", strerror(-err));
		return false;
	}
	return true;
}

int cmd_top(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "port", required_argument, NULL, 'P' },
		{ "pid", required_argument, NULL, 'p' },
		{ "netns", required_argument, NULL, 'N' },
		{ "once", no_argument, NULL, '1' },
		{ "tail", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static struct local_source local;
	const char *path = CS_CTL_DEFAULT_SOCKET;
	bool once = false;
	double tail = 99.0;
	int c;
	memset(&local, 0, sizeof(local));
	cs_session_defaults(&local.opts, NULL);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":s:P:p:N:1t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			path = optarg;
			break;
		case 'P':
		case 'p':
		case 'N': {
			char why[320];
			if (cs_target_arg(c, optarg, &local.opts, why, sizeof(why)) == CS_TARGET_ARG_BAD)
				return cs_cli_usage("top", "%s", why);
			break;
		}
		case '1':
			once = true;
			break;
		case 't':
			if (!parse_double(optarg, 50.0, 99.999, &tail))
				return cs_cli_usage("top", "--tail expects a percentile from 50 to 99.999, not '%s'", optarg);
			break;
		case 'h':
			help(stdout);
			return 0;
		case ':':
			return cs_cli_usage("top", "option '%s' needs a value", argv[optind - 1]);
		default:
			return cs_cli_usage("top", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cs_cli_usage("top", "unexpected argument '%s'", argv[optind]);
	setlocale(LC_ALL, "");
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (!once && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO))) {
		fprintf(stderr, "connscope: top needs a terminal (use 'connscope top --once' in scripts)\n");
		return 1;
	}

	/* 1. the source: the daemon if one answers, else the probes here */
	char errmsg[CS_ERRMSG_LEN];
	struct cs_ctl_conn conn = { .fd = -1 };
	bool have_targets = local.opts.port_count || local.opts.pid_count;
	int err = cs_ctl_connect(&conn, path, errmsg, sizeof(errmsg));
	bool from_daemon = err == 0;
	if (err && (!have_targets || (err != -ENOENT && err != -ECONNREFUSED))) {
		fprintf(stderr, "connscope: %s%s\n", errmsg,
			have_targets ? "" : " (or run 'connscope top --port PORT' to attach here)");
		return 1;
	}
	struct view v = { .tail = tail };
	v.model = calloc(1, sizeof(*v.model));
	if (!v.model) {
		fprintf(stderr, "connscope: out of memory\n");
		cs_ctl_close(&conn);
		return 1;
	}
	v.model->tail_percentile = tail;
	v.ui.unicode = utf8_locale();
	if (from_daemon) {
		snprintf(v.ui.status, sizeof(v.ui.status), "daemon %s", path);
	} else {
		if (local.opts.port_count)
			snprintf(local.target, sizeof(local.target), "port %u", local.opts.ports[0]);
		else
			snprintf(local.target, sizeof(local.target), "pid %d", (int)local.opts.pids[0]);
		if (local_start(&local)) {
			fprintf(stderr, "connscope: %s\n", local.errmsg);
			free(v.model);
			return 1;
		}
		snprintf(v.ui.status, sizeof(v.ui.status), "in-process: no daemon on %s, probes attached by this top",
			 path);
	}

	/* 2. --once: one frame, as text */
	int rc = 0;
	if (once) {
		if (from_daemon) {
			struct cs_ctl_view_request view = { .format = CS_CTL_FORMAT_JSON,
							    .tail_milli_pct = (uint32_t)(tail * 1000.0 + 0.5) };
			uint8_t request[CS_CTL_VIEW_LEN];
			cs_ctl_view_encode(request, &view);
			struct cs_ctl_header hdr;
			const uint8_t *reply;
			if (cs_ctl_call(&conn, CS_CTL_SNAPSHOT, request, sizeof(request), &hdr, &reply, errmsg,
					sizeof(errmsg)) ||
			    !take_frame(&v, (const char *)reply, hdr.length)) {
				fprintf(stderr, "connscope: %s\n", hdr.type == (CS_CTL_SNAPSHOT | CS_CTL_RESPONSE) ?
					v.ui.status : errmsg);
				rc = 1;
			} else {
				print_once(&v);
			}
			cs_ctl_close(&conn);
		} else {
			/* Attach, then two whole seconds, so that "the last second" means one. */
			uint64_t next_ns = now_ns() + NS_PER_SEC;
			for (;;) {
				if (__atomic_load_n(&local.done, __ATOMIC_ACQUIRE) || top_stop)
					break;
				pthread_mutex_lock(&local.lock);
				double attached_s = local.meta.duration_s;
				pthread_mutex_unlock(&local.lock);
				if (attached_s >= 2.9)
					break;
				usleep(50000);
				if (now_ns() >= next_ns) {
					pthread_mutex_lock(&local.lock);
					cs_window_tick(&local.window, local.engine, now_ns());
					pthread_mutex_unlock(&local.lock);
					next_ns += NS_PER_SEC;
				}
			}
			/* The seconds are ticked above: a tick now would close a short one. */
			size_t len = 0;
			char *json = local_frame(&local, tail, false, &len);
			bool failed = __atomic_load_n(&local.done, __ATOMIC_ACQUIRE) && local.rc;
			if (failed) {
				fprintf(stderr, "connscope: %s\n", local.errmsg);
				rc = 1;
			} else if (!json || !take_frame(&v, json, len)) {
				fprintf(stderr, "connscope: cannot render the frame\n");
				rc = 1;
			} else {
				print_once(&v);
			}
			free(json);
			local_stop(&local);
		}
		free(v.model);
		return rc;
	}

	/* 3. the screen */
	initscr();
	cbreak();
	noecho();
	nodelay(stdscr, TRUE);
	keypad(stdscr, TRUE);
	curs_set(0);
	v.color = want_color() && has_colors();
	if (v.color) {
		start_color();
		use_default_colors();
		init_pair(1, COLOR_GREEN, -1);
		init_pair(2, COLOR_YELLOW, -1);
		init_pair(3, COLOR_RED, -1);
		init_pair(4, COLOR_CYAN, -1);
	}
	if (from_daemon && daemon_stream(&conn, v.tail, errmsg, sizeof(errmsg)))
		snprintf(v.ui.status, sizeof(v.ui.status), "%s", errmsg);
	draw(&v);

	uint64_t next_frame_ns = now_ns() + NS_PER_SEC, next_reconnect_ns = 0;
	bool failed_shown = false;
	while (!top_stop) {
		struct pollfd pfds[2] = { { .fd = STDIN_FILENO, .events = POLLIN },
					  { .fd = conn.fd, .events = POLLIN } };
		poll(pfds, from_daemon && conn.fd >= 0 ? 2 : 1, 100);
		bool redraw = false, tail_changed = false;
		int key;
		while ((key = getch()) != ERR) {
			if (key == KEY_RESIZE) {
				redraw = true;
				continue;
			}
			if (!on_key(&v, key, &tail_changed))
				top_stop = 1;
			redraw = true;
		}
		if (top_stop)
			break;
		uint64_t now = now_ns();
		if (from_daemon) {
			if (conn.fd < 0 && now >= next_reconnect_ns) {
				/* The daemon went away: try again once a second. */
				next_reconnect_ns = now + NS_PER_SEC;
				if (cs_ctl_connect(&conn, path, errmsg, sizeof(errmsg)) == 0 &&
				    daemon_stream(&conn, v.tail, errmsg, sizeof(errmsg)) == 0)
					snprintf(v.ui.status, sizeof(v.ui.status), "daemon %s", path);
				else
					cs_ctl_close(&conn);
			} else if (conn.fd >= 0 && tail_changed) {
				daemon_stream(&conn, v.tail, errmsg, sizeof(errmsg));
			}
			/* Take every frame that arrived; show the latest. */
			struct cs_ctl_header hdr;
			const uint8_t *payload;
			int got;
			while (conn.fd >= 0 && (got = cs_ctl_recv(&conn, 0, &hdr, &payload, errmsg, sizeof(errmsg))) != 0) {
				if (got < 0) {
					snprintf(v.ui.status, sizeof(v.ui.status), "daemon: %s; retrying", errmsg);
					cs_ctl_close(&conn);
					redraw = true;
					break;
				}
				if (hdr.type == (CS_CTL_STREAM | CS_CTL_RESPONSE) &&
				    take_frame(&v, (const char *)payload, hdr.length))
					snprintf(v.ui.status, sizeof(v.ui.status), "daemon %s", path);
				redraw = true;
			}
		} else if (now >= next_frame_ns || tail_changed) {
			bool tick = now >= next_frame_ns;
			if (tick)
				next_frame_ns += NS_PER_SEC;
			if (next_frame_ns < now)
				next_frame_ns = now + NS_PER_SEC;
			if (__atomic_load_n(&local.done, __ATOMIC_ACQUIRE)) {
				if (local.rc && local.meta.duration_s == 0) {
					/* It never attached (no such target, no privilege): say so and go. */
					rc = 1;
					break;
				}
				if (!failed_shown)
					snprintf(v.ui.status, sizeof(v.ui.status), "%s", local.rc ? local.errmsg :
						 "the target exited; the figures are final");
				failed_shown = true;
			} else {
				size_t len = 0;
				char *json = local_frame(&local, v.tail, tick, &len);
				if (json)
					take_frame(&v, json, len);
				free(json);
			}
			redraw = true;
		}
		if (redraw)
			draw(&v);
	}
	endwin();
	if (rc)
		fprintf(stderr, "connscope: %s\n", local.errmsg);
	if (from_daemon)
		cs_ctl_close(&conn);
	else
		local_stop(&local);
	cs_top_screen_free(&v.screen);
	free(v.model);
	return rc;
}
