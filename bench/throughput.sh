#!/bin/bash
# SPDX-License-Identifier: MIT
# How much work does CPU-mode profiling take from busy threads, cprof's
# sampling (at stops, or by perf events) against in-process SIGPROF
# sampling and perf record at the same rate?
#
#   bench/throughput.sh [BUILDDIR]
#
# Goal it informs: "2 busy + 20 idle threads, --mode cpu: throughput loss at
# most 1% at 100 Hz and at most 5% at 1000 Hz, and no worse than in-process
# sampling at the same rate plus one point".
#
# BUILDDIR (default ./build) holds a built cprof and libcprof-inproc.so.
# bench/throughput-target.c is compiled here with gcc -O2 -g -pthread into a
# temporary directory: 2 threads repeat a fixed unit of integer work and
# count units, 20 block in pthread_cond_wait; after a 300 ms warm-up it
# measures units per second over THROUGHPUT_SECS (default 4).  Variants,
# THROUGHPUT_ROUNDS rounds (default 5), interleaved and rotated from round to
# round so that drifts in the machine's load spread over all of them:
#   unprofiled
#   ptrace 100/process     cprof record -F 100 --mode cpu --source ptrace --stop process -- ...
#   ptrace 100/thread      ... --stop thread
#   ptrace 1000/process    cprof record -F 1000 ...
#   ptrace 1000/thread     ... --stop thread
#   events 100             cprof record -F 100 --mode cpu --source perf -- ... (the kernel
#                          copies each sample, no stop: auto's choice where permitted)
#   events 1000            the same at 1000 Hz
#   inproc 100             cprof record --inproc -F 100 ...
#   inproc 1000            cprof record --inproc -F 1000 ...
#   perf 100/fp            perf record -F 100 -g -- ... (frame pointers)
#   perf 100/dwarf         perf record -F 100 --call-graph dwarf -- ...
#   perf 1000/fp, perf 1000/dwarf   the same at 1000 Hz
# (the perf rows only when perf is installed and may record: see
# perf_event_paranoid; PERF=no leaves them out).
# Per variant: median units/s, min and max, loss % of the unprofiled median
# of this run, and for ptrace the difference in points from inproc at the
# same rate (positive: ptrace loses more).  The target also reads its busy
# threads' CPU clocks, so a second loss is per CPU second they got
# ("loss/cpu": insensitive to other jobs taking the CPUs, and to time spent
# stopped; it keeps what a signal handler costs and cache effects), and
# "cpu share" (their CPU time / (wall x 2)) shows how contended the run was.
# For ptrace also cprof's own figures from --json (CPU, CPU per sample,
# samples, missed ticks, stop p50, stopped fraction), and a table of cprof's
# loss against perf's at the same rate, in points.
#
# Figures only: it never fails on a timing.  Exit status 1 only on a real
# error (no cprof, no gcc, a run failed).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-./build}
ROUNDS=${THROUGHPUT_ROUNDS:-5}
SECS=${THROUGHPUT_SECS:-4}
CPROF="$BUILD/cprof"
die() { echo "throughput: $*" >&2; exit 1; }

[ -x "$CPROF" ] || die "no cprof in '$BUILD' (give the build directory as the first argument)"
[ -e "$BUILD/libcprof-inproc.so" ] || die "no libcprof-inproc.so in '$BUILD' (build it: make)"
case $ROUNDS in ''|*[!0-9]*|0) die "THROUGHPUT_ROUNDS must be a positive number, not '$ROUNDS'" ;; esac
case $SECS in ''|*[!0-9]*|0) die "THROUGHPUT_SECS must be a positive number of seconds, not '$SECS'" ;; esac
command -v gcc >/dev/null || die "gcc is needed to build bench/throughput-target.c"
command -v python3 >/dev/null || die "python3 is needed to read cprof --json"
PERF=${PERF:-perf}
if [ "$PERF" != no ] && ! command -v "$PERF" >/dev/null; then
	echo "throughput: no perf: the perf rows are left out" >&2
	PERF=no
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/throughput.XXXXXX") || die "cannot create a temporary directory"
trap 'rm -rf "$WORK"' EXIT
trap 'exit 130' INT TERM

gcc -O2 -g -pthread -o "$WORK/throughput-target" "$HERE/throughput-target.c" 2>"$WORK/gcc.err" ||
	die "cannot build throughput-target: $(cat "$WORK/gcc.err")"
TARGET=("$WORK/throughput-target" -o "$WORK/rate" -s "$SECS" -b 2 -i 20)

