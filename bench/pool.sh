#!/bin/bash
# SPDX-License-Identifier: MIT
# What does cprof cost on a 1,000-thread pool, and does the cost grow with
# threads that do not run?
#
#   bench/pool.sh [BUILDDIR [BASELINE_BUILDDIR]]
#
# BUILDDIR (default ./build) holds the cprof measured; BASELINE_BUILDDIR, if
# given, another cprof (say, an older version) run in the same session on the
# same targets, variants interleaved: the ratios are against it.
# tests/targets/pool.c is compiled here with gcc -O2 -g -pthread.  Targets:
#   parked   1000 threads napping 1 s (nanosleep) + 2 spinning
#   waking   1000 threads napping 20 ms (50,000 wake-ups a second) + 2 spinning
# Each in --mode cpu and --mode wall at POOL_HZ (default 100), POOL_RUNS
# runs (default 3) of POOL_SECS (default 5) each, a fresh target per run.
# perf record -F at the same rate with frame pointers (-g) on the same
# target, when perf is installed and allowed, is the anchor row (its CPU
# share, from its own process times; it samples on-CPU only, so it has no
# wall row).
# Per row, the median over runs (min and max) of:
#   cpu%     cprof's CPU time / elapsed time (one core = 100)
#   missed%  ticks skipped because cprof fell behind / ticks due
#   us/smp   cprof's CPU time per sample
#   cover%   wall: samples / (threads x ticks due), how many of the
#            threads x ticks the profile stands for
#   total%   wall: the profile's total wall time / (threads x elapsed):
#            100 when totals are unbiased
#   eff Hz   samples per thread per second (wall), or per running thread
#            (cpu: 2 spinning threads)
#   work%    the spinning threads' throughput (their loop counter, read
#            from the target's memory before and after) / the median of
#            the runs with no profiler attached ("no profiler" rows),
#            measured in the same session, interleaved
#
# Figures only: it never fails on a timing.  Exit status 1 only on a real
# error (no cprof, no gcc, a target died, a tool failed).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-./build}
BASE=${2:-}
RUNS=${POOL_RUNS:-3}
SECS=${POOL_SECS:-5}
HZ=${POOL_HZ:-100}
THREADS=1000
ME=pool
. "$HERE/lib.sh"

[ -x "$BUILD/cprof" ] || die "no cprof in '$BUILD' (give the build directory as the first argument)"
[ -z "$BASE" ] || [ -x "$BASE/cprof" ] || die "no cprof in baseline '$BASE'"
bench_positive POOL_RUNS "$RUNS"
bench_positive POOL_SECS "$SECS" seconds
bench_positive POOL_HZ "$HZ"
command -v gcc >/dev/null || die "gcc is needed to build the target"
command -v python3 >/dev/null || die "python3 is needed to read cprof --json"

bench_workdir

gcc -O2 -g -pthread -I"$HERE/../tests/targets" -o "$WORK/pool" "$HERE/../tests/targets/pool.c" \
	2>"$WORK/gcc.err" || die "cannot build the pool target: $(cat "$WORK/gcc.err")"

PERF=""
if command -v perf >/dev/null; then
	sleep 30 & sp=$!
	if perf record -q -F "$HZ" -g -o "$WORK/probe.data" -p "$sp" -- sleep 0.2 >/dev/null 2>&1; then
		PERF=perf
	fi
	kill "$sp" 2>/dev/null; wait "$sp" 2>/dev/null
fi

start_target() {
	rm -f "$WORK/ready"
	"$WORK/pool" -n "$THREADS" -b 2 -p "$1" -s 600 -r "$WORK/ready" </dev/null >/dev/null \
		2>"$WORK/target.err" &
	TPID=$!
	for _ in $(seq 400); do
		[ -e "$WORK/ready" ] && break
		kill -0 "$TPID" 2>/dev/null || die "the pool target died: $(cat "$WORK/target.err")"
		sleep 0.05
	done
	[ -e "$WORK/ready" ] || die "the pool target is not ready within 20 s"
	sleep 0.5
}

