#!/bin/bash
# SPDX-License-Identifier: MIT
# Does cprof end when it said it would, whatever the disk and the load?
#
#   bench/exit-tail.sh [BUILDDIR [BASELINE_BUILDDIR]]
#
# Goal it informs (issue "cprof must end on time"): on a machine whose CPUs
# are all busy and whose disk a writer keeps congested with fsync, the time
# cprof takes past its -d is a few seconds at most.
#
# BUILDDIR (default ./build) holds the cprof measured and its test targets
# (tests/targets/evloop is built there if missing); BASELINE_BUILDDIR, if
# given, another cprof run in the same session, each run right after the
# measured one.  Target: evloop (16 threads of short work and epoll waits).
# Per command, EXIT_RUNS runs (default 10), each -d EXIT_SECS (default 2):
#   attach        cprof attach --source ptrace -p PID -F 1000 -d EXIT_SECS --stop thread
#   record        cprof record --source ptrace -F 1000 -d EXIT_SECS -- evloop -s EXIT_SECS
#   dump-threads  cprof dump-threads -p PID  (no -d: its whole time)
# as a script runs them: the same profile and stderr file each run, the
# stderr file truncated by the shell ("2>FILE").  Once on a quiet machine
# (whatever else runs on it), once loaded: one busy loop per CPU and a
# writer that rewrites 16 MiB and fsyncs it, in a loop.  Printed per
# condition and command: the time past -d to cprof's end (its process a
# zombie; median, p90, max), runs that ended with another status than 0,
# and, from --json where the command has it, cprof's own "finish" (from
# the end of sampling to the profile written), the exit (from the JSON
# summary on standard output, which cprof flushes last, to its end) and,
# apart, the reaping (its end to its parent's wait returning: the
# kernel's, see timed).  A run still going EXIT_CAP seconds (default 120)
# past -d is killed and counted as hung.  After each attach the target
# must be released (TracerPid 0) and still running.
#
# Figures only: it never fails on a timing.  Exit status 1 only on a real
# error (no cprof, no gcc, the target died or was left traced).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-./build}
BASE=${2:-}
RUNS=${EXIT_RUNS:-10}
SECS=${EXIT_SECS:-2}
CAP=${EXIT_CAP:-120}
ME=exit-tail
. "$HERE/lib.sh"

[ -x "$BUILD/cprof" ] || die "no cprof in '$BUILD' (give the build directory as the first argument)"
[ -z "$BASE" ] || [ -x "$BASE/cprof" ] || die "no cprof in baseline '$BASE'"
bench_positive EXIT_RUNS "$RUNS"
bench_positive EXIT_SECS "$SECS" seconds
bench_positive EXIT_CAP "$CAP" seconds
command -v gcc >/dev/null || die "gcc is needed to build the load"
command -v python3 >/dev/null || die "python3 is needed to read cprof --json"
EVLOOP=$BUILD/tests/targets/evloop
[ -x "$EVLOOP" ] || make -C "$BUILD" tests/targets/evloop >/dev/null 2>&1 ||
	die "cannot build $EVLOOP (make -C $BUILD check builds it)"

bench_workdir
# timed's pause: a read that times out on a FIFO nobody writes
mkfifo "$WORK/tick" || die "cannot make a FIFO in $WORK"
exec 9<>"$WORK/tick"

printf 'int main(void) { for (;;) __asm__ volatile(""); }\n' >"$WORK/hog.c"
cat >"$WORK/writer.c" <<'EOF'
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
/* Rewrites 16 MiB and waits for the disk to hold it, forever. */
int main(int argc, char **argv)
{
	static char buf[1 << 20];
	int fd, i;

	(void)argc;
	memset(buf, 'x', sizeof(buf));
	for (;;) {
		fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			return 1;
		for (i = 0; i < 16; i++)
			if (write(fd, buf, sizeof(buf)) < 0)
				return 1;
		fsync(fd);
		close(fd);
	}
}
EOF
for p in hog writer; do
	gcc -O1 -o "$WORK/$p" "$WORK/$p.c" 2>"$WORK/gcc.err" || die "cannot build the $p: $(cat "$WORK/gcc.err")"
