#!/bin/bash
# SPDX-License-Identifier: MIT
# What cprof costs on a real single-threaded program, per sample and per
# stop, against a baseline build in the same run.
#
#   bench/real-program.sh [BUILDDIR [BASEDIR]]
#
# Goal it informs: "cprof CPU at most 25 us per sample on a real
# single-threaded program", and where a stop goes on such a program.
#
# The program is Debian's xz compressing REAL_MIB (default 256) MiB of
# pseudo-random bytes (an AES-CTR stream from openssl when present, else
# /dev/urandom) at -9 with one thread, -T1: one busy thread in liblzma,
# started afresh for each run.  Variants, REAL_RUNS runs (default 5), each
# attached for REAL_SECS (default 3) after a 1 s start, interleaved and
# rotated from run to run:
#   cprof 100, cprof 1000     BUILDDIR's cprof attach -F 100 / -F 1000 --json
#                             (the default source: perf events where permitted)
#   stops 100, stops 1000     the same with --source ptrace (samples at stops)
#   base 100, base 1000       BASEDIR's, when given
# Per variant, the medians over runs of: cprof's CPU per sample (its
# sampling thread's CPU time, attach and the first lookups included, over
# the samples), stop p50 and p99, samples, ticks missed, and, where the
# build reports them, the walks reused and the short stack copies.
#
# Figures only: it never fails on a timing.  Exit status 1 only on a real
# error (no cprof, no xz, a run failed).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-./build}
BASE=${2:-}
RUNS=${REAL_RUNS:-5}
SECS=${REAL_SECS:-3}
MIB=${REAL_MIB:-256}
ME=real-program
. "$HERE/lib.sh"

[ -x "$BUILD/cprof" ] || die "no cprof in '$BUILD' (give the build directory as the first argument)"
[ -z "$BASE" ] || [ -x "$BASE/cprof" ] || die "no cprof in the baseline '$BASE'"
bench_positive REAL_RUNS "$RUNS"
bench_positive REAL_SECS "$SECS" seconds
bench_positive REAL_MIB "$MIB" MiB
command -v xz >/dev/null || die "xz is needed (Debian package xz-utils)"
command -v python3 >/dev/null || die "python3 is needed to read cprof --json"

bench_workdir

if command -v openssl >/dev/null; then
	openssl enc -aes-128-ctr -pass pass:cprof -nosalt -pbkdf2 </dev/zero 2>/dev/null |
		head -c $((MIB << 20)) >"$WORK/data"
else
	head -c $((MIB << 20)) /dev/urandom >"$WORK/data"
fi
[ "$(stat -c %s "$WORK/data")" -eq $((MIB << 20)) ] || die "cannot write $MIB MiB of data into $WORK"

# run_variant VARIANT: one run on a fresh xz; appends a line to $WORK/runs.
run_variant() {
	local v=$1 bin hz extra=()
	bin=$BUILD/cprof
	[ "${v%% *}" = base ] && bin=$BASE/cprof
	[ "${v%% *}" = stops ] && extra=(--source ptrace)
	hz=${v#* }
	xz -9 -T1 -c "$WORK/data" >/dev/null 2>"$WORK/xz.err" &
	TPID=$!
	sleep 1
	kill -0 "$TPID" 2>/dev/null || die "xz ended within 1 s (give more data: REAL_MIB): $(cat "$WORK/xz.err")"
	# a loaded machine may take longer than the default to symbolize:
	# the bench measures sampling, not that
	"$bin" attach -p "$TPID" -d "${SECS}s" -F "$hz" "${extra[@]}" --json -q \
		--write-timeout 120s -o "$WORK/p.pb.gz" \
		>"$WORK/out" 2>"$WORK/err" </dev/null ||
		die "$v: cprof attach failed: $(head -c 500 "$WORK/err")"
	kill -0 "$TPID" 2>/dev/null || die "xz ended during $v: make REAL_MIB larger than $MIB"
	stop_target
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
c = d.get("stack_copies", {})
print(sys.argv[2].replace(" ", "-") + ("/" + d["source"] if "source" in d else ""), d["cprof_cpu_ns"], d["samples"], d["stop_ns"]["p50"], d["stop_ns"]["p99"],
      d["ticks_missed"], d.get("unwinds_reused", -1), c.get("short", -1), c.get("short_ran_out", -1))' \
		"$WORK/out" "$v" >>"$WORK/runs" || die "cannot read cprof --json: $(head -c 300 "$WORK/out")"
}

VS=("cprof 100" "cprof 1000" "stops 100" "stops 1000")
[ -n "$BASE" ] && VS+=("base 100" "base 1000")
: >"$WORK/runs"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "machine: $(nproc) CPUs, $(uname -sr), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "load average at start: $LOAD0"
echo "target: $(xz --version | head -n 1), -9 -T1 on $MIB MiB of pseudo-random bytes (REAL_MIB), a fresh process a run"
echo "$RUNS runs (REAL_RUNS) of ${#VS[@]} variants, ${SECS} s attached (REAL_SECS), interleaved and rotated"
[ -n "$BASE" ] && echo "baseline: $BASE/cprof (the base rows)"
echo

n=${#VS[@]}
for r in $(seq 0 $((RUNS - 1))); do
	for i in $(seq 0 $((n - 1))); do
		run_variant "${VS[$(((i + r) % n))]}"
	done
done

python3 - "$WORK/runs" <<'PY'
import statistics, sys
med = statistics.median
data = {}
for line in open(sys.argv[1]):
    f = line.split()
    data.setdefault(f[0], []).append([int(x) for x in f[1:]])
fmt = "%-18s %4s %9s %18s %12s %14s %9s %10s %10s"
print(fmt % ("variant", "runs", "samples", "cpu us/sample", "stop p50 us", "stop p99 us", "missed",
             "reused %", "short %"))
keys = sorted(data, key=lambda k: (int(k.split("-")[1].split("/")[0]), k))
for v in keys:
    rows = data[v]
    per = [r[0] / 1e3 / r[1] for r in rows if r[1]]
    reused = [100.0 * r[5] / r[1] for r in rows if r[1] and r[5] >= 0]
    short = [100.0 * r[6] / r[1] for r in rows if r[1] and r[6] >= 0]
    print(fmt % (v.replace("-", " "), len(rows), "%g" % med(r[1] for r in rows),
                 "%.1f [%.1f-%.1f]" % (med(per), min(per), max(per)) if per else "-",
                 "%.1f" % (med(r[2] for r in rows) / 1e3), "%.1f" % (med(r[3] for r in rows) / 1e3),
                 "%g" % med(r[4] for r in rows), "%.0f" % med(reused) if reused else "-",
                 "%.0f" % med(short) if short else "-"))
first = lambda name: next((data[k] for k in keys if k.split("/")[0] == name), None)
for hz in ("100", "1000"):
    a, b = first("cprof-" + hz), first("base-" + hz)
    if a and b:
        pa = med(r[0] / r[1] for r in a if r[1])
        pb = med(r[0] / r[1] for r in b if r[1])
        print("%s Hz: cprof CPU per sample %.2fx the baseline's" % (hz, pa / pb))
print()
print("cpu us/sample: the sampling thread's CPU time (--json cprof_cpu_ns) over the samples, attach included;")
print("  median [min-max] over runs.  reused %: walks answered from the memo (unwinds_reused);")
print("  short %: stack copies cut to what the thread's walks needed (stack_copies.short).")
print("  /perf: samples taken by perf events (no stop); /ptrace: at stops (--json source).")
PY
[ $? -eq 0 ] || die "cannot summarise the runs"
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg) (start: $LOAD0)"
