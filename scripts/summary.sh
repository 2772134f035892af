# SPDX-License-Identifier: MIT
# The test-suite summary shared by check.sh, sanitize.sh and .ci/run: sourced,
# never run on its own.
#
# The caller defines fail_setup MESSAGE (print, "0 passed, 1 failed", exit 1)
# and sets SUMMARY_ME (its name, the prefix of its messages).

# suite_summary BUILDDIR MAKE_RC: from BUILDDIR/test-suite.log, print the last
# 40 lines of each failing test's log, then an empty line and the
# "N passed, N failed[, N skipped]" line.  Sets SUMMARY_PASSED,
# SUMMARY_FAILED, SUMMARY_SKIPPED and SUMMARY_RC (0 only if nothing failed
# and make check succeeded).  Must run with BUILDDIR as the current directory.
# With SUMMARY_NO_LINE=1 the empty line and the summary line are left to the
# caller (which has more to count).
suite_summary() {
	local builddir=$1 make_rc=$2 pass xfail skip fail xpass error passed failed trs log summary

	[ -f test-suite.log ] ||
		fail_setup "make check did not produce '$builddir/test-suite.log' (exit $make_rc)"

	# Each test's .trs holds its results (":test-result: PASS", ...): the
	# script tests count once each; the unit tests, run by the TAP driver,
	# once per check (ok, not ok, or ok # SKIP).  Counted there rather than
	# from test-suite.log's "# PASS:  N", which after a make recheck counts
	# the rechecked tests alone.
	pass=$(summary_count PASS); xfail=$(summary_count XFAIL); skip=$(summary_count SKIP)
	fail=$(summary_count FAIL); xpass=$(summary_count XPASS); error=$(summary_count ERROR)
	if [ -z "$pass" ] || [ -z "$fail" ]; then
		fail_setup "cannot read the test counts from '$builddir/test-suite.log'"
	fi

	# XFAIL (an expected failure) counts as passed; XPASS (a test marked as
	# expected to fail that passed) counts as failed, as automake does.
	passed=$((pass + ${xfail:-0}))
	failed=$((fail + ${error:-0} + ${xpass:-0}))

	# The failing tests' logs, last lines of each: the first place to look.
	# A unit test run by the TAP driver has a result per check: name the
	# first bad one.
	for trs in $(find tests . -maxdepth 1 -name '*.trs' 2>/dev/null | sort -u); do
		grep -Eq '^:test-result: (FAIL|ERROR|XPASS)' "$trs" || continue
		log=${trs%.trs}.log
		echo
		echo "==== $(grep -E -m1 '^:test-result: (FAIL|ERROR|XPASS)' "$trs" | cut -d' ' -f2-): $log (last 40 lines) ===="
		tail -n 40 "$log" 2>/dev/null
	done

	SUMMARY_RC=0
	if [ "$failed" -gt 0 ]; then
		SUMMARY_RC=1
	elif [ "$make_rc" -ne 0 ]; then
		# The harness counted no failure but make check failed anyway: say so
		# rather than print a clean summary.
		echo "$SUMMARY_ME: make check failed (exit $make_rc) with no failing test" >&2
		failed=1
		SUMMARY_RC=1
	fi

	SUMMARY_PASSED=$passed
	SUMMARY_FAILED=$failed
	SUMMARY_SKIPPED=${skip:-0}
	[ "${SUMMARY_NO_LINE:-0}" = 1 ] && return 0
	echo
	summary_line "$SUMMARY_PASSED" "$SUMMARY_FAILED" "$SUMMARY_SKIPPED"
}

# suite_recheck: after make check, in the build directory, with make_rc set
# to its status.  When one to three tests failed, prints their log tails as
# the first run's, then runs just those once more (automake's make recheck)
# and sets make_rc to that run's status.  Live tests sample real processes
# on a shared 2-CPU machine: one that failed on a loaded moment's sample
# count passes again, a real failure fails twice and is reported as before.
# More than three failures are not retried: that is no moment's load.
suite_recheck() {
	local failing n trs

	[ "$make_rc" -ne 0 ] && [ -f test-suite.log ] || return 0
	failing=$(grep -l -E '^:test-result: (FAIL|ERROR)' tests/*.trs 2>/dev/null)
	n=$(printf '%s\n' "$failing" | grep -c .)
	[ "$n" -ge 1 ] && [ "$n" -le 3 ] || return 0
	for trs in $failing; do
		echo
		echo "---- first run: ${trs%.trs}.log failed (last 40 lines) ----"
		tail -n 40 "${trs%.trs}.log" 2>/dev/null
	done
	echo
	echo "$SUMMARY_ME: $n test(s) failed; running them once more (make recheck)"
	make recheck
	make_rc=$?
}

summary_count() {
	local trs

	trs=$(find tests . -maxdepth 1 -name '*.trs' 2>/dev/null | sort -u)
	[ -n "$trs" ] || return 0
	# shellcheck disable=SC2086
	cat $trs | grep -c "^:test-result: $1\$" || true
}

# summary_line PASSED FAILED SKIPPED: the one line CI reads.
summary_line() {
	local s="$1 passed, $2 failed"

	[ "${3:-0}" -gt 0 ] && s="$s, $3 skipped"
	echo "$s"
}

# summary_parse LINE: split a summary line into SUMMARY_PASSED,
# SUMMARY_FAILED and SUMMARY_SKIPPED; returns 1 if LINE is not one.
summary_parse() {
	local re='^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$'

	[[ $1 =~ $re ]] || return 1
	SUMMARY_PASSED=${BASH_REMATCH[1]}
	SUMMARY_FAILED=${BASH_REMATCH[2]}
	SUMMARY_SKIPPED=${BASH_REMATCH[4]:-0}
}