# run_variant NAME: one run; appends "name units_per_s [cprof figures]".
run_variant() {
	local v=$1 hz rc
	rm -f "$WORK/rate" "$WORK/out" "$WORK/p.pb.gz"
	case $v in
	unprofiled)
		"${TARGET[@]}" </dev/null >"$WORK/out" 2>"$WORK/err"
		rc=$?
		;;
	ptrace-*)
		hz=${v#ptrace-}
		"$CPROF" record -F "${hz%/*}" --mode cpu --source ptrace --stop "${hz#*/}" --json -q \
			-o "$WORK/p.pb.gz" -- "${TARGET[@]}" </dev/null >"$WORK/out" 2>"$WORK/err"
		rc=$?
		;;
	events-*)
		"$CPROF" record -F "${v#events-}" --mode cpu --source perf --json -q -o "$WORK/p.pb.gz" -- \
			"${TARGET[@]}" </dev/null >"$WORK/out" 2>"$WORK/err"
		rc=$?
		;;
	inproc-*)
		"$CPROF" record --inproc -F "${v#inproc-}" --mode cpu -q -o "$WORK/p.pb.gz" -- \
			"${TARGET[@]}" </dev/null >"$WORK/out" 2>"$WORK/err"
		rc=$?
		[ -s "$WORK/p.pb.gz" ] || die "$v wrote no profile: $(head -c 500 "$WORK/err")"
		;;
	perf-*)
		hz=${v#perf-}
		local cg=(-g)
		[ "${hz#*/}" = dwarf ] && cg=(--call-graph dwarf)
		"$PERF" record -q -F "${hz%/*}" "${cg[@]}" -o "$WORK/perf.data" -- \
			"${TARGET[@]}" </dev/null >"$WORK/out" 2>"$WORK/err"
		rc=$?
		[ -s "$WORK/perf.data" ] || die "$v wrote no perf.data: $(head -c 500 "$WORK/err")"
		rm -f "$WORK/perf.data"
		;;
	esac
	[ $rc -eq 0 ] || die "$v failed (exit $rc): $(head -c 500 "$WORK/err")"
	[ -s "$WORK/rate" ] || die "$v: the target wrote no rate: $(head -c 500 "$WORK/err")"
	if [ "${v%%-*}" = ptrace ] || [ "${v%%-*}" = events ]; then
		python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(sys.argv[2], " ".join(open(sys.argv[3]).read().split()), d["cprof_cpu_ns"], d["elapsed_ns"], d["samples"],
      d["ticks"], d["ticks_missed"], d["stop_ns"]["p50"], d["stop_ns"]["p99"], d["stopped_fraction"]["max"])' \
			"$WORK/out" "$v" "$WORK/rate" >>"$WORK/runs" || die "cannot read cprof --json: $(head -c 300 "$WORK/out")"
	else
		echo "$v $(cat "$WORK/rate")" >>"$WORK/runs"
	fi
}

VS=(unprofiled ptrace-100/process ptrace-100/thread ptrace-1000/process ptrace-1000/thread inproc-100 inproc-1000)
# cprof's perf source, where perf events are permitted (a refusal is said once).
if "$CPROF" record -F 100 --source perf -q -o "$WORK/p.pb.gz" -- true >/dev/null 2>"$WORK/err"; then
	VS+=(events-100 events-1000)
else
	echo "throughput: cprof --source perf cannot run here, its rows are left out: $(head -c 300 "$WORK/err")" >&2
fi
if [ "$PERF" != no ]; then
	# perf must be able to record here: a refusal is a setup matter, said once.
	if ! "$PERF" record -q -F 100 -g -o "$WORK/perf.data" -- true >/dev/null 2>"$WORK/err"; then
		echo "throughput: perf record cannot run here, the perf rows are left out: $(head -c 300 "$WORK/err")" >&2
	else
		VS+=(perf-100/fp perf-100/dwarf perf-1000/fp perf-1000/dwarf)
	fi
	rm -f "$WORK/perf.data"
fi
: >"$WORK/runs"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "machine: $(nproc) CPUs, $(uname -sr), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "load average at start: $LOAD0"
echo "target: 2 busy + 20 idle threads, ${SECS} s measured (THROUGHPUT_SECS) after 300 ms warm-up"
echo "$ROUNDS rounds (THROUGHPUT_ROUNDS) of ${#VS[@]} variants, interleaved and rotated"
echo

