#!/bin/bash
# SPDX-License-Identifier: MIT
# What does cprof cost a target that takes signals in a tight loop, as a JVM
# takes SIGSEGV for its implicit null checks?  Under ptrace every signal
# stops its thread until the tracer passes it on.
#
#   bench/signals.sh [BUILDDIR [BASELINE_BUILDDIR]]
#
# BUILDDIR (default ./build) holds the cprof measured; BASELINE_BUILDDIR, if
# given, another cprof run on the same targets in the same session, variants
# interleaved.  Targets (SIGNALS_TARGETS, default "segv usr1 java";
# tests/targets/sigloop.c, compiled here with gcc -O2 -g -pthread, runs
# SIGNALS_THREADS threads, default 1, each doing SIGNALS_WORK steps of
# integer work between two signals, default 2000, a few microseconds):
#   segv   a thread loads from a guard page; its SIGSEGV handler moves the pc
#          past the load in the ucontext, as a JVM's sends the thread on
#   usr1   a thread sends itself SIGUSR1 (tgkill) after the same work
#   java   a Java thread throwing and catching NullPointerException
#          (bench/NpeLoop.java, run with -XX:-OmitStackTraceInFastThrow so
#          that HotSpot keeps raising SIGSEGV), when java and javac are
#          installed; else the row is left out, and a note says why
# Variants, each on a window of SIGNALS_SECS (default 4) of the same running
# target, in an order rotated from round to round; SIGNALS_RUNS rounds
# (default 3), a fresh target per round:
#   unprofiled                       nothing attached
#   cprof 100 Hz, cprof 1000 Hz      cprof attach --mode cpu -F 100 / -F 1000
#   baseline 100 Hz, baseline 1000 Hz  the same with BASELINE_BUILDDIR's cprof
# Per row, the median over rounds (min and max) of:
#   sig/s     signals the target handled per second, over the window cprof
#             sampled (from the target's own log)
#   loss%     against the unprofiled median of the same target
#   lat us    C targets: the target's own time from raising a signal to its
#             handler, p50 and p99 (under ptrace it includes the stop and
#             cprof's turnaround)
#   cpu%      cprof's CPU time / elapsed (one core = 100)
#   us/smp    cprof's CPU time per sample; us/sig: per signal passed on
#   stop      stop p50 and p99 in us, and the largest stopped share of a
#             thread's time (%)
#   turn      cprof's own turnaround of a signal-delivery-stop, p50 and p99
#             in us (--json signal_ns; not the baseline's when it lacks it)
#   entry%    samples taken at a handler's entry and charged to the code the
#             signal interrupted (--json samples_signal_entry), of all samples
# Figures only: it never fails on a timing.  Exit status 1 only on a real
# error (no cprof, no gcc, a target died, a tool failed).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:-./build}
BASE=${2:-}
RUNS=${SIGNALS_RUNS:-3}
SECS=${SIGNALS_SECS:-4}
WORK_STEPS=${SIGNALS_WORK:-2000}
NTHREADS=${SIGNALS_THREADS:-1}
WANT_TARGETS=${SIGNALS_TARGETS:-segv usr1 java}
ME=signals
. "$HERE/lib.sh"

[ -x "$BUILD/cprof" ] || die "no cprof in '$BUILD' (give the build directory as the first argument)"
[ -z "$BASE" ] || [ -x "$BASE/cprof" ] || die "no cprof in baseline '$BASE'"
bench_positive SIGNALS_RUNS "$RUNS"
bench_positive SIGNALS_SECS "$SECS" seconds
bench_positive SIGNALS_WORK "$WORK_STEPS" steps
bench_positive SIGNALS_THREADS "$NTHREADS" threads
for t in $WANT_TARGETS; do
	case $t in segv|usr1|java) ;; *) die "SIGNALS_TARGETS: unknown target '$t' (segv, usr1, java)" ;; esac
done
command -v gcc >/dev/null || die "gcc is needed to build the target"
command -v python3 >/dev/null || die "python3 is needed to read the logs and cprof --json"

bench_workdir

gcc -O2 -g -pthread -I"$HERE/../tests/targets" -o "$WORK/sigloop" "$HERE/../tests/targets/sigloop.c" \
	2>"$WORK/gcc.err" || die "cannot build the sigloop target: $(cat "$WORK/gcc.err")"

TARGETS=()
for t in $WANT_TARGETS; do
	[ "$t" = java ] || TARGETS+=("$t")
done
JAVA_NOTE=""
if [[ " $WANT_TARGETS " != *" java "* ]]; then
	:
elif command -v java >/dev/null && command -v javac >/dev/null; then
	if javac -d "$WORK" "$HERE/NpeLoop.java" 2>"$WORK/javac.err"; then
		TARGETS+=(java)
	else
		JAVA_NOTE="java row left out: javac failed: $(head -c 300 "$WORK/javac.err")"
	fi
else
	JAVA_NOTE="java row left out: java and javac are not both installed"
fi

