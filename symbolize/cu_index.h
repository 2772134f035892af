/* SPDX-License-Identifier: MIT */
/*
 * Address -> compile unit, for DWARF without .debug_aranges (Go emits none,
 * and libdw 0.188 then finds no CU for any address, so no line and no
 * inlined frame).  Built once per module from the CUs' own DW_AT_ranges or
 * DW_AT_low_pc/high_pc, as binutils' addr2line does; a lookup is a binary
 * search.
 */
#ifndef CPROF_SYMBOLIZE_CU_INDEX_H
#define CPROF_SYMBOLIZE_CU_INDEX_H

#include <elfutils/libdw.h>

struct cu_index;

/* Indexes every CU of dbg.  Returns 0 with *out set (possibly empty) or
 * -ENOMEM.  dbg must outlive the index. */
int cu_index_build(struct cu_index **out, Dwarf *dbg);
void cu_index_free(struct cu_index *ix);

/* The CU DIE whose ranges hold the DWARF address da, stored in *die;
 * NULL when none does. */
Dwarf_Die *cu_index_find(const struct cu_index *ix, Dwarf_Addr da, Dwarf_Die *die);

#endif
