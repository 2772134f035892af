#!/bin/bash
# SPDX-License-Identifier: MIT
# What cprof top's view costs: cprof's CPU per second at 100 Hz with the
# screen (ncurses, in a tmux terminal) and without it (-b), against attach
# on the same target in the same run.
#
#   bench/top-cost.sh [BUILDDIR]
#
# Goal it informs: the view's cost (issue 24), "cprof CPU per second at
# 100 Hz, with and without the screen".
#
# The target is BUILDDIR's tests/targets/chain with TOP_THREADS (default 2)
# busy threads.  Variants, TOP_RUNS runs each (default 3), TOP_SECS seconds
# each (default 10), interleaved and rotated from run to run:
#   attach   cprof attach -F 100 -d SECS -q -o FILE --write-timeout 300s (the baseline: the same
#            session, then one symbolization and write at the end)
#   batch    cprof top -F 100 -d SECS -b >/dev/null (symbolized each second,
#            a block of text a second)
#   screen   cprof top -F 100 -d SECS in a 120x40 tmux terminal
# Per variant: the median over runs of cprof's CPU time (every thread of the
# process, user + system, from /usr/bin/time) per second of wall time, in
# percent of one CPU, and its ratio to attach's; and the target's CPU over
# the run (how much there was to sample: on a loaded machine the busy
# threads get less than a CPU each).
#
# Figures only: it never fails on a timing.  Exit status 1 only on a real
# error (no cprof, no target, a run failed).
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(cd "${1:-./build}" 2>/dev/null && pwd) || BUILD=${1:-./build}
RUNS=${TOP_RUNS:-3}
SECS=${TOP_SECS:-10}
THREADS=${TOP_THREADS:-2}
ME=top-cost
. "$HERE/lib.sh"

CPROF="$BUILD/cprof"
TARGET="$BUILD/tests/targets/chain"
[ -x "$CPROF" ] || die "no cprof in '$BUILD' (give the build directory as the first argument)"
[ -x "$TARGET" ] || die "no $TARGET (make check builds it; or: make -C '$BUILD' tests/targets/chain)"
[ -x /usr/bin/time ] || die "/usr/bin/time is needed (Debian package time)"
command -v tmux >/dev/null || die "tmux is needed for the screen variant (Debian package tmux)"
bench_positive TOP_RUNS "$RUNS"
bench_positive TOP_SECS "$SECS" seconds
bench_positive TOP_THREADS "$THREADS" threads

bench_workdir
TMUX_SOCKET="$ME-$$"
tm() { tmux -L "$TMUX_SOCKET" -f /dev/null "$@"; }
trap 'tm kill-server >/dev/null 2>&1; bench_cleanup' EXIT

"$TARGET" -t "$THREADS" -s $((RUNS * SECS * 3 + 120)) -r "$WORK/ready" >/dev/null 2>&1 &
TPID=$!
for _ in $(seq 200); do [ -e "$WORK/ready" ] && break; sleep 0.05; done
[ -e "$WORK/ready" ] || die "the target did not start"

CLK_TCK=$(getconf CLK_TCK)
# target_ticks: the target's CPU time (utime + stime of every thread), in ticks.
target_ticks() {
	local s
	s=$(cat "/proc/$TPID/stat") || die "the target is gone"
	s=${s##*) }
	echo "$s" | awk '{ print $12 + $13 }'
}

# run_variant VARIANT: one run; appends "VARIANT CPROF_CPU_PERCENT
# TARGET_CPU_PERCENT" to $WORK/runs.
run_variant() {
	local v=$1 t="$WORK/time.$1" i=0 t0 t1
	rm -f "$t"
	t0=$(target_ticks)
	case $v in
	attach)
		# all of its symbolization counted, however loaded the machine
		/usr/bin/time -o "$t" -f '%e %U %S' "$CPROF" attach -p "$TPID" -F 100 -d "${SECS}s" -q \
			--write-timeout 300s -o "$WORK/attach.pb.gz" || die "attach failed"
		;;
	batch)
		/usr/bin/time -o "$t" -f '%e %U %S' "$CPROF" top -p "$TPID" -F 100 -d "${SECS}s" -b \
			>/dev/null || die "top -b failed"
		;;
	screen)
		tm new-session -d -s "$v" -x 120 -y 40 \
			"/usr/bin/time -o '$t' -f '%e %U %S' '$CPROF' top -p $TPID -F 100 -d ${SECS}s 2>'$WORK/screen.err'"
		while [ ! -s "$t" ]; do
			i=$((i + 1))
			[ "$i" -lt $(( (SECS + 60) * 20 )) ] || die "top in tmux did not end: $(cat "$WORK/screen.err")"
			sleep 0.05
		done
		grep -q 'exited with non-zero status' "$t" && die "top in tmux failed: $(cat "$WORK/screen.err")"
		;;
	esac
	t1=$(target_ticks)
	tail -1 "$t" | awk -v v="$v" -v dt=$((t1 - t0)) -v hz="$CLK_TCK" \
		'{ printf "%s %.3f %.1f\n", v, 100 * ($2 + $3) / $1, 100 * dt / hz / $1 }' >>"$WORK/runs"
}

variants=(attach batch screen)
echo "$ME: chain with $THREADS busy threads, $RUNS runs x $SECS s per variant at -F 100"
for r in $(seq 0 $((RUNS - 1))); do
	for k in 0 1 2; do
		run_variant "${variants[$(( (k + r) % 3 ))]}"
	done
done

# Medians, and each against attach's.
awk '
	{ k = n[$1] + 0; v[$1, k] = $2; tv[$1, k] = $3; n[$1] = k + 1 }
	function median(name, t,   i, j, x, k, a) {
		k = n[name]
		for (i = 0; i < k; i++) a[i] = (t ? tv[name, i] : v[name, i])
		for (i = 1; i < k; i++) { x = a[i]; for (j = i - 1; j >= 0 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
		return k % 2 ? a[(k - 1) / 2] : (a[k / 2 - 1] + a[k / 2]) / 2
	}
	END {
		base = median("attach", 0)
		printf "%-8s %18s %10s %19s\n", "variant", "cprof CPU (% of 1)", "vs attach", "target CPU (% of 1)"
		split("attach batch screen", order, " ")
		for (i = 1; i <= 3; i++) {
			m = median(order[i], 0)
			printf "%-8s %18.2f %9.2fx %19.1f\n", order[i], m, (base > 0 ? m / base : 0), median(order[i], 1)
		}
	}' "$WORK/runs"
