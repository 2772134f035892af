#!/bin/bash
# SPDX-License-Identifier: MIT
# How long does cprof keep a thread stopped per sample, against the bare
# ptrace round trip measured in the same run?
#
#   bench/stop-time.sh [BUILDDIR [BASEDIR]]
#
# Goal it informs: "per-thread stop time (median) at most 1.3x the bare
# ptrace round trip (interrupt + wait + getregs + cont)".
#
# BUILDDIR (default ./build) holds a built cprof.  bench/ptrace-roundtrip.c
# and bench/stall-target.c are compiled here with gcc -O2 -g -pthread into a
# temporary directory.  Two targets, one after the other:
#   spin   stall-target -t 2 -s 2: two threads spinning on clock_gettime
#   sleep  stall-target -t 2 -s 0 -n 1:5: two threads looping on nanosleep
#          of 1-5 ms (they run between ticks, so cprof may have to stop them)
# On each, STOP_TIME_RUNS runs (default 5), variants interleaved and their
# order rotated from run to run, each for STOP_TIME_SECS (default 2) at
# 100 Hz:
#   bare rt          ptrace-roundtrip, one thread at a time, 100 rounds/s,
#                    blocking in waitpid (so the tracer's wake-up latency
#                    is in it: milliseconds when the CPUs are busy)
#   bare rt -s       the same polling waitpid(WNOHANG) for up to 100 us
#                    before blocking: the tracer stays on its CPU while a
#                    running thread reaches its stop
#   bare rt -a       blocking, all threads interrupted first, then each
#                    waited for, read and resumed (what --stop process does)
#   cprof cpu/process, cpu/thread   cprof attach --json
#   cprof wall/process, wall/thread (sleep target only)
#   base cpu/process ...            the same with BASEDIR's cprof, when given
#                                   (a build of the version to compare with)
# Per variant: the median over runs of the per-run p50 (min and max of it),
# the same for p99, and the stops per run.  Ratios are cprof's median p50
# against the bare one-at-a-time round trip's median p50 (blocking: "x rt";
# polling: "x rt-s"), from this run; for cprof also its CPU time per sample
# (--json cprof_cpu_ns / samples).
# Two caveats printed with the table: cprof's stop_ns ends before its
# PTRACE_CONT (so "span" figures are given for the bare tool too, interrupt
# to just before CONT), and cprof's percentiles are lower bounds of
# log-linear buckets 12.5% wide (so ratios against the bare p50s bucketed
# the same way are printed too).  cprof also copies the stack (from SP, up to 64 KiB by default) while the
# thread is stopped; the bare round trip does not: that is part of what the
# ratio measures.
#
# Figures only: it never fails on a timing.  Exit status 1 only on a real
# error (no cprof, no gcc, a target died, a tool failed).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-./build}
RUNS=${STOP_TIME_RUNS:-5}
SECS=${STOP_TIME_SECS:-2}
HZ=100
CPROF="$BUILD/cprof"
BASE=${2:-}
ME=stop-time
. "$HERE/lib.sh"

[ -x "$CPROF" ] || die "no cprof in '$BUILD' (give the build directory as the first argument)"
[ -z "$BASE" ] || [ -x "$BASE/cprof" ] || die "no cprof in the baseline '$BASE'"
bench_positive STOP_TIME_RUNS "$RUNS"
bench_positive STOP_TIME_SECS "$SECS" seconds
command -v gcc >/dev/null || die "gcc is needed to build the bench programs"
command -v python3 >/dev/null || die "python3 is needed to read cprof --json"

bench_workdir

for prog in ptrace-roundtrip stall-target; do
	gcc -O2 -g -pthread -o "$WORK/$prog" "$HERE/$prog.c" 2>"$WORK/gcc.err" ||
		die "cannot build $prog: $(cat "$WORK/gcc.err")"
done

