#!/bin/bash
# SPDX-License-Identifier: MIT
# What does profiling a Go program cost, the kernel sampling it?  A Go
# program with two busy goroutines (bench/go-work: crypto/sha256 hashing,
# sort.Ints) profiled by cprof (auto: perf events, the kernel's
# frame-pointer walk where a stack switches), by cprof at stops, and by
# perf record -g, in the same run.
#
#   bench/go-perf.sh [BUILDDIR [BASELINE_BUILDDIR]]
#
# BASELINE_BUILDDIR, if given, holds another cprof, run as "baseline auto"
# on the same windows, so that two builds are compared in the same run.
# Variants, each on a window of GO_PERF_SECS (default 4) of the same running
# program, in an order rotated from round to round; GO_PERF_RUNS rounds
# (default 3), at GO_PERF_HZ samples per second (default 100):
#   unprofiled          nothing attached
#   cprof auto          cprof attach (auto: perf events for a Go program)
#   cprof ptrace        cprof attach --source ptrace (stops)
#   baseline auto       BASELINE_BUILDDIR's cprof attach, when given
#   perf record -g      perf record -g -F HZ -p PID (frame pointers), when
#                       perf runs here; else the row is left out
# Per row, the median over rounds (min and max) of:
#   work/s    the program's units of work per second over the window
#   loss%     against the unprofiled median
#   samples   samples taken
#   rooted%   cprof: the samples whose walk reached a root (--json unwind)
#   us/smp    the profiler's whole CPU time (start, sampling, writing its
#             file: cprof's symbolization included, perf report not) per
#             sample
#   cpu%      the same, as a share of one CPU over the window
#   loop us/smp  cprof's sampling thread alone (--json cprof_cpu_ns) per
#             sample: the figure the goal of 25 us is about
#   sig/smp   cprof: signals it passed on (Go's preemption, SIGURG) per
#             sample: the threads are still ptrace-seized, so each signal
#             stops its thread until cprof passes it on, in cprof's time
#   drains/s  cprof: emptyings of the perf rings a second (--json
#             perf.drains), each a wake-up of the sampling thread
#   load      the 1-minute load average at the end of each window
# The load average is printed at the start and the end.  Figures only: it
# never fails on a timing.  Exit status 1 only on a real error (no cprof,
# no go, a tool failed).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
ME=go-perf
. "$HERE/lib.sh"

BUILD=${1:-./build}
BASE=${2:-}
GO=${GO:-go}
bench_cprof "$BUILD"
NEW_CPROF=$CPROF
if [ -n "$BASE" ]; then
	bench_cprof "$BASE"
	BASE_CPROF=$CPROF
	CPROF=$NEW_CPROF
fi
bench_knobs GO_PERF 3 4 100
bench_needs python3 "to read cprof --json"
bench_needs "$GO" "to build the Go program"
bench_workdir

export GOCACHE=${GOCACHE:-$WORK/gocache} GOPATH=${GOPATH:-$WORK/gopath} GOFLAGS= GOPROXY=off
[ -n "${HOME:-}" ] || export HOME="$WORK"
(cd "$HERE/go-work" && "$GO" build -o "$WORK/go-work" .) >"$WORK/go.err" 2>&1 ||
	die "cannot build bench/go-work: $(cat "$WORK/go.err")"

PERF_NOTE=""
VARIANTS=(unprofiled auto ptrace)
[ -z "$BASE" ] || VARIANTS+=(base)
if command -v perf >/dev/null 2>&1 && perf record -q -o "$WORK/probe.data" -- true >/dev/null 2>&1; then
	VARIANTS+=(perf)
else
	PERF_NOTE="perf record cannot run here: its row is left out"
fi

# work: the units the program has done so far.
work() { cat "$WORK/count" 2>/dev/null || echo 0; }
# cpu_of FILE: user + system seconds from a /usr/bin/time -f "%U %S" line.
cpu_of() { awk 'END { printf "%.6f\n", $1 + $2 }' "$1"; }

