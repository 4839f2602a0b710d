// SPDX-License-Identifier: BSD-2-Clause
/*
 * Clearing the statistics (the control socket's RESET): the engine starts
 * over as if just created, but keeps following the connections it knows,
 * so that requests in flight still find their accept and the next records
 * are not miscounted. Works with whatever cs_engine_new and cs_engine_free
 * set up: a field added to the engine is cleared too.
 */
#include <errno.h>

#include "engine.h"

int cs_engine_reset(struct cs_engine *engine)
{
	struct cs_engine *fresh = cs_engine_new();
	if (!fresh)
		return -ENOMEM;
	struct cs_engine old = *engine;
	*engine = *fresh;
	*fresh = old;
	/* fresh now holds the old statistics; swap the connections back. */
	struct cs_u64map conns = engine->conns;
	engine->conns = fresh->conns;
	fresh->conns = conns;
	cs_engine_free(fresh);
	return 0;
}
