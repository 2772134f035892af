#!/bin/bash
# SPDX-License-Identifier: MIT
# What reading Python frames adds to dump-threads.
#
#   bench/python-dump.sh [BUILDDIR] [K]
#
# BUILDDIR (default ./build) holds a built cprof; K (default 10) dumps per
# row.  tests/targets/pystacks.py runs under Debian's /usr/bin/python3.11 and
# each pyenv 3.12/3.13 installed (one thread spins, three block).  For each
# interpreter, K dumps with --python auto and K with --python off, in turns:
# median freeze (cprof's own report: first stop to last resume), median
# stopped time summed over threads, median cprof CPU (user + system) per
# dump, and the ratio of auto to off measured in the same run; for auto
# also the median time the frame chains took to read (inside the freeze,
# cprof's "read_ns").
#
# Figures only: it never fails on a timing; exit status 1 on a real error
# (no cprof, the target died, a dump failed).
set -u
export LC_ALL=C
ME=python-dump
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"

BUILD=${1:-./build}
K=${2:-10}
bench_cprof "$BUILD"
bench_positive K "$K" runs
bench_workdir

# One interpreter: K dumps each way, alternating; prints the row.
run_one() {
	local py=$1
	rm -f "$WORK/ready"
	"$py" "$HERE/../tests/targets/pystacks.py" -s 600 -r "$WORK/ready" </dev/null >/dev/null \
		2>"$WORK/target.err" &
	TPID=$!
	for _ in $(seq 200); do
		[ -e "$WORK/ready" ] && break
		kill -0 "$TPID" 2>/dev/null || die "$py died: $(cat "$WORK/target.err")"
		sleep 0.05
	done
	[ -e "$WORK/ready" ] || die "$py not ready within 10 s"
	python3 - "$CPROF" "$TPID" "$K" "$(head -n 1 "$WORK/ready")" <<'PY' || die "a dump failed"
import json, resource, statistics, subprocess, sys
cprof, pid, k, version = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
rows = {"auto": [], "off": []}
for i in range(2 * k):
    mode = ("auto", "off")[i % 2]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run([cprof, "dump-threads", "-q", "--json", "-p", pid, "--python", mode],
                         capture_output=True, check=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    d = json.loads(out)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    rows[mode].append((d["freeze_ns"] / 1e6, d["stopped_ns"] / 1e6, cpu * 1e3,
                       d["python"]["read_ns"] / 1e3 if d["python"] else 0))
    if mode == "auto" and not d["python"]:
        sys.exit("no interpreter found in " + pid)
med = {m: [statistics.median(x[j] for x in r) for j in range(4)] for m, r in rows.items()}
for m in ("auto", "off"):
    f, s, c, py = med[m]
    print("%-14s --python %-4s  freeze %7.3f ms  stopped %7.3f ms  cprof cpu %7.2f ms/dump%s"
          % (version, m, f, s, c, "  frames read in %.1f us" % py if m == "auto" else ""))
ratio = lambda j: med["auto"][j] / med["off"][j] if med["off"][j] else float("nan")
print("%-14s auto/off       freeze x%.2f  stopped x%.2f  cprof cpu x%.2f"
      % (version, ratio(0), ratio(1), ratio(2)))
PY
	stop_target
}

echo "$ME: $K dumps per row, medians; cprof at $CPROF"
n=0
while read -r py; do
	run_one "$py"
	n=$((n + 1))
done < <(bench_pythons 12 13)
[ "$n" -gt 0 ] || die "no CPython found (/usr/bin/python3.11 or pyenv 3.12/3.13)"
