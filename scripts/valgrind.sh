#!/bin/bash
# SPDX-License-Identifier: MIT
# Runs a set of live tests with every cprof process under valgrind
# (memcheck: invalid accesses, uninitialised values, definite leaks).
#
# usage: scripts/valgrind.sh [TEST...]     (default: the set below)
#
# It needs a normal build in build/ (scripts/build.sh).  The tests run
# against a copy of the build directory's layout whose cprof is a wrapper
# that execs valgrind on the real binary; the targets stay native.  Under
# valgrind cprof is 20-50 times slower, so it samples less often: the tests
# do not time anything and still hold.  The last line is
# "N passed, N failed" like scripts/check.sh; exit 0 only if all passed.
# Not part of CI: the sanitizer build (scripts/sanitize.sh) covers the whole
# suite there, within CI's time.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build"
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(attach-chain attach-inline attach-stop attach-modes attach-exit
	dump-threads errors record report flame)

command -v valgrind >/dev/null || { echo "valgrind.sh: valgrind is not installed"; echo "0 passed, 1 failed"; exit 1; }
[ -x "$build/cprof" ] || { echo "valgrind.sh: no build in $build (run scripts/build.sh)"; echo "0 passed, 1 failed"; exit 1; }
make -C "$build" -s check TESTS= >/dev/null || { echo "valgrind.sh: cannot build the test programs"; echo "0 passed, 1 failed"; exit 1; }

shadow=$(mktemp -d /tmp/cprof-valgrind.XXXXXX)
logs="$shadow/valgrind-logs"
mkdir -p "$logs" "$shadow/tests"
trap 'rm -rf "$shadow"' EXIT
for f in config.h libcprof-inproc.so; do
	[ -e "$build/$f" ] && ln -s "$build/$f" "$shadow/$f"
done
for f in "$build"/tests/*; do
	[ "$(basename "$f")" = tmp ] || ln -s "$f" "$shadow/tests/"
done
cat >"$shadow/cprof" <<EOW
#!/bin/sh
# valgrind's own errors exit 99, which no test expects from cprof.
exec valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \\
	--log-file="$logs/vg.%p" "$build/cprof" "\$@"
EOW
chmod +x "$shadow/cprof"

passed=0 failed=0
for t in "${tests[@]}"; do
	if top_srcdir="$root" top_builddir="$shadow" GO="${GO:-go}" EU_STACK="${EU_STACK:-eu-stack}" \
		CPROF_LIMIT=300 bash "$root/tests/$t.test" >"$shadow/$t.log" 2>&1; then
		echo "PASS: $t"
		passed=$((passed + 1))
	else
		echo "FAIL: $t"
		tail -n 20 "$shadow/$t.log"
		failed=$((failed + 1))
	fi
done
# Reports of processes whose exit status no test looked at.
for f in "$logs"/vg.*; do
	[ -s "$f" ] || continue
	echo "==== valgrind report $(basename "$f") ===="
	cat "$f"
	failed=$((failed + 1))
done
echo
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
