#!/bin/bash
# SPDX-License-Identifier: MIT
# Build cprof with AddressSanitizer and UndefinedBehaviorSanitizer
# (configure --enable-sanitizers: no recovery) in build-san/ and run its test
# suite there, leak detection on.
#
# usage: scripts/sanitize.sh [CONFIGURE-ARGS...]
#
# ASan and LeakSanitizer write their reports to build-san/san-logs/ (not to
# cprof's stderr, which the tests compare); UBSan's runtime has no log_path
# here, so its "runtime error:" lines go to the process's stderr and show in
# the failing test's log.  Both are printed at the end.  A report makes the
# process exit non-zero, so the test that ran it fails.  The
# last line of output is "N passed, N failed" (plus ", N skipped"), as in
# scripts/check.sh; a report that no failing test accounts for (a leak in a
# process whose exit status nobody checks) counts as one more failure.
# Exit status 0 only if nothing failed.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
builddir="$root/build-san"
logdir="$builddir/san-logs"

SUMMARY_ME=sanitize.sh
. "$root/scripts/summary.sh"

fail_setup() {
	echo "sanitize.sh: $*" >&2
	echo "0 passed, 1 failed"
	exit 1
}
say() { echo "sanitize.sh: $*"; }

bash "$root/scripts/deps.sh" || fail_setup "missing Debian packages (see above)"
[ ! -f config.status ] ||
	fail_setup "the source tree is configured in place; run 'make distclean' in '$root' first"

# As scripts/build.sh, for build-san/.
if [ ! -f configure ] || [ ! -f Makefile.in ] || [ configure.ac -nt configure ] ||
   [ Makefile.am -nt configure ]; then
	say "autoreconf -fi"
	autoreconf -fi || fail_setup "autoreconf failed"
fi
stamp="$builddir/.cprof-configure-args"
want=$(printf '%s\n' "CC=${CC-}" "CFLAGS=${CFLAGS-}" --enable-sanitizers "$@")
if [ -f "$stamp" ] && [ "$(cat "$stamp")" != "$want" ]; then
	say "configure arguments changed: removing '$builddir'"
	rm -rf "$builddir"
fi
mkdir -p "$builddir"
cd "$builddir" || fail_setup "cannot enter '$builddir'"
if [ ! -f config.status ] || [ ! -f Makefile ] || [ ../configure -nt config.status ]; then
	say "../configure --enable-sanitizers $*"
	rm -f "$stamp"
	../configure --enable-sanitizers "$@" ||
		fail_setup "configure failed (see '$builddir/config.log')"
	printf '%s\n' "$want" >"$stamp"
fi
grep -q '^CPROF_SAN = .*-fsanitize=address' Makefile ||
	fail_setup "'$builddir' is not configured with --enable-sanitizers"
say "make -j2"
make -j2 || fail_setup "build failed"

# No recovery (configure's -fno-sanitize-recover=all), leaks are errors.
rm -rf "$logdir"
mkdir -p "$logdir"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:log_path=$logdir/asan${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$logdir/ubsan${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"
export LSAN_OPTIONS="${LSAN_OPTIONS:-}"

rm -f test-suite.log
echo "sanitize.sh: make -j2 check"
make -j2 check
make_rc=$?
suite_recheck

# The reports, whichever test they came from.
nreports=0
for f in "$logdir"/*; do
	[ -s "$f" ] || continue
	nreports=$((nreports + 1))
	echo
	echo "==== sanitizer report: $f ===="
	cat "$f"
done

SUMMARY_NO_LINE=1
suite_summary "$builddir" "$make_rc"
# UBSan's reports, from the tests' logs (their stderr quotes).
ub=$(grep -h -o '[^ ]*: runtime error: .*' tests/*.log 2>/dev/null | sort | uniq -c)
if [ -n "$ub" ]; then
	echo
	echo "==== UBSan reports in the tests' logs (count, report) ===="
	echo "$ub"
	nreports=$((nreports + $(echo "$ub" | wc -l)))
fi
rc=$SUMMARY_RC
failed=$SUMMARY_FAILED
if [ "$nreports" -gt 0 ] && [ "$failed" -eq 0 ]; then
	echo "sanitize.sh: $nreports sanitizer report(s) in '$logdir' but no test failed" >&2
	failed=1
	rc=1
fi
echo
summary_line "$SUMMARY_PASSED" "$failed" "$SUMMARY_SKIPPED"
exit "$rc"
