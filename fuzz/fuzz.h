/* SPDX-License-Identifier: MIT */
/*
 * What the libFuzzer harnesses share: writing an input whole into the file
 * that stands for a module.
 */
#ifndef CPROF_FUZZ_FUZZ_H
#define CPROF_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/* Writes n bytes of p to fd.  Returns 0, or -1 on a failed or empty write. */
static inline int fuzz_write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

#endif