# counter: the pool's spin_counter (the spinning threads' work), read from
# the target's memory at the symbol's address (PIE: from the executable's
# first mapping).
COUNTER_OFF=$(nm "$WORK/pool" | awk '$3 == "spin_counter" { print $1 }')
[ -n "$COUNTER_OFF" ] || die "no spin_counter symbol in the pool target"
counter() {
	python3 - "$TPID" "$COUNTER_OFF" "$WORK/pool" <<'EOF'
import os, struct, sys
pid, off, exe = int(sys.argv[1]), int(sys.argv[2], 16), os.path.realpath(sys.argv[3])
base = None
for line in open("/proc/%d/maps" % pid):
    f = line.split()
    if len(f) >= 6 and f[5] == exe:
        base = int(f[0].split("-")[0], 16) - int(f[2], 16)
        break
with open("/proc/%d/mem" % pid, "rb") as m:
    m.seek(base + off)
    print(struct.unpack("<Q", m.read(8))[0])
EOF
}

# run_variant TARGET NAP VARIANT: one run on a fresh target; appends
# "target variant cpu% missed% us/sample cover% total% effhz rate" to runs
# (rate: the spinning threads' counter per second meanwhile).
run_variant() {
	local target=$1 nap=$2 v=$3 mode bin n c0 c1 t0 t1
	start_target "$nap"
	c0=$(counter) || die "cannot read the pool's counter"
	t0=$(date +%s%N)
	case $v in
	none)
		sleep "$SECS"
		echo "$target none - - - - - -" >>"$WORK/runs"
		;;
	perf)
		/usr/bin/time -f '%U %S %e' -o "$WORK/time" perf record -q -F "$HZ" -g -o "$WORK/perf.data" \
			-p "$TPID" -- sleep "$SECS" >/dev/null 2>"$WORK/err" ||
			die "perf record failed: $(head -c 300 "$WORK/err")"
		n=$(perf script -i "$WORK/perf.data" -F tid 2>/dev/null | wc -l)
		awk -v t="$target" -v n="$n" -v secs="$SECS" '{ cpu = $1 + $2;
			printf "%s perf %.2f - %.1f - - %.1f\n", t, 100 * cpu / $3, n ? cpu * 1e6 / n : 0, n / 2 / secs }' \
			"$WORK/time" >>"$WORK/runs"
		;;
	*)
		mode=${v#*/}
		bin=$BUILD/cprof
		[ "${v%/*}" = base ] && bin=$BASE/cprof
		"$bin" attach -p "$TPID" -d "${SECS}s" -F "$HZ" --mode "$mode" --json -q \
			-o "$WORK/p.pb.gz" >"$WORK/out" 2>"$WORK/err" </dev/null ||
			die "$bin attach --mode $mode failed on the $target pool: $(head -c 500 "$WORK/err")"
		python3 - "$WORK/out" "$target" "$v" "$mode" "$HZ" "$THREADS" >>"$WORK/runs" <<'EOF' ||
import json, sys
d = json.load(open(sys.argv[1]))
target, v, mode, hz, threads = sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]) + 3
el = d["elapsed_ns"] / 1e9
due = d["ticks"] + d["ticks_missed"]
cpu = 100 * d["cprof_cpu_ns"] / d["elapsed_ns"]
missed = 100 * d["ticks_missed"] / due if due else 0
per = d["cprof_cpu_ns"] / 1e3 / d["samples"] if d["samples"] else 0
if mode == "wall":
    cover = "%.1f" % (100 * d["samples"] / (threads * due)) if due else "-"
    total = "%.1f" % (100 * d["value_ns"] / (threads * d["elapsed_ns"]))
    eff = d["samples"] / threads / el
else:
    cover, total = "-", "-"
    eff = d["samples"] / 2 / el
