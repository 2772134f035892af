#!/bin/bash
# SPDX-License-Identifier: MIT
# On a saturated machine, how long does a sample keep a thread stopped, and
# where does that time go?
#
#   bench/saturated.sh [BUILDDIR [BASELINE_BUILDDIR]]
#
# Goal it informs: "with 2 other spinning processes beside a 2-busy-thread
# target on 2 CPUs, at 100 Hz: stop p99 at most 1 ms and a thread's stopped
# share at most 2%".
#
# BUILDDIR (default ./build) holds the cprof measured; BASELINE_BUILDDIR, if
# given, another cprof run in the same session, variants interleaved.
# bench/throughput-target.c is compiled here (gcc -O2 -g -pthread): 2 busy
# threads counting units of work, 20 idle ones.  Beside it run SAT_HOGS
# (default 2) spinning processes.  Each run starts the hogs and a fresh
# target, which measures its units per second over SAT_SECS (default 4)
# after a 500 ms warm-up while the variant runs:
#   unprofiled      nothing attached
#   cprof normal    cprof attach -F SAT_HZ --mode cpu --source ptrace --sched normal
#                   (samples at stops, at nice -10: the policy before --sched existed)
#   cprof auto      the same with the default --sched auto (real-time when
#                   permitted; the policy in force is printed)
#   cprof perf      cprof attach --source perf (the kernel copies each sample,
#                   no stop; the default where perf events are permitted)
#   baseline        BASELINE_BUILDDIR/cprof attach, same options without --sched
# SAT_RUNS rounds (default 3), the order rotated from round to round.
# Per variant, medians over runs (min and max): the target's units/s and
# its ratio to the unprofiled median of this run; the busy threads' CPU
# share; from cprof --json: stop p50 and p99, the largest stopped share of
# a thread, cprof's CPU, missed ticks.
#
# Where the stop goes: cprof's stop_ns runs from PTRACE_INTERRUPT to just
# before PTRACE_CONT.  With perf and the sched tracepoints available, one
# more run per cprof variant is made under `perf record -a -e
# sched:sched_switch -e syscalls:sys_enter_ptrace` (not used for the
# figures above: perf takes CPU too), and each stop of a target thread is
# cut into:
#   (a) wait    the thread not yet at its stop, waiting for a CPU (it was
#               preempted, and would not have run anyway)
#   (a) run     the thread on a CPU on its way to the stop
#   (b)         stopped, cprof not on a CPU (waiting to be scheduled)
#   (c)         stopped, cprof on a CPU (its own work, stack copy included)
#   (d)         after PTRACE_CONT until the thread is on a CPU again (not in
#               stop_ns: the CPU it gave up went to another task meanwhile)
# (b) is what a scheduling policy of cprof's can remove; (a) is the
# target's own wait for a CPU, which no policy of cprof's shortens.  (b)+(c)
# is printed beside cprof's own stopped_ns of the same run (its estimate of
# the time from reaching the stop to the resume), to check that estimate.
#
# Figures only: it never fails on a timing.  Exit status 1 only on a real
# error (no cprof, no gcc, a target died, a tool failed).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-./build}
BASE=${2:-}
RUNS=${SAT_RUNS:-3}
SECS=${SAT_SECS:-4}
HZ=${SAT_HZ:-100}
HOGS=${SAT_HOGS:-2}
ME=saturated
. "$HERE/lib.sh"

[ -x "$BUILD/cprof" ] || die "no cprof in '$BUILD' (give the build directory as the first argument)"
[ -z "$BASE" ] || [ -x "$BASE/cprof" ] || die "no cprof in baseline '$BASE'"
bench_positive SAT_RUNS "$RUNS"
bench_positive SAT_SECS "$SECS" seconds
bench_positive SAT_HZ "$HZ"
bench_positive SAT_HOGS "$HOGS"
command -v gcc >/dev/null || die "gcc is needed to build the target"
command -v python3 >/dev/null || die "python3 is needed to read cprof --json"

bench_workdir

gcc -O2 -g -pthread -o "$WORK/target" "$HERE/throughput-target.c" 2>"$WORK/gcc.err" ||
	die "cannot build throughput-target: $(cat "$WORK/gcc.err")"
printf 'int main(void) { for (;;) __asm__ volatile(""); }\n' >"$WORK/hog.c"
gcc -O1 -o "$WORK/hog" "$WORK/hog.c" 2>"$WORK/gcc.err" || die "cannot build the hog: $(cat "$WORK/gcc.err")"

