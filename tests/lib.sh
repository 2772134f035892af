# SPDX-License-Identifier: MIT
# Shared helpers for the cprof *.test scripts: sourced, never run on its own.
#
# Environment (from AM_TESTS_ENVIRONMENT): top_srcdir, top_builddir, GO, EU_STACK.
# Every test runs in its own directory $TMP (kept when the test fails), and
# every process it starts is recorded in LIB_PIDS and killed on exit.  Every
# wait is bounded; a hung cprof fails the test instead of hanging it.

set -eu
set -o pipefail

: "${top_srcdir:?top_srcdir is not set (run through make check)}"
: "${top_builddir:?top_builddir is not set (run through make check)}"
GO=${GO:-go}
[ -n "$GO" ] || GO=go
export LC_ALL=C
# No test asks a debuginfod server unless it starts one itself: the user's
# DEBUGINFOD_URLS would make results depend on the network.
unset DEBUGINFOD_URLS

ME=$(basename "$0" .test)
LIB_START_DIR=$PWD	# (paths in the environment and $0 may be relative to it)
CPROF="$top_builddir/cprof"
TARGETS="$top_builddir/tests/targets"
TMP="$top_builddir/tests/tmp/$ME.$$"
LIB_PIDS=""
TARGET_SEQ=0
CPROF_SEQ=0
CLK_TCK=$(getconf CLK_TCK)

# ---- outcome -------------------------------------------------------------

info() { echo "$ME: $*"; }

# has GREP_ARGS...: grep for use at the end of a pipeline.  It reads all its
# input (grep -q may exit early, and pipefail then turns the writer's SIGPIPE
# into a failure).
has() { [ "$(grep -c "$@" || true)" -gt 0 ]; }
fail() { echo "FAIL: $ME: $*" >&2; exit 1; }
skip() { echo "SKIP: $ME: $*" >&2; exit 77; }
framework_error() { echo "ERROR: $ME: $*" >&2; exit 99; }

lib_cleanup() {
	local rc=$? p
	trap - EXIT
	for p in $LIB_PIDS; do
		kill -KILL "$p" 2>/dev/null || true
	done
	if [ "$rc" -eq 0 ]; then
		cd / && rm -rf "$TMP"
	else
		echo "$ME: exit status $rc; files kept in $TMP" >&2
	fi
	exit "$rc"
}
trap lib_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

rm -rf "$TMP"
mkdir -p "$TMP" || framework_error "cannot create $TMP"
cd "$TMP"

lib_forget_pid() {
	local p keep=""
	for p in $LIB_PIDS; do
		[ "$p" = "$1" ] || keep="$keep $p"
	done
	LIB_PIDS=$keep
}

# ---- /proc ---------------------------------------------------------------

# proc_state PID: the state letter of PID (its main thread).  The comm field
# may hold spaces and parentheses, so the fields are taken after the last ')'.
proc_state() {
	local s
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	s=${s##*) }
	echo "${s%% *}"
}

# task_states PID: the state letters of all threads of PID, one per line.
task_states() {
	# read, not $(cat): no process per thread, which took seconds a call
	# on 1,000 threads under load.  The whole file: comm may hold a newline.
	local t s
	for t in /proc/"$1"/task/*; do
		s=
		{ IFS= read -r -d '' s <"$t/stat"; } 2>/dev/null
		[ -n "$s" ] || continue
		s=${s##*) }
		echo "${s%% *}"
	done
}

# tracer_pid PID: TracerPid from /proc/PID/status (0: not traced).
tracer_pid() {
	awk '/^TracerPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null
}

# tgid_of TID: the process a thread belongs to.
tgid_of() {
	awk '/^Tgid:/ { print $2 }' "/proc/$1/status" 2>/dev/null
}

# task_tracers PID: TracerPid of every thread of PID, one per line.
task_tracers() {
	# One cat and one awk for all threads, not one awk per thread: with
	# thousands of threads (attach-pool.test) that took minutes under
	# load.  cat goes on past a thread that exits meanwhile.
	cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^TracerPid:/ { print $2 }' || true
}

# tree_tasks PID: "TID STATE TRACERPID" for every thread of PID and of its
# descendants, one line each (one pass over /proc, no process per task).
tree_tasks() {
	local pids
	pids=$(cat /proc/[0-9]*/stat 2>/dev/null | awk -v root="$1" '{
		s = $0; sub(/.*\) /, "", s); split(s, f, " "); pid = $1 + 0; ppid = f[2] + 0
		parent[pid] = ppid
	} END {
		for (p in parent) {
			q = p
			while (q != root && q in parent && parent[q] != 0 && parent[q] != q) q = parent[q]
			if (q == root) print p
		}
	}')
	[ -n "$pids" ] || return 0
	for p in $pids; do printf '/proc/%s/task/*/status\n' "$p"; done | xargs sh -c 'cat $@ 2>/dev/null' sh |
		awk '/^State:/ { st = $2 } /^Pid:/ { pid = $2 } /^TracerPid:/ { print pid, st, $2 }'
}

# tree_released PID: no thread of PID's tree is traced or in a tracing stop.
tree_released() {
	! tree_tasks "$1" | awk '$2 == "t" || $3 != 0 { bad = 1 } END { exit !bad }'
}

# tree_none_stopped PID: no thread of PID's tree is stopped (t or T).
tree_none_stopped() {
	! tree_tasks "$1" | awk '$2 == "t" || $2 == "T" { bad = 1 } END { exit !bad }'
}

