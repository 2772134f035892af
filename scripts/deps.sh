#!/bin/bash
# SPDX-License-Identifier: MIT
# Install the Debian packages cprof needs to build and test, if any are missing.
#
# Quiet and idempotent when everything is present.  As root: one `apt-get
# update` and one `apt-get install`.  Otherwise prints the command to run and
# exits 2.
set -eu

PACKAGES="
libunwind-dev libelf-dev libdw-dev libprotobuf-c-dev protobuf-c-compiler
zlib1g-dev libmicrohttpd-dev autoconf automake libtool pkg-config make gcc
libiberty-dev libdebuginfod-dev libncurses-dev libseccomp-dev
golang-go elfutils strace libc6-dbg binutils procps rustc nodejs curl debuginfod
python3 python3.11 tmux linux-perf
"

if ! command -v dpkg-query >/dev/null 2>&1; then
	# shellcheck disable=SC2086 # one word a package
	echo "deps.sh: dpkg-query not found: this script knows Debian packages only;" \
	     "install the equivalents of:" $PACKAGES >&2
	exit 2
fi

missing=""
for pkg in $PACKAGES; do
	# "install ok installed" is the only state in which the files are there.
	status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
	case "$status" in
	*" installed") ;;
	*) missing="$missing $pkg" ;;
	esac
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "deps.sh: missing Debian packages:$missing" >&2
	echo "deps.sh: run as root:" >&2
	echo "  apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends$missing" >&2
	exit 2
fi

echo "deps.sh: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q || { echo "deps.sh: apt-get update failed" >&2; exit 2; }
# $missing is a list of words on purpose.
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing </dev/null ||
	{ echo "deps.sh: apt-get install failed:$missing" >&2; exit 2; }
