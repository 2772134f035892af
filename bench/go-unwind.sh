#!/bin/bash
# SPDX-License-Identifier: MIT
# What does unwinding Go at stops cost?  cprof's CPU per sample and the stop
# time on Go workloads (--source ptrace: auto samples Go programs with perf
# events, whose cost against perf record -g bench/go-perf.sh measures),
# against a C workload measured in the same run.
#
#   bench/go-unwind.sh [BUILDDIR]
#
# BUILDDIR (default ./build) holds a built cprof.  Targets:
#   c         bench/stall-target.c -t 2 -s 2 (gcc -O2 -g -pthread): two
#             spinning C threads unwound through .eh_frame
#   go        tests/targets/go/hashsort built with go build: three busy
#             goroutines (crypto/sha256, sort, time.Now through the vdso),
#             unwound through .debug_frame
#   go -s -w  the same built with -ldflags='-s -w': CFI made from .gopclntab
# GO_UNWIND_RUNS runs (default 5) per target, targets interleaved and their
# order rotated from run to run, each cprof attach --json -d
# GO_UNWIND_SECS (default 3) at 100 Hz, --mode cpu, --stop thread,
# --source ptrace.  Per
# target: medians over runs of cprof's sampling-thread CPU per sample (it
# unwinds every sample; symbolization comes after and is not in it), of the
# stop p50 and p99, and the share of samples that reached a root; ratios
# against the C target of the same run.  The first run of each target pays
# for reading its unwind tables (the .debug_frame index or the CFI made
# from .gopclntab) once.
#
# Figures only: it never fails on a timing.  Exit status 1 only on a real
# error (no cprof, no gcc or go, a target died, a tool failed).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-./build}
RUNS=${GO_UNWIND_RUNS:-5}
SECS=${GO_UNWIND_SECS:-3}
HZ=100
CPROF="$BUILD/cprof"
GO=${GO:-go}
ME=go-unwind
. "$HERE/lib.sh"

[ -x "$CPROF" ] || die "no cprof in '$BUILD' (give the build directory as the first argument)"
bench_positive GO_UNWIND_RUNS "$RUNS"
bench_positive GO_UNWIND_SECS "$SECS" seconds
command -v gcc >/dev/null || die "gcc is needed to build the C target"
command -v "$GO" >/dev/null || die "go is needed to build the Go targets"
command -v python3 >/dev/null || die "python3 is needed to read cprof --json"

bench_workdir

gcc -O2 -g -pthread -o "$WORK/stall-target" "$HERE/stall-target.c" 2>"$WORK/gcc.err" ||
	die "cannot build stall-target: $(cat "$WORK/gcc.err")"
# Go's caches in the work directory unless the caller has its own.
export GOCACHE=${GOCACHE:-$WORK/gocache} GOPATH=${GOPATH:-$WORK/gopath} GOFLAGS= GOPROXY=off
[ -n "${HOME:-}" ] || export HOME="$WORK"
(cd "$HERE/../tests/targets/go/hashsort" && "$GO" build -o "$WORK/hashsort" . &&
	"$GO" build -ldflags='-s -w' -o "$WORK/hashsort-stripped" .) >"$WORK/go.err" 2>&1 ||
	die "cannot build the Go target: $(cat "$WORK/go.err")"

# start TARGET: starts it and waits until its threads run.
start() {
	rm -f "$WORK/ready"
	local cmd
	case $1 in
	c) cmd=("$WORK/stall-target" -o "$WORK/gap" -t 2 -s 2) ;;
	go) cmd=("$WORK/hashsort" -s 3600) ;;
	go-stripped) cmd=("$WORK/hashsort-stripped" -s 3600) ;;
	esac
	"${cmd[@]}" -r "$WORK/ready" </dev/null >/dev/null 2>"$WORK/target.err" &
	TPID=$!
	for _ in $(seq 200); do
		[ -e "$WORK/ready" ] && break
		kill -0 "$TPID" 2>/dev/null || die "target $1 died: $(cat "$WORK/target.err")"
		sleep 0.05
	done
	[ -e "$WORK/ready" ] || die "target $1 not ready within 10 s"
	sleep 0.3
}

# run TARGET: one attach; appends "target cpu_ns samples p50 p99 complete fresh".
run() {
	start "$1"
	"$CPROF" attach -p "$TPID" -d "${SECS}s" -F "$HZ" --mode cpu --stop thread --source ptrace --json -q \
		-o "$WORK/p.pb.gz" >"$WORK/out" 2>"$WORK/err" </dev/null ||
		die "cprof attach failed on $1: $(head -c 500 "$WORK/err")"
	kill -0 "$TPID" 2>/dev/null || die "target $1 died while profiled"
	stop_target
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); s = d["stop_ns"]
print(sys.argv[2], d["cprof_cpu_ns"], d["samples"], s["p50"], s["p99"], d["unwind"]["complete"],
      d["samples_stopped"] + d["samples_unstopped"])' "$WORK/out" "$1" >>"$WORK/runs" ||
		die "cannot read cprof --json: $(head -c 300 "$WORK/out")"
}

: >"$WORK/runs"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "machine: $(nproc) CPUs, $(uname -sr), $("$GO" version | cut -d' ' -f3)"
echo "load average at start: $LOAD0"
echo "$RUNS runs per target (GO_UNWIND_RUNS), ${SECS} s each (GO_UNWIND_SECS), ${HZ} Hz, targets interleaved"
echo
TARGETS=(c go go-stripped)
for r in $(seq 0 $((RUNS - 1))); do
	for i in 0 1 2; do
		run "${TARGETS[$(((i + r) % 3))]}"
	done
done

python3 - "$WORK/runs" <<'PY' || die "cannot summarise the runs"
import statistics, sys

data = {}
for line in open(sys.argv[1]):
    f = line.split()
    data.setdefault(f[0], []).append([int(x) for x in f[1:]])
med = statistics.median
names = {"c": "C, .eh_frame", "go": "Go, .debug_frame", "go-stripped": "Go -s -w, .gopclntab"}
fmt = "%-22s %4s %8s %22s %10s %10s %9s %8s %8s"
print(fmt % ("target", "runs", "samples", "cpu us/sample [min-max]", "stop p50", "stop p99",
             "at root", "x C cpu", "x C p50"))
base = {}
for t in ("c", "go", "go-stripped"):
    rows = data.get(t, [])
    if not rows:
        continue
    per = [r[0] / r[1] / 1e3 for r in rows if r[1]]
    p50 = med(r[2] for r in rows) / 1e3
    p99 = med(r[3] for r in rows) / 1e3
    root = sum(r[4] for r in rows) / max(1, sum(r[5] for r in rows))
    if t == "c":
        base = {"cpu": med(per), "p50": p50}
    print(fmt % (names[t], len(rows), "%g" % med(r[1] for r in rows),
                 "%6.1f [%5.1f-%5.1f]" % (med(per), min(per), max(per)),
                 "%.1f us" % p50, "%.1f us" % p99, "%.1f%%" % (100 * root),
                 "%.2fx" % (med(per) / base["cpu"]) if base.get("cpu") else "-",
                 "%.2fx" % (p50 / base["p50"]) if base.get("p50") else "-"))
print()
print("cpu us/sample: cprof's sampling-thread CPU (stops, copies, unwinding) over the samples taken;")
print("stop p50/p99: medians over runs of cprof's own per-run percentiles (bucket lower bounds).")
PY
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg) (start: $LOAD0)"
