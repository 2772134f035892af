/* SPDX-License-Identifier: MIT */
/*
 * The functions where a thread's stack legitimately ends, per module: thread
 * entry points (_start, clone, clone3, start_thread; Go's runtime.goexit,
 * runtime.mstart, runtime.rt0_go) and Go's stack switches (runtime.mcall,
 * runtime.systemstack, runtime.morestack, runtime.asmcgocall), above which
 * the frames on the g0 stack are not the caller's; asmcgocall's is followed
 * to the goroutine that waits in runtime.cgocall.  A walk is complete only
 * when it reaches one of these, or a frame whose CFI marks the end.
 * Addresses come from the module's symbol table, read once.
 */
#ifndef CPROF_UNWIND_ROOTS_H
#define CPROF_UNWIND_ROOTS_H

#include <stdint.h>

#include "process/modules.h"

enum roots_kind {
	ROOTS_NONE,
	ROOTS_THREAD,	/* a goroutine or Go thread starts here: nothing above */
	ROOTS_START,	/* a C thread start (_start, clone...): CFI may go on */
	ROOTS_SWITCH,	/* Go switched to the g0 stack here */
	ROOTS_CGO_SWITCH, /* runtime.asmcgocall: C runs on g0, the goroutine waits */
	ROOTS_CGO_CALLER, /* runtime.cgocall: not a root, where asmcgocall returns */
	ROOTS_VDSO_CALLER, /* time.now, runtime.nanotime1: call the vdso on g0,
			    * their own SP kept in %r12 */
};

struct roots;

/*
 * Reads m's root functions from its ELF symbol tables (.symtab, else its
 * build-id debug file's and .dynsym, else Go's .gopclntab).  A module
 * without any gets an empty set.  Returns 0 with *out set, or -errno.
 */
int roots_load(struct roots **out, const struct proc_module *m);
void roots_free(struct roots *r);

/* What kind of root contains the runtime address pc (NULL r: none). */
enum roots_kind roots_at(const struct roots *r, uint64_t pc);

/*
 * Whether name (a symbol as the linker wrote it, ".abi0" suffix and all)
 * is a root, and which kind.
 */
enum roots_kind roots_name_kind(const char *name);

#endif
