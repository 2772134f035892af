#!/bin/bash
# SPDX-License-Identifier: MIT
# Build cprof in build/ and run its test suite (the README's test command).
#
# usage: scripts/check.sh [CONFIGURE-ARGS...]     e.g. --enable-sanitizers
#
# The last line of output is always "N passed, N failed" (plus ", N skipped"
# when tests were skipped), read from build/test-suite.log.  A failed build is
# reported as "0 passed, 1 failed".  Exit status 0 only if nothing failed.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
builddir="$root/build"

# Used on every path that cannot count tests, so CI's last line still means
# something.
fail_setup() {
	echo "check.sh: $*" >&2
	echo "0 passed, 1 failed"
	exit 1
}

bash "$root/scripts/deps.sh" || fail_setup "missing Debian packages (see above)"
bash "$root/scripts/build.sh" "$@" || fail_setup "build failed"

cd "$builddir" || fail_setup "no build directory '$builddir'"
# A stale log from an earlier run must not be counted if make check fails
# before the harness starts (e.g. a test program does not compile).
rm -f test-suite.log
echo "check.sh: make -j2 check"
make -j2 check
make_rc=$?

[ -f test-suite.log ] ||
	fail_setup "make check did not produce '$builddir/test-suite.log' (exit $make_rc)"

# automake writes "# PASS:  N", "# FAIL:  N", ... near the top of the log.
count() {
	sed -n "s/^# $1: *\([0-9][0-9]*\)\$/\1/p" test-suite.log | head -n 1
}
pass=$(count PASS); xfail=$(count XFAIL); skip=$(count SKIP)
fail=$(count FAIL); xpass=$(count XPASS); error=$(count ERROR)
if [ -z "$pass" ] || [ -z "$fail" ]; then
	fail_setup "cannot read the test counts from '$builddir/test-suite.log'"
fi

# XFAIL (an expected failure) counts as passed; XPASS (a test marked as
# expected to fail that passed) counts as failed, as automake does.
passed=$((pass + ${xfail:-0}))
failed=$((fail + ${error:-0} + ${xpass:-0}))

# The failing tests' logs, last lines of each: the first place to look.
for trs in $(find tests . -maxdepth 1 -name '*.trs' 2>/dev/null | sort -u); do
	grep -Eq '^:test-result: (FAIL|ERROR|XPASS)' "$trs" || continue
	log=${trs%.trs}.log
	echo
	echo "==== $(grep '^:test-result:' "$trs" | head -n 1 | cut -d' ' -f2): $log (last 40 lines) ===="
	tail -n 40 "$log" 2>/dev/null
done

rc=0
if [ "$failed" -gt 0 ]; then
	rc=1
elif [ "$make_rc" -ne 0 ]; then
	# The harness counted no failure but make check failed anyway: say so
	# rather than print a clean summary.
	echo "check.sh: make check failed (exit $make_rc) with no failing test" >&2
	failed=1
	rc=1
fi

echo
summary="$passed passed, $failed failed"
[ "${skip:-0}" -gt 0 ] && summary="$summary, $skip skipped"
echo "$summary"
exit $rc
