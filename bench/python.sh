#!/bin/bash
# SPDX-License-Identifier: MIT
# What Python frames cost a sampling session, and the target.
#
#   bench/python.sh [BUILDDIR] [K] [SECONDS]
#
# BUILDDIR (default ./build) holds a built cprof; K (default 3) runs per
# row; SECONDS (default 4) each run.  tests/targets/pywork.py -m rate (one
# thread counting in a Python loop) runs under Debian's /usr/bin/python3.11
# and the newest pyenv 3.8 and 3.13 installed, K times each way, in turns:
# alone (the baseline), under cprof record --python off (the default source,
# perf events where permitted), --python off --source ptrace (stops, as
# auto uses for Python), and --python auto.  Per row: the target's loop
# iterations per second (median) and its ratio to the baseline of the same
# run; cprof's sampling thread CPU per sample (its --json cprof_cpu_ns /
# samples), the median stop, and with auto the time reading the frames
# took per sample (read_ns, inside the stops) and the share of samples
# with Python frames.
#
# Figures only: it never fails on a timing; exit status 1 on a real error
# (no cprof, a run failed).
set -u
export LC_ALL=C
ME=python
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"

BUILD=${1:-./build}
K=${2:-3}
SECONDS_=${3:-4}
bench_cprof "$BUILD"
bench_positive K "$K" runs
bench_positive SECONDS "$SECONDS_" seconds
bench_workdir

run_one() {
	python3 - "$CPROF" "$1" "$HERE/../tests/targets/pywork.py" "$K" "$SECONDS_" "$WORK" <<'PY' ||
import json, os, re, statistics, subprocess, sys
cprof, py, script, k, secs, work = sys.argv[1:7]
k, secs = int(k), float(secs)
ways = [("alone", None), ("off", ["--python", "off"]),
        ("off ptrace", ["--python", "off", "--source", "ptrace"]), ("auto", ["--python", "auto"])]
rows = {name: [] for name, _ in ways}
version = subprocess.run([py, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                         capture_output=True, text=True, check=True).stdout.strip()
target = [py, script, "-m", "rate", "-s", str(secs), "-r", os.path.join(work, "ready")]
for i in range(k):
    for name, opts in ways:
        cmd = target if opts is None else \
            [cprof, "record", "-q", "--json", "-o", os.path.join(work, "p.pb.gz")] + opts + ["--"] + target
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr))
        its = int(re.search(r"^iterations: (\d+)$", r.stdout, re.M).group(1))
        row = {"rate": its / secs}
        if opts is not None:
            d = json.loads(r.stdout[r.stdout.index("{"):].splitlines()[0])
            n = max(d["samples"], 1)
            row.update(cpu_us=d["cprof_cpu_ns"] / n / 1e3, stop_us=d["stop_ns"]["p50"] / 1e3,
                       source=d["source"])
            if d.get("python"):
                row.update(read_us=d["python"]["read_ns"] / n / 1e3,
                           share=d["python"]["samples"] / n)
        rows[name].append(row)
        os.unlink(os.path.join(work, "ready")) if os.path.exists(os.path.join(work, "ready")) else None
med = lambda name, key: statistics.median(r[key] for r in rows[name])
base = med("alone", "rate")
for name, opts in ways:
    line = "%-8s %-10s  %8.2f M it/s  x%.3f of alone" % (version, name, med(name, "rate") / 1e6,
                                                       med(name, "rate") / base)
    if opts is not None:
        line += "  (%s) cprof cpu %6.1f us/sample  stop p50 %6.1f us" % (
            rows[name][0]["source"], med(name, "cpu_us"), med(name, "stop_us"))
    if name == "auto":
        line += "  python read %5.1f us/sample, %3.0f%% of samples with Python frames" % (
            med(name, "read_us"), 100 * med(name, "share"))
    print(line)
PY
		die "a run failed"
}

echo "$ME: $K runs of $SECONDS_ s per row, medians; cprof at $CPROF; load $(cut -d' ' -f1-3 /proc/loadavg)"
n=0
while read -r py; do
	run_one "$py"
	n=$((n + 1))
done < <(bench_pythons 8 13)
[ "$n" -gt 0 ] || die "no CPython found (/usr/bin/python3.11 or pyenv 3.8/3.13)"
