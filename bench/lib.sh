# SPDX-License-Identifier: MIT
# What the benchmark scripts share.  Sourced by each after it sets ME (its
# name, for messages) and HERE (this directory).

die() { echo "$ME: $*" >&2; exit 1; }

# bench_positive NAME VALUE [UNIT]: dies unless VALUE is a positive integer.
bench_positive() {
	case $2 in
	''|*[!0-9]*|0) die "$1 must be a positive number${3:+ of $3}, not '$2'" ;;
	esac
}

# stop_target: kills the running target, TPID, and reaps it.
stop_target() {
	[ -n "$TPID" ] && kill -KILL "$TPID" 2>/dev/null
	[ -n "$TPID" ] && wait "$TPID" 2>/dev/null
	TPID=""
}

bench_cleanup() {
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
