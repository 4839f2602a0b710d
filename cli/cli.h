/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every command line of connscope and connscoped shares, so that each
 * command only says what is its own: the command table's entry, the option
 * loop around getopt_long, one number parser, one wording of usage errors,
 * the stop signal, and the session's defaults.
 *
 * Exit codes, everywhere: 0 done, 1 run-time failure (no such target,
 * missing privilege or kernel feature), 2 usage error.
 */
#ifndef CS_CLI_H
#define CS_CLI_H

#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "number.h"
#include "session.h"

#define CS_EXIT_RUNTIME 1
#define CS_EXIT_USAGE 2
/* From an option parser: nothing to exit with yet, the command goes on. */
#define CS_CLI_GO_ON (-1)

/*
 * The defaults a command starts from; its --help names them with CS_STR.
 * --sample-hz's is probes.h's, --ring-mb's and the wake-up mark connscope.h's
 * (the BPF side and connscoped's config share them).
 */
#define CS_TAIL_DEFAULT 99          /* --tail: the tail is the requests at or above p99 */
#define PID_MAX_LIMIT 4194304       /* the kernel's upper bound for pid_max */

struct cs_cli;

/* A command: its entry in 'connscope help' and what runs it. */
struct cs_cmd {
	const char *name;          /* "attach" */
	const char *summary;       /* its line in 'connscope help' */
	int (*run)(struct cs_cli *cli, int argc, char **argv);
	const char *usage;         /* its --help text */
	int operands;              /* how many operands it takes after its options */
	const char *operands_hint; /* the usage error when that count is off (operands > 0) */
	bool lists_kinds;          /* --help lists every cause and condition after usage (words.h) */
};

#define CS_CLI_MAX_OPTIONS 24

/* One command line's run: who speaks in messages, its options, where its operands start. */
struct cs_cli {
	const struct cs_cmd *cmd;
	char name[48];             /* "connscope attach", "connscoped": usage errors start with it */
	struct option longopts[CS_CLI_MAX_OPTIONS + 1]; /* after cs_cli_parse: the command's, in its order */
	int operand;               /* after cs_cli_parse: the index in argv of the first operand */
};

/* name: the program ("connscoped") or the program and command ("connscope attach"). */
void cs_cli_init(struct cs_cli *cli, const struct cs_cmd *cmd, const char *name);

/*
 * The usage error: "NAME: message", then "Try 'NAME --help'." on stderr.
 * Returns CS_EXIT_USAGE, for `return cs_cli_usage(...)`.
 */
__attribute__((format(printf, 2, 3)))
int cs_cli_usage(const struct cs_cli *cli, const char *fmt, ...);

/* An option getopt_long returned, with its argument (NULL when it takes none). */
typedef int (*cs_cli_take_fn)(struct cs_cli *cli, int opt, const char *arg, void *ctx);

/*
 * Reads argv's options and hands each to take, which returns CS_CLI_GO_ON
 * or an exit code. options names the long options the command takes, in
 * the order a usage error lists them ("socket json help"); each is
 * defined once, with its short letter if it has one, in cli.c ("--socket":
 * the long form only, here). take gets the option's short letter, or its
 * CS_OPT_* for a long-only one. -h/--help
 * prints the command's usage; a refused option, or an operand count other
 * than cmd->operands, is a usage error. Returns CS_CLI_GO_ON (cli->operand
 * set) or the exit code.
 */
int cs_cli_parse(struct cs_cli *cli, int argc, char **argv, const char *options, cs_cli_take_fn take,
		 void *ctx);

/* The long name of the option opt among the command's (after cs_cli_parse), or NULL. */
const char *cs_cli_option_name(const struct cs_cli *cli, int opt);

/* The long-only options' vals (a letter or a digit is a short option too). */
enum {
	CS_OPT_SAMPLE_HZ = 256,
	CS_OPT_RING_MB,
	CS_OPT_TRACE,
	CS_OPT_SLOWEST,
	CS_OPT_NO_HANDSHAKES,
	CS_OPT_NO_PAUSES,
	CS_OPT_NO_CLIENTS,
	CS_OPT_NO_JVM,
	CS_OPT_FROM,
	CS_OPT_TO,
	CS_OPT_HZ,
	CS_OPT_MIN_OFF_CPU_US,
	CS_OPT_NO_BPF_STATS,
	CS_OPT_BPF_STATS,
	CS_OPT_BETWEEN_WINDOWS,
};

/*
 * text as number says (number.h: the one rule), into *out; else the usage
 * error "OPTION expects EXPECTS, not 'text'" and false.
 */
bool cs_cli_real(const struct cs_cli *cli, const struct cs_number *number, const char *text, double *out);
bool cs_cli_integer(const struct cs_cli *cli, const struct cs_number *number, const char *text, long *out);

/* The numbers more than one command takes. */
extern const struct cs_number cs_number_pid, cs_number_port, cs_number_duration, cs_number_tail,
	cs_number_slowest, cs_number_sample_hz, cs_number_ring_mb;

/* Set by SIGINT and SIGTERM once cs_cli_catch_stop ran: a session ends when it is. */
extern volatile sig_atomic_t cs_cli_stop;
void cs_cli_catch_stop(void);

/* Zeroes opts, then the defaults above, stopping on cs_cli_stop. */
void cs_cli_session_defaults(struct cs_session_options *opts);

#endif /* CS_CLI_H */
