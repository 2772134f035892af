#!/bin/bash
# SPDX-License-Identifier: MIT
# How long does taking every thread's stack freeze a running thread?
#
#   bench/dump-freeze.sh [BUILDDIR] [K]
#
# BUILDDIR (default ./build) holds a built cprof; K (default 10) runs per tool
# (K/2 for gdb, which is slow).  bench/freeze-target.c is compiled here with
# gcc -O2 -g -pthread into a temporary directory and started with 64 threads:
# one spinner that records the largest gap between consecutive
# CLOCK_MONOTONIC readings (the freeze it felt) and 63 threads napping in
# nanosleep.  Before each run the target's gap is reset; after it, read back
# (SIGUSR1).  Per tool: the spinner's freeze (median and max over the runs)
# and the wall time of the dump (median); for cprof also its own report of the
# freeze and of the time threads spent stopped in all (from --json).  Ratios
# are against eu-stack, measured in the same run.  The "no dump" row is the
# spinner's own noise over 100 ms with nothing attached.
#
# Figures only: it never fails on a timing.  A missing tool is reported and
# its row skipped; exit status 1 only on a real error (no cprof, no gcc, the
# target died or stopped answering, a tool failed on the target).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-./build}
K=${2:-10}
CPROF="$BUILD/cprof"
die() { echo "dump-freeze: $*" >&2; exit 1; }

[ -x "$CPROF" ] || die "no cprof in '$BUILD' (give the build directory as the first argument)"
case $K in ''|*[!0-9]*|0) die "K must be a positive number of runs, not '$K'" ;; esac
command -v gcc >/dev/null || die "gcc is needed to build bench/freeze-target.c"
command -v python3 >/dev/null || die "python3 is needed to read cprof --json"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dump-freeze.XXXXXX") || die "cannot create a temporary directory"
TPID=""
cleanup() {
	[ -n "$TPID" ] && kill -KILL "$TPID" 2>/dev/null
	[ -n "$TPID" ] && wait "$TPID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

gcc -O2 -g -pthread -o "$WORK/freeze-target" "$HERE/freeze-target.c" 2>"$WORK/gcc.err" ||
	die "cannot build freeze-target: $(cat "$WORK/gcc.err")"

"$WORK/freeze-target" -o "$WORK/gap" -t 64 -r "$WORK/ready" </dev/null >/dev/null 2>"$WORK/target.err" &
TPID=$!
for _ in $(seq 200); do
	[ -e "$WORK/ready" ] && break
	kill -0 "$TPID" 2>/dev/null || die "freeze-target died: $(cat "$WORK/target.err")"
	sleep 0.05
done
[ -e "$WORK/ready" ] || die "freeze-target not ready within 10 s"
sleep 0.5

now_ns() { date +%s%N; }

# read_gap: ask the target for its largest gap (and sum of gaps) since the
# last ask and reset them; sets GAP_NS and SUMGAP_NS.
read_gap() {
	rm -f "$WORK/gap"
	kill -USR1 "$TPID" 2>/dev/null || die "freeze-target (pid $TPID) died: $(cat "$WORK/target.err")"
	for _ in $(seq 400); do
		[ -s "$WORK/gap" ] && break
		sleep 0.01
	done
	[ -s "$WORK/gap" ] || die "freeze-target did not answer SIGUSR1 within 4 s (state $(awk '{print $3}' "/proc/$TPID/stat" 2>/dev/null))"
	read -r GAP_NS SUMGAP_NS <"$WORK/gap"
}

# measure NAME RUNS COMMAND...: RUNS runs of COMMAND against the target.
# Appends "name gap_ns wall_ns" lines to $WORK/runs.
measure() {
	local name=$1 runs=$2 i t0 t1
	shift 2
	for i in $(seq "$runs"); do
		read_gap	# reset
		t0=$(now_ns)
		"$@" >"$WORK/out" 2>"$WORK/err" </dev/null
		local rc=$?
		t1=$(now_ns)
		read_gap
		kill -0 "$TPID" 2>/dev/null || die "freeze-target died during $name"
		if [ "$rc" -ne 0 ] && [ "$name" != "no dump" ]; then
			die "$name failed (exit $rc) on the target: $(head -c 500 "$WORK/err")"
		fi
		echo "$name $GAP_NS $((t1 - t0)) $SUMGAP_NS" >>"$WORK/runs"
		if [ "$name" = "cprof dump-threads" ] && [ -s "$WORK/out" ] && [ "${CPROF_JSON:-}" = 1 ]; then
			python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["freeze_ns"], d["stopped_ns"], d["threads_stopped"], len(d["threads"]))' \
				"$WORK/out" >>"$WORK/cprof-self" || die "cannot read cprof --json"
		fi
	done
}