# cpu_ticks PID: utime + stime of the whole process, in clock ticks.
cpu_ticks() {
	local s
	s=$(cat "/proc/$1/stat") || return 1
	s=${s##*) }
	# after the comm: state=1 ... utime=12 stime=13
	echo "$s" | awk '{ print $12 + $13 }'
}

# thread_tids_named PID NAME: tids of the threads of PID whose comm is NAME.
thread_tids_named() {
	local t
	for t in /proc/"$1"/task/*; do
		[ "$(cat "$t/comm" 2>/dev/null)" = "$2" ] && echo "${t##*/}"
	done
	return 0
}

# wait_until TIMEOUT_S COMMAND...: run COMMAND every 0.05 s until it succeeds;
# returns 1 if it never did within TIMEOUT_S.
wait_until() {
	local limit=$(( $1 * 20 )) i=0
	shift
	while ! "$@"; do
		i=$((i + 1))
		[ "$i" -lt "$limit" ] || return 1
		sleep 0.05
	done
}

# The target is no longer traced and no thread is in a tracing stop.
untraced_and_not_t() {
	! task_states "$1" | has '^t$' && ! task_tracers "$1" | has -v '^0$'
}
# Every thread of PID is traced (TracerPid != 0).
all_traced() {
	local tr
	tr=$(task_tracers "$1") && [ -n "$tr" ] && ! echo "$tr" | has '^0$'
}
# cprof_watching PID [CPROF]: cprof (CPROF, default the one started
# last) samples PID with perf events and seizes none of its threads (a
# perf-source session only watches them): it holds an event on every CPU
# for each thread, and each CPU's ring's.
cprof_watching() {
	local threads events cprof=${2:-${CPROF_PID:-}}
	[ -n "$cprof" ] && ! has_tracer "$1" || return 1
	threads=$(find "/proc/$1/task" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
	events=$(find "/proc/$cprof/fd" -lname 'anon_inode:\[perf_event\]' 2>/dev/null | wc -l)
	[ "$threads" -gt 0 ] && [ "$events" -ge $(((threads + 1) * $(getconf _NPROCESSORS_ONLN))) ]
}
# has_tracer PID: some thread of PID is traced.
has_tracer() {
	local tr
	tr=$(task_tracers "$1") && echo "$tr" | has -v '^0$'
}
# cprof_has PID [CPROF]: cprof samples PID, every thread seized or watched.
cprof_has() { all_traced "$1" || cprof_watching "$@"; }
# Every thread of PID is in a job-control stop (T).
all_stopped() {
	local st
	st=$(task_states "$1") && [ -n "$st" ] && ! echo "$st" | has -v '^T$'
}
# No thread of PID is stopped (neither t nor T).
none_stopped() {
	local st
	st=$(task_states "$1") && [ -n "$st" ] && ! echo "$st" | has '^[tT]$'
}

# assert_released PID WHAT: after cprof has ended, the target must not be in a
# tracing stop and must not be traced (given 5 s for the kernel to settle).
assert_released() {
	wait_until 5 untraced_and_not_t "$1" ||
		fail "$2: target $1 still traced or in tracing stop: states [$(task_states "$1" | sort | uniq -c | tr '\n' ' ')] tracers [$(task_tracers "$1" | sort -u | tr '\n' ' ')]"
}

# assert_untouched PID WHAT: after a cprof that gave up, the target is not
# traced and no thread of it is stopped (neither t nor T).
assert_untouched() {
	untraced_and_not_t "$1" && none_stopped "$1" ||
		fail "$2: target $1 was touched: states [$(task_states "$1" | tr '\n' ' ')] tracers [$(task_tracers "$1" | sort -u | tr '\n' ' ')]"
}

# ---- processes -----------------------------------------------------------

# wait_pid_exit PID TIMEOUT_S: wait (bounded) for our child PID to end.
# Sets WAIT_STATUS (exit status, 128+N if killed by signal N) and, for a
# target started by start_target, WAIT_STDOUT.  Returns 1 on timeout, leaving
# PID running.  A child that is a zombie still held by a tracer is not reaped
# (wait would block until the tracer lets go), so a hung tracer times out here.
wait_pid_exit() {
	local pid=$1 limit=$(( $2 * 20 )) i=0 st tr var
	while :; do
		st=$(proc_state "$pid") || break	# gone: the shell reaped it
		if [ "$st" = Z ] || [ "$st" = X ]; then
			tr=$(tracer_pid "$pid") || break
			[ "${tr:-0}" = 0 ] && break
		fi
		i=$((i + 1))
		[ "$i" -lt "$limit" ] || return 1
		sleep 0.05
	done
	WAIT_STATUS=0
	wait "$pid" || WAIT_STATUS=$?
	lib_forget_pid "$pid"
	var=TARGET_OUT_$pid
	WAIT_STDOUT=""
	if [ -n "${!var:-}" ] && [ -f "${!var}" ]; then
		WAIT_STDOUT=$(cat "${!var}")
	fi
	return 0
}

# start_target NAME ARGS...: run tests/targets/NAME ARGS -r READYFILE in the
# background and wait up to 10 s for READYFILE.  Sets TARGET_PID and
# TARGET_OUT (its stdout file; stderr goes to TARGET_OUT.err).
start_target() {
	local name=$1 bin ready i=0
	shift
	bin="$TARGETS/$name"
	[ -x "$bin" ] || framework_error "target $bin is not built (make check builds it)"
	start_target_bin "$bin" "$@"
}

# start_target_unprivileged NAME ARGS...: start_target, as nobody when the
# test runs as root, so that the kernel's per-user limits hold for it and
# for a cprof run with CPROF_PREFIX=("${UNPRIVILEGED[@]}" ...) (root is
# exempt from RLIMIT_MEMLOCK and perf_event_mlock_kb); $TMP is opened to it.
# UNPRIVILEGED is empty for another user.
start_target_unprivileged() {
	UNPRIVILEGED=()
	if [ "$(id -u)" = 0 ]; then
		command -v setpriv >/dev/null 2>&1 || framework_error "setpriv (util-linux) is needed"
		UNPRIVILEGED=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups --)
		chmod 1777 "$TMP"
	fi
	TARGET_PREFIX=(${UNPRIVILEGED[@]+"${UNPRIVILEGED[@]}"})
	start_target "$@"
	TARGET_PREFIX=()
}

