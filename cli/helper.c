/* SPDX-License-Identifier: MIT */
/* The confined parser of a command: started before the target is touched, its deaths reported. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "confine/confine.h"
#include "process/modules.h"
#include "symbolize/remote.h"
#include "symbolize/symbolize.h"
#include "unwind/remote_client.h"

/* New parsers after the first dies: a module that kills each one costs one. */
#define HELPER_RESTARTS 3
/* An answer later than this: the parser hangs (the first lookup in a big
 * module's DWARF takes a fraction of a second). */
#define HELPER_TIMEOUT_NS (30 * 1000000000ull)

/* The bound above, or (tests only, so that a parser made to hang by
 * CPROF_TEST_HELPER_FORBIDDEN=hang costs seconds) the duration
 * CPROF_TEST_HELPER_TIMEOUT holds. */
static uint64_t helper_timeout_ns(void)
{
	const char *test = getenv("CPROF_TEST_HELPER_TIMEOUT");
	uint64_t ns;

	if (test && cli_parse_duration(test, &ns) == 0 && ns)
		return ns;
	return HELPER_TIMEOUT_NS;
}

/* The parser's two services, each with its own state. */
struct parser_state {
	void *sym;
	void *walk;
};

int cli_parser_serve(void **state, uint32_t type, const void *req, size_t len, int *fds,
		     size_t nfds, void *resp, size_t cap, size_t *resp_len)
{
	struct parser_state *s = *state;

	if (!s && !(s = *state = calloc(1, sizeof(*s)))) {
		while (nfds--)
			close(fds[nfds]);
		return -ENOMEM;
	}
	if (remote_serves(type))
		return remote_serve(&s->walk, type, req, len, fds, nfds, resp, cap, resp_len);
	return sym_remote_serve(&s->sym, type, req, len, fds, nfds, resp, cap, resp_len);
}

int cli_helper_start(const char *user, struct conf_helper **out)
{
	struct conf_opts o = {
		.serve = cli_parser_serve,
		/* a fresh image of cprof, which main() turns into the parser */
		.exec_path = "/proc/self/exe",
		.uid = getuid(),
		.gid = getgid(),
		.max_restarts = HELPER_RESTARTS,
		.call_timeout_ns = helper_timeout_ns(),
	};
	int ret;

	*out = NULL;
	if (geteuid() == 0 && conf_user_lookup(user ? user : "nobody", &o.uid, &o.gid) < 0) {
		cli_error("cannot find user '%s' (--helper-user names the user the parser runs as)",
			  user ? user : "nobody");
		return CPROF_EXIT_FATAL;
	}
	if (geteuid() == 0 && o.uid == 0) {
		cli_error("cannot run the parser as '%s': it is root (--helper-user names an "
			  "unprivileged user)", user ? user : "nobody");
		return CPROF_EXIT_FATAL;
	}
	ret = conf_start(out, &o);
	if (ret < 0) {
		cli_error("cannot start the confined parser: %s (cprof needs seccomp and fork)",
			  strerror(-ret));
		return CPROF_EXIT_FATAL;
	}
	return CPROF_EXIT_OK;
}

static void report_death(const struct conf_death *d)
{
	char how[64] = "", id[224] = "";

	if (d->signal)
		snprintf(how, sizeof(how), " (%s)", d->signal == SIGSYS ? "a forbidden system call" :
			 strsignal(d->signal));
	/* a module has a build id ("none" when it lacks one), a perf map none */
	if (d->subject && d->subject_id)
		snprintf(id, sizeof(id), " (build id %.200s)", d->subject_id);
	if (d->subject && d->kind == CONF_HUNG)
		cli_error("parsing %s%s hung the parser; its frames keep their addresses",
			  d->subject, id);
	else if (d->subject)
		cli_error("parsing %s%s crashed the parser%s; its frames keep their addresses",
			  d->subject, id, how);
	else
		cli_error("the parser died between requests%s; a new one took over", how);
}

void cli_helper_report_error(const struct proc_module *m, int err)
{
	/* worded as a death is: the module, its build id, what became of it */
	cli_error("parsing %s (build id %s) failed in the parser: %s; its frames keep their "
		  "addresses", m->path, m->build_id ? m->build_id : "none", strerror(-err));
}

size_t cli_helper_errors(struct sym_ctx *sym, const struct proc_modules *mods)
{
	const struct proc_module *m;
	size_t i, n = 0;
	int err;

	for (i = 1; sym && i <= proc_modules_count(mods); i++) {
		m = proc_modules_get(mods, (uint32_t)i);
		if (m && (err = sym_module_parser_error(sym, m))) {
			cli_helper_report_error(m, err);
			n++;
		}
	}
	return n;
}

size_t cli_helper_walk_errors(struct sym_ctx *sym, const struct proc_modules *mods,
			      const struct remote_client_error *errs, size_t n)
{
	const struct proc_module *m;
	size_t i, reported = 0;

	for (i = 0; i < n; i++) {
		m = proc_modules_get(mods, errs[i].module);
		if (m && !(sym && sym_module_parser_error(sym, m))) {
			cli_helper_report_error(m, errs[i].err);
			reported++;
		}
	}
	return reported;
}

size_t cli_helper_failed_modules(struct sym_ctx *sym, const struct proc_modules *mods,
				 const struct remote_client_error *errs, size_t n)
{
	const struct proc_module *m;
	size_t i, k, failed = 0;
	bool walked;

	for (i = 1; i <= proc_modules_count(mods); i++) {
		m = proc_modules_get(mods, (uint32_t)i);
		if (!m)
			continue;
		walked = false;
		for (k = 0; k < n && !walked; k++)
			walked = errs[k].module == (uint32_t)i;
		failed += walked || (sym && sym_module_parser_error(sym, m));
	}
	return failed;
}

size_t cli_helper_deaths(struct conf_helper *h)
{
	struct conf_death d;
	size_t n = 0;

	if (!h)
		return 0;
	conf_check(h);
	while (conf_death(h, n, &d))
		n++;
	return n;
}

int cli_helper_end(struct conf_helper *h)
{
	struct conf_death d;
	size_t i;

	if (!h)
		return CPROF_EXIT_OK;
	conf_check(h);
	for (i = 0; conf_death(h, i, &d); i++)
		report_death(&d);
	if (conf_status(h).exhausted)
		cli_error("the parser died %zu times, no new one was started: the frames of the "
			  "modules left keep their addresses and build ids (pprof can symbolize them)", i);
	conf_stop(h);
	return i ? CPROF_EXIT_PARTIAL : CPROF_EXIT_OK;
}
