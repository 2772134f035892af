/* SPDX-License-Identifier: MIT */
/* zeroread: a syscall-heavy target, as `dd if=/dev/zero of=/dev/null bs=4k`.
 *
 * zeroread [-s SECONDS] [-r READYFILE]
 *
 * A thread named "reader" runs read_loop: 4 KiB reads from /dev/zero, each
 * written to /dev/null, most of its time in the kernel, until SECONDS pass
 * or SIGUSR2; then "result: OK". */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "target.h"

#define NOINLINE __attribute__((noinline, noipa))

static int zero_fd = -1, null_fd = -1;
static int failed;

NOINLINE static void *read_loop(void *arg)
{
	char buf[4096];

	(void)arg;
	while (!target_past_deadline()) {
		if (read(zero_fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf) ||
		    write(null_fd, buf, sizeof(buf)) != (ssize_t)sizeof(buf)) {
			failed = 1;
			break;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	double seconds = 10;
	const char *ready = NULL;
	int r = target_options(argc, argv, "zeroread", &seconds, &ready);

	if (r)
		return r;
	zero_fd = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (zero_fd < 0 || null_fd < 0) {
		perror("open /dev/zero, /dev/null");
		return 1;
	}
	target_start_deadline(seconds);
	if (target_run_worker(read_loop, "reader", ready))
		return 1;
	if (failed) {
		perror("read /dev/zero or write /dev/null");
		return 1;
	}
	puts("result: OK");
	return 0;
}
