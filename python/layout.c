/* SPDX-License-Identifier: MIT */
/* CPython struct layouts: the generated table, 3.13's _Py_DebugOffsets, the live check. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "process/memory.h"
#include "python/internal.h"

static const struct py_layout layouts[] = {
#include "python/layouts.h"
};

/* Thread states walked at most, against a corrupt or cyclic list. */
#define MAX_TSTATES 4096

int py_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	if (!addr)
		return -EFAULT;
	return proc_mem_read_all(pid, addr, buf, len) == 0 ? 0 : -EFAULT;
}

int py_word(pid_t pid, uint64_t addr, uint64_t off, uint64_t *out)
{
	return py_mem(pid, addr + off, out, sizeof(*out));
}

const struct py_layout *py_layout_table(unsigned minor)
{
	size_t i;

	for (i = 0; i < sizeof(layouts) / sizeof(layouts[0]); i++)
		if (layouts[i].minor == minor)
			return &layouts[i];
	return NULL;
}

/*
 * _Py_DebugOffsets as 3.13's internal/pycore_runtime.h lays it out: words
 * after the 8-byte cookie, by position.  A version with another layout of
 * it fails the live check (or the cookie and version tests here).
 */
enum {
	DO_VERSION = 1, DO_FREE_THREADED = 2, DO_RT_INTERP_HEAD = 5,
	DO_IS_NEXT = 8, DO_IS_THREADS_HEAD = 9,
	DO_TS_NEXT = 21, DO_TS_INTERP = 22, DO_TS_CURRENT_FRAME = 23, DO_TS_THREAD_ID = 24,
	DO_TS_NATIVE_THREAD_ID = 25,
	DO_FR_PREVIOUS = 29, DO_FR_EXECUTABLE = 30, DO_FR_INSTR_PTR = 31, DO_FR_OWNER = 33,
	DO_CO_FILENAME = 35, DO_CO_NAME = 36, DO_CO_QUALNAME = 37, DO_CO_LINETABLE = 38,
	DO_CO_FIRSTLINENO = 39, DO_CO_CODE_ADAPTIVE = 43,
	DO_BYTES_SIZE = 65, DO_BYTES_SVAL = 66,
	DO_UNI_STATE = 68, DO_UNI_LENGTH = 69, DO_UNI_ASCII_SIZE = 70,
	DO_WORDS = 73,
};

int py_layout_debug_offsets(pid_t pid, uint64_t runtime, struct py_layout *l)
{
	static const struct {
		size_t field, word;
	} map[] = {
#define M(f, w) { offsetof(struct py_layout, f), w }
		M(rt_interp_head, DO_RT_INTERP_HEAD), M(is_next, DO_IS_NEXT),
		M(is_tstate_head, DO_IS_THREADS_HEAD), M(ts_next, DO_TS_NEXT),
		M(ts_interp, DO_TS_INTERP), M(ts_frame, DO_TS_CURRENT_FRAME),
		M(ts_thread_id, DO_TS_THREAD_ID), M(ts_native_thread_id, DO_TS_NATIVE_THREAD_ID),
		M(fr_previous, DO_FR_PREVIOUS), M(fr_code, DO_FR_EXECUTABLE),
		M(fr_instr, DO_FR_INSTR_PTR), M(fr_owner, DO_FR_OWNER),
		M(co_filename, DO_CO_FILENAME), M(co_name, DO_CO_NAME),
		M(co_qualname, DO_CO_QUALNAME), M(co_linetable, DO_CO_LINETABLE),
		M(co_firstlineno, DO_CO_FIRSTLINENO), M(co_code_adaptive, DO_CO_CODE_ADAPTIVE),
		M(bytes_size, DO_BYTES_SIZE), M(bytes_sval, DO_BYTES_SVAL),
		M(uni_state, DO_UNI_STATE), M(uni_length, DO_UNI_LENGTH),
		M(uni_ascii_size, DO_UNI_ASCII_SIZE),
#undef M
	};
	uint64_t w[DO_WORDS];
	uint16_t minor = l->minor;
	size_t i;

	if (py_mem(pid, runtime, w, sizeof(w)) < 0 || memcmp(w, "xdebugpy", 8) ||
	    w[DO_VERSION] >> 24 != 3 || ((w[DO_VERSION] >> 16) & 0xff) != 13 ||
	    w[DO_FREE_THREADED])
		return -EPROTO;
	memset(l, 0, sizeof(*l));
	l->minor = minor;
	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (w[map[i].word] > 0xffff)
			return -EPROTO;
		*(uint16_t *)((char *)l + map[i].field) = (uint16_t)w[map[i].word];
	}
	/* PyCompactUnicodeObject: PyASCIIObject, utf8_length, utf8. */
	l->uni_compact_size = (uint16_t)(l->uni_ascii_size + 16);
	return 0;
}

