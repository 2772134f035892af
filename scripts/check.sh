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

# Counts, failing logs and the summary line: shared with sanitize.sh.
SUMMARY_ME=check.sh
. "$root/scripts/summary.sh"
suite_recheck
suite_summary "$builddir" "$make_rc"
exit "$SUMMARY_RC"