# start_target_bin PATH ARGS...: the same for a target binary given by path
# (run by the command in the array TARGET_PREFIX, if set, which must exec
# it: TARGET_PID is the target's).
start_target_bin() {
	local bin=$1 ready i=0
	shift
	TARGET_SEQ=$((TARGET_SEQ + 1))
	ready="$TMP/target.$TARGET_SEQ.ready"
	TARGET_OUT="$TMP/target.$TARGET_SEQ.out"
	${TARGET_PREFIX[@]+"${TARGET_PREFIX[@]}"} "$bin" "$@" -r "$ready" >"$TARGET_OUT" \
		2>"$TARGET_OUT.err" </dev/null &
	TARGET_PID=$!
	LIB_PIDS="$LIB_PIDS $TARGET_PID"
	printf -v "TARGET_OUT_$TARGET_PID" '%s' "$TARGET_OUT"
	while [ ! -e "$ready" ]; do
		if ! kill -0 "$TARGET_PID" 2>/dev/null || [ "$(proc_state "$TARGET_PID")" = Z ]; then
			framework_error "target $bin exited before it was ready: $(cat "$TARGET_OUT.err")"
		fi
		i=$((i + 1))
		[ "$i" -lt 200 ] || framework_error "target $bin not ready within 10 s"
		sleep 0.05
	done
	info "started $(basename "$bin") $* as pid $TARGET_PID"
}

# finish_target PID WHAT: end a target started with a long -s early
# (SIGUSR2), wait up to 60 s, and require exit 0 and a "result: OK" line.
finish_target() {
	kill -USR2 "$1" 2>/dev/null || fail "$2: target $1 is gone before it was told to finish"
	expect_target_ok "$1" "$2"
}

# expect_target_ok PID WHAT: wait up to 60 s for the target to end by itself
# and require exit 0 and a "result: OK" line.
expect_target_ok() {
	wait_pid_exit "$1" 60 || fail "$2: target $1 did not finish within 60 s (states: $(task_states "$1" | tr '\n' ' '))"
	echo "$WAIT_STDOUT" | has '^result: OK' ||
		fail "$2: target did not print 'result: OK': '$WAIT_STDOUT'"
	[ "$WAIT_STATUS" -eq 0 ] || fail "$2: target exit status $WAIT_STATUS, expected 0"
}

# ---- terminals -----------------------------------------------------------

# lib_on_pty_script: writes the python3 program (its pty module) on_pty runs.
lib_on_pty_script() {
	cat >"$TMP/on_pty.py" <<'EOF'
import os, pty, select, sys, time
out, ctrlc = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[3], sys.argv[3:])
    finally:
        os._exit(127)
data, seen, typed, end = b"", None, False, time.time() + 60
while time.time() < end:
    if ctrlc != "-" and not typed and seen and time.time() >= seen + float(ctrlc):
        os.write(fd, b"\x03")  # the line discipline turns it into SIGINT
        typed = True
    if select.select([fd], [], [], 0.05)[0]:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: the child side is closed
            break
        if not chunk:
            break
        data += chunk
        if seen is None and b" samples, " in data:
            seen = time.time()
else:
    os.kill(pid, 9)
    open(out, "wb").write(data)
    sys.exit("timed out after 60 s")
_, st = os.waitpid(pid, 0)
open(out, "wb").write(data)
print(os.WEXITSTATUS(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st))
EOF
}

# on_pty OUT CTRLC_AFTER CMD...: run CMD on a new pseudo-terminal (its
# controlling terminal: stdin, stdout and stderr), copy everything it shows
# to OUT; CTRLC_AFTER seconds after the first status line, type Ctrl-C
# ("-": never).  Sets PTY_STATUS.  Bounded: 60 s.
on_pty() {
	local out=$1 after=$2
	shift 2
	command -v python3 >/dev/null 2>&1 ||
		fail "python3 is needed to run cprof on a pseudo-terminal and is not installed"
	[ -s "$TMP/on_pty.py" ] || lib_on_pty_script
	info "on a pty: $*"
	PTY_STATUS=$(timeout -k 5 90 python3 "$TMP/on_pty.py" "$out" "$after" "$@" 2>"$out.err") ||
		fail "cannot run '$*' on a pseudo-terminal: $(cat "$out.err")"
}

# ---- cprof ---------------------------------------------------------------

require_cprof() {
	[ -x "$CPROF" ] || fail "cprof binary '$CPROF' is missing or not executable"
}