# start_target NAME: a fresh target, ready (the JVM warmed up); sets TPID.
start_target() {
	rm -f "$WORK/ready" "$WORK/log"
	case $1 in
	java)
		java -XX:-OmitStackTraceInFastThrow -cp "$WORK" NpeLoop "$WORK/log" "$WORK/ready" 4 \
			</dev/null >/dev/null 2>"$WORK/target.err" &
		;;
	*)
		"$WORK/sigloop" -m "$1" -t "$NTHREADS" -w "$WORK_STEPS" -s 3600 -l "$WORK/log" -r "$WORK/ready" \
			</dev/null >/dev/null 2>"$WORK/target.err" &
		;;
	esac
	TPID=$!
	for _ in $(seq 600); do
		[ -e "$WORK/ready" ] && break
		kill -0 "$TPID" 2>/dev/null || die "the $1 target died: $(head -c 300 "$WORK/target.err")"
		sleep 0.05
	done
	[ -e "$WORK/ready" ] || die "the $1 target is not ready within 30 s"
	sleep 0.5
}

# The window a variant measures: cprof attached (or, unprofiled, the same
# length), from the moment the target's main thread is traced (or cprof
# holds its perf events) to the end of
# sampling; prints "START_NS END_NS" (CLOCK_MONOTONIC) and leaves cprof's
# JSON in $WORK/out.
cat >"$WORK/window.py" <<'EOF'
import json, os, subprocess, sys, time
pid, secs, cprof, hz, work = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
def traced():
    with open("/proc/%s/status" % pid) as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return line.split()[1] != "0"
    return False
def watching(cpid):
    # a perf-source session seizes nothing: it samples once it holds a
    # thread's events besides each CPU's ring
    n = 0
    for fd in os.listdir("/proc/%d/fd" % cpid):
        try:
            n += os.readlink("/proc/%d/fd/%s" % (cpid, fd)) == "anon_inode:[perf_event]"
        except OSError:
            pass
    return n > os.cpu_count()
if cprof == "-":
    time.sleep(0.3)
    start = time.monotonic_ns()
    time.sleep(secs)
    print(start, time.monotonic_ns())
    sys.exit(0)
out = open(os.path.join(work, "out"), "w")
err = open(os.path.join(work, "err"), "w")
p = subprocess.Popen([cprof, "attach", "-p", pid, "-d", "%gs" % secs, "-F", hz, "--mode", "cpu",
                      "--json", "-q", "--write-timeout", "120s", "-o", os.path.join(work, "p.pb.gz")],
                     stdin=subprocess.DEVNULL, stdout=out, stderr=err)
start = None
while p.poll() is None and start is None:
    if traced() or watching(p.pid):
        start = time.monotonic_ns()
    else:
        time.sleep(0.002)
rc = p.wait()
out.close()
if rc != 0 or start is None:
    sys.exit("cprof attach exited %d: %s" % (rc, open(os.path.join(work, "err")).read()[:500]))
elapsed = json.load(open(os.path.join(work, "out")))["elapsed_ns"]
print(start, start + elapsed)
EOF