done

start_load() {
	local i
	for i in $(seq "$(nproc)"); do
		"$WORK/hog" & bench_load_add $!
	done
	"$WORK/writer" "$WORK/junk" & bench_load_add $!
	sleep 1
}

# start_target [SECONDS]: evloop as TPID, ready.
start_target() {
	rm -f "$WORK/ready"
	"$EVLOOP" -t 16 -s "${1:-7200}" -r "$WORK/ready" </dev/null >/dev/null 2>"$WORK/target.err" &
	TPID=$!
	for _ in $(seq 400); do
		[ -e "$WORK/ready" ] && return
		kill -0 "$TPID" 2>/dev/null || break
		sleep 0.05
	done
	die "evloop did not start: $(cat "$WORK/target.err")"
}

# timed VAR COMMAND...: runs COMMAND (stdout to out.json, stderr to err,
# both reused from run to run), killed once CAP seconds past -d; sets VAR
# to the ns from its start to its end, RC to its status (-1: killed),
# EXIT_NS to the ns from out.json written to its end (-: no output) and
# REAP_NS to the ns from its end to its reaping.
#
# Its end is when its process is a zombie, not when it is reaped: the
# reaping (release_task flushing the process's /proc entries) spins for as
# long as one of its threads' exits, preempted under this load, has not
# finished freeing an entry cached under /proc/PID/task/TID (doc/cost.md,
# "The reaping of cprof").  cprof caches none there, but whoever reads its
# threads' files (ps -L, top -H) can.  So a subshell starts and reaps
# COMMAND while this loop watches its state with shell builtins only (a
# sleep or a date would be one more child to reap); REAP_NS shows the
# reaping apart.
timed() {
	local var=$1 t0 tj="" te="" now pid="" st
	shift
	# emptied here: the child's own truncation may come after the first look
	: >"$WORK/out.json"
	: >"$WORK/cpid"
	t0=${EPOCHREALTIME/./}
	("$@" >"$WORK/out.json" 2>"$WORK/err" </dev/null &
		echo $! >"$WORK/cpid"
		wait $!) &
	local wrap=$!
	RC=0
	while :; do
		now=${EPOCHREALTIME/./}
		[ -n "$pid" ] || [ ! -s "$WORK/cpid" ] || read -r pid <"$WORK/cpid"
		[ -n "$tj" ] || [ ! -s "$WORK/out.json" ] || tj=$now
		if [ -n "$pid" ]; then
			st=""
			{ read -r st <"/proc/$pid/stat"; } 2>/dev/null || st=""
			case $st in
			*") "[!ZX]*) ;;
			*) te=$now; break ;;
			esac
		fi
		if [ $(((now - t0) / 1000000)) -gt $((SECS + CAP)) ]; then
			[ -z "$pid" ] || kill -KILL "$pid" 2>/dev/null
			te=$now
			RC=-1
			break
		fi
		read -r -t 0.05 -u 9 || :
	done
	wait "$wrap"
	local rc=$?
	[ "$RC" = -1 ] || RC=$rc
	printf -v "$var" '%s' $(((te - t0) * 1000))
	REAP_NS=$(((${EPOCHREALTIME/./} - te) * 1000))
	EXIT_NS=-
	[ -z "$tj" ] || EXIT_NS=$(((te - tj) * 1000))
}

# finish_of: cprof's own "finish" ns from out.json, or -.
finish_of() {
	python3 -c 'import json, sys
try:
    print(json.load(open(sys.argv[1]))["finish"]["ns"])
except Exception:
    print("-")' "$WORK/out.json"
}

