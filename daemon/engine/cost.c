// SPDX-License-Identifier: BSD-2-Clause
/*
 * connscope's own cost, from its cost records: each says what a program's
 * run time or connscope's CPU time grew by since the reading before, so
 * the engine only adds them up (whatever stretch of a run it is fed).
 */
#include "engine.h"
#include "engine_internal.h"

#include <string.h>

/* The program's entry, made on its first record; NULL when the list is full. */
static struct cs_prog_cost_stats *get_program(struct cs_cost_stats *cost, uint32_t prog_id)
{
	for (size_t i = 0; i < cost->program_count; i++)
		if (cost->programs[i].prog_id == prog_id)
			return &cost->programs[i];
	if (cost->program_count == CS_COST_PROGRAMS)
		return NULL;
	struct cs_prog_cost_stats *prog = &cost->programs[cost->program_count++];
	memset(prog, 0, sizeof(*prog));
	prog->prog_id = prog_id;
	return prog;
}

int cs_on_prog_cost(struct cs_engine *engine, const struct cs_ev_prog_cost *ev)
{
	struct cs_cost_stats *cost = &engine->cost;
	cost->bpf_run_ns += ev->run_ns;
	cost->bpf_runs += ev->runs;
	cost->bpf_pending_run_ns += ev->run_ns;
	struct cs_prog_cost_stats *prog = get_program(cost, ev->prog_id);
	if (!prog) {
		cost->programs_unlisted++;
		return 0;
	}
	/* The name as recorded, NUL-terminated whatever the record says. */
	memcpy(prog->name, ev->name, sizeof(prog->name));
	prog->name[sizeof(prog->name) - 1] = '\0';
	prog->run_ns += ev->run_ns;
	prog->runs += ev->runs;
	return 0;
}

int cs_on_self_cost(struct cs_engine *engine, const struct cs_ev_self_cost *ev)
{
	struct cs_cost_stats *cost = &engine->cost;
	cost->readings++;
	cost->bpf_stats = ev->bpf_stats;
	cost->bpf_stats_error = ev->error;
	switch (ev->bpf_stats) {
	case CS_BPF_STATS_SAMPLED_WINDOW:
		cost->bpf_sampled_readings++;
		cost->bpf_window_run_ns += cost->bpf_pending_run_ns;
		cost->bpf_window_wall_ns += ev->wall_ns;
		break;
	case CS_BPF_STATS_SAMPLED_ON:
		cost->bpf_sampled_readings++;
		/* fall through */
	case CS_BPF_STATS_ENABLED:
	case CS_BPF_STATS_ALREADY_ON:
		cost->bpf_plain_run_ns += cost->bpf_pending_run_ns;
		cost->bpf_plain_measured_wall_ns += ev->wall_ns;
		cost->bpf_plain_wall_ns += ev->wall_ns;
		break;
	case CS_BPF_STATS_SAMPLED_OFF:
		/* Left out on purpose: the spans measured outside windows stand for it. */
		cost->bpf_sampled_readings++;
		cost->bpf_plain_wall_ns += ev->wall_ns;
		break;
	default:
		cost->bpf_unmeasured_readings++;
		break;
	}
	cost->bpf_pending_run_ns = 0;
	cost->user_ns += ev->user_ns;
	cost->system_ns += ev->system_ns;
	cost->wall_ns += ev->wall_ns;
	return 0;
}
