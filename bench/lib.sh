# SPDX-License-Identifier: MIT
# What the benchmark scripts share.  Sourced by each after it sets ME (its
# name, for messages) and HERE (this directory).

die() { echo "$ME: $*" >&2; exit 1; }

# bench_cprof BUILDDIR: CPROF, the cprof built in BUILDDIR; dies when there is none.
bench_cprof() {
	CPROF=$1/cprof
	[ -x "$CPROF" ] || die "no cprof in '$1' (give the build directory as the first argument)"
}

# bench_needs COMMAND PURPOSE: dies unless COMMAND is installed ("python3 is
# needed PURPOSE").
bench_needs() {
	command -v "$1" >/dev/null || die "$1 is needed $2"
}

# bench_positive NAME VALUE [UNIT]: dies unless VALUE is a positive integer.
bench_positive() {
	case $2 in
	''|*[!0-9]*|0) die "$1 must be a positive number${3:+ of $3}, not '$2'" ;;
	esac
}

# bench_knobs PREFIX RUNS SECS HZ: RUNS, SECS and HZ from the environment's
# PREFIX_RUNS, PREFIX_SECS and PREFIX_HZ, else the defaults given; dies unless
# each is a positive integer.
bench_knobs() {
	local runs=$1_RUNS secs=$1_SECS hz=$1_HZ
	RUNS=${!runs:-$2}
	SECS=${!secs:-$3}
	HZ=${!hz:-$4}
	bench_positive "$runs" "$RUNS"
	bench_positive "$secs" "$SECS" seconds
	bench_positive "$hz" "$HZ" Hz
}

# bench_pythons MINOR...: the CPythons to measure, one a line: Debian's
# /usr/bin/python3.11 when installed, then the newest pyenv 3.MINOR of each
# MINOR given (free-threaded builds left out).
bench_pythons() {
	local root m p
	[ -x /usr/bin/python3.11 ] && echo /usr/bin/python3.11
	root=${PYENV_ROOT:-$(pyenv root 2>/dev/null || echo "${HOME:-}/.pyenv")}
	for m in "$@"; do
		p=$(ls -d "$root"/versions/3.$m.[0-9]* 2>/dev/null | grep -v 't$' | sort -V | tail -n 1)
		[ -n "$p" ] && [ -x "$p/bin/python3" ] && echo "$p/bin/python3"
	done
	return 0
}

# stop_target: kills the running target, TPID, and reaps it.
stop_target() {
	[ -n "$TPID" ] && kill -KILL "$TPID" 2>/dev/null
	[ -n "$TPID" ] && wait "$TPID" 2>/dev/null
	TPID=""
}

# bench_load_add PID: a process the bench started to load the machine (a
# busy loop, a writer), killed and reaped by bench_stop_load, and at the
# latest when the script ends.
BENCH_LOAD_PIDS=""
bench_load_add() { BENCH_LOAD_PIDS="$BENCH_LOAD_PIDS $1"; }
bench_stop_load() {
	local p
	for p in $BENCH_LOAD_PIDS; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	BENCH_LOAD_PIDS=""
}

bench_cleanup() {
	bench_stop_load
	stop_target
	rm -rf "$WORK"
}

# bench_workdir: WORK, a temporary directory that goes, with the target, when
# the script ends, however it ends.
bench_workdir() {
	WORK=$(mktemp -d "${TMPDIR:-/tmp}/$ME.XXXXXX") || die "cannot create a temporary directory"
	TPID=""
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
}
