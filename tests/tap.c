/* SPDX-License-Identifier: MIT */
/* TAP output shared by the unit tests. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/tap.h"

static int points, failures;

void check(bool cond, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", cond ? "ok" : "not ok", ++points);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (!cond)
		failures++;
}

void skip(const char *what, const char *why)
{
	printf("ok %d - %s # SKIP %s\n", ++points, what, why);
}

void skip_all(const char *why)
{
	printf("1..0 # SKIP %s\n", why);
	fflush(stdout);
	exit(0);
}

int tap_failures(void)
{
	return failures;
}

int tap_done(void)
{
	printf("1..%d\n", points);
	if (failures)
		printf("# %d of %d checks failed\n", failures, points);
	fflush(stdout);
	return failures ? 1 : 0;
}
