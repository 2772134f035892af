#!/bin/bash
# SPDX-License-Identifier: MIT
# How much of the time does wall-mode profiling stall a running thread among
# many sleeping ones, and what does cprof itself use?
#
#   bench/wall-stall.sh [BUILDDIR]
#
# Goals it informs: "a 64-thread target with one spinning thread, --mode
# wall, 100 Hz: the spinning thread stalled at most 1% of the time" and
# "cprof's own CPU at 100 Hz on the 64-thread target below 5% of one core".
#
# BUILDDIR (default ./build) holds a built cprof.  bench/stall-target.c is
# compiled here with gcc -O2 -g -pthread into a temporary directory and
# started with 64 threads: one spinner reading CLOCK_MONOTONIC in a tight
# loop, summing the gaps between consecutive readings longer than
# WALL_STALL_GAP_NS (default 20000: a ptrace stop costs 25-75 us), and 63
# threads napping 10-50 ms in nanosleep.  bench/freeze-target.c has the same
# idea but a fixed 50 us threshold, which would miss whole stops.
#
# WALL_STALL_RUNS rounds (default 3), variants interleaved and rotated from
# round to round, each WALL_STALL_SECS long (default 10) at WALL_STALL_HZ
# (default 100):
#   no profiler          sleep, the machine's own noise (other jobs preempt)
#   cprof wall/process   cprof attach --mode wall --stop process
#   cprof wall/thread    cprof attach --mode wall --stop thread
# The spinner's counters are reset (SIGUSR1) just before each and read back
# just after, so the window covers cprof's attach and detach too.  Stalled %
# = sum of gaps / window.  "added" is a variant's median minus the
# no-profiler median of this run.  cprof CPU % = cprof_cpu_ns / elapsed_ns
# from its --json, in % of one core.
#
# Figures only: it never fails on a timing.  Exit status 1 only on a real
# error (no cprof, no gcc, the target died or stopped answering, cprof
# failed).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-./build}
RUNS=${WALL_STALL_RUNS:-3}
SECS=${WALL_STALL_SECS:-10}
HZ=${WALL_STALL_HZ:-100}
GAP_NS=${WALL_STALL_GAP_NS:-20000}
CPROF="$BUILD/cprof"
die() { echo "wall-stall: $*" >&2; exit 1; }

[ -x "$CPROF" ] || die "no cprof in '$BUILD' (give the build directory as the first argument)"
for v in RUNS SECS HZ GAP_NS; do
	case ${!v} in ''|*[!0-9]*|0) die "WALL_STALL_$v must be a positive integer, not '${!v}'" ;; esac
