#!/bin/bash
# SPDX-License-Identifier: MIT
# Why the wait4 that reaps a process can spin for seconds on a busy machine,
# without cprof.
#
#   bench/reap-race.sh [BUILDDIR]
#
# Explains (doc/cost.md, "The reaping of cprof"): a thread's exit frees the
# /proc entries cached under its /proc/PID/task/TID after it has left its
# process; preempted there, it leaves the parent's reaping of the process
# looping in shrink_dcache_parent until it runs again.  Each variant is a
# process whose second thread does one thing and exits; the main thread
# joins it, waits 100 ms and exits:
#   task      opens, reads and closes /proc/PID/task/TID/schedstat
#   comm      is named by the main thread (pthread_setname_np writes
#             /proc/self/task/TID/comm)
#   tid       opens, reads and closes /proc/TID/schedstat (the same file)
#   selfcomm  names itself (prctl: no file)
#   none      nothing
# Each run's reaping (from the process's end, seen by waitid WNOWAIT, which
# reads nothing under /proc, to wait4 returning) and the reaper's CPU
# during it.  The load: one busy loop per CPU, a writer that rewrites
# 16 MiB and fsyncs in a loop (as bench/exit-tail.sh), and evloop (16
# threads that wake every few ms) from BUILDDIR (default ./build).
# REAP_RUNS runs per variant (default 20), interleaved.  Figures only.
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-./build}
RUNS=${REAP_RUNS:-20}
ME=reap-race
. "$HERE/lib.sh"

bench_positive REAP_RUNS "$RUNS"
bench_needs gcc "to build the programs"
EVLOOP=$BUILD/tests/targets/evloop
[ -x "$EVLOOP" ] || make -C "$BUILD" tests/targets/evloop >/dev/null 2>&1 ||
	die "cannot build $EVLOOP (make -C $BUILD check builds it)"

bench_workdir

printf 'int main(void) { for (;;) __asm__ volatile(""); }\n' >"$WORK/hog.c"
sed -n '/^#include <fcntl.h>/,/^}/p' "$HERE/exit-tail.sh" >"$WORK/writer.c"
cat >"$WORK/exiter.c" <<'EOF'
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *mode;

static void *thread_main(void *arg)
{
	char path[96], buf[256];
	int fd;

	(void)arg;
	path[0] = '\0';
	if (!strcmp(mode, "task"))
		snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", getpid(), gettid());
	else if (!strcmp(mode, "tid"))
		snprintf(path, sizeof(path), "/proc/%d/schedstat", gettid());
	else if (!strcmp(mode, "selfcomm"))
		pthread_setname_np(pthread_self(), "named");
	if (path[0] && (fd = open(path, O_RDONLY | O_CLOEXEC)) >= 0) {
		if (read(fd, buf, sizeof(buf)) < 0)
			perror(path);
		close(fd);
	}
	usleep(20000);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	mode = argc > 1 ? argv[1] : "none";
	pthread_create(&t, NULL, thread_main, NULL);
	if (!strcmp(mode, "comm"))
		pthread_setname_np(t, "named");
	pthread_join(t, NULL);
	usleep(100000);
	return 0;
}
EOF
cat >"$WORK/reaper.c" <<'EOF'
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL;
}

/* Runs argv[1..]; prints the ns of its reaping and the reaper's CPU ns in it. */
int main(int argc, char **argv)
{
	long long te, ce;
	siginfo_t si;
	pid_t pid;
	int st;

	if (argc < 2)
		return 64;
	pid = fork();
	if (pid == 0) {
		execv(argv[1], argv + 1);
		_exit(127);
	}
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, pid, &si, WEXITED | WNOWAIT) < 0)
		return 1;
	te = now_ns();
	ce = cpu_ns();
	if (waitpid(pid, &st, 0) < 0)
		return 1;
	printf("%lld %lld\n", now_ns() - te, cpu_ns() - ce);
	return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
EOF
for p in hog writer exiter reaper; do
	gcc -O1 -pthread -o "$WORK/$p" "$WORK/$p.c" 2>"$WORK/gcc.err" || die "cannot build the $p: $(cat "$WORK/gcc.err")"
done

echo "machine: $(nproc) CPUs, $(uname -sr); $RUNS runs per variant, interleaved"
rm -f "$WORK/ready"
"$EVLOOP" -t 16 -s 7200 -r "$WORK/ready" </dev/null >/dev/null 2>&1 & TPID=$!
for i in $(seq "$(nproc)"); do
	"$WORK/hog" & bench_load_add $!
done
"$WORK/writer" "$WORK/junk" & bench_load_add $!
sleep 1
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$WORK/runs"
for i in $(seq "$RUNS"); do
	for v in task comm tid selfcomm none; do
		r=$("$WORK/reaper" "$WORK/exiter" "$v") || die "the $v program failed"
		echo "$v $r" >>"$WORK/runs"
	done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
bench_stop_load
stop_target

awk '
{ n[$1]++; r = $2 / 1e9; c = $3 / 1e9; if (r > 0.05) { slow[$1]++ } if (r > max[$1]) max[$1] = r; cpu[$1] += c; tot[$1] += r }
END {
	printf "%-9s %5s %18s %8s %14s\n", "variant", "runs", "reapings > 50 ms", "max s", "reaper CPU s"
	split("task comm tid selfcomm none", order, " ")
	for (i = 1; i <= 5; i++) { v = order[i]
		printf "%-9s %5d %18d %8.2f %7.2f of %.2f\n", v, n[v], slow[v], max[v], cpu[v], tot[v] }
}' "$WORK/runs"