# cprof_row SOURCE [CPROF]: one cprof attach; sets n, rooted, cpu, loop,
# sig, drains.
cprof_row() {
	/usr/bin/time -f "%U %S" -o "$WORK/time" "${2:-$CPROF}" attach -p "$TPID" -d "${SECS}s" \
		-F "$HZ" --source "$1" -q --json -o "$WORK/p.pb.gz" >"$WORK/j" 2>"$WORK/err" ||
		die "cprof --source $1 failed: $(cat "$WORK/err")"
	read -r n rooted loop sig src drains < <(python3 -c 'import json, sys
d = json.load(open(sys.argv[1])); n = d["samples"]; u = d["unwind"]
drains = d.get("perf", {}).get("drains") if d["source"] == "perf" else None
print(n, "%.1f" % (100 * u["complete"] / max(n, 1)), "%.1f" % (d["cprof_cpu_ns"] / 1e3 / max(n, 1)),
      "%.2f" % (d["signals_reinjected"] / max(n, 1)), d["source"],
      "%.1f" % (drains / (d["elapsed_ns"] / 1e9)) if drains else "-")' "$WORK/j") || die "cannot read cprof --json: $(head -c 300 "$WORK/j")"
	[ "$1" != auto ] || [ "$src" = perf ] || echo "note: cprof auto sampled with $src" >>"$WORK/notes"
	cpu=$(cpu_of "$WORK/time")
}

# run_variant NAME: one window of the program under NAME; appends a line
# "NAME work/s samples rooted% us/smp loop_us/smp sig/smp cpu% drains/s
# load" to $WORK/rows.
run_variant() {
	local v=$1 w0 w1 t0 t1 n=0 rooted=- cpu=- loop=- sig=- drains=-
	w0=$(work)
	t0=$(date +%s%N)
	case $v in
	unprofiled) sleep "$SECS" ;;
	auto|ptrace) cprof_row "$v" ;;
	base) cprof_row auto "$BASE_CPROF" ;;
	perf)
		/usr/bin/time -f "%U %S" -o "$WORK/time" perf record -q -g -F "$HZ" -p "$TPID" \
			-o "$WORK/perf.data" -- sleep "$SECS" >"$WORK/err" 2>&1 || die "perf record failed: $(cat "$WORK/err")"
		n=$(perf report -i "$WORK/perf.data" --stdio --no-children --sort dso -g none 2>/dev/null |
			awk '/^# Samples: / { n = $3; if (n ~ /K$/) n = 1000 * n; print int(n) }')
		cpu=$(cpu_of "$WORK/time")
		;;
	esac
	# the count is written every 100 ms: let the last one land
	sleep 0.2
	t1=$(date +%s%N)
	w1=$(work)
	awk -v v="$v" -v w=$((w1 - w0)) -v ns=$((t1 - t0)) -v n="${n:-0}" -v r="$rooted" -v c="$cpu" -v l="$loop" \
		-v g="$sig" -v secs="$SECS" -v d="$drains" -v load="$(cut -d' ' -f1 /proc/loadavg)" \
		'BEGIN { printf "%s %.1f %d %s %s %s %s %s %s %s\n", v, w / (ns / 1e9), n, r,
			 c == "-" || n == 0 ? "-" : sprintf("%.1f", c * 1e6 / n), l, g,
			 c == "-" ? "-" : sprintf("%.2f", 100 * c / secs), d, load }' >>"$WORK/rows"
}

: >"$WORK/rows"
: >"$WORK/notes"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
for round in $(seq 1 "$RUNS"); do
	"$WORK/go-work" "$WORK/count" </dev/null >/dev/null 2>"$WORK/target.err" &
	TPID=$!
	sleep 1
	kill -0 "$TPID" 2>/dev/null || die "the Go program died: $(cat "$WORK/target.err")"
	n=${#VARIANTS[@]}
	for i in $(seq 0 $((n - 1))); do
		run_variant "${VARIANTS[$(((i + round) % n))]}"
	done
	stop_target
done

echo "bench/go-work (2 goroutines: sha256, sort.Ints; $("$GO" version | cut -d' ' -f3)), $RUNS rounds of ${SECS} s windows at $HZ Hz; $(nproc) CPUs, $(uname -r)"
echo "load average at start: $LOAD0, at end: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -z "$PERF_NOTE" ] || echo "note: $PERF_NOTE"
sort -u "$WORK/notes"
python3 - "$WORK/rows" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    v, w, n, rooted, us, loop, sig, cpu, drains, load = line.split()
    rows.setdefault(v, []).append((float(w), int(n), rooted, us, loop, sig, cpu, drains, load))
def med(xs, fmt="%.1f"):
    xs = [float(x) for x in xs if x != "-"]
    if not xs:
        return "-"
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(xs), min(xs), max(xs))
base = statistics.median(r[0] for r in rows["unprofiled"])
names = {"unprofiled": "unprofiled", "auto": "cprof (auto: perf)", "ptrace": "cprof --source ptrace",
         "base": "baseline auto", "perf": "perf record -g"}
print("%-22s %-24s %-6s %-8s %-18s %-22s %-20s %-18s %-20s %-18s %s" % ("variant", "work/s", "loss%",
      "samples", "rooted%", "us/smp", "loop us/smp", "sig/smp", "cpu%", "drains/s", "load"))
for v in ("unprofiled", "auto", "base", "ptrace", "perf"):
    if v not in rows:
        continue
    r = rows[v]
    w = statistics.median(x[0] for x in r)
    print("%-22s %-24s %-6.1f %-8d %-18s %-22s %-20s %-18s %-20s %-18s %s" % (names[v],
          med([x[0] for x in r], "%.0f"), 100 * (1 - w / base) if base else 0,
          statistics.median(x[1] for x in r), med([x[2] for x in r]), med([x[3] for x in r]),
          med([x[4] for x in r]), med([x[5] for x in r], "%.2f"), med([x[6] for x in r], "%.2f"),
          med([x[7] for x in r]), med([x[8] for x in r])))
def m(v, i):
    xs = [float(x[i]) for x in rows.get(v, []) if x[i] != "-"]
    return statistics.median(xs) if xs else None
a, p, l = m("auto", 3), m("perf", 3), m("auto", 4)
if a and p:
    print("cprof (auto) whole CPU a sample: %.2fx perf record -g's" % (a / p))
if l:
    print("cprof (auto) sampling thread: %.1f us a sample (goal: 25)" % l)
b = m("base", 4)
if l and b:
    print("cprof (auto) sampling thread: %.2fx the baseline's (%.1f us a sample)" % (l / b, b))
PY