# run_variant TARGET VARIANT: one window on the running target; appends a
# line to runs.
run_variant() {
	local target=$1 v=$2 bin=- hz=0 win
	case $v in
	new/*) bin=$BUILD/cprof; hz=${v#new/} ;;
	base/*) bin=$BASE/cprof; hz=${v#base/} ;;
	esac
	win=$(python3 "$WORK/window.py" "$TPID" "$SECS" "$bin" "$hz" "$WORK" 2>"$WORK/win.err") ||
		die "$v on the $target target: $(head -c 500 "$WORK/win.err")"
	kill -0 "$TPID" 2>/dev/null || die "the $target target died during $v"
	sleep 0.2	# the last log line of the window
	python3 - "$WORK/log" "$win" "$target" "$v" "$WORK/out" >>"$WORK/runs" <<'EOF' ||
import json, sys
log, win, target, v, out = sys.argv[1:]
start, end = (int(x) for x in win.split())
rows = [[int(x) for x in l.split()] for l in open(log) if l.strip()]
inside = [r for r in rows if start <= r[0] <= end]
if len(inside) < 2:
    sys.exit("fewer than two log lines in the window")
a, b = inside[0], inside[-1]
rate = (b[1] - a[1]) / ((b[0] - a[0]) / 1e9)
lat50 = lat99 = "-"
if len(a) > 5 and b[3] > a[3]:
    hist = [y - x for x, y in zip(a[5:], b[5:])]
    n = sum(hist)
    def pct(p):
        want, seen = max(1, round(p / 100 * n)), 0
        for k, c in enumerate(hist):
            seen += c
            if seen >= want:
                if k < 4:
                    return k / 1e3
                e, m = divmod(k, 4)
                return (1 << e) * (1 + (m + 1) / 4) / 1e3  # the bucket's upper bound
        return 0
    lat50, lat99 = "%.2f" % pct(50), "%.2f" % pct(99)
f = ["-"] * 10
if v != "unprofiled":
    d = json.load(open(out))
    s = max(d["samples"], 1)
    el = d["elapsed_ns"]
    sig = d.get("signals_reinjected", 0)
    sn = d.get("signal_ns")
    f = ["%.2f" % (100 * d["cprof_cpu_ns"] / el), "%.1f" % (d["cprof_cpu_ns"] / 1e3 / s),
         "%.2f" % (d["cprof_cpu_ns"] / 1e3 / sig) if sig else "-",
         "%.1f" % (d["stop_ns"]["p50"] / 1e3), "%.1f" % (d["stop_ns"]["p99"] / 1e3),
         "%.2f" % (100 * d["stopped_fraction"]["max"]),
         "%.1f" % (sn["p50"] / 1e3) if sn else "-", "%.1f" % (sn["p99"] / 1e3) if sn else "-",
         "%.1f" % (100 * d["samples_signal_entry"] / s) if "samples_signal_entry" in d else "-",
         str(d["samples"])]
print(target, v, "%.0f" % rate, lat50, lat99, *f)
EOF
		die "cannot read the $target target's log or cprof --json: $(head -c 300 "$WORK/out")"
	sleep 0.3
}

VARIANTS=(unprofiled new/100 new/1000)
[ -n "$BASE" ] && VARIANTS+=(base/100 base/1000)

: >"$WORK/runs"
LOAD0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "machine: $(nproc) CPUs, $(uname -sr), $(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
echo "load average at start: $LOAD0"
echo "cprof: $BUILD/cprof${BASE:+; baseline: $BASE/cprof}"
echo "$RUNS rounds (SIGNALS_RUNS) of ${SECS} s windows (SIGNALS_SECS); targets: ${TARGETS[*]} (SIGNALS_TARGETS)"
echo "C targets: $NTHREADS thread(s) (SIGNALS_THREADS), $WORK_STEPS steps of work between signals (SIGNALS_WORK)"
[ -n "$JAVA_NOTE" ] && echo "note: $JAVA_NOTE"
echo
n=${#VARIANTS[@]}
for r in $(seq 0 $((RUNS - 1))); do
	for target in "${TARGETS[@]}"; do
		start_target "$target"
		for i in $(seq 0 $((n - 1))); do
			run_variant "$target" "${VARIANTS[$(((i + r) % n))]}"
		done
		stop_target
	done
done

python3 - "$WORK/runs" <<'EOF'
import sys
from collections import defaultdict
rows = defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    rows[(f[0], f[1])].append(f[2:])
def med(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2
def col(vals, i):
    xs = [float(v[i]) for v in vals if v[i] != "-"]
    return med(xs) if xs else None
names = {"unprofiled": "unprofiled", "new/100": "cprof 100 Hz", "new/1000": "cprof 1000 Hz",
         "base/100": "baseline 100 Hz", "base/1000": "baseline 1000 Hz"}
fmt = "%-6s %-17s %-22s %7s %13s %7s %7s %7s %17s %13s %7s"
print(fmt % ("target", "variant", "sig/s med [min-max]", "loss%", "lat us p50/99", "cpu%",
             "us/smp", "us/sig", "stop us p50/99 %", "turn us 50/99", "entry%"))
def cell(x, f="%.1f"):
    return "-" if x is None else f % x
meds = {}
for target in ("segv", "usr1", "java"):
    base = None
    for v in ("unprofiled", "new/100", "base/100", "new/1000", "base/1000"):
        vals = rows.get((target, v))
        if not vals:
            continue
        m = [col(vals, i) for i in range(13)]
        meds[(target, v)] = m
        rates = [float(x[0]) for x in vals]
        if v == "unprofiled":
            base = m[0]
        loss = 100 * (1 - m[0] / base) if base and v != "unprofiled" else None
        print(fmt % (target, names[v], "%.0f [%.0f-%.0f]" % (m[0], min(rates), max(rates)),
                     cell(loss), "%s/%s" % (cell(m[1], "%.2f"), cell(m[2], "%.2f")),
                     cell(m[3], "%.2f"), cell(m[4]), cell(m[5], "%.2f"),
                     "%s/%s %s" % (cell(m[6]), cell(m[7]), cell(m[8], "%.2f")),
                     "%s/%s" % (cell(m[9]), cell(m[10])), cell(m[11])))
print()
for target in ("segv", "usr1", "java"):
    for hz in ("100", "1000"):
        a, b = meds.get((target, "new/" + hz)), meds.get((target, "base/" + hz))
        if a and b and b[0] and b[3]:
            print("%s %s Hz: signals/s %.2fx the baseline's, cprof CPU %.2fx, CPU per sample %s, "
                  "CPU per signal %s" %
                  (target, hz, a[0] / b[0], a[3] / b[3],
                   "%.2fx" % (a[4] / b[4]) if a[4] and b[4] else "-",
                   "%.2fx" % (a[5] / b[5]) if a[5] and b[5] else "-"))
EOF
echo
echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg) (start: $LOAD0)"
