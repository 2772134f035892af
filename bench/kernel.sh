#!/bin/bash
# SPDX-License-Identifier: MIT
# What do kernel frames cost?  `dd if=/dev/zero of=/dev/null bs=4k` (most of
# its time in the kernel) profiled by cprof's perf source with and without
# kernel frames, and by perf record -g, in the same run.
#
#   bench/kernel.sh [BUILDDIR]
#
# Variants, each on a window of KERNEL_SECS (default 4) of the same running
# dd, in an order rotated from round to round; KERNEL_RUNS rounds (default
# 3), at KERNEL_HZ samples per second (default 100):
#   unprofiled          nothing attached
#   cprof --kernel on   cprof attach --source perf (kernel frames)
#   cprof --kernel off  the same without them
#   perf record -g      perf record -g -F HZ -p PID (frame pointers), when
#                       perf runs here; else the row is left out, and a
#                       note says why
# Per row, the median over rounds (min and max) of:
#   MB/s      dd's reads per second over the window (/proc/PID/io rchar)
#   loss%     against the unprofiled median
#   samples   samples taken
#   kernel%   the share of the time in the kernel (cprof --json
#             kernel.share; perf report's [kernel.kallsyms] share)
#   us/smp    the profiler's whole CPU time (start, sampling, writing its
#             file: cprof's symbolization included, perf report not) per
#             sample; cprof's sampling thread alone in "loop us/smp"
# Figures only: it never fails on a timing.  Exit status 1 only on a real
# error (no cprof, a tool failed).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
ME=kernel
. "$HERE/lib.sh"

BUILD=${1:-./build}
bench_cprof "$BUILD"
bench_knobs KERNEL 3 4 100
bench_needs python3 "to read cprof --json"
bench_workdir

PERF_NOTE=""
VARIANTS=(unprofiled on off)
if command -v perf >/dev/null 2>&1 && perf record -q -o "$WORK/probe.data" -- true >/dev/null 2>&1; then
	VARIANTS+=(perf)
else
	PERF_NOTE="perf record cannot run here: its row is left out"
fi

rchar() { awk '$1 == "rchar:" { print $2 }' /proc/"$1"/io; }
# cpu_of FILE: user + system seconds from a /usr/bin/time -f "%U %S" line.
cpu_of() { awk 'END { printf "%.6f\n", $1 + $2 }' "$1"; }

# run_variant NAME: one window of dd under NAME; appends a line
# "NAME MB/s samples kernel% us/smp loop_us/smp" to $WORK/rows.
run_variant() {
	local v=$1 r0 r1 t0 t1 n=0 share=- cpu=- loop=-
	r0=$(rchar "$TPID")
	t0=$(date +%s%N)
	case $v in
	unprofiled)
		sleep "$SECS"
		;;
	on|off)
		/usr/bin/time -f "%U %S" -o "$WORK/time" "$BUILD/cprof" attach -p "$TPID" -d "${SECS}s" \
			-F "$HZ" --source perf --kernel "$v" -q --json -o "$WORK/p.pb.gz" >"$WORK/j" 2>"$WORK/err" ||
			die "cprof --kernel $v failed: $(cat "$WORK/err")"
		n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples"])' "$WORK/j")
		share=$(python3 -c 'import json,sys; k = json.load(open(sys.argv[1]))["kernel"]; print("%.1f" % (100 * k["share"]) if k["share"] is not None else "-")' "$WORK/j")
		loop=$(python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); print("%.1f" % (d["cprof_cpu_ns"] / 1e3 / max(d["samples"], 1)))' "$WORK/j")
		cpu=$(cpu_of "$WORK/time")
		;;
	perf)
		/usr/bin/time -f "%U %S" -o "$WORK/time" perf record -q -g -F "$HZ" -p "$TPID" \
			-o "$WORK/perf.data" -- sleep "$SECS" >"$WORK/err" 2>&1 || die "perf record failed: $(cat "$WORK/err")"
		perf report -i "$WORK/perf.data" --stdio --no-children --sort dso -g none >"$WORK/rep" 2>/dev/null
		n=$(awk '/^# Samples: / { n = $3; if (n ~ /K$/) n = 1000 * n; print int(n) }' "$WORK/rep")
		share=$(awk '$2 == "[kernel.kallsyms]" { sub(/%/, "", $1); print $1 }' "$WORK/rep")
		cpu=$(cpu_of "$WORK/time")
		;;
	esac
	t1=$(date +%s%N)
	r1=$(rchar "$TPID")
	awk -v v="$v" -v b=$((r1 - r0)) -v ns=$((t1 - t0)) -v n="$n" -v s="${share:--}" -v c="$cpu" -v l="$loop" \
		'BEGIN { printf "%s %.1f %d %s %s %s\n", v, b / 1e6 / (ns / 1e9), n,
			 s, c == "-" || n == 0 ? "-" : sprintf("%.1f", c * 1e6 / n), l }' >>"$WORK/rows"
}

: >"$WORK/rows"
for round in $(seq 1 "$RUNS"); do
	dd if=/dev/zero of=/dev/null bs=4k 2>/dev/null &
	TPID=$!
	sleep 0.5
	n=${#VARIANTS[@]}
	for i in $(seq 0 $((n - 1))); do
		run_variant "${VARIANTS[$(((i + round) % n))]}"
	done
	stop_target
done

echo "dd if=/dev/zero of=/dev/null bs=4k, $RUNS rounds of ${SECS} s windows at $HZ Hz; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$PERF_NOTE" ] || echo "note: $PERF_NOTE"
python3 - "$WORK/rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    v, mbs, n, share, us, loop = line.split()
    rows.setdefault(v, []).append((float(mbs), int(n), share, us, loop))
def med(xs):
    xs = [float(x) for x in xs if x != "-"]
    if not xs:
        return "-"
    return "%.1f (%.1f-%.1f)" % (statistics.median(xs), min(xs), max(xs))
base = statistics.median(r[0] for r in rows["unprofiled"])
names = {"unprofiled": "unprofiled", "on": "cprof --kernel on", "off": "cprof --kernel off",
         "perf": "perf record -g"}
print("%-20s %-22s %-7s %-8s %-20s %-20s %s" % ("variant", "MB/s", "loss%", "samples", "kernel%",
                                               "us/smp", "loop us/smp"))
for v in ("unprofiled", "on", "off", "perf"):
    if v not in rows:
        continue
    r = rows[v]
    mbs = statistics.median(x[0] for x in r)
    print("%-20s %-22s %-7.1f %-8d %-20s %-20s %s" % (names[v], med([x[0] for x in r]),
          100 * (1 - mbs / base) if base else 0, statistics.median(x[1] for x in r),
          med([x[2] for x in r]), med([x[3] for x in r]), med([x[4] for x in r])))
PY