# run_cprof ARGS...: run cprof in the foreground under timeout(1) (limit
# CPROF_LIMIT seconds, default 60), prefixed by the command in the array
# CPROF_PREFIX if set.  Sets CPROF_STATUS, CPROF_STDOUT and CPROF_STDERR
# (file names).  A hung cprof fails the test.
run_cprof() {
	require_cprof
	CPROF_SEQ=$((CPROF_SEQ + 1))
	CPROF_STDOUT="$TMP/cprof.$CPROF_SEQ.stdout"
	CPROF_STDERR="$TMP/cprof.$CPROF_SEQ.stderr"
	CPROF_STATUS=0
	lib_source_args "$@"
	set -- "${LIB_ARGS[@]}"
	info "running cprof $*"
	timeout -k 5 "${CPROF_LIMIT:-60}" ${CPROF_PREFIX[@]+"${CPROF_PREFIX[@]}"} "$CPROF" "$@" \
		>"$CPROF_STDOUT" 2>"$CPROF_STDERR" </dev/null || CPROF_STATUS=$?
	case $CPROF_STATUS in
	124|137) fail "cprof $* did not end within ${CPROF_LIMIT:-60} s (hung); stderr: $(cat "$CPROF_STDERR")" ;;
	esac
	return 0
}

# lib_source_args ARGS...: ARGS into LIB_ARGS, with --source $CPROF_SOURCE
# after the subcommand when CPROF_SOURCE is set and the subcommand samples
# (attach, record, serve).
lib_source_args() {
	LIB_ARGS=("$@")
	case ${CPROF_SOURCE:-}:${1:-} in
	?*:attach|?*:record|?*:serve) LIB_ARGS=("$1" --source "$CPROF_SOURCE" "${@:2}") ;;
	esac
}

# for_each_source: the test runs once per sample source, each run a process
# of its own with CPROF_SOURCE set (ptrace: at stops; perf: perf events,
# where this machine permits them); call it right after sourcing this file.
# Returns in those runs; the first one that does not pass ends the test
# with its status.
for_each_source() {
	local s rc sources=(ptrace)
	[ -z "${CPROF_SOURCE:-}" ] || { info "--source $CPROF_SOURCE"; return 0; }
	require_cprof
	if "$CPROF" record -q --source perf -o "$TMP/perf-probe.pb.gz" -- true >/dev/null 2>&1; then
		sources+=(perf)
	else
		info "perf events are not permitted here: --source ptrace only"
	fi
	for s in "${sources[@]}"; do
		rc=0
		(cd "$LIB_START_DIR" && CPROF_SOURCE=$s exec bash "$0" "$@") || rc=$?
		[ "$rc" -eq 0 ] || exit "$rc"
	done
	exit 0
}

# start_cprof ARGS...: run cprof in the background under timeout(1) (limit
# CPROF_LIMIT, default 90 s).  timeout(1) gives the child default SIGINT and
# SIGTERM dispositions (a plain `&` would make it ignore SIGINT).  Sets
# CPROF_WRAPPER (the timeout process, our child), CPROF_PID (cprof itself;
# empty if it ended at once), CPROF_STDOUT, CPROF_STDERR.
start_cprof() {
	local i=0 kids
	require_cprof
	CPROF_SEQ=$((CPROF_SEQ + 1))
	CPROF_STDOUT="$TMP/cprof.$CPROF_SEQ.stdout"
	CPROF_STDERR="$TMP/cprof.$CPROF_SEQ.stderr"
	lib_source_args "$@"
	set -- "${LIB_ARGS[@]}"
	info "starting cprof $*"
	timeout -k 5 "${CPROF_LIMIT:-90}" "$CPROF" "$@" \
		>"$CPROF_STDOUT" 2>"$CPROF_STDERR" </dev/null &
	CPROF_WRAPPER=$!
	LIB_PIDS="$LIB_PIDS $CPROF_WRAPPER"
	CPROF_PID=""
	while :; do
		kids=$(cat "/proc/$CPROF_WRAPPER/task/$CPROF_WRAPPER/children" 2>/dev/null) || kids=""
		kids=${kids%% *}
		if [ -n "$kids" ]; then
			CPROF_PID=$kids
			LIB_PIDS="$LIB_PIDS $CPROF_PID"
			return 0
		fi
		st=$(proc_state "$CPROF_WRAPPER") || return 0
		[ "$st" != Z ] || return 0
		i=$((i + 1))
		[ "$i" -lt 200 ] || framework_error "timeout(1) did not start cprof within 10 s"
		sleep 0.05
	done
}

# cprof_running: the background cprof is still running (not a zombie).
cprof_running() {
	local st
	[ -n "$CPROF_PID" ] || return 1
	st=$(proc_state "$CPROF_PID") || return 1
	[ "$st" != Z ] && [ "$st" != X ]
}

# cprof_early_exit_msg: describe a background cprof that ended too soon.
cprof_early_exit_msg() {
	local status=unknown
	if wait_pid_exit "$CPROF_WRAPPER" 5; then status=$WAIT_STATUS; fi
	echo "cprof ended early (exit status $status): $(cat "$CPROF_STDERR")"
}

# signal_cprof SIG: send SIG to the background cprof itself.
signal_cprof() {
	cprof_running || fail "cannot send SIG$1: $(cprof_early_exit_msg)"
	kill "-$1" "$CPROF_PID"
}

# wait_cprof_attached TARGET_PID: wait up to 30 s until every thread of the
# target is traced while the background cprof runs.
wait_cprof_attached() {
	local i=0
	while ! cprof_has "$1"; do
		cprof_running || fail "$(cprof_early_exit_msg)"
		i=$((i + 1))
		[ "$i" -lt 600 ] || fail "cprof did not attach to every thread of $1 within 30 s"
		sleep 0.05
	done
	has_tracer "$1" || return 0
	# cprof traces from a thread of its own (its exit is the detach), so
	# TracerPid is that thread: compare the thread's process with cprof.
	[ "$(tgid_of "$(tracer_pid "$1")")" = "$CPROF_PID" ] ||
		fail "target $1 is traced by $(tracer_pid "$1"), not by a thread of cprof ($CPROF_PID)"
}

