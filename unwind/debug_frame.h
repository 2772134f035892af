/* SPDX-License-Identifier: MIT */
/*
 * .debug_frame as a second source of CFI, for modules whose pcs have no
 * .eh_frame entry: Go binaries (only .debug_frame, often compressed), and
 * C/C++ built with -fno-asynchronous-unwind-tables.  A Go binary stripped
 * of it (-ldflags=-s -w) gets the same from its .gopclntab (gopclntab.h).  The section is read once
 * per module from the ELF file cprof already holds open (or from its separate
 * debuginfo under /usr/lib/debug/.build-id), decompressed, and indexed into a
 * sorted FDE table; lookups are a binary search in our own copy, with no
 * system call and nothing read from the target.
 */
#ifndef CPROF_UNWIND_DEBUG_FRAME_H
#define CPROF_UNWIND_DEBUG_FRAME_H

#include <libunwind.h>

#include "process/modules.h"

struct dframe;

/*
 * Loads and indexes m's .debug_frame.  Returns 0 with *out set, -ENOENT when
 * the module has none (nor a debuginfo file that has one), -ENOMEM, or
 * another -errno.  Touches only files, never the target; m must stay valid
 * as long as the result is used (its bias and text span are read here).
 */
int dframe_load(struct dframe **out, const struct proc_module *m);
void dframe_free(struct dframe *d);

/*
 * libunwind's find_proc_info for ip (a runtime address in m) from d:
 * 0 with *pi filled, -UNW_ENOINFO when no FDE covers ip.
 */
int dframe_find_proc_info(struct dframe *d, unw_addr_space_t as, unw_word_t ip,
			  unw_proc_info_t *pi, int need_unwind_info, void *arg);

/* Number of FDEs indexed (for tests and notes). */
size_t dframe_count(const struct dframe *d);

#endif
