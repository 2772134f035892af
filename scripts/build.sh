#!/bin/bash
# SPDX-License-Identifier: MIT
# Build cprof out of tree in build/ (shared by check.sh and demo.sh).
#
# usage: scripts/build.sh [CONFIGURE-ARGS...]
#
# Regenerates the build system (autoreconf -fi) when configure is missing or
# older than configure.ac / Makefile.am, runs ../configure in build/ when it
# has not been run there yet, when configure changed, or when the configure
# arguments (or CC/CFLAGS) differ from the last run, then runs make -j2.
# Works from any cwd; exits non-zero with a message on failure.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
builddir="$root/build"

say() { echo "build.sh: $*"; }
die() { echo "build.sh: $*" >&2; exit 1; }

if [ ! -f configure.ac ] || [ ! -f Makefile.am ]; then
	die "'$root' does not look like the cprof source tree (no configure.ac)"
fi

# An in-tree configure blocks out-of-tree builds (automake refuses them).
if [ -f config.status ]; then
	die "the source tree is configured in place; run 'make distclean' in '$root' first"
fi

need_autoreconf=no
for f in configure Makefile.in; do
	[ -f "$f" ] || need_autoreconf=yes
done
if [ "$need_autoreconf" = no ]; then
	for f in configure.ac Makefile.am; do
		[ "$f" -nt configure ] && need_autoreconf=yes
	done
fi
if [ "$need_autoreconf" = yes ]; then
	say "autoreconf -fi"
	autoreconf -fi || die "autoreconf failed"
fi

# What the build was configured with: arguments plus the compiler variables
# configure reads.  A change means every object must be rebuilt (automake
# objects do not depend on the flags), so start from an empty build/.
stamp="$builddir/.cprof-configure-args"
want=$(printf '%s\n' "CC=${CC-}" "CFLAGS=${CFLAGS-}" "$@")
if [ -f "$stamp" ] && [ "$(cat "$stamp")" != "$want" ]; then
	say "configure arguments changed: removing '$builddir'"
	rm -rf "$builddir"
fi

mkdir -p "$builddir"
cd "$builddir"
if [ ! -f config.status ] || [ ! -f Makefile ] || [ ../configure -nt config.status ]; then
	say "../configure $*"
	rm -f "$stamp"
	../configure "$@" || die "configure failed (see '$builddir/config.log')"
	printf '%s\n' "$want" >"$stamp"
fi

say "make -j2"
make -j2 || die "make failed"