# wait_cprof TIMEOUT_S: wait for the background cprof to end; sets CPROF_STATUS.
wait_cprof() {
	wait_pid_exit "$CPROF_WRAPPER" "$1" ||
		fail "cprof did not end within $1 s; stderr: $(cat "$CPROF_STDERR")"
	CPROF_STATUS=$WAIT_STATUS
	lib_forget_pid "$CPROF_PID"
	case $CPROF_STATUS in
	124) fail "cprof hung and was stopped by timeout(1); stderr: $(cat "$CPROF_STDERR")" ;;
	esac
	return 0
}

# expect_status WANT WHAT: CPROF_STATUS must be WANT.
expect_status() {
	[ "$CPROF_STATUS" -eq "$1" ] ||
		fail "$2: cprof exit status $CPROF_STATUS, expected $1; stderr: $(cat "$CPROF_STDERR")"
}

# expect_error STATUS REGEX WHAT ARGS...: cprof ARGS exits with STATUS,
# writes nothing on stdout and exactly one line on stderr, which starts with
# "cprof: " and matches the extended REGEX.
expect_error() {
	local status=$1 re=$2 what=$3 n
	shift 3
	run_cprof "$@"
	expect_status "$status" "$what"
	[ ! -s "$CPROF_STDOUT" ] || fail "$what: unexpected output on stdout: $(head -c 300 "$CPROF_STDOUT")"
	n=$(wc -l <"$CPROF_STDERR")
	[ "$n" -eq 1 ] || fail "$what: expected one line on stderr, got $n: $(cat "$CPROF_STDERR")"
	grep -q '^cprof: ' "$CPROF_STDERR" || fail "$what: message does not start with 'cprof: ': $(cat "$CPROF_STDERR")"
	grep -Eq -- "$re" "$CPROF_STDERR" || fail "$what: message does not match /$re/: $(cat "$CPROF_STDERR")"
	info "$what: $(cat "$CPROF_STDERR")"
}

# expect_summary WHAT: stderr is exactly the one summary line of the spec.
# Sets SUMMARY_SAMPLES and SUMMARY_THREADS.
expect_summary() {
	local n
	# the lines of a process tree's per-process counts follow it indented
	n=$(grep -cv '^  ' "$CPROF_STDERR" || true)
	[ "$n" -eq 1 ] || fail "$1: expected exactly one summary line on stderr, got $n: $(cat "$CPROF_STDERR")"
	grep -Eq '^cprof: wrote .*: [0-9]+ samples .*from [0-9]+ threads' "$CPROF_STDERR" ||
		fail "$1: summary line does not match the spec: $(cat "$CPROF_STDERR")"
	SUMMARY_SAMPLES=$(grep -v '^  ' "$CPROF_STDERR" | sed -E 's/.* ([0-9]+) samples.*/\1/')
	SUMMARY_THREADS=$(grep -v '^  ' "$CPROF_STDERR" | sed -E 's/.*from ([0-9]+) threads.*/\1/')
}

# ---- cprof serve ---------------------------------------------------------

serve_started() { grep -q '^cprof: serving pid ' "$CPROF_STDERR"; }

# start_serve ARGS...: cprof serve ARGS in the background (start_cprof) on a
# free loopback port; sets PORT and BASE (http://127.0.0.1:PORT).
start_serve() {
	local port
	start_cprof serve --listen 127.0.0.1:0 "$@"
	wait_until 10 serve_started || fail "cprof serve printed no address line: $(cat "$CPROF_STDERR")"
	port=$(sed -n 's#^cprof: serving pid [0-9]* on http://127\.0\.0\.1:\([0-9]*\)/debug/pprof/$#\1#p' "$CPROF_STDERR")
	[ -n "$port" ] || fail "no port in the address line: $(cat "$CPROF_STDERR")"
	BASE="http://127.0.0.1:$port"
	PORT=$port
}

# fetch NAME PATH [CURL ARGS...]: GET $BASE/PATH into $TMP/NAME, its headers
# into $TMP/NAME.h; prints the status code ("curl-failed" when there is none).
fetch() {
	local name=$1 path=$2
	shift 2
	curl -sS --max-time 120 -o "$TMP/$name" -D "$TMP/$name.h" -w '%{http_code}' "$@" "$BASE$path" ||
		echo "curl-failed"
}

# not_traced PID: no thread of PID has a tracer.
not_traced() { [ "$(tracer_pid "$1")" = 0 ] && ! task_tracers "$1" | has -v '^0$'; }

# ---- ptrace --------------------------------------------------------------

# require_ptrace: skip (77) only when attaching with ptrace is impossible
# here: Yama mode 3, or an attach probe (strace -p on a child of ours) that
# the kernel refuses with EPERM.
require_ptrace() {
	local scope sp st i=0 err
	scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null) || scope=""
	[ "$scope" != 3 ] || skip "ptrace is disabled: /proc/sys/kernel/yama/ptrace_scope is 3"
	command -v strace >/dev/null 2>&1 ||
		framework_error "strace is needed for the ptrace probe and is not installed"
	sleep 30 </dev/null >/dev/null 2>&1 &
	sp=$!
	LIB_PIDS="$LIB_PIDS $sp"
	strace -qq -e trace=none -o /dev/null -p "$sp" 2>"$TMP/ptrace-probe.err" &
	st=$!
	LIB_PIDS="$LIB_PIDS $st"
	while [ "$(tracer_pid "$sp")" = 0 ]; do
		if ! kill -0 "$st" 2>/dev/null || [ "$(proc_state "$st")" = Z ]; then
			err=$(cat "$TMP/ptrace-probe.err")
			kill -KILL "$sp" 2>/dev/null || true
			wait "$sp" 2>/dev/null || true
			wait "$st" 2>/dev/null || true
			case $err in
			*"Operation not permitted"*|*"Permission denied"*)
				skip "ptrace attach is not permitted here: $err" ;;
			esac
			framework_error "ptrace probe failed: $err"
		fi
		i=$((i + 1))
		[ "$i" -lt 200 ] || framework_error "ptrace probe: strace did not attach within 10 s"
		sleep 0.05
	done
	kill -KILL "$sp" 2>/dev/null || true
	wait "$st" 2>/dev/null || true
	wait "$sp" 2>/dev/null || true
	lib_forget_pid "$sp"
	lib_forget_pid "$st"
}

