/* SPDX-License-Identifier: MIT */
/*
 * Looks like CPython to a profiler (exports _PyRuntime, Py_Version and
 * _PyEval_EvalFrameDefault) but holds no interpreter: cprof must refuse
 * its layout in one line and keep the native frames.  -v HEX sets
 * Py_Version (default 0x030c01f0, 3.12.1).
 * Usage: fakepy [-v HEX] [-s SECONDS] [-r READYFILE]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

uint32_t Py_Version = 0x030c01f0;
/* Zeros where the interpreter list would be: the check must fail. */
char _PyRuntime[65536];

__attribute__((noinline)) void _PyEval_EvalFrameDefault(void);
__attribute__((noinline)) void _PyEval_EvalFrameDefault(void)
{
	volatile unsigned long x = 0;

	while (!target_past_deadline())
		for (int i = 0; i < 100000; i++)
			x += (unsigned long)i;
}

int main(int argc, char **argv)
{
	double seconds = 30;
	const char *ready = NULL;
	int i;

	/* -v first, the rest is target_options'. */
	for (i = 1; i + 1 < argc; i++) {
		if (!strcmp(argv[i], "-v")) {
			Py_Version = (uint32_t)strtoul(argv[i + 1], NULL, 16);
			memmove(&argv[i], &argv[i + 2], (size_t)(argc - i - 1) * sizeof(*argv));
			argc -= 2;
			break;
		}
	}
	if (target_options(argc, argv, "fakepy", &seconds, &ready))
		return 64;
	target_start_deadline(seconds);
	if (ready && target_write_ready(ready) < 0)
		return 1;
	_PyEval_EvalFrameDefault();
	printf("result: OK\n");
	return 0;
}