PERF=""
if command -v perf >/dev/null; then
	if perf record -q -a -e sched:sched_switch -e syscalls:sys_enter_ptrace -o "$WORK/probe.data" \
		-- sleep 0.1 >/dev/null 2>&1; then
		PERF=perf
	fi
fi

# start: the hogs, then a target measuring over SECS after its warm-up.
start() {
	local i
	for i in $(seq "$HOGS"); do
		"$WORK/hog" & bench_load_add $!
	done
	rm -f "$WORK/rate"
	"$WORK/target" -o "$WORK/rate" -s "$SECS" -w 500 </dev/null >/dev/null 2>"$WORK/target.err" &
	TPID=$!
	# all its threads (2 busy, 20 idle, main), well before its warm-up ends
	for _ in $(seq 100); do
		[ "$(ls "/proc/$TPID/task" 2>/dev/null | wc -l)" -ge 23 ] && return
		kill -0 "$TPID" 2>/dev/null || break
		sleep 0.01
	done
	wait "$TPID"
	die "the target died or did not start its threads (exit status $?): $(cat "$WORK/target.err")"
}

# finish: waits for the target's figures, then ends the hogs.
finish() {
	wait "$TPID"
	TPID=""
	bench_stop_load
	[ -s "$WORK/rate" ] || die "the target wrote no rate: $(cat "$WORK/target.err")"
}

# attach VARIANT [PREFIX...]: cprof for VARIANT on TPID, until the target
# exits; --json into $WORK/out.
attach() {
	local v=$1 bin=$BUILD/cprof
	shift
	local extra=()
	case $v in
	normal) extra=(--sched normal --source ptrace) ;;
	auto) extra=(--source ptrace) ;;
	events) extra=(--source perf) ;;
	base) bin=$BASE/cprof ;;
	esac
	"$@" "$bin" attach -p "$TPID" -d $((SECS + 2))s -F "$HZ" --mode cpu "${extra[@]}" --json -q \
		-o "$WORK/p.pb.gz" >"$WORK/out" 2>"$WORK/err" </dev/null ||
		die "$bin attach ${extra[*]} failed: $(head -c 500 "$WORK/err")$(kill -0 "$TPID" 2>/dev/null ||
			{ wait "$TPID"; echo "; the target exited with status $?: $(cat "$WORK/target.err")"; })"
}

# run_variant VARIANT: one run; appends "variant rate units elapsed busycpu
# [json figures]" to runs.
run_variant() {
	local v=$1
	start
	case $v in
	none) ;;
	*) attach "$v" ;;
	esac
	finish
	if [ "$v" = none ]; then
		echo "$v $(cat "$WORK/rate")" >>"$WORK/runs"
		return
	fi
	python3 - "$WORK/out" "$v" "$(cat "$WORK/rate")" >>"$WORK/runs" <<'EOF' ||
import json, sys
d = json.load(open(sys.argv[1]))
due = d["ticks"] + d["ticks_missed"]
at = d.get("stopped_ns", {"p50": -1, "p99": -1})
print(sys.argv[2], sys.argv[3], d["stop_ns"]["p50"], d["stop_ns"]["p99"], d["stopped_fraction"]["max"],
      d["cprof_cpu_ns"] / d["elapsed_ns"], d["ticks_missed"] / due if due else 0, d.get("sched", "nice"),
      at["p50"], at["p99"])
EOF
		die "cannot read cprof --json: $(head -c 300 "$WORK/out")"
}

# split_variant VARIANT: one run under perf; appends the stops' split to
# splits.
split_variant() {
	local v=$1 tids
	start
	sleep 0.3
	tids=$(ls "/proc/$TPID/task" | tr '\n' ,)
	attach "$v" perf record -q -a -e sched:sched_switch -e syscalls:sys_enter_ptrace -o "$WORK/sched.data" --
	finish
	own=$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])).get("stopped_ns")
print("%d,%d" % (d["p50"], d["p99"]) if d else "-")' "$WORK/out") || die "cannot read cprof --json: $(head -c 300 "$WORK/out")"
	perf script -i "$WORK/sched.data" -F tid,time,event,trace >"$WORK/sched.txt" 2>/dev/null ||
		die "perf script cannot read its record"
	python3 - "$v" "${tids%,}" "$WORK/sched.txt" "$own" >>"$WORK/splits" <<'EOF' || die "cannot read perf script's output"