# json_get FILE EXPR: evaluate a python expression over the JSON object d.
json_get() {
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" ||
		fail "cannot read '$2' from the JSON summary $1: $(head -c 300 "$1")"
}

# ---- pprof ---------------------------------------------------------------

# require_go: go tool pprof reads the profiles back.  A missing go is a
# failure, not a skip: the test setup installs it.
require_go() {
	command -v "$GO" >/dev/null 2>&1 ||
		fail "go ('$GO') not found: it is needed to read profiles back with 'go tool pprof' (install golang)"
	if [ -z "${HOME:-}" ] && [ -z "${GOCACHE:-}" ]; then
		export GOCACHE="$top_builddir/tests/tmp/gocache"
	fi
}

# pprof ARGS...: go tool pprof without any symbolization of its own, so that
# what it shows is what cprof wrote.
pprof() {
	PPROF_BINARY_PATH=/nonexistent "$GO" tool pprof -symbolize=none "$@"
}

# pprof_raw PROFILE: -raw dump into PROFILE.raw; fails the test when pprof
# cannot read the file.
pprof_raw() {
	[ -s "$1" ] || fail "profile '$1' is missing or empty"
	pprof -raw "$1" >"$1.raw" 2>"$1.raw.err" ||
		fail "go tool pprof cannot read '$1': $(cat "$1.raw.err")"
}

# pprof_parse PROFILE: from PROFILE.raw (pprof_raw first) write
#   PROFILE.samples    count TAB cpu_ns TAB frames TAB labels
#                      frames: function names, leaf first (inline frames
#                      expanded, innermost first), joined by ';'
#                      labels: key=value separated by spaces, sorted
#   PROFILE.locations  id TAB address TAB mapping_id TAB frames
#                      frames: function@file:line, innermost first, ';'
#   PROFILE.mappings   id TAB start TAB limit TAB offset TAB file TAB build_id
#   PROFILE.header     the lines before "Samples:", then the sample types
pprof_parse() {
	pprof_raw "$1"
	awk -F'\t' -v samples="$1.samples" -v locs="$1.locations" \
	    -v maps="$1.mappings" -v header="$1.header" '
	function flush_sample() {
		if (have_sample)
			sample_lines[ns++] = cur_vals "\t" cur_locs "\t" cur_labels
		have_sample = 0
	}
	BEGIN { sect = "head" }
	/^Samples:/ { sect = "samples"; next }
	/^Locations/ { flush_sample(); sect = "locations"; next }
	/^Mappings/ { sect = "mappings"; next }
	sect == "head" { print > header; next }
	sect == "samples" && /^[a-z_]+\/[a-z_]+/ { print "SampleTypes: " $0 > header; next }
	sect == "samples" && /^ *[0-9]+( +[0-9]+)*: / {
		flush_sample()
		split($0, parts, ":")
		n = split(parts[1], v, " ")
		if (n != 2) { print "unexpected value count in: " $0 > "/dev/stderr"; bad = 1 }
		cur_vals = v[1] "\t" v[2]
		cur_locs = substr($0, index($0, ":") + 1)
		gsub(/^ +| +$/, "", cur_locs)
		cur_labels = ""
		have_sample = 1
		next
	}
	sect == "samples" && /^ +[^ ]/ {
		# labels: key:[value] ...   (numeric labels: key:[N unit])
		line = $0
		while (match(line, /[A-Za-z0-9_.-]+:\[[^]]*\]/)) {
			kv = substr(line, RSTART, RLENGTH)
			line = substr(line, RSTART + RLENGTH)
			k = substr(kv, 1, index(kv, ":") - 1)
			val = substr(kv, index(kv, "[") + 1)
			sub(/\]$/, "", val)
			cur_labels = cur_labels (cur_labels == "" ? "" : " ") k "=" val
		}
		next
	}
	sect == "locations" && /^ *[0-9]+: 0x/ {
		id = $0; sub(/:.*/, "", id); gsub(/ /, "", id)
		rest = substr($0, index($0, ":") + 2)
		n = split(rest, w, " ")
		addr = w[1]; m = ""; i = 2
		if (w[i] ~ /^M=/) { m = substr(w[i], 3); i++ }
		if (w[i] == "[F]") i++
		loc_order[nl++] = id
		loc_addr[id] = addr; loc_map[id] = m
		loc_fn[id] = ""; loc_fr[id] = ""
		if (i <= n) add_frame(id, w[i], w[i + 1])
		last = id
		next
	}
	sect == "locations" && /^ +[^ ]/ {
		n = split($0, w, " ")
		add_frame(last, w[1], w[2])
		next
	}
	sect == "mappings" && /^[0-9]+: / {
		split($0, w, " ")
		id = w[1]; sub(/:$/, "", id)
		split(w[2], r, "/")
		file = w[3]; bid = w[4]
		if (bid ~ /^\[/ || bid == "") bid = ""
		print id "\t" r[1] "\t" r[2] "\t" r[3] "\t" file "\t" bid > maps
		next
	}
	function add_frame(id, fn, fl) {
		if (fn == "??") fl = ""
		loc_fn[id] = loc_fn[id] (loc_fn[id] == "" ? "" : ";") fn
		loc_fr[id] = loc_fr[id] (loc_fr[id] == "" ? "" : ";") fn "@" fl
	}
	END {
		flush_sample()
		for (j = 0; j < nl; j++) {
			id = loc_order[j]
			print id "\t" loc_addr[id] "\t" loc_map[id] "\t" loc_fr[id] > locs
		}
		for (j = 0; j < ns; j++) {
			split(sample_lines[j], f, "\t")
			nloc = split(f[3], ids, " ")
			frames = ""
			for (k = 1; k <= nloc; k++) {
				fn = (ids[k] in loc_fn) ? loc_fn[ids[k]] : "<missing-location-" ids[k] ">"
				if (fn == "") fn = "??"
				frames = frames (frames == "" ? "" : ";") fn
			}
			nlab = split(f[4], lab, " ")
			# insertion sort of the labels
			for (a = 2; a <= nlab; a++) {
				x = lab[a]
				for (b = a - 1; b >= 1 && lab[b] > x; b--) lab[b + 1] = lab[b]
				lab[b + 1] = x
			}
			labels = ""
			for (a = 1; a <= nlab; a++) labels = labels (a > 1 ? " " : "") lab[a]
			print f[1] "\t" f[2] "\t" frames "\t" labels > samples
		}
		if (bad) exit 1
	}' "$1.raw" || fail "cannot parse 'go tool pprof -raw' output for '$1' (see $1.raw)"
	touch "$1.samples" "$1.locations" "$1.mappings" "$1.header"
}