/* The tid stored in glibc's struct pthread, at the offset py->pthread_tid_off. */
static pid_t pthread_tid(const struct py_proc *py, uint64_t pthread)
{
	int32_t tid;

	if (py->pthread_tid_off < 0 ||
	    py_mem(py->pid, pthread + (uint64_t)py->pthread_tid_off, &tid, sizeof(tid)) < 0)
		return 0;
	return tid > 0 ? tid : 0;
}

pid_t py_tstate_tid(const struct py_proc *py, uint64_t ts)
{
	uint64_t id;

	if (py->l.minor >= 11) {
		if (py_word(py->pid, ts, py->l.ts_native_thread_id, &id) < 0)
			return 0;
		return (pid_t)id;
	}
	/* 3.8-3.10 keep only the pthread_t, which glibc makes the address
	 * of the thread's struct pthread; the tid is a field of it. */
	if (py_word(py->pid, ts, py->l.ts_thread_id, &id) < 0)
		return 0;
	return pthread_tid(py, id);
}

/*
 * 3.8-3.10: where glibc keeps the tid in its struct pthread, found in the
 * main thread's (_PyRuntime.main_thread), whose tid is the pid.  Returns 0
 * or -EPROTO.
 */
static int find_pthread_tid(struct py_proc *py)
{
	int32_t words[512];
	uint64_t main_thread;
	size_t i;

	py->pthread_tid_off = -1;
	if (py_word(py->pid, py->runtime, py->l.rt_main_thread, &main_thread) < 0 ||
	    py_mem(py->pid, main_thread, words, sizeof(words)) < 0)
		return -EPROTO;
	/* Past glibc's tcbhead_t, which holds pointers, not ids. */
	for (i = 64; i < sizeof(words) / sizeof(words[0]); i++) {
		if (words[i] == py->pid) {
			py->pthread_tid_off = (int)(i * sizeof(words[0]));
			return 0;
		}
	}
	return -EPROTO;
}

static bool thread_exists(pid_t pid, pid_t tid)
{
	char path[64];

	if (tid <= 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/task/%d", (int)pid, (int)tid);
	return access(path, F_OK) == 0;
}

int py_layout_check(struct py_proc *py)
{
	const struct py_layout *l = &py->l;
	uint64_t interp, ts, back;
	size_t n = 0;

	if (py_word(py->pid, py->runtime, l->rt_interp_head, &interp) < 0 || !interp)
		return -EPROTO;
	if (l->minor < 11 && find_pthread_tid(py) < 0)
		return -EPROTO;
	if (py_word(py->pid, interp, l->is_tstate_head, &ts) < 0 || !ts)
		return -EPROTO;
	/* Every thread state names its interpreter and a live thread (one
	 * that exits meanwhile may still be listed: one must check out). */
	for (; ts && n < MAX_TSTATES; n++) {
		if (py_word(py->pid, ts, l->ts_interp, &back) < 0 || back != interp)
			return -EPROTO;
		if (thread_exists(py->pid, py_tstate_tid(py, ts)))
			return 0;
		if (py_word(py->pid, ts, l->ts_next, &ts) < 0)
			return -EPROTO;
	}
	return -EPROTO;
}