: >"$WORK/runs"
: >"$WORK/cprof-self"
echo "machine: $(nproc) CPUs, $(uname -sr), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "target: 64 threads (1 spinning, 63 napping 10-50 ms), $K runs per tool ($(( (K + 1) / 2 )) for gdb)"
echo

measure "no dump" "$K" sleep 0.1
CPROF_JSON=1 measure "cprof dump-threads" "$K" "$CPROF" dump-threads -p "$TPID" -q --json
# once without -q, for cprof's own summary line
"$CPROF" dump-threads -p "$TPID" >/dev/null 2>"$WORK/summary" || die "cprof dump-threads failed: $(cat "$WORK/summary")"
SKIPPED=""
if command -v eu-stack >/dev/null; then
	measure "eu-stack -i -s" "$K" eu-stack -i -s -p "$TPID"
	measure "eu-stack" "$K" eu-stack -p "$TPID"
else
	SKIPPED="$SKIPPED eu-stack"
fi
if command -v gdb >/dev/null; then
	measure "gdb thread apply all bt" $(( (K + 1) / 2 )) gdb -nx -q -p "$TPID" -batch -ex 'thread apply all bt'
else
	SKIPPED="$SKIPPED gdb"
fi
kill -0 "$TPID" 2>/dev/null || die "freeze-target died"

python3 - "$WORK/runs" "$WORK/cprof-self" "$WORK/summary" "$SKIPPED" <<'EOF'
import statistics, sys
runs, self_path, summary_path, skipped = sys.argv[1:5]
order, data = [], {}
for line in open(runs):
    *name, gap, wall, sumgap = line.split()
    name = " ".join(name)
    if name not in data:
        order.append(name)
        data[name] = []
    data[name].append((int(gap), int(wall), int(sumgap)))
ms = lambda ns: ns / 1e6
med = {n: (statistics.median(g for g, _, _ in v), statistics.median(w for _, w, _ in v)) for n, v in data.items()}
print("%-24s %4s %14s %14s %14s %12s" % ("tool", "runs", "freeze med ms", "freeze max ms", "gaps>50us ms", "wall med ms"))
for n in order:
    v = data[n]
    print("%-24s %4d %14.3f %14.3f %14.3f %12.1f" % (n, len(v), ms(med[n][0]), ms(max(g for g, _, _ in v)),
          ms(statistics.median(s for _, _, s in v)), ms(med[n][1])))
for s in skipped.split():
    print("%-24s  skipped: %s is not installed" % (s, s))
ref = "eu-stack -i -s"
if ref in med and med[ref][0] > 0:
    print()
    print("ratios against %s (same run; < 1: less than eu-stack):" % ref)
    for n in order:
        if n in (ref, "no dump"):
            continue
        print("  %-24s freeze %6.3fx   wall %6.3fx" % (n, med[n][0] / med[ref][0], med[n][1] / med[ref][1]))
selfrep = [l.split() for l in open(self_path) if l.strip()]
if selfrep:
    fz = [int(f) for f, _, _, _ in selfrep]
    st = [int(s) for _, s, _, _ in selfrep]
    print()
    print("cprof's own report over %d runs: freeze median %.3f ms (max %.3f), stopped in all median %.3f ms (max %.3f), threads stopped median %d of %s"
          % (len(selfrep), ms(statistics.median(fz)), ms(max(fz)), ms(statistics.median(st)), ms(max(st)),
             statistics.median(int(n) for _, _, n, _ in selfrep), selfrep[0][3]))
print("cprof summary (one run without -q): " + open(summary_path).read().strip())
EOF
