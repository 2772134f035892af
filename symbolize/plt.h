/* SPDX-License-Identifier: MIT */
/*
 * Names for the PLT stubs of an x86-64 ELF file, as perf synthesizes them
 * ("memcpy@plt"): the symbol tables name no stub, so a sample in one would
 * be charged to the bare module.  Each stub's indirect jump goes through a
 * GOT slot, and the dynamic relocation of that slot names the function.
 */
#ifndef CPROF_SYMBOLIZE_PLT_H
#define CPROF_SYMBOLIZE_PLT_H

#include <stdint.h>

#include <libelf.h>

struct sym_plt;

/*
 * Reads the stubs of elf (.plt, .plt.sec and .plt.got, named from
 * .rela.plt and .rela.dyn through .dynsym): the module's shared handle
 * (elf/objfile.h), which stays the caller's and is not kept.  Returns 0;
 * -ENOENT when the file has no named stub (not x86-64 ELF, no PLT); -EIO
 * or -ENOMEM.  Free with sym_plt_free.
 */
int sym_plt_read(Elf *elf, struct sym_plt **out);
void sym_plt_free(struct sym_plt *p);

/* The name of the stub holding ELF address vaddr ("memcpy@plt"), or NULL.
 * The string belongs to p. */
const char *sym_plt_lookup(const struct sym_plt *p, uint64_t vaddr);

#endif
