/* SPDX-License-Identifier: MIT */
/* sigsend: queue COUNT SIGRTMIN+1 signals to PID at about RATE per second.
 *
 * sigsend PID COUNT RATE_PER_SEC
 *
 * Signal i carries the sigqueue value i (0..COUNT-1), so the receiver can
 * tell a duplicate from a loss.  When the receiver's real-time queue is full
 * (EAGAIN) the same signal is retried, for at most 30 s in all, so that
 * exactly COUNT signals are queued.  Prints "sent=COUNT"; exit 1 if not all
 * could be sent. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

int main(int argc, char **argv)
{
	long pid, count, rate, sent = 0;
	int64_t start, give_up;
	char *end;

	if (argc != 4) {
		fprintf(stderr, "usage: sigsend PID COUNT RATE_PER_SEC\n");
		return 64;
	}
	pid = strtol(argv[1], &end, 10);
	if (*end || pid <= 0)
		return 64;
	count = strtol(argv[2], &end, 10);
	if (*end || count < 0)
		return 64;
	rate = strtol(argv[3], &end, 10);
	if (*end || rate <= 0)
		return 64;

	start = now_ns();
	give_up = start + 30000000000LL;
	while (sent < count) {
		int64_t due = start + (int64_t)(sent * (1e9 / (double)rate));
		union sigval v = { .sival_int = (int)sent };

		if (now_ns() < due) {
			struct timespec ts = { due / 1000000000, due % 1000000000 };
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		}
		if (sigqueue((pid_t)pid, SIGRTMIN + 1, v) == 0) {
			sent++;
			continue;
		}
		if (errno != EAGAIN || now_ns() > give_up) {
			fprintf(stderr, "sigsend: sigqueue %ld to pid %ld: %s\n",
				sent, pid, strerror(errno));
			break;
		}
		usleep(1000);
	}
	printf("sent=%ld\n", sent);
	if (fflush(stdout) != 0)
		return 2;
	return sent == count ? 0 : 1;
}
