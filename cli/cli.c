// SPDX-License-Identifier: BSD-2-Clause
#include "cli.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "words.h"

volatile sig_atomic_t cs_cli_stop;

const struct cs_number cs_number_pid = { "--pid", 1, PID_MAX_LIMIT, CS_NUMBER_INTEGER,
					 "a process id (1-" CS_STR(PID_MAX_LIMIT) ")" };
const struct cs_number cs_number_port = { "--port", 1, 65535, CS_NUMBER_INTEGER, "a TCP port (1-65535)" };
const struct cs_number cs_number_duration = { "--duration", 0.1, 31536000, 0, "seconds (0.1-31536000)" };
const struct cs_number cs_number_tail = { "--tail", 50, 99.999, 0, "a percentile from 50 to 99.999" };
const struct cs_number cs_number_slowest = { "--slowest", 1, CS_EXEMPLARS, CS_NUMBER_INTEGER,
					     "1 to " CS_STR(CS_EXEMPLARS) };
const struct cs_number cs_number_sample_hz = { "--sample-hz", 1, 1000, CS_NUMBER_INTEGER, "1-1000" };
const struct cs_number cs_number_ring_mb = { "--ring-mb", 1, 1024, CS_NUMBER_POW2,
					     "a power of two from 1 to 1024" };

void cs_cli_init(struct cs_cli *cli, const struct cs_cmd *cmd, const char *name)
{
	memset(cli, 0, sizeof(*cli));
	cli->cmd = cmd;
	snprintf(cli->name, sizeof(cli->name), "%s", name);
}

int cs_cli_usage(const struct cs_cli *cli, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s: ", cli->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", cli->name);
	return CS_EXIT_USAGE;
}

/* ---- numbers ------------------------------------------------------------------------ */

bool cs_cli_real(const struct cs_cli *cli, const struct cs_number *number, const char *text, double *out)
{
	char why[256];
	if (!cs_number_read(number, text, out, why, sizeof(why)))
		return true;
	cs_cli_usage(cli, "%s", why);
	return false;
}

bool cs_cli_integer(const struct cs_cli *cli, const struct cs_number *number, const char *text, long *out)
{
	double value;
	if (!cs_cli_real(cli, number, text, &value))
		return false;
	*out = (long)value;
	return true;
}

/* ---- options ------------------------------------------------------------------------ */

/*
 * The message for an option getopt_long refused (c is ':' or '?', opterr 0,
 * optstring starting with ':'), naming it as the user wrote it and, for an
 * unknown one, the options there are:
 *   option '--pid' needs a value
 *   option '--json' takes no value
 *   unknown option '-x' (options: --pid, --port, ...)
 * glibc leaves optind past a refused long option, and optopt 0 for an
 * unknown long one (else the option's val); a short option inside a
 * cluster ("-qx") is named by optopt alone.
 */
static int refused_option(const struct cs_cli *cli, int c, char **argv)
{
	const struct option *longopts = cli->longopts;
	const char *arg = optind > 0 ? argv[optind - 1] : "";
	bool is_long = !strncmp(arg, "--", 2);
	size_t name_len = is_long ? strcspn(arg, "=") : 0;
	if (is_long && c == '?' && optopt) {
		/* A known long option: refused only when given a value it does not take. */
		for (const struct option *o = longopts; o->name; o++)
			if (o->val == optopt && strlen(o->name) == name_len - 2 &&
			    !strncmp(o->name, arg + 2, name_len - 2) && arg[name_len] == '=')
				return cs_cli_usage(cli, "option '%.*s' takes no value", (int)name_len, arg);
		is_long = false;
	}
	char name[64];
	if (is_long)
		snprintf(name, sizeof(name), "%.*s", (int)(name_len < 60 ? name_len : 60), arg);
	else
		snprintf(name, sizeof(name), "-%c", optopt > 0 && optopt < 256 ? optopt : '?');
	if (c == ':')
		return cs_cli_usage(cli, "option '%s' needs a value", name);
	char list[512];
	size_t used = 0;
	for (const struct option *o = longopts; o->name && used < sizeof(list); o++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s --%s", o == longopts ? "" : ",",
					 o->name);
	return cs_cli_usage(cli, "unknown option '%s' (options:%s)", name, list);
}

/*
 * Every option of connscope's commands and of connscoped, once: its long
 * name, whether it takes a value, and its short letter (a val from 256 up
 * for a long-only one). A command picks its own by name (cs_cli_parse).
 */
