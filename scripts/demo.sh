#!/bin/bash
# SPDX-License-Identifier: MIT
# Build cprof, profile the bundled demo workload for 5 s and show its top
# functions (the README's demo command).
#
# usage: scripts/demo.sh [CONFIGURE-ARGS...]
#
# Writes cprof-demo.pb.gz in the source tree's top directory.  Exits non-zero
# with a message if any step fails, including the workload not surviving
# being profiled.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
builddir="$root/build"
out="$root/cprof-demo.pb.gz"

die() { echo "demo.sh: $*" >&2; exit 1; }
say() { echo "demo.sh: $*"; }

tmpdir=""
target_pid=""
cleanup() {
	# Only the workload this script started, by its pid.
	if [ -n "$target_pid" ] && kill -0 "$target_pid" 2>/dev/null; then
		kill "$target_pid" 2>/dev/null
		wait "$target_pid" 2>/dev/null
	fi
	[ -n "$tmpdir" ] && rm -rf "$tmpdir"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bash "$root/scripts/deps.sh" || die "missing Debian packages (see above)"
bash "$root/scripts/build.sh" "$@" || die "build failed"
make -C "$builddir" -s tests/targets/chain ||
	die "cannot build the demo workload (make tests/targets/chain in '$builddir')"

GO=$(command -v go || true)
[ -n "$GO" ] || [ ! -x /usr/lib/go/bin/go ] || GO=/usr/lib/go/bin/go
[ -n "$GO" ] || die "go not found: install the Debian package golang-go (go tool pprof reads the profile)"

tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/cprof-demo.XXXXXX") || die "cannot create a temporary directory"
ready="$tmpdir/ready"

# The workload: 2 threads running a known call chain for 8 s.
say "starting the demo workload: build/tests/targets/chain -t 2 -s 8"
"$builddir/tests/targets/chain" -t 2 -s 8 -r "$ready" >"$tmpdir/result" &
target_pid=$!

# Wait until it says it is running (up to 10 s).
for _ in $(seq 100); do
	[ -e "$ready" ] && break
	kill -0 "$target_pid" 2>/dev/null || break
	sleep 0.1
done
if [ ! -e "$ready" ]; then
	if kill -0 "$target_pid" 2>/dev/null; then
		die "the demo workload (pid $target_pid) did not become ready within 10 s"
	fi
	wait "$target_pid"
	die "the demo workload exited early (exit status $?)"
fi

say "profiling pid $target_pid for 5 s: build/cprof attach -p $target_pid -d 5s -o cprof-demo.pb.gz"
rm -f "$out"
"$builddir/cprof" attach -p "$target_pid" -d 5s -o "$out"
rc=$?
case $rc in
0|1) ;;
*) die "cprof attach failed (exit status $rc)" ;;
esac
[ -s "$out" ] || die "cprof exited $rc but wrote no profile at '$out'"

echo
say "top functions by CPU time (go tool pprof -top -nodecount=15 cprof-demo.pb.gz):"
(cd "$root" && "$GO" tool pprof -top -nodecount=15 cprof-demo.pb.gz) ||
	die "go tool pprof cannot read '$out'"

# The workload must finish on its own, as if it had never been profiled.
say "waiting for the demo workload (pid $target_pid) to finish"
wait "$target_pid"
wrc=$?
target_pid=""
# chain checks its own arithmetic and prints "result: OK" or "result: BAD ...":
# a profiler that corrupted its registers or memory shows up here.
[ ! -s "$tmpdir/result" ] || sed 's/^/demo.sh: workload: /' "$tmpdir/result"
if [ "$wrc" -gt 128 ]; then
	die "the demo workload was killed by signal $((wrc - 128)) after profiling"
elif [ "$wrc" -ne 0 ]; then
	die "the demo workload failed after profiling (exit status $wrc)"
fi
say "the demo workload finished normally (exit status 0)"

cat <<EOF

The profile is in $out
Look further with:
  go tool pprof -http=: $out     (flame graph and source view in a browser)
  go tool pprof -traces $out     (every sampled stack, with thread labels)
EOF

# Exit status 1 from cprof: a profile was written, but not all of it.
[ "$rc" -eq 0 ] ||
	die "cprof exited 1: the profile is partial (something was lost; see its messages above)"