# start_target ARGS...: starts stall-target, waits until its threads exist.
start_target() {
	rm -f "$WORK/ready"
	"$WORK/stall-target" -o "$WORK/gap" -r "$WORK/ready" "$@" </dev/null >/dev/null 2>"$WORK/target.err" &
	TPID=$!
	for _ in $(seq 200); do
		[ -e "$WORK/ready" ] && break
		kill -0 "$TPID" 2>/dev/null || die "stall-target died: $(cat "$WORK/target.err")"
		sleep 0.05
	done
	[ -e "$WORK/ready" ] || die "stall-target not ready within 10 s"
	sleep 0.3
}

# run_variant TARGET COMM VARIANT: one run; appends
# "target variant p50_ns p99_ns stops span_p50_ns" to $WORK/runs.
run_variant() {
	local target=$1 comm=$2 v=$3 mode stop
	case $v in
	bare|bare-a|bare-s)
		local flag=""
		[ "$v" = bare-a ] && flag=-a
		[ "$v" = bare-s ] && flag=-s
		"$WORK/ptrace-roundtrip" -p "$TPID" -c "$comm" -n $((SECS * HZ)) -i $((1000000 / HZ)) $flag \
			>"$WORK/out" 2>"$WORK/err" || die "ptrace-roundtrip $flag failed on the $target target: $(cat "$WORK/err")"
		# threads N stops M rt_p50_us X rt_p99_us X rt_max_us X stop_p50_us X stop_p99_us X
		awk -v t="$target" -v v="$v" '{ printf "%s %s %.0f %.0f %d %.0f\n", t, v, $6 * 1000, $8 * 1000, $4, $12 * 1000 }' \
			"$WORK/out" >>"$WORK/runs"
		;;
	cprof-*|base-*)
		local bin=$CPROF
		[ "${v%%-*}" = base ] && bin=$BASE/cprof
		mode=${v#*-}; stop=${mode#*/}; mode=${mode%/*}
		"$bin" attach -p "$TPID" -d "${SECS}s" -F "$HZ" --mode "$mode" --stop "$stop" --json -q \
			-o "$WORK/p.pb.gz" >"$WORK/out" 2>"$WORK/err" </dev/null ||
			die "cprof attach --mode $mode --stop $stop failed on the $target target: $(head -c 500 "$WORK/err")"
		python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); s = d["stop_ns"]
print(sys.argv[2], sys.argv[3], s["p50"], s["p99"], d["stops"], -1, d["samples"], d["samples_unstopped"], d["samples_reused"], d["ticks_missed"], d["cprof_cpu_ns"])' \
			"$WORK/out" "$target" "$v" >>"$WORK/runs" || die "cannot read cprof --json: $(head -c 300 "$WORK/out")"
		;;
	esac
	kill -0 "$TPID" 2>/dev/null || die "the $target target died during $v"
}

