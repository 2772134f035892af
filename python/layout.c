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

/* Where 3.13's _Py_DebugOffsets keeps each offset (generated from its headers). */
#include "python/debug_offsets.h"

int py_layout_debug_offsets(pid_t pid, uint64_t runtime, struct py_layout *l)
{
	const uint16_t *pos = (const uint16_t *)&py_debug_positions;
	uint8_t raw[PY_DEBUG_OFFSETS_SIZE];
	uint16_t *out = (uint16_t *)l;
	uint64_t version, free_threaded, v;
	uint16_t minor = l->minor;
	size_t i;

	if (py_mem(pid, runtime, raw, sizeof(raw)) < 0 || memcmp(raw, "xdebugpy", 8))
		return -EPROTO;
	memcpy(&version, raw + PY_DEBUG_OFFSETS_VERSION, sizeof(version));
	memcpy(&free_threaded, raw + PY_DEBUG_OFFSETS_FREE_THREADED, sizeof(free_threaded));
	/* Another minor version may lay the struct out otherwise; free-threaded
	 * builds lay the objects out otherwise. */
	if (version >> 24 != 3 || ((version >> 16) & 0xff) != py_debug_positions.minor ||
	    free_threaded)
		return -EPROTO;
	memset(l, 0, sizeof(*l));
	/* struct py_layout is uint16_t fields only: each one's position, 0
	 * when 3.13 does not publish it (the cookie is at 0). */
	for (i = 1; i < sizeof(*l) / sizeof(uint16_t); i++) {
		if (!pos[i])
			continue;
		memcpy(&v, raw + pos[i], sizeof(v));
		if (v > 0xffff)
			return -EPROTO;
		out[i] = (uint16_t)v;
	}
	l->minor = minor;
	/* PyCompactUnicodeObject: PyASCIIObject, utf8_length, utf8. */
	l->uni_compact_size = (uint16_t)(l->uni_ascii_size + 16);
	return 0;
}

pid_t py_pthread_tid(const struct py_proc *py, uint64_t pthread)
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
	return py_pthread_tid(py, id);
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