# one VARIANT BIN CONDITION COMMAND: a run; appends
# "condition command variant past_ns rc finish_ns exit_ns" to runs.
one() {
	local v=$1 bin=$2 cond=$3 cmd=$4 wall past tracer
	case $cmd in
	attach)
		timed wall "$bin" attach --source ptrace -p "$TPID" -F 1000 -d "${SECS}s" --stop thread \
			--json -o "$WORK/p.pb.gz"
		tracer=$(awk '/^TracerPid:/ { print $2 }' "/proc/$TPID/status" 2>/dev/null)
		[ "$tracer" = 0 ] || die "$v attach left the target traced (TracerPid ${tracer:-gone})"
		past=$((wall - SECS * 1000000000))
		;;
	record)
		# the command's own output is not record's JSON
		timed wall "$bin" record --source ptrace -F 1000 -d "${SECS}s" --json -o "$WORK/p.pb.gz" \
			-- sh -c 'exec "$0" -t 16 -s "$1" >/dev/null' "$EVLOOP" "$SECS"
		past=$((wall - SECS * 1000000000))
		;;
	dump-threads)
		timed wall "$bin" dump-threads -p "$TPID"
		past=$wall
		EXIT_NS=-	# its stdout is the dump, written as it goes
		;;
	esac
	kill -0 "$TPID" 2>/dev/null || die "evloop died during $v $cmd"
	echo "$cond $cmd $v $past $RC $(finish_of) $EXIT_NS $REAP_NS" >>"$WORK/runs"
}

measure() {
	local cond=$1 cmd i
	for cmd in attach record dump-threads; do
		for i in $(seq "$RUNS"); do
			one cprof "$BUILD/cprof" "$cond" "$cmd"
			[ -z "$BASE" ] || one baseline "$BASE/cprof" "$cond" "$cmd"
		done
	done
}

: >"$WORK/runs"
echo "machine: $(nproc) CPUs, $(uname -sr), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "disk of the work directory: $(df -P "$WORK" | awk 'NR == 2 { print $1 }') ($(findmnt -no FSTYPE -T "$WORK" 2>/dev/null))"
echo "cprof: $BUILD/cprof${BASE:+; baseline: $BASE/cprof}; $RUNS runs per command and condition, -d ${SECS}s"
echo
start_target
measure quiet
echo "load average before the load: $(cut -d' ' -f1-3 /proc/loadavg)"
start_load
measure loaded
bench_stop_load
stop_target

python3 - "$WORK/runs" "$CAP" <<'EOF' || die "cannot summarize the runs"
import sys
rows = {}
for line in open(sys.argv[1]):
    cond, cmd, v, past, rc, fin, ex, reap = line.split()
    rows.setdefault((cond, cmd, v), []).append((int(past) / 1e9, int(rc), fin, ex,
                                                int(reap) / 1e9))
def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100.0 * (len(xs) - 1))))]
print("time past -d in seconds to cprof's end, its process a zombie (dump-threads: its whole "
      "time); finish: cprof's own, end of sampling to profile written; exit: summary printed "
      "to its end; reap: its end to its reaping, the kernel's wait, not counted above")
print("%-7s %-13s %-9s %4s %8s %8s %8s %6s %5s %10s %8s %8s" % ("", "command", "variant", "runs",
      "median", "p90", "max", "not-0", "hung", "finish-max", "exit-max", "reap-max"))
for (cond, cmd, v) in sorted(rows, key=lambda k: (k[0] != "quiet", k[1], k[2])):
    r = rows[(cond, cmd, v)]
    past = [x[0] for x in r]
    fins = [int(x[2]) / 1e9 for x in r if x[2] != "-"]
    exits = [int(x[3]) / 1e9 for x in r if x[3] != "-"]
    print("%-7s %-13s %-9s %4d %8.2f %8.2f %8.2f %6d %5d %10s %8s %8.2f" % (
        cond, cmd, v, len(r), pct(past, 50), pct(past, 90), max(past),
        sum(1 for x in r if x[1] not in (0, -1)), sum(1 for x in r if x[1] == -1),
        "%.2f" % max(fins) if fins else "-", "%.2f" % max(exits) if exits else "-",
        max(x[4] for x in r)))
EOF
