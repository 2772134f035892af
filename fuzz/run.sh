#!/bin/bash
# SPDX-License-Identifier: MIT
# Build and run cprof's libFuzzer harnesses (not part of the test suite).
#
# usage: fuzz/run.sh BUILD_DIR [SECONDS [HARNESS...]]
#
# BUILD_DIR is a configured and built cprof tree (it provides config.h and
# the protoc-c output); SECONDS (default 60) is the time per harness;
# HARNESS names which ones run (symbolize, maps, perfmap, reader, unwind, remote;
# default all).
# Needs clang with libFuzzer: on Debian 12 the packages clang-14 and
# libclang-rt-14-dev (run as root, this script installs the latter if
# -fsanitize=fuzzer does not link).  CC overrides the compiler (default clang).
#
#   fuzz-symbolize  ELF/DWARF bytes as the file of a module, through sym_lookup
#   fuzz-maps       text through sym_maps_parse and sym_maps_find
#   fuzz-perfmap    bytes as a perf map (/tmp/perf-PID.map), in two reads,
#                   through sym_perfmap_parse and sym_perfmap_lookup, and as
#                   the confined parser reads it (sym_perfmap_read_fd)
#   fuzz-reader     bytes as a pprof file through prof_rd_buffer, then
#                   reports, diffs and flame graphs of what reads
#   fuzz-remote     bytes as the confined parser's answer to a lookup (what a
#                   parser taken over could send), through sym_remote_read_answer
#   fuzz-unwind     ELF bytes as a module's file, through the .debug_frame
#                   index (or .gopclntab's CFI) and libunwind lookups in it,
#                   the Go pc-line table and the thread roots
#
# Everything goes to BUILD_DIR/fuzz/: binaries, corpora (kept between runs),
# logs, and the crashing inputs (artifacts/).  Crashing inputs of at most
# 64 KiB are copied to fuzz/crashes/ in the source tree, to be kept as
# reproducers; run one with  BUILD_DIR/fuzz/fuzz-NAME fuzz/crashes/FILE.
# Exit status 0 when no harness found a crash, 1 when one did, 2 on setup
# errors.
set -u

die() { echo "run.sh: $*" >&2; exit 2; }
say() { echo "run.sh: $*"; }

[ $# -ge 1 ] || die "usage: fuzz/run.sh BUILD_DIR [SECONDS [HARNESS...]]"
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" 2>/dev/null && pwd) || die "no build directory '$1'"
seconds=${2:-60}
harnesses="symbolize maps perfmap reader unwind remote"
if [ $# -ge 3 ]; then
	shift 2
	for h in "$@"; do
		case " $harnesses " in *" $h "*) ;; *) die "no harness '$h' (symbolize, maps, perfmap, reader, unwind, remote)" ;; esac
	done
	harnesses="$*"
fi
case $seconds in ''|*[!0-9]*) die "SECONDS must be a number of seconds: '$seconds'" ;; esac
CC=${CC:-clang}
[ -f "$build/config.h" ] || die "'$build' is not a configured cprof build (no config.h)"
[ -f "$build/profile/profile.pb-c.h" ] || die "'$build' is not built (no profile/profile.pb-c.h): run make there"
command -v "$CC" >/dev/null || die "'$CC' not found: install clang (apt-get install clang-14)"

out="$build/fuzz"
mkdir -p "$out/obj" "$out/artifacts" "$out/seeds" "$root/fuzz/crashes"

# libFuzzer's runtime is in libclang-rt-14-dev on Debian.
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { return 0; }\n' >"$out/probe.c"
if ! "$CC" -fsanitize=fuzzer "$out/probe.c" -o "$out/probe" 2>"$out/probe.log"; then
	if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
		say "-fsanitize=fuzzer does not link: installing libclang-rt-14-dev"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			libclang-rt-14-dev </dev/null || die "apt-get install libclang-rt-14-dev failed"
		"$CC" -fsanitize=fuzzer "$out/probe.c" -o "$out/probe" 2>"$out/probe.log" ||
			die "-fsanitize=fuzzer still does not link: $(cat "$out/probe.log")"
	else
		die "-fsanitize=fuzzer does not link ($(tail -n 1 "$out/probe.log")): install libclang-rt-14-dev as root"
	fi
fi

