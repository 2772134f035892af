/* SPDX-License-Identifier: MIT */
/*
 * What the files of the module table share (modules.c keeps the table;
 * module_elf.c reads what a module's ELF file says; module_open.c opens
 * the file as the target sees it).  Not for other modules.
 */
#ifndef CPROF_PROCESS_MODULES_IMPL_H
#define CPROF_PROCESS_MODULES_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/maps.h"
#include "process/modules.h"

/* One executable file instance found in the maps during an update. */
struct candidate {
	const struct proc_map *first_x;	/* first executable mapping */
	const struct proc_module *mod;	/* the module it became */
	uint64_t base;
	uint64_t text_start, text_end, text_offset;
	bool have_base;
};

/*
 * Reads build-id, bias and PT_GNU_EH_FRAME from the module's open file
 * (mod->file).  A file that is not ELF, or is truncated, leaves the fields
 * at their defaults: the module stays, unsymbolizable.
 */
void proc_module_read_facts(struct proc_module *mod, const struct candidate *c);

/*
 * Opens the file of mapping m of process pid as the target sees it.  On
 * success stores the path used (malloc'd) in *open_path.  Returns the
 * descriptor or -errno.
 */
int proc_module_open_file(pid_t pid, const struct proc_map *m, char **open_path);

/* Whether fd is the file of mapping m (its inode). */
bool proc_module_fd_is(int fd, const struct proc_map *m);

/* Copies the target's vdso (mapping m) into a memfd, so that it reads like
 * a file.  Returns the descriptor or -errno. */
int proc_module_copy_vdso(pid_t pid, const struct proc_map *m);

#endif
