/* SPDX-License-Identifier: MIT */
/* libcprof-inproc.so's settings, from the environment, and its removal from LD_PRELOAD. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "inproc/inproc.h"

#define INPROC_DEFAULT_HZ 100
#define INPROC_MAX_HZ 1000

/* Settings, fixed by the constructor. */
enum inproc_mode inproc_mode;
unsigned inproc_hz;
int64_t inproc_interval_ns;
char inproc_output[PATH_MAX];
bool inproc_fsync;

void inproc_unpreload(void)
{
	const char *env = getenv("LD_PRELOAD");
	struct stat self_st, st;
	Dl_info self;
	char *copy, *tok, *save = NULL, *out;
	bool have_self_st;
	size_t len = 0;

	if (!env)
		return;
	if (!dladdr((void *)inproc_unpreload, &self) || !self.dli_fname)
		return;
	have_self_st = stat(self.dli_fname, &self_st) == 0;
	copy = strdup(env);
	out = calloc(1, strlen(env) + 1);
	if (!copy || !out)
		goto out_free;
	for (tok = strtok_r(copy, ": ", &save); tok; tok = strtok_r(NULL, ": ", &save)) {
		if (strcmp(tok, self.dli_fname) == 0 ||
		    (have_self_st && stat(tok, &st) == 0 && st.st_dev == self_st.st_dev &&
		     st.st_ino == self_st.st_ino))
			continue;
		if (len)
			out[len++] = ':';
		memcpy(out + len, tok, strlen(tok));
		len += strlen(tok);
	}
	if (len)
		setenv("LD_PRELOAD", out, 1);
	else
		unsetenv("LD_PRELOAD");
out_free:
	free(copy);
	free(out);
}

bool inproc_configure(const char *output)
{
	const char *hz = getenv("CPROF_INPROC_HZ");
	const char *mode = getenv("CPROF_INPROC_MODE");
	char *end;
	long v;

	inproc_fsync = getenv("CPROF_INPROC_FSYNC") != NULL;

	if (!*output) {
		fprintf(stderr, "cprof-inproc: CPROF_INPROC_OUTPUT is empty: not profiling\n");
		return false;
	}
	/* The target may chdir before it exits. */
	if (output[0] == '/' || !getcwd(inproc_output, sizeof(inproc_output)))
		inproc_output[0] = '\0';
	if (inproc_output[0] && strcmp(inproc_output, "/") != 0)
		strncat(inproc_output, "/", sizeof(inproc_output) - strlen(inproc_output) - 1);
	if (strlen(inproc_output) + strlen(output) >= sizeof(inproc_output)) {
		fprintf(stderr, "cprof-inproc: cannot write '%s': %s\n", output,
			strerror(ENAMETOOLONG));
		return false;
	}
	strcat(inproc_output, output);

	inproc_hz = INPROC_DEFAULT_HZ;
	if (hz) {
		errno = 0;
		v = strtol(hz, &end, 10);
		if (errno || end == hz || *end || v < 1 || v > INPROC_MAX_HZ) {
			fprintf(stderr, "cprof-inproc: invalid CPROF_INPROC_HZ '%s': must be 1..%d; "
					"not profiling\n", hz, INPROC_MAX_HZ);
			return false;
		}
		inproc_hz = (unsigned)v;
	}
	inproc_interval_ns = 1000000000 / (int64_t)inproc_hz;
	inproc_mode = INPROC_CPU;
	if (mode && strcmp(mode, "wall") == 0) {
		inproc_mode = INPROC_WALL;
	} else if (mode && strcmp(mode, "cpu") != 0) {
		fprintf(stderr, "cprof-inproc: invalid CPROF_INPROC_MODE '%s': must be cpu or wall; "
				"not profiling\n", mode);
		return false;
	}
	return true;
}