import re, sys
# Per stop of a target thread: interrupt (ptrace 0x4207 on it), its
# sched_switch out in state t (traced: at its stop), the ptrace CONT (7) or
# LISTEN (0x4208) on it, and its next sched_switch in.  Between the stop and
# the resume, the tracer's own switches say whether it was on a CPU.
v, tids = sys.argv[1], set(int(x) for x in sys.argv[2].split(","))
ev = re.compile(r"^\s*(\d+)\s+([\d.]+):\s+(\S+):\s+(.*)$")
sw = re.compile(r"prev_pid=(\d+) .*prev_state=(\S+) ==> .*next_pid=(\d+)")
pt = re.compile(r"request: (0x[0-9a-f]+), pid: (0x[0-9a-f]+)")
oncpu, open_, done, tracer = {}, {}, [], None
def close_seg(d, t):
    key = ("c" if oncpu.get(tracer) else "b") if d["t1"] is not None else \
          ("arun" if oncpu.get(d["tid"]) else "await")
    d[key] += t - d["seg"]
    d["seg"] = t
for line in open(sys.argv[3]):
    m = ev.match(line)
    if not m:
        continue
    tid, t, name, rest = int(m.group(1)), float(m.group(2)), m.group(3), m.group(4)
    if name == "sched:sched_switch":
        s = sw.search(rest)
        if not s:
            continue
        p, state, n = int(s.group(1)), s.group(2), int(s.group(3))
        for d in open_.values():
            if d["t1"] is None and d["tid"] in (p, n):
                close_seg(d, t)
            elif d["t1"] is not None and tracer in (p, n):
                close_seg(d, t)
        if p in open_ and open_[p]["t1"] is None and state.startswith("t"):
            open_[p]["t1"] = t
        oncpu[p], oncpu[n] = False, True
        if n in tids:
            for d in done:
                if d["tid"] == n and d["t4"] is None:
                    d["t4"] = t
    elif name == "syscalls:sys_enter_ptrace":
        s = pt.search(rest)
        if not s:
            continue
        req, target = int(s.group(1), 16), int(s.group(2), 16)
        if target not in tids:
            continue
        if req == 0x4207:
            tracer = tid
            open_[target] = {"tid": target, "t0": t, "t1": None, "seg": t, "t4": None,
                             "await": 0.0, "arun": 0.0, "b": 0.0, "c": 0.0}
        elif req in (7, 0x4208) and target in open_:
            d = open_.pop(target)
            if d["t1"] is None:
                continue
            close_seg(d, t)
            d["t3"] = t
            done.append(d)
for d in done:
    d["d"] = d["t4"] - d["t3"] if d["t4"] is not None else 0.0
    d["span"] = d["t3"] - d["t0"]
for d in done:
    d["bc"] = d["b"] + d["c"]
print(v, sys.argv[4], len(done), " ".join(",".join("%.9f" % d[k] for d in done) or "-"
                                          for k in ("span", "await", "arun", "b", "c", "bc", "d")))
EOF
}

VARIANTS=(none normal auto)
# cprof's perf source, where perf events are permitted.
"$BUILD/cprof" record -F 100 --source perf -q -o "$WORK/probe.pb.gz" -- true >/dev/null 2>&1 &&
	VARIANTS+=(events)