# bench TARGET COMM VARIANTS...: RUNS runs, order rotated each run.
bench() {
	local target=$1 comm=$2 r i n
	shift 2
	local vs=("$@")
	n=${#vs[@]}
	for r in $(seq 0 $((RUNS - 1))); do
		for i in $(seq 0 $((n - 1))); do
			run_variant "$target" "$comm" "${vs[$(((i + r) % n))]}"
		done
	done
}

: >"$WORK/runs"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "machine: $(nproc) CPUs, $(uname -sr), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "load average at start: $LOAD0"
echo "$RUNS runs per variant (STOP_TIME_RUNS), ${SECS} s each (STOP_TIME_SECS), ${HZ} Hz, variants interleaved"
echo

SPIN=(bare bare-s bare-a cprof-cpu/process cprof-cpu/thread)
SLEEP=(bare bare-s bare-a cprof-cpu/process cprof-cpu/thread cprof-wall/process cprof-wall/thread)
if [ -n "$BASE" ]; then
	echo "baseline: $BASE/cprof (the base rows)"
	SPIN+=(base-cpu/process base-cpu/thread)
	SLEEP+=(base-cpu/process base-cpu/thread base-wall/process base-wall/thread)
fi
start_target -t 2 -s 2
bench spin spinner "${SPIN[@]}"
stop_target
start_target -t 2 -s 0 -n 1:5
bench sleep napper "${SLEEP[@]}"
stop_target

python3 - "$WORK/runs" <<'EOF'
import statistics, sys

def bucket_floor(v):
    # cprof's histogram (unwind/tracer.c): 8 buckets per power of two, the
    # percentile reported as its bucket's lower bound
    v = int(v)
    if v < 8:
        return v
    e = v.bit_length() - 1
    return ((v >> (e - 3)) & 7 | 8) << (e - 3)

order, data = [], {}
for line in open(sys.argv[1]):
    f = line.split()
    key = (f[0], f[1])
    if key not in data:
        order.append(key)
        data[key] = []
    data[key].append([int(x) for x in f[2:]])

names = {"bare": "bare rt, one at a time", "bare-s": "bare rt -s, polls 100us",
         "bare-a": "bare rt -a, all together"}
us = lambda ns: ns / 1e3
med = statistics.median
fmt = "%-6s %-26s %4s %9s %21s %23s %7s %7s"
print(fmt % ("target", "variant", "runs", "stops/run", "p50 us med [min-max]", "p99 us med [min-max]",
             "x rt", "x rt-s"))
for target in ("spin", "sleep"):
    bp50 = {}
    for b in ("bare", "bare-s"):
        if (target, b) in data:
            bp50[b] = med(r[0] for r in data[(target, b)])
    for key in [k for k in order if k[0] == target]:
        rows = data[key]
        stops = med(r[2] for r in rows)
        p50s = [r[0] for r in rows if r[2] > 0]
        p99s = [r[1] for r in rows if r[2] > 0]
        name = names.get(key[1], key[1].replace("-", " ", 1))
        if not p50s:
            print(fmt % (target, name, len(rows), "%g" % stops, "no stops", "-", "-", "-"))
            continue
        m50 = med(p50s)
        ratios = ["-", "-"]
        if key[1].startswith(("cprof", "base")):
            ratios = ["%.2fx" % (m50 / bp50[b]) if bp50.get(b) else "-" for b in ("bare", "bare-s")]
        print(fmt % (target, name, len(rows), "%g" % stops,
                     "%7.1f [%5.1f-%5.1f]" % (us(m50), us(min(p50s)), us(max(p50s))),
                     "%7.1f [%6.1f-%6.1f]" % (us(med(p99s)), us(min(p99s)), us(max(p99s))),
                     ratios[0], ratios[1]))
    for b in ("bare", "bare-s"):
        if b in bp50:
            print("%-6s   %-24s span interrupt..before CONT (what cprof's stop_ns covers) p50 med %.1f us;"
                  " p50 bucketed as cprof does %.1f us"
                  % (target, names[b].split(",")[0], us(med(r[3] for r in data[(target, b)])),
                     us(bucket_floor(bp50[b]))))
    for k in [k for k in order if k[0] == target and k[1].startswith(("cprof", "base"))]:
        rows = data[k]
        p50s = [r[0] for r in rows if r[2] > 0]
        bucketed = ", ".join("x %s(b) %s" % ("rt" if b == "bare" else "rt-s",
                                             "%.2f" % (med(p50s) / bucket_floor(bp50[b])) if p50s else "-")
                             for b in ("bare", "bare-s") if b in bp50)
        print("%-6s   %-24s samples/run %g (read in place %g, reused %g), ticks missed %g, "
              "cprof CPU %.1f us/sample; %s"
              % (target, k[1].replace("-", " ", 1), med(r[4] for r in rows),
                 med(r[5] for r in rows), med(r[6] for r in rows), med(r[7] for r in rows),
                 med(r[8] / 1e3 / r[4] if r[4] else 0.0 for r in rows), bucketed))
    print()
print("x rt, x rt-s: cprof's median p50 / the bare one-at-a-time round trip's median p50 (same run),")
print("  blocking in waitpid (rt) or polling it 100 us first (rt-s).  (b): against that bare p50 rounded down to")
print("  cprof's histogram bucket (cprof reports bucket lower bounds, up to 12.5% under the true value).")
print("cprof's stop includes copying the stack (from SP, at most --stack-size, 64 KiB); the bare round trip")
print("  only reads registers.  base: the cprof of BASEDIR, run interleaved with this one.")
EOF
[ $? -eq 0 ] || die "cannot summarise the runs"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg) (start: $LOAD0)"