done
command -v gcc >/dev/null || die "gcc is needed to build bench/stall-target.c"
command -v python3 >/dev/null || die "python3 is needed to read cprof --json"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/wall-stall.XXXXXX") || die "cannot create a temporary directory"
TPID=""
cleanup() {
	[ -n "$TPID" ] && kill -KILL "$TPID" 2>/dev/null
	[ -n "$TPID" ] && wait "$TPID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

gcc -O2 -g -pthread -o "$WORK/stall-target" "$HERE/stall-target.c" 2>"$WORK/gcc.err" ||
	die "cannot build stall-target: $(cat "$WORK/gcc.err")"

"$WORK/stall-target" -o "$WORK/gap" -t 64 -s 1 -g "$GAP_NS" -r "$WORK/ready" \
	</dev/null >/dev/null 2>"$WORK/target.err" &
TPID=$!
for _ in $(seq 200); do
	[ -e "$WORK/ready" ] && break
	kill -0 "$TPID" 2>/dev/null || die "stall-target died: $(cat "$WORK/target.err")"
	sleep 0.05
done
[ -e "$WORK/ready" ] || die "stall-target not ready within 10 s"
sleep 0.5

# read_gap: the spinner's figures since the last call, which restarts them;
# sets GAP ("MAXGAP_NS SUMGAPS_NS NGAPS WINDOW_NS").
read_gap() {
	rm -f "$WORK/gap"
	kill -USR1 "$TPID" 2>/dev/null || die "stall-target (pid $TPID) died: $(cat "$WORK/target.err")"
	for _ in $(seq 400); do
		[ -s "$WORK/gap" ] && break
		sleep 0.01
	done
	[ -s "$WORK/gap" ] || die "stall-target did not answer SIGUSR1 within 4 s (state $(awk '{print $3}' "/proc/$TPID/stat" 2>/dev/null))"
	GAP=$(cat "$WORK/gap")
}

# run_variant NAME: one run; appends "name maxgap sumgaps ngaps window
# [cprof figures]" to $WORK/runs.
run_variant() {
	local v=$1 stop rc
	read_gap	# restart the window
	case $v in
	none)
		sleep "$SECS"
		read_gap
		echo "$v $GAP" >>"$WORK/runs"
		;;
	wall/*)
		stop=${v#wall/}
		"$CPROF" attach -p "$TPID" -d "${SECS}s" -F "$HZ" --mode wall --stop "$stop" --json -q \
			-o "$WORK/p.pb.gz" >"$WORK/out" 2>"$WORK/err" </dev/null
		rc=$?
		read_gap
		[ $rc -eq 0 ] || die "cprof attach --mode wall --stop $stop failed (exit $rc): $(head -c 500 "$WORK/err")"
		python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); s = d["stop_ns"]
print(sys.argv[2], sys.argv[3], d["cprof_cpu_ns"], d["elapsed_ns"], d["samples"], d["stops"], s["p50"], s["p99"],
      s["total"], d["samples_unstopped"], d["samples_reused"], d["ticks"], d["ticks_missed"], d["threads_seen"])' \
			"$WORK/out" "$v" "$GAP" >>"$WORK/runs" || die "cannot read cprof --json: $(head -c 300 "$WORK/out")"
		;;
	esac
	kill -0 "$TPID" 2>/dev/null || die "stall-target died during $v"
}

: >"$WORK/runs"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "machine: $(nproc) CPUs, $(uname -sr), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "load average at start: $LOAD0"
echo "target: 64 threads (1 spinning, 63 napping 10-50 ms); gaps > $GAP_NS ns count as stalls"
echo "$RUNS rounds (WALL_STALL_RUNS), ${SECS} s each (WALL_STALL_SECS), ${HZ} Hz (WALL_STALL_HZ), variants interleaved"
echo

VS=(none wall/process wall/thread)
for r in $(seq 0 $((RUNS - 1))); do
	for i in 0 1 2; do
		run_variant "${VS[$(((i + r) % 3))]}"
	done
done

python3 - "$WORK/runs" <<'EOF'
import statistics, sys
order, data = [], {}
for line in open(sys.argv[1]):
    f = line.split()
    if f[0] not in data:
        order.append(f[0])
        data[f[0]] = []
    data[f[0]].append([int(x) for x in f[1:]])
order.sort(key=["none", "wall/process", "wall/thread"].index)
names = {"none": "no profiler", "wall/process": "cprof wall/process", "wall/thread": "cprof wall/thread"}
med = statistics.median
fmt = "%-20s %4s %22s %7s %9s %12s %22s"
print(fmt % ("variant", "runs", "stalled % med [min-max]", "added", "gaps/s", "max gap ms", "cprof CPU % med [min-max]"))
base = None
for v in order:
    rows = data[v]
    stalled = [100.0 * r[1] / r[3] for r in rows]
    gaps = [r[2] / (r[3] / 1e9) for r in rows]
    m = med(stalled)
    if v == "none":
        base = m
    added = "-" if v == "none" or base is None else "%+.3f" % (m - base)
    cpu = "-"
    if v != "none":
        c = [100.0 * r[4] / r[5] for r in rows]
        cpu = "%6.2f [%5.2f-%5.2f]" % (med(c), min(c), max(c))
    print(fmt % (names[v], len(rows), "%6.3f [%6.3f-%6.3f]" % (m, min(stalled), max(stalled)), added,
                 "%.0f" % med(gaps), "%.2f" % (max(r[0] for r in rows) / 1e6), cpu))
print()
for v in order:
    if v == "none":
        continue
    rows = data[v]
    # cprof fields after the 4 gap fields: cpu elapsed samples stops p50 p99 total unstopped reused ticks missed threads
    print("%-20s per run (median): samples %d (stopped %d, read in place %d, reused %d), stop p50 %.1f us, "
          "p99 %.1f us, stopped in all %.1f ms (%.3f%% of elapsed), ticks %d, missed %d, threads %d"
          % (names[v], med(r[6] for r in rows), med(r[7] for r in rows), med(r[11] for r in rows),
             med(r[12] for r in rows), med(r[8] for r in rows) / 1e3, med(r[9] for r in rows) / 1e3,
             med(r[10] for r in rows) / 1e6, med(100.0 * r[10] / r[5] for r in rows), med(r[13] for r in rows), med(r[14] for r in rows),
             med(r[15] for r in rows)))
print()
print("stalled %: the spinner's gaps over the threshold / its window (reset just before, read just after).")
print("added: a variant's median minus the no-profiler median of this run (points of wall time).")
print("cprof CPU %: cprof_cpu_ns / elapsed_ns from cprof --json, % of one core.")
print("stopped in all: cprof's stop_ns total, every thread; the rest of a variant's added stall is")
print("  preemption (cprof's own CPU, attach and exit included, competing on 2 CPUs) and noise.")
EOF
[ $? -eq 0 ] || die "cannot summarise the runs"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg) (start: $LOAD0)"
