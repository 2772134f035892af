/* SPDX-License-Identifier: MIT */
/* --kernel: whether a session takes kernel frames, and the kernel's symbols for them. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "symbolize/kallsyms.h"
#include "unwind/perf_thread.h"

#define KALLSYMS "/proc/kallsyms"

enum cli_opt_status cli_session_opt_kernel(void *value, const char *arg)
{
	struct cli_session *a = value;

	if (strcmp(arg, "on") == 0 || strcmp(arg, "off") == 0) {
		a->kernel_off = arg[1] == 'f';
		return CLI_OPT_TAKEN;
	}
	cli_error("invalid --kernel '%s': on (kernel frames under the user stack, where "
		  "permitted) or off", arg);
	return CLI_OPT_INVALID;
}

/* Why a session in mode, from source, can take no kernel frame; NULL: it can. */
static const char *kernel_obstacle(const struct cli_session *a, enum sampler_mode mode)
{
	static char why[128];
	int paranoid;

	if (a->kernel_off)
		return "--kernel off";
	if (mode == SAMPLER_WALL)
		return "wall mode samples at stops, where no kernel stack can be read";
	if (a->source == SAMPLER_SOURCE_PTRACE)
		return "--source ptrace: at a stop no kernel stack can be read";
	if (perf_thread_kernel_allowed())
		return NULL;
	if (!cli_read_proc_int("/proc/sys/kernel/perf_event_paranoid", &paranoid))
		return "perf events cannot sample in the kernel here";
	snprintf(why, sizeof(why), "not permitted (perf_event_paranoid=%d; root, CAP_PERFMON or "
		 "perf_event_paranoid <= 1 permits it)", paranoid);
	return why;
}

bool cli_kernel_setup(struct cli_session *a, enum sampler_mode mode, bool quiet)
{
	FILE *f;
	int kptr = -1, ret;

	a->kallsyms = NULL;
	a->kernel_why = kernel_obstacle(a, mode);
	if (a->kernel_why)
		return false;
	f = fopen(KALLSYMS, "re");
	ret = f ? sym_kallsyms_read(f, &a->kallsyms) : -errno;
	if (f)
		fclose(f);
	if (ret == -EPERM) {
		cli_read_proc_int("/proc/sys/kernel/kptr_restrict", &kptr);
		a->kernel_why = "the kernel hides its addresses (kptr_restrict)";
		if (!quiet)
			fprintf(stderr, "cprof: kernel frames left out: " KALLSYMS " hides the "
				"kernel's addresses (kptr_restrict=%d; as root, "
				"sysctl kernel.kptr_restrict=0 shows them)\n", kptr);
		return false;
	}
	if (ret < 0) {
		a->kernel_why = "cannot read " KALLSYMS;
		if (!quiet)
			fprintf(stderr, "cprof: kernel frames left out: cannot read " KALLSYMS
				": %s\n", strerror(-ret));
		return false;
	}
	return true;
}

void cli_kernel_done(struct cli_session *a)
{
	sym_kallsyms_free(a->kallsyms);
	a->kallsyms = NULL;
}