[ -n "$BASE" ] && VARIANTS+=(base)
: >"$WORK/runs"
: >"$WORK/splits"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "machine: $(nproc) CPUs, $(uname -sr), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "load average at start: $LOAD0"
echo "cprof: $BUILD/cprof${BASE:+; baseline: $BASE/cprof}"
echo "$HOGS spinning processes (SAT_HOGS) + target: 2 busy + 20 idle threads; $RUNS rounds (SAT_RUNS),"
echo "${SECS} s measured (SAT_SECS), --mode cpu -F $HZ (SAT_HZ), variants interleaved and rotated"
echo
n=${#VARIANTS[@]}
for r in $(seq 0 $((RUNS - 1))); do
	for i in $(seq 0 $((n - 1))); do
		run_variant "${VARIANTS[$(((i + r) % n))]}"
	done
done
if [ -n "$PERF" ]; then
	split_variant normal
	split_variant auto
fi

python3 - "$WORK/runs" "$WORK/splits" "$PERF" <<'EOF'
import statistics, sys
med = statistics.median
rows = {}
for line in open(sys.argv[1]):
    f = line.split()
    rows.setdefault(f[0], []).append(f[1:])
def cell(xs, fmt):
    return (fmt + " [" + fmt + "-" + fmt + "]") % (med(xs), min(xs), max(xs))
names = {"none": "unprofiled", "normal": "cprof normal", "auto": "cprof auto", "events": "cprof perf",
         "base": "baseline"}
base_rate = med(float(r[0]) for r in rows["none"])
hdr = "%-13s %-24s %-6s %-13s %-22s %-25s %-16s %-16s %-19s %-17s %-12s %s"
print(hdr % ("variant", "units/s med [min-max]", "ratio", "busy CPU %", "stop p50 us", "stop p99 us",
             "at stop p50 us", "at stop p99 us", "stopped max %", "cprof CPU %", "missed %", "sched"))
for v in ("none", "normal", "auto", "events", "base"):
    rs = rows.get(v)
    if not rs:
        continue
    rate = [float(r[0]) for r in rs]
    share = [100 * float(r[3]) / (2 * float(r[2])) for r in rs]
    cols = [cell([x / 1e3 for x in rate], "%.0f") + "k", "%.3f" % (med(rate) / base_rate),
            cell(share, "%.0f")]
    if v != "none":
        at = [(float(r[10]) / 1e3, float(r[11]) / 1e3) for r in rs if float(r[10]) >= 0]
        cols += [cell([float(r[4]) / 1e3 for r in rs], "%.0f"), cell([float(r[5]) / 1e3 for r in rs], "%.0f"),
                 cell([a[0] for a in at], "%.0f") if at else "-", cell([a[1] for a in at], "%.0f") if at else "-",
                 cell([100 * float(r[6]) for r in rs], "%.2f"), cell([100 * float(r[7]) for r in rs], "%.2f"),
                 cell([100 * float(r[8]) for r in rs], "%.0f"), ",".join(sorted(set(r[9] for r in rs)))]
    else:
        cols += ["-"] * 8
    print(hdr % ((names[v],) + tuple(cols)))
print()
print("ratio: the variant's median units/s / the unprofiled median of this run.")
print("busy CPU share: CPU time the 2 busy threads got / (2 x wall time).")
print("stop p50/p99: cprof --json stop_ns, interrupt to resume; at stop: stopped_ns, from the stop")
print("  reached to the resume (cprof's estimate; '-' for a cprof without it); stopped max: a thread's")
print("  largest share of its time stopped; cprof CPU: its sampling thread, % of one CPU.")
print()
if not sys.argv[3]:
    print("where the stop goes: not measured (needs perf with the sched tracepoints, as root)")
    sys.exit(0)
def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100 * len(xs)))] if xs else 0
print("where the stop goes (one run each under perf record -a, sched_switch + ptrace):")
parts = (("await", "(a) thread waiting for a CPU to reach its stop"), ("arun", "(a) thread on a CPU to its stop"),
         ("b", "(b) stopped, cprof waiting for a CPU"), ("c", "(c) stopped, cprof on a CPU"),
         ("d", "(d) after resume, until on a CPU again"))
for line in open(sys.argv[2]):
    f = line.split()
    v, own, n = f[0], f[1], int(f[2])
    if n == 0:
        print("  %s: no stops seen" % names[v])
        continue
    cols = dict(zip(("span", "await", "arun", "b", "c", "bc", "d"),
                    ([float(x) for x in c.split(",")] for c in f[3:])))
    span = sum(cols["span"])
    print("  %s: %d stops, interrupt to resume p50 %.0f us, p99 %.0f us, total %.1f ms"
          % (names[v], n, pct(cols["span"], 50) * 1e6, pct(cols["span"], 99) * 1e6, span * 1e3))
    for k, what in parts:
        xs = cols[k]
        share = " (%5.1f%% of the stops)" % (100 * sum(xs) / span) if k != "d" else " " * 23
        print("    %-48s total %8.1f ms%s  p50 %7.0f us  p99 %7.0f us"
              % (what, sum(xs) * 1e3, share, pct(xs, 50) * 1e6, pct(xs, 99) * 1e6))
    if own != "-":
        o50, o99 = (int(x) for x in own.split(","))
        print("    %-48s p50 %.0f us, p99 %.0f us; cprof's own stopped_ns in that run: p50 %.0f us, p99 %.0f us"
              % ("(b)+(c), stopped from reaching the stop:", pct(cols["bc"], 50) * 1e6, pct(cols["bc"], 99) * 1e6,
                 o50 / 1e3, o99 / 1e3))
EOF
[ $? -eq 0 ] || die "cannot summarise the runs"
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg) (start: $LOAD0)"