# ---- build ---------------------------------------------------------------
PKGS="libdw libelf libdebuginfod zlib libseccomp"
pkg_cflags=$(pkg-config --cflags $PKGS) || die "pkg-config --cflags $PKGS failed"
pkg_libs=$(pkg-config --libs $PKGS) || die "pkg-config --libs $PKGS failed"
SAN="-fsanitize=address,undefined -fno-sanitize-recover=all"
CFLAGS_F="-g -O1 -fno-omit-frame-pointer $SAN -I$root -I$build $pkg_cflags"
# Every file of the directories the harnesses reach, so a new one links too;
# elf/ holds the ELF handles and the Go line tables symbolize.c reads;
# confine/ the helper symbolize/remote.c talks to.
LIB_SRC=$(cd "$root" && echo lib/*.c elf/*.c process/*.c symbolize/*.c confine/*.c)
objs=""
for src in $LIB_SRC; do
	obj="$out/obj/$(echo "$src" | tr / _).o"
	"$CC" $CFLAGS_F -fsanitize=fuzzer-no-link -c "$root/$src" -o "$obj" ||
		die "cannot compile $src"
	objs="$objs $obj"
done
for h in symbolize maps perfmap remote; do
	# libiberty demangles (symbolize/demangle.c).
	"$CC" $CFLAGS_F -fsanitize=fuzzer "$root/fuzz/fuzz-$h.c" $objs $pkg_libs -liberty \
		-o "$out/fuzz-$h" || die "cannot build fuzz-$h"
done
# The pprof reader and what reads its output: no libdw, but protobuf-c,
# zlib and the generated profile.pb-c.c and flame-js.h of BUILD_DIR.
rd_cflags=$(pkg-config --cflags libprotobuf-c zlib) || die "pkg-config --cflags libprotobuf-c zlib failed"
rd_libs=$(pkg-config --libs libprotobuf-c zlib) || die "pkg-config --libs libprotobuf-c zlib failed"
[ -f "$build/profile/flame-js.h" ] || die "'$build' is not built (no profile/flame-js.h): run make there"
rd_objs=""
for src in lib/clock.c lib/grow.c lib/htab.c lib/utf8.c profile/atomic.c profile/reader.c \
	   profile/reader-input.c profile/strtab.c \
	   profile/report.c profile/flame.c profile/flame-tree.c profile/flame-stream.c \
	   profile/flame-svg.c "$build/profile/profile.pb-c.c"; do
	case $src in /*) path=$src ;; *) path="$root/$src" ;; esac
	obj="$out/obj/rd_$(basename "$src" .c).o"
	"$CC" $CFLAGS_F $rd_cflags -fsanitize=fuzzer-no-link -c "$path" -o "$obj" ||
		die "cannot compile $src"
	rd_objs="$rd_objs $obj"
done
"$CC" $CFLAGS_F $rd_cflags -fsanitize=fuzzer "$root/fuzz/fuzz-reader.c" $rd_objs $rd_libs -lm \
	-o "$out/fuzz-reader" || die "cannot build fuzz-reader"
# The unwinder's readers of module files, over libunwind.
uw_libs=$(pkg-config --libs libunwind-generic) || die "pkg-config --libs libunwind-generic failed"
uw_objs=""
for src in unwind/debug_frame.c unwind/roots.c; do
	obj="$out/obj/uw_$(basename "$src" .c).o"
	"$CC" $CFLAGS_F -fsanitize=fuzzer-no-link -c "$root/$src" -o "$obj" || die "cannot compile $src"
	uw_objs="$uw_objs $obj"
done
"$CC" $CFLAGS_F -fsanitize=fuzzer "$root/fuzz/fuzz-unwind.c" $uw_objs $objs $pkg_libs $uw_libs -liberty \
	-o "$out/fuzz-unwind" || die "cannot build fuzz-unwind"
say "built $out/fuzz-symbolize, $out/fuzz-maps, $out/fuzz-perfmap, $out/fuzz-remote, $out/fuzz-reader and $out/fuzz-unwind"

# ---- seeds ---------------------------------------------------------------
sy="$out/seeds/symbolize"
mp="$out/seeds/maps"
rm -rf "$sy" "$mp"
mkdir -p "$sy" "$mp"
is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }
n=0
for f in "$build"/tests/targets/* "$build"/tests/targets/.libs/* \
	 /usr/lib/x86_64-linux-gnu/libz.so.1 /usr/lib/x86_64-linux-gnu/libcrypt.so.1 \
	 /usr/lib/x86_64-linux-gnu/libelf.so.1 /usr/lib/x86_64-linux-gnu/libprotobuf-c.so.1; do
	f=$(readlink -f "$f" 2>/dev/null) || continue
	[ -f "$f" ] && is_elf "$f" || continue
	[ "$(stat -c %s "$f")" -le 262144 ] || continue
	b=$(basename "$f")
	cp "$f" "$sy/$b"
	size=$(stat -c %s "$f")
	head -c $((size / 3)) "$f" >"$sy/$b.third"
	head -c $((size / 2)) "$f" >"$sy/$b.half"
	n=$((n + 1))
done
# A small library with only its debug info, and a stripped one.
if [ -f "$build/tests/targets/libhostile-churn.so" ]; then
	objcopy --only-keep-debug "$build/tests/targets/libhostile-churn.so" "$sy/churn.debug" 2>/dev/null
	strip -o "$sy/churn.stripped" "$build/tests/targets/libhostile-churn.so" 2>/dev/null
fi
[ "$n" -gt 0 ] || die "no ELF seed found"
# The unwinder's harness starts from the same ELF files (chain-dframe has
# CFI only in .debug_frame; Go binaries are too big to be seeds).
rm -rf "$out/seeds/unwind"
cp -r "$sy" "$out/seeds/unwind"
cat /proc/self/maps >"$mp/self"
cat "/proc/$$/maps" >"$mp/shell"
printf '%s\n' \
	'00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon' \
	'7f0000000000-7f0000001000 r-xp 00001000 00:05 1 /tmp/x (deleted)' \
	'ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]' >"$mp/synthetic"
pf="$out/seeds/perfmap"
rm -rf "$pf"
mkdir -p "$pf"
printf '%s\n' '10000 40 LazyCompile:~foo /srv/app.js:1' '10020 10 JS:*bar /srv/app.js:9:3' \
	'10000 8 Stub:CEntry' 'zz 10 bad' '20000 0 empty' >"$pf/node"
printf '7f0000001000 1a0 py::main:/srv/app.py\n7f0000001100 40 [unclosed' >"$pf/partial"
# The parser's answers: one frame (a name, no system name, a file), none,
# and a cut one.
rm -rf "$out/seeds/remote"
mkdir -p "$out/seeds/remote"
printf '\x01\0\0\0\x01\0\0\0\x0a\0\0\0\x05\0\0\0\0\0\0\0\x01\0\0\0f\xff\xff\xff\xff\x03\0\0\0a.c' \
	>"$out/seeds/remote/one"
printf '\0\0\0\0\0\0\0\0' >"$out/seeds/remote/none"
head -c 20 "$out/seeds/remote/one" >"$out/seeds/remote/cut"
rd="$out/seeds/reader"
rm -rf "$rd"
mkdir -p "$rd"
# The smallest valid profile (one sample type, strings "", "a", "b"), plain
# and gzipped; a recorded profile of a test target, gzipped and plain.
printf '\x0a\x04\x08\x01\x10\x02\x32\x00\x32\x01a\x32\x01b' >"$rd/minimal.pb"
gzip -c "$rd/minimal.pb" >"$rd/minimal.pb.gz"
if [ -x "$build/cprof" ] && [ -x "$build/tests/targets/chain" ] &&
   "$build/cprof" record -q -d 1s -o "$rd/chain.pb.gz" -- "$build/tests/targets/chain" -t 2 -s 1 \
	>/dev/null 2>&1; then
	gzip -dc "$rd/chain.pb.gz" >"$rd/chain.pb"
else
	say "no recorded seed profile (cprof record failed): the reader starts from the minimal one"
	rm -f "$rd/chain.pb.gz"
fi
say "seeds: $(ls "$sy" | wc -l) ELF files, $(ls "$mp" | wc -l) maps texts, $(ls "$pf" | wc -l) perf maps, $(ls "$rd" | wc -l) profiles"

# ---- run -----------------------------------------------------------------
found=0
for h in $harnesses; do
	corpus="$out/corpus-$h"
	mkdir -p "$corpus"
	art="$out/artifacts/$h-"
	log="$out/fuzz-$h.log"
	before=$(ls "$out/artifacts" | grep -c "^$h-" || true)
	# the kept reproducers of this harness start every run, as regressions
	for c in "$root"/fuzz/crashes/"$h"-*; do
		[ -f "$c" ] && cp "$c" "$out/seeds/$h/"
	done
	say "fuzz-$h for $seconds s (log: $log)"
	ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1${ASAN_OPTIONS:+:$ASAN_OPTIONS}" \
	UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}" \
		"$out/fuzz-$h" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 \
		-print_final_stats=1 -artifact_prefix="$art" "$corpus" "$out/seeds/$h" \
		>"$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
	crashes=$(ls "$out/artifacts" | grep -c "^$h-" || true)
	new=$((crashes - before))
	echo "fuzz-$h: ${execs:-?} executions, exit $rc, $new new crashing input(s), corpus $(ls "$corpus" | wc -l) files"
	if [ "$rc" -ne 0 ] || [ "$new" -gt 0 ]; then
		found=1
		grep -E -A 30 '^==[0-9]+==ERROR|runtime error:|^SUMMARY:|deadly signal|timeout|out-of-memory' "$log" | head -n 60
		for a in $(ls -t "$out/artifacts" | grep "^$h-" | head -n "$new"); do
			s=$(stat -c %s "$out/artifacts/$a")
			if [ "$s" -le 65536 ]; then
				cp "$out/artifacts/$a" "$root/fuzz/crashes/"
				echo "fuzz-$h: reproducer fuzz/crashes/$a ($s bytes)"
			else
				echo "fuzz-$h: reproducer $out/artifacts/$a ($s bytes, too big for fuzz/crashes/)"
			fi
		done
	fi
done
exit "$found"
