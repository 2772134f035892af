/* SPDX-License-Identifier: MIT */
/*
 * Kernel addresses -> function names, from the kernel's symbol table as
 * /proc/kallsyms lists it (the core kernel's text symbols and those of the
 * loaded modules), for the kernel frames of perf samples.
 */
#ifndef CPROF_SYMBOLIZE_KALLSYMS_H
#define CPROF_SYMBOLIZE_KALLSYMS_H

#include <stdint.h>
#include <stdio.h>

struct sym_kallsyms;

/*
 * Reads a table in /proc/kallsyms's format from f ("ADDRESS TYPE NAME" or
 * "ADDRESS TYPE NAME\t[MODULE]" lines), keeping the text symbols.  Returns
 * 0; -EPERM when every address reads 0 (kptr_restrict, or no CAP_SYSLOG:
 * the kernel hides them); -ENOENT when no text symbol was found; -EIO on a
 * read error, or -ENOMEM.  Free the table with sym_kallsyms_free.
 */
int sym_kallsyms_read(FILE *f, struct sym_kallsyms **out);
void sym_kallsyms_free(struct sym_kallsyms *k);

/*
 * The function addr is in (the text symbol at or below it), or NULL when
 * addr is below the first one or more than a plausible function's size
 * past the last.  *module (may be NULL) gets the module's name ("ext4")
 * or NULL for the core kernel.  Strings belong to k.
 */
const char *sym_kallsyms_lookup(const struct sym_kallsyms *k, uint64_t addr,
				const char **module);

#endif
