#!/bin/bash
# SPDX-License-Identifier: MIT
# How often does `cprof diff`'s gate cry wolf, and how small a real change
# does it catch?
#
#   bench/diff-gate.sh [BUILDDIR]
#
# BUILDDIR (default ./build) holds a built cprof and tests/targets/mover, a
# program whose CPU splits between fn_a and fn_b as -p PERCENT says (both
# the same loop, so moving PERCENT by x moves about x points of the share).
# Every profile is `cprof record -F 100 -d D -- mover -p P`.
#
#   false regressions: DIFF_PAIRS (default 20) pairs of identical 1 s runs
#     of mover -p 70, each pair diffed with the default gate (threshold 5
#     points, 99% confidence); counts the pairs that exit 3.
#   detection: for each shift x in DIFF_SHIFTS_1S (1 s runs) and
#     DIFF_SHIFTS_10S (10 s runs), DIFF_TRIES pairs (default 10) of mover -p 50
#     against mover -p 50+x, diffed with --threshold DIFF_THRESHOLD (default
#     the gate's 5); counts the pairs that exit 3.  The smallest shift caught
#     in at least 4 of 5 pairs is the one reported; an empty list skips.
#
# The identical pairs are the baseline of the same run: their rate of exit 3
# is what the gate costs in false alarms on this machine today.  Figures
# only, never a pass or fail on them; exit 1 only on a real error.
set -u
export LC_ALL=C

B=${1:-build}
CPROF=$B/cprof
MOVER=$B/tests/targets/mover
PAIRS=${DIFF_PAIRS:-20}
TRIES=${DIFF_TRIES:-10}
SHIFTS_1S=${DIFF_SHIFTS_1S-"10 20 30 40"}	# set empty to skip
SHIFTS_10S=${DIFF_SHIFTS_10S-"3 5 8 12"}
THRESHOLD=${DIFF_THRESHOLD:-5}
[ -x "$CPROF" ] && [ -x "$MOVER" ] || { echo "diff-gate: build cprof and tests/targets/mover first ($B)" >&2; exit 1; }
DIR=$(mktemp -d) || exit 1
trap 'rm -rf "$DIR"' EXIT

samples() {
	"$CPROF" report --json --type samples "$1" | sed -n 's/.*"total":\([0-9]*\).*/\1/p'
}

# rec OUT PERCENT SECONDS: one profile; the run outlasts the sampling a bit.
# A machine busy enough to leave the target no CPU for the whole second
# gives a profile without samples, which diff refuses: taken again (3 tries).
rec() {
	local try
	for try in 1 2 3; do
		"$CPROF" record -q -F 100 -d "$3s" -o "$1" -- "$MOVER" -p "$2" -s "$(($3 + 1))" >/dev/null ||
			{ echo "diff-gate: cprof record failed" >&2; exit 1; }
		[ "$("$CPROF" report --json "$1" | sed -n 's/.*"total":\([0-9]*\).*/\1/p')" -gt 0 ] &&
			return 0
		echo "  (a profile without samples: the machine is busy; again)"
	done
	echo "diff-gate: three profiles without samples in a row" >&2
	exit 1
}

# gate BASE NEW [ARGS]: prints 1 when diff exits 3, 0 when 0; fails otherwise.
gate() {
	local rc
	"$CPROF" diff "$@" >"$DIR/diff.out" 2>&1
	rc=$?
	case $rc in
	0) echo 0 ;;
	3) echo 1 ;;
	*) echo "diff-gate: cprof diff exited $rc: $(cat "$DIR/diff.out")" >&2; exit 1 ;;
	esac
}


echo "false regressions: $PAIRS pairs of identical 1 s runs (mover -p 70), default gate"
fa=0 n=0
for i in $(seq "$PAIRS"); do
	rec "$DIR/a.pb.gz" 70 1
	rec "$DIR/b.pb.gz" 70 1
	r=$(gate "$DIR/a.pb.gz" "$DIR/b.pb.gz") || exit 1
	fa=$((fa + r))
	n=$((n + $(samples "$DIR/a.pb.gz") + $(samples "$DIR/b.pb.gz")))
	[ "$r" = 0 ] || echo "  pair $i: exit 3: $(grep -E '^Grew' "$DIR/diff.out")"
done
echo "  $fa of $PAIRS pairs exit 3 (rate $(awk -v a="$fa" -v b="$PAIRS" 'BEGIN { printf "%.3f", a / b }')); mean samples per profile $((n / (2 * PAIRS)))"

# detect SECONDS SHIFTS: detection rate per shift.
detect() {
	local secs=$1 x t hits n smallest=none
	shift
	[ $# -gt 0 ] || return 0
	echo "detection at 100 Hz, $secs s runs, mover -p 50 against -p 50+x, --threshold $THRESHOLD, $TRIES pairs each"
	for x in "$@"; do
		hits=0 n=0
		for t in $(seq "$TRIES"); do
			rec "$DIR/a.pb.gz" 50 "$secs"
			rec "$DIR/b.pb.gz" $((50 + x)) "$secs"
			r=$(gate --threshold "$THRESHOLD" "$DIR/a.pb.gz" "$DIR/b.pb.gz") || exit 1
			hits=$((hits + r))
			n=$((n + $(samples "$DIR/a.pb.gz") + $(samples "$DIR/b.pb.gz")))
		done
		echo "  x=$x points: caught in $hits of $TRIES pairs (mean samples per profile $((n / (2 * TRIES))))"
		if [ "$smallest" = none ] && [ $((hits * 5)) -ge $((TRIES * 4)) ]; then
			smallest=$x
		fi
	done
	echo "  smallest shift caught in at least 4 of 5 pairs at $secs s: $smallest"
}
detect 1 $SHIFTS_1S
detect 10 $SHIFTS_10S
