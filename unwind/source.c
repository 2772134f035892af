/* SPDX-License-Identifier: MIT */
/* The table of sample sources (see unwind/source.h). */
#include "config.h"

#include <stddef.h>

#include "unwind/source.h"

const struct samp_source *const samp_sources[SAMP_SOURCES + 1] = {
	&samp_source_perf,	/* the kernel's copy at a timer interrupt: no stop */
	&samp_source_stop,	/* the base: a ptrace stop, or a read in place */
	NULL,
};