n=${#VS[@]}
for r in $(seq 0 $((ROUNDS - 1))); do
	for i in $(seq 0 $((n - 1))); do
		run_variant "${VS[$(((i + r) % n))]}"
	done
done

python3 - "$WORK/runs" <<'EOF'
import statistics, sys
order = ["unprofiled", "ptrace-100/process", "ptrace-100/thread", "ptrace-1000/process",
         "ptrace-1000/thread", "events-100", "events-1000", "inproc-100", "inproc-1000",
         "perf-100/fp", "perf-100/dwarf", "perf-1000/fp", "perf-1000/dwarf"]
is_cprof = lambda v: v.startswith(("ptrace-", "events-"))
data = {}
for line in open(sys.argv[1]):
    f = line.split()
    data.setdefault(f[0], []).append([float(x) for x in f[1:]])
med = statistics.median
# fields: rate units elapsed_ns busy_cpu_ns [cprof: cpu elapsed samples ticks missed p50 p99 fracmax]
percpu = lambda r: r[1] / (r[3] / 1e9) if r[3] else 0.0
share = lambda r: 100.0 * r[3] / (2 * r[2])
base = med(r[0] for r in data["unprofiled"])
base_c = med(percpu(r) for r in data["unprofiled"])
loss = {v: 100.0 * (1 - med(r[0] for r in data[v]) / base) for v in order if v in data}
loss_c = {v: 100.0 * (1 - med(percpu(r) for r in data[v]) / base_c) for v in order if v in data}
fmt = "%-20s %4s %11s %21s %8s %10s %12s %9s %10s %14s"
print(fmt % ("variant", "runs", "units/s med", "min - max", "loss %", "vs inproc",
             "units/cpu-s", "loss/cpu", "vs inproc", "cpu share %"))
for v in order:
    if v not in data:
        continue
    rows = data[v]
    vs = vs_c = "-"
    if is_cprof(v):
        ref = "inproc-" + v.split("-")[1].split("/")[0]
        if ref in loss:
            vs = "%+.2f pt" % (loss[v] - loss[ref])
            vs_c = "%+.2f pt" % (loss_c[v] - loss_c[ref])
    sh = [share(r) for r in rows]
    print(fmt % (v.replace("-", " ", 1), len(rows), "%.0f" % med(r[0] for r in rows),
                 "%.0f - %.0f" % (min(r[0] for r in rows), max(r[0] for r in rows)),
                 "-" if v == "unprofiled" else "%+.2f" % loss[v], vs,
                 "%.0f" % med(percpu(r) for r in rows),
                 "-" if v == "unprofiled" else "%+.2f" % loss_c[v], vs_c,
                 "%.0f [%.0f-%.0f]" % (med(sh), min(sh), max(sh))))
spread = [100.0 * (r[0] / base - 1) for r in data["unprofiled"]]
spread_c = [100.0 * (percpu(r) / base_c - 1) for r in data["unprofiled"]]
print()
print("unprofiled runs around their median (the noise floor of this run): units/s %+.2f%% .. %+.2f%%,"
      " units/cpu-s %+.2f%% .. %+.2f%%" % (min(spread), max(spread), min(spread_c), max(spread_c)))
print()
for v in order:
    if not is_cprof(v) or v not in data:
        continue
    rows = data[v]
    print("%-20s per run (median): cprof CPU %.2f%% of one core, %.1f us per sample, samples %d, "
          "ticks %d, missed %d, stop p50 %.1f us, p99 %.1f us, max stopped fraction of a thread %.4f"
          % (v.replace("-", " ", 1), med(100.0 * r[4] / r[5] for r in rows),
             med(r[4] / 1e3 / r[6] if r[6] else 0.0 for r in rows), med(r[6] for r in rows),
             med(r[7] for r in rows), med(r[8] for r in rows), med(r[9] for r in rows) / 1e3,
             med(r[10] for r in rows) / 1e3, med(r[11] for r in rows)))
print()
if any(v.startswith("perf-") for v in data):
    print("cprof against perf record at the same rate: cprof's loss minus perf's, in points"
          " (positive: cprof takes more), units/s (units/cpu-s)")
    fmt2 = "%-7s %-14s %-18s %-18s"
    print(fmt2 % ("rate", "cprof", "vs perf fp", "vs perf dwarf"))
    for hz in ("100", "1000"):
        for stop in ("process", "thread", "events"):
            v = "events-" + hz if stop == "events" else "ptrace-%s/%s" % (hz, stop)
            if v not in loss:
                continue
            cols = []
            for cg in ("fp", "dwarf"):
                ref = "perf-%s/%s" % (hz, cg)
                cols.append("%+.2f (%+.2f) pt" % (loss[v] - loss[ref], loss_c[v] - loss_c[ref])
                            if ref in loss else "-")
            print(fmt2 % (hz + " Hz", "--source perf" if stop == "events" else "--stop " + stop,
                          cols[0], cols[1]))
    print()
print("loss %: 1 - median units/s / unprofiled median units/s (same run); positive = slower.")
print("loss/cpu: the same per CPU second the busy threads got (ptrace stops and other jobs drop out).")
print("vs inproc: cprof's loss minus inproc's at the same rate, in points.")
print("ptrace: samples taken at stops; events: by perf events (--source perf, no stop).")
print("perf fp: perf record -g (frame pointers); perf dwarf: --call-graph dwarf (8 KiB of stack a sample).")
print("us per sample: cprof's CPU time (--json cprof_cpu_ns) / its samples.")
print("cpu share: busy threads' CPU time / (2 x wall): below 100, something else had their CPUs.")
EOF
[ $? -eq 0 ] || die "cannot summarise the runs"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg) (start: $LOAD0)"
