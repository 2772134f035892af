/* SPDX-License-Identifier: MIT */
/* What the files of python/ share: the layout of one CPython version, the process. */
#ifndef CPROF_PYTHON_INTERNAL_H
#define CPROF_PYTHON_INTERNAL_H

#include <stdint.h>
#include <sys/types.h>

#include "lib/htab.h"
#include "python/python.h"

/* Byte offsets of what cprof reads; which ones apply depends on minor.
 * uint16_t fields only, minor first (py_layout_debug_offsets relies on it). */
struct py_layout {
	uint16_t minor;
	uint16_t rt_interp_head, rt_main_thread;
	uint16_t is_next, is_tstate_head;
	uint16_t ts_next, ts_interp, ts_thread_id, ts_native_thread_id;
	uint16_t ts_frame;		/* 3.8-3.10 frame, 3.11-3.12 cframe, 3.13 current_frame */
	uint16_t cframe_current_frame;	/* 3.11-3.12 */
	uint16_t fr_previous, fr_code;
	uint16_t fr_lasti;		/* 3.8-3.10 */
	uint16_t fr_instr, fr_owner;	/* 3.11+ */
	uint16_t fr_is_entry;		/* 3.11 */
	uint16_t co_qualname, co_code_adaptive;	/* 3.11+ */
	uint16_t co_linetable;		/* co_lnotab in 3.8-3.9 */
	uint16_t co_filename, co_name, co_firstlineno;
	uint16_t bytes_size, bytes_sval;
	uint16_t uni_length, uni_state, uni_ascii_size, uni_compact_size;
};

/* A code object, read once. */
struct py_code {
	uint64_t addr;			/* 0: freed and reused since (see code_same) */
	uint64_t name_obj, file_obj, linetable_obj;	/* what it pointed at when read */
	uint64_t checked;		/* the epoch it was last found the same in */
	char *name, *file;
	int firstlineno;
	uint8_t *linetable;
	size_t linetable_len;
};

struct py_loc {
	uint32_t code;		/* index in codes */
	int line;
};

struct py_proc {
	pid_t pid;
	struct py_layout l;
	char version[32];
	const struct proc_module *mod;
	uint64_t runtime;		/* address of _PyRuntime */
	uint64_t eval_start, eval_end;	/* _PyEval_EvalFrameDefault */
	uint64_t code_type;		/* address of PyCode_Type, 0 if unknown */
	int pthread_tid_off;		/* 3.8-3.10: offset of the tid in glibc's struct pthread */
	struct py_code *codes;
	size_t n_codes, cap_codes;
	struct cprof_htab code_index;
	struct py_tstate {
		pid_t tid;
		uint64_t addr;
	} *tstates;			/* from the last walk of the list */
	size_t n_tstates, cap_tstates;
	uint64_t walked;		/* the epoch of that walk, + 1 */
	struct py_loc *locs;
	size_t n_locs, cap_locs;
	struct cprof_htab loc_index;
	uint64_t epoch;			/* py_proc_new_epoch */
	struct prof_frame *splice;	/* py_splice's work space */
	size_t cap_splice;
};

/* Exactly len bytes of the target at addr (process/memory.h).  Returns 0 or -EFAULT. */
int py_mem(pid_t pid, uint64_t addr, void *buf, size_t len);
/* One pointer-sized word at addr + off. */
int py_word(pid_t pid, uint64_t addr, uint64_t off, uint64_t *out);

/* Layout for minor from the generated table, or NULL. */
const struct py_layout *py_layout_table(unsigned minor);
/* The layout from the _Py_DebugOffsets at the start of _PyRuntime (3.13).
 * Returns 0, -EPROTO when they are not what this code knows. */
int py_layout_debug_offsets(pid_t pid, uint64_t runtime, struct py_layout *l);
/* Checks l against the live process (pointers that must point back at each
 * other do, tstates' threads exist).  Returns 0 or -EPROTO. */
int py_layout_check(struct py_proc *py);

/* The thread id of thread state ts, 0 if unknown. */
pid_t py_tstate_tid(const struct py_proc *py, uint64_t ts);
/* 3.8-3.10: the tid glibc keeps in the struct pthread at pthread, 0 if unknown. */
pid_t py_pthread_tid(const struct py_proc *py, uint64_t pthread);

/* The code object at addr, read on first use; NULL when unreadable. */
const struct py_code *py_code_get(struct py_proc *py, uint64_t addr, uint32_t *index);
/* The line of instr (f_lasti, or an instruction pointer) in c. */
int py_code_line(const struct py_proc *py, const struct py_code *c, uint64_t instr);
void py_codes_free(struct py_proc *py);

#endif