# Sums over PROFILE.samples.
profile_sample_count() { awk -F'\t' '{ n += $1 } END { printf "%d\n", n }' "$1.samples"; }
profile_cpu_ns() { awk -F'\t' '{ n += $2 } END { printf "%.0f\n", n }' "$1.samples"; }

# profile_flat_cpu PROFILE FUNCTION: cpu ns of the samples whose leaf frame
# (innermost, inline frames included) is FUNCTION.
profile_flat_cpu() {
	awk -F'\t' -v fn="$2" '{ split($3, fr, ";"); if (fr[1] == fn) n += $2 }
		END { printf "%.0f\n", n }' "$1.samples"
}

# chain_split_ok PROFILE: whether leaf_a has 70% of the CPU of leaf_a and
# leaf_b in PROFILE (the chain target's split, by construction), within
# 0.10, or within four standard deviations of the binomial share when the
# leaves hold too few samples for 0.10 to mean that (a loaded machine gives
# the chain's workers a fraction of a CPU: 50 samples put 0.10 at 2.2
# standard deviations, one run in thirty out by chance).  Sets CHAIN_SPLIT
# to a description for the failure message.
chain_split_ok() {
	local a b n
	a=$(profile_flat_cpu "$1" leaf_a)
	b=$(profile_flat_cpu "$1" leaf_b)
	n=$(awk -F'\t' '{ split($3, fr, ";"); if (fr[1] == "leaf_a" || fr[1] == "leaf_b") n += $1 }
		END { printf "%d\n", n }' "$1.samples")
	CHAIN_SPLIT=$(awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN {
		tol = 0.10; if (n > 0 && 4 * sqrt(0.21 / n) > tol) tol = 4 * sqrt(0.21 / n)
		printf "leaf_a %s of the leaves'"'"' CPU in %d samples, expected 0.70 +- %.3f (leaf_a %d ns, leaf_b %d ns)",
			a + b ? sprintf("%.3f", a / (a + b)) : "undefined", n, tol, a, b }')
	awk -v a="$a" -v b="$b" -v n="$n" 'BEGIN {
		tol = 0.10; if (n > 0 && 4 * sqrt(0.21 / n) > tol) tol = 4 * sqrt(0.21 / n)
		s = a + b; exit !(n > 0 && s > 0 && a / s >= 0.70 - tol && a / s <= 0.70 + tol) }'
}

# profile_label_values PROFILE KEY: the distinct values of label KEY.
profile_label_values() {
	awk -F'\t' -v key="$2" '{
		n = split($4, lab, " ")
		for (i = 1; i <= n; i++) if (index(lab[i], key "=") == 1) print substr(lab[i], length(key) + 2)
	}' "$1.samples" | sort -u
}

# expect_valid_profile PROFILE WHAT [VALUE]: pprof reads it, it has the
# spec's sample types [samples/count, VALUE/nanoseconds] and period type
# VALUE/nanoseconds; VALUE is cpu (the default) or wall.  Parses it
# (pprof_parse).
expect_valid_profile() {
	local v=${3:-cpu}
	pprof_parse "$1"
	grep -Eqx "SampleTypes: samples/count(\[dflt\])? $v/nanoseconds(\[dflt\])?" "$1.header" ||
		fail "$2: sample types are not [samples/count, $v/nanoseconds]: $(grep SampleTypes "$1.header")"
	grep -qx "PeriodType: $v nanoseconds" "$1.header" ||
		fail "$2: period type is not $v/nanoseconds: $(grep -i period "$1.header")"
}

# go_helper NAME: build (once per test) a small Go program kept in this file.
go_helper() {
	local src="$TMP/gohelper-$1.go" bin="$TMP/gohelper-$1"
	[ -x "$bin" ] && { echo "$bin"; return 0; }
	case $1 in
	wiremappings) cat >"$src" <<'EOF'
// Prints the mappings of a (gzipped) pprof profile in the order they are
// stored in the file, which go tool pprof does not preserve:
//   index start limit offset filename build_id has_functions
package main

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
)

