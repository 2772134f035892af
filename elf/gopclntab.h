/* SPDX-License-Identifier: MIT */
/*
 * Go's .gopclntab: for every function its entry, name, and pc-value tables
 * (SP delta, file, line).  Go's own traceback and profiler use it, and it
 * stays in binaries stripped with -ldflags='-s -w', which have neither
 * .debug_frame nor a symbol table.  cprof uses it for three things when a Go
 * module lacks the usual sources: unwind rules (translated once into
 * .debug_frame-style CFI, see dframe_load), function names and file:line,
 * and the goroutine/thread roots.  Go 1.18 and later (header magic
 * 0xfffffff0 and 0xfffffff1), x86-64; the section must be .gopclntab, or
 * .data.rel.ro.gopclntab in a PIE.  In a PIE the header's text start is
 * relocated at load time; the .text section's address stands for it.
 */
#ifndef CPROF_ELF_GOPCLNTAB_H
#define CPROF_ELF_GOPCLNTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libelf.h>

struct gopcln;

struct gopcln_func {
	uint64_t entry;		/* link-time address of the first instruction */
	uint64_t end;		/* first address past the function */
	const char *name;	/* owned by the table */
	uint32_t off;		/* offset of its _func record (internal) */
};

/*
 * Reads the .gopclntab section of elf (a copy is kept; elf is not: NULL is
 * a file that could not be read).  Returns 0 with *out set, -ENOENT when
 * there is none, -ENOTSUP for a header this does not know, -ENOMEM, -EINVAL
 * for a malformed table or a file that is not ELF.
 */
int gopcln_open(struct gopcln **out, Elf *elf);
void gopcln_close(struct gopcln *p);

/* Number of functions. */
size_t gopcln_count(const struct gopcln *p);

/* The i-th function (0..count-1), in address order.  Returns 0 or -EINVAL. */
int gopcln_func_at(const struct gopcln *p, size_t i, struct gopcln_func *f);

/* The function holding link-time address addr.  Returns 0 or -ENOENT. */
int gopcln_find(const struct gopcln *p, uint64_t addr, struct gopcln_func *f);

/*
 * The source position of addr in f: *file (owned by the table) and *line.
 * Returns 0 or -ENOENT.
 */
int gopcln_line(const struct gopcln *p, const struct gopcln_func *f, uint64_t addr,
		const char **file, int *line);

/*
 * CFI for every function, in .debug_frame format (one CIE, one FDE per
 * function; link-time addresses): the CFA is SP + the function's SP delta at
 * each pc + 8, the return address just below it.  *buf is malloc'd.
 * Returns 0 or -ENOMEM / -EINVAL.
 */
int gopcln_make_cfi(const struct gopcln *p, char **buf, size_t *len);

#endif