print(target, v, "%.2f" % cpu, "%.2f" % missed, "%.1f" % per, cover, total, "%.1f" % eff)
EOF
			die "cannot read cprof --json: $(head -c 300 "$WORK/out")"
		;;
	esac
	t1=$(date +%s%N)
	c1=$(counter) || die "the $target pool died during $v"
	# (the rate goes at the end of the line just written)
	sed -i '$ s/$/ '"$(awk -v a="$c0" -v b="$c1" -v t="$((t1 - t0))" 'BEGIN { printf "%.0f", (b - a) * 1e9 / t }')"'/' \
		"$WORK/runs"
	kill -0 "$TPID" 2>/dev/null || die "the $target pool died during $v"
	stop_target
}

VARIANTS=(none new/cpu new/wall)
[ -n "$BASE" ] && VARIANTS+=(base/cpu base/wall)
[ -n "$PERF" ] && VARIANTS+=(perf)

: >"$WORK/runs"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "machine: $(nproc) CPUs, $(uname -sr), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "load average at start: $LOAD0"
echo "cprof: $BUILD/cprof${BASE:+; baseline: $BASE/cprof}${PERF:+; anchor: perf record -F $HZ -g}"
echo "$RUNS runs per variant (POOL_RUNS), ${SECS} s each (POOL_SECS), ${HZ} Hz, $THREADS parked + 2 spinning threads"
echo
n=${#VARIANTS[@]}
for r in $(seq 0 $((RUNS - 1))); do
	for target in parked waking; do
		nap=1000
		[ "$target" = waking ] && nap=20
		for i in $(seq 0 $((n - 1))); do
			run_variant "$target" "$nap" "${VARIANTS[$(((i + r) % n))]}"
		done
	done
done

python3 - "$WORK/runs" "${BASE:+1}" <<'EOF'
import sys
from collections import defaultdict
rows = defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    rows[(f[0], f[1])].append(f[2:])
def col(vals, i):
    xs = sorted(float(v[i]) for v in vals if v[i] != "-")
    if not xs:
        return None, "-"
    med = xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2
    return med, "%.1f [%.1f-%.1f]" % (med, xs[0], xs[-1])
names = {"new/cpu": "cprof cpu", "new/wall": "cprof wall", "base/cpu": "baseline cpu",
         "base/wall": "baseline wall", "perf": "perf -F -g", "none": "no profiler"}
hdr = ("target", "variant", "cpu% med [min-max]", "missed%", "us/sample", "cover%", "total%",
       "eff Hz", "work% med [min-max]")
print("%-7s %-13s %-20s %-20s %-22s %-18s %-18s %-18s %s" % hdr)
meds = {}
for target in ("parked", "waking"):
    rates = sorted(float(v[6]) for v in rows.get((target, "none"), []))
    ref = rates[len(rates) // 2] if rates else 0
    for v in ("none", "new/cpu", "base/cpu", "new/wall", "base/wall", "perf"):
        vals = rows.get((target, v))
        if not vals:
            continue
        cells = [col(vals, i) for i in range(6)]
        meds[(target, v)] = [c[0] for c in cells]
        work = [["%.1f" % (100 * float(x[6]) / ref) if ref else "-"] for x in vals]
        print("%-7s %-13s %-20s %-20s %-22s %-18s %-18s %-18s %s" %
              ((target, names[v]) + tuple(c[1] for c in cells) + (col(work, 0)[1],)))
if sys.argv[2:] and sys.argv[2]:
    print()
    for target in ("parked", "waking"):
        for mode in ("cpu", "wall"):
            a, b = meds.get((target, "new/" + mode)), meds.get((target, "base/" + mode))
            if a and b and b[0]:
                print("%s %s: cprof CPU %.2fx the baseline's, CPU per sample %.2fx" %
                      (target, mode, a[0] / b[0], a[2] / b[2] if b[2] else float("nan")))
for target in ("parked", "waking"):
    a, p = meds.get((target, "new/cpu")), meds.get((target, "perf"))
    if a and p and p[0]:
        print("%s: cprof cpu mode's CPU %.2fx perf record -g's" % (target, a[0] / p[0]))
EOF
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg) (start: $LOAD0)"