static const struct option catalogue[] = {
	{ "pid", required_argument, NULL, 'p' },
	{ "port", required_argument, NULL, 'P' },
	{ "name", required_argument, NULL, 'n' },
	{ "cgroup", required_argument, NULL, 'c' },
	{ "netns", required_argument, NULL, 'N' },
	{ "duration", required_argument, NULL, 'd' },
	{ "output", required_argument, NULL, 'o' },
	{ "json", no_argument, NULL, 'j' },
	{ "tail", required_argument, NULL, 't' },
	{ "slowest", required_argument, NULL, CS_OPT_SLOWEST },
	{ "sample-hz", required_argument, NULL, CS_OPT_SAMPLE_HZ },
	{ "ring-mb", required_argument, NULL, CS_OPT_RING_MB },
	{ "trace", required_argument, NULL, CS_OPT_TRACE },
	{ "no-handshakes", no_argument, NULL, CS_OPT_NO_HANDSHAKES },
	{ "no-pauses", no_argument, NULL, CS_OPT_NO_PAUSES },
	{ "no-clients", no_argument, NULL, CS_OPT_NO_CLIENTS },
	{ "no-jvm", no_argument, NULL, CS_OPT_NO_JVM },
	{ "no-bpf-stats", no_argument, NULL, CS_OPT_NO_BPF_STATS },
	{ "bpf-stats", required_argument, NULL, CS_OPT_BPF_STATS }, /* yes, always or no */
	{ "between-windows", required_argument, NULL, CS_OPT_BETWEEN_WINDOWS }, /* events or counters */
	{ "interval", required_argument, NULL, 'i' },
	{ "from", required_argument, NULL, CS_OPT_FROM },
	{ "to", required_argument, NULL, CS_OPT_TO },
	{ "percentile", required_argument, NULL, 'P' }, /* diff's: it takes no --port */
	{ "hz", required_argument, NULL, CS_OPT_HZ },
	{ "min-off-cpu-us", required_argument, NULL, CS_OPT_MIN_OFF_CPU_US },
	{ "socket", required_argument, NULL, 's' },
	{ "once", no_argument, NULL, '1' },
	{ "config", required_argument, NULL, 'C' },
	{ "metrics", required_argument, NULL, 'm' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
};
#define CATALOGUE_LEN (sizeof(catalogue) / sizeof(catalogue[0]))

static const struct option *catalogue_entry(const char *name, size_t len)
{
	for (size_t i = 0; i < CATALOGUE_LEN; i++)
		if (strlen(catalogue[i].name) == len && !strncmp(catalogue[i].name, name, len))
			return &catalogue[i];
	return NULL;
}

/*
 * cli->longopts from the words of options, and getopt's optstring
 * (":p:P:jh"): the short letters, each with ':' when it takes a value.
 * Returns -1 for a word the catalogue lacks, a mistake in the command.
 */
static int select_options(struct cs_cli *cli, const char *options, char *optstring, size_t len)
{
	size_t count = 0, n = 0;
	optstring[n++] = ':'; /* a missing value is ':', not '?' */
	for (const char *word = options; *word && count < CS_CLI_MAX_OPTIONS; word += strspn(word, " ")) {
		bool long_only = !strncmp(word, "--", 2);
		word += long_only ? 2 : 0;
		size_t word_len = strcspn(word, " ");
		const struct option *o = catalogue_entry(word, word_len);
		if (!o || n + 3 > len)
			return -1;
		cli->longopts[count++] = *o;
		if (!long_only && o->val < 256) {
			optstring[n++] = (char)o->val;
			if (o->has_arg == required_argument)
				optstring[n++] = ':';
		}
		word += word_len;
	}
	memset(&cli->longopts[count], 0, sizeof(cli->longopts[count]));
	optstring[n] = '\0';
	return 0;
}

const char *cs_cli_option_name(const struct cs_cli *cli, int opt)
{
	for (const struct option *o = cli->longopts; o->name; o++)
		if (o->val == opt)
			return o->name;
	return NULL;
}

static int check_operands(struct cs_cli *cli, int argc, char **argv)
{
	int want = cli->cmd->operands;
	if (want == 0 && cli->operand < argc)
		return cs_cli_usage(cli, "unexpected argument '%s'", argv[cli->operand]);
	if (want > 0 && argc - cli->operand != want)
		return cs_cli_usage(cli, "%s", cli->cmd->operands_hint);
	return CS_CLI_GO_ON;
}

int cs_cli_parse(struct cs_cli *cli, int argc, char **argv, const char *options, cs_cli_take_fn take,
		 void *ctx)
{
	char optstring[3 * CS_CLI_MAX_OPTIONS + 2];
	int c;
	if (select_options(cli, options, optstring, sizeof(optstring))) {
		fprintf(stderr, "%s: cannot read its own options '%s'\n", cli->name, options);
		return CS_EXIT_RUNTIME;
	}
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, optstring, cli->longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(cli->cmd->usage, stdout);
			if (cli->cmd->lists_kinds) {
				fputc('\n', stdout);
				cs_words_print_kinds(stdout);
			}
			return 0;
		}
		if (c == ':' || c == '?')
			return refused_option(cli, c, argv);
		int rc = take(cli, c, optarg, ctx);
		if (rc != CS_CLI_GO_ON)
			return rc;
	}
	cli->operand = optind;
	return check_operands(cli, argc, argv);
}

/* ---- the run ------------------------------------------------------------------------ */

static void on_stop(int sig)
{
	(void)sig;
	cs_cli_stop = 1;
}

void cs_cli_catch_stop(void)
{
	struct sigaction sa = { .sa_handler = on_stop };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void cs_cli_session_defaults(struct cs_session_options *opts)
{
	memset(opts, 0, sizeof(*opts));
	opts->sample_hz = CS_SAMPLE_HZ_DEFAULT;
	opts->probe.ring_bytes = (uint32_t)CS_RING_MB_DEFAULT << 20;
	opts->probe.wakeup_bytes = CS_WAKEUP_BYTES_DEFAULT;
	opts->probe.trace_handshakes = true;
	opts->probe.follow_clients = true;
	opts->stop = &cs_cli_stop;
}