type field struct {
	num  int
	wt   int
	v    uint64
	data []byte
}

func varint(b []byte) (uint64, int, error) {
	var x uint64
	for i := 0; i < len(b) && i < 10; i++ {
		x |= uint64(b[i]&0x7f) << (7 * uint(i))
		if b[i] < 0x80 {
			return x, i + 1, nil
		}
	}
	return 0, 0, errors.New("bad varint")
}

func fields(b []byte) ([]field, error) {
	var out []field
	for len(b) > 0 {
		key, n, err := varint(b)
		if err != nil {
			return nil, err
		}
		b = b[n:]
		f := field{num: int(key >> 3), wt: int(key & 7)}
		switch f.wt {
		case 0:
			f.v, n, err = varint(b)
			if err != nil {
				return nil, err
			}
			b = b[n:]
		case 1:
			if len(b) < 8 {
				return nil, errors.New("short fixed64")
			}
			b = b[8:]
		case 5:
			if len(b) < 4 {
				return nil, errors.New("short fixed32")
			}
			b = b[4:]
		case 2:
			l, n, err := varint(b)
			if err != nil || uint64(len(b)-n) < l {
				return nil, errors.New("bad length")
			}
			f.data = b[n : n+int(l)]
			b = b[n+int(l):]
		default:
			return nil, fmt.Errorf("bad wire type %d", f.wt)
		}
		out = append(out, f)
	}
	return out, nil
}

func main() {
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		z, err := gzip.NewReader(bytes.NewReader(raw))
		if err == nil {
			raw, err = io.ReadAll(z)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "gunzip:", err)
			os.Exit(1)
		}
	}
	top, err := fields(raw)
	if err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		os.Exit(1)
	}
	var strs []string
	var maps [][]field
	for _, f := range top {
		switch {
		case f.num == 6 && f.wt == 2:
			strs = append(strs, string(f.data))
		case f.num == 3 && f.wt == 2:
			m, err := fields(f.data)
			if err != nil {
				fmt.Fprintln(os.Stderr, "mapping:", err)
				os.Exit(1)
			}
			maps = append(maps, m)
		}
	}
	str := func(i uint64) string {
		if i < uint64(len(strs)) {
			return strs[i]
		}
		return fmt.Sprintf("<bad string index %d>", i)
	}
	for i, m := range maps {
		var start, limit, off, file, bid, hasfn uint64
		for _, f := range m {
			switch f.num {
			case 2:
				start = f.v
			case 3:
				limit = f.v
			case 4:
				off = f.v
			case 5:
				file = f.v
			case 6:
				bid = f.v
			case 7:
				hasfn = f.v
			}
		}
		b := str(bid)
		if b == "" {
			b = "-"
		}
		fmt.Printf("%d\t%#x\t%#x\t%#x\t%s\t%s\t%d\n", i+1, start, limit, off, str(file), b, hasfn)
	}
}
EOF
		;;
	*) framework_error "unknown go helper $1" ;;
	esac
	"$GO" build -o "$bin" "$src" >"$src.log" 2>&1 ||
		framework_error "cannot build Go helper $1: $(cat "$src.log")"
	echo "$bin"
}

# profile_wire_mappings PROFILE: mappings in file order (see go_helper).
profile_wire_mappings() {
	local h
	h=$(go_helper wiremappings)
	"$h" "$1" >"$1.wiremappings" 2>"$1.wiremappings.err" ||
		fail "cannot decode the mappings of '$1': $(cat "$1.wiremappings.err")"
}

# build_id FILE: the GNU build id of an ELF file, lowercase hex.
build_id() {
	local id
	id=$(readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }')
	[ -n "$id" ] || id=$(eu-readelf -n "$1" 2>/dev/null | awk '/Build ID:/ { print $3; exit }')
	[ -n "$id" ] || framework_error "no build id in '$1'"
	echo "$id" | tr 'A-F' 'a-f'
}

# source_line_of FILE REGEX: the line number of the first line matching REGEX.
source_line_of() {
	local n
	n=$(grep -n -E -m1 -- "$2" "$1" | cut -d: -f1)
	[ -n "$n" ] || framework_error "no line matching '$2' in $1"
	echo "$n"
}

# profile_has_stack PROFILE F1;F2;...: some sample has the frames F1, F2, ...
# consecutively (F1 innermost).
profile_has_stack() {
	awk -F'\t' -v seq=";$2;" 'index(";" $3 ";", seq) { ok = 1 } END { exit !ok }' "$1.samples"
}

# ---- CPython targets -----------------------------------------------------

# python_interpreters: the CPython interpreters the Python tests run on, one
# path a line: Debian's /usr/bin/python3.11 always (scripts/deps.sh installs
# it), then pyenv's newest 3.8 ... 3.13, those installed; says on stderr
# which minor versions it skipped.
python_interpreters() {
	local root m p
	[ -x /usr/bin/python3.11 ] ||
		fail "/usr/bin/python3.11 not found (scripts/deps.sh installs Debian's python3.11)"
	echo /usr/bin/python3.11
	root=${PYENV_ROOT:-$(pyenv root 2>/dev/null || echo "${HOME:-}/.pyenv")}
	for m in 8 9 10 11 12 13; do
		p=$(ls -d "$root"/versions/3.$m.[0-9]* 2>/dev/null | grep -v 't$' | sort -V | tail -n 1 || true)
		if [ -n "$p" ] && [ -x "$p/bin/python3" ]; then
			echo "$p/bin/python3"
		else
			echo "$ME: pyenv CPython 3.$m is not installed under $root: skipped" >&2
		fi
	done
}
