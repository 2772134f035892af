/* SPDX-License-Identifier: MIT */
/*
 * What the files of the remote unwinder share: the unwinder itself and the
 * steps of a walk that live apart (remote.c walks; remote_memory.c reads
 * memory for it; remote_access.c is libunwind's accessors and the lookup
 * of unwind tables).  Not for other modules.
 */
#ifndef CPROF_UNWIND_REMOTE_IMPL_H
#define CPROF_UNWIND_REMOTE_IMPL_H

#include <stdbool.h>
#include <stdint.h>

#include <libunwind.h>

#include "unwind/remote.h"
#include "unwind/roots.h"
#include "unwind/walk_memo.h"

/* Exported by libunwind-x86_64 (it is what _UPT_find_proc_info calls) but not
 * declared in its public headers. */
extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
					       unw_dyn_info_t *di, unw_proc_info_t *pi,
					       int need_unwind_info, void *arg);

#define PAGE_SIZE_ 4096u
#define PAGE_SLOTS 4096u	/* 16 MiB of cached code and unwind tables at most */

#define DW_EH_PE_omit 0xff
#define DW_EH_PE_datarel_sdata4 0x3b

struct page {
	uint64_t addr;		/* page address + 1; 0 = empty slot */
	uint8_t *data;
};

/* What .eh_frame_hdr says, per module (index = module id). */
struct eh_info {
	bool probed;
	bool usable;
	uint64_t table;		/* address of the binary search table */
	uint64_t fde_count;
};

/* What is read from a module's file once (index = module id).  Module ids
 * are never reused and a module's file never changes: these outlive flushes. */
struct df_slot {
	bool probed;
	struct dframe *df;	/* NULL: the module has no usable .debug_frame */
	bool roots_probed;
	struct roots *roots;	/* its thread roots and stack switches */
};

struct remote_unwinder {
	pid_t pid;
	const struct proc_modules *mods;
	const struct proc_maps *maps;
	unw_addr_space_t as;
	struct page *pages;
	size_t n_pages;
	struct eh_info *eh;
	size_t n_eh;
	struct df_slot *df;
	size_t n_df;
	struct walk_memo *memo;	/* NULL: walks are not remembered (out of memory) */
	uint64_t gen;		/* moves on with every flush: what memo entries were made under */
	bool reused;		/* the last remote_unwind came from the memo */
	bool from_chain;	/* ... or was the kernel's walk (go_chain_take) */
	bool log_kept;		/* ... or a walk remembered with u->log */
	uint64_t pages_file;	/* pages cached from the modules' files, */
	uint64_t pages_memory;	/* ... and from the target (remote_take_pages) */
	/* The walk in progress. */
	struct walk_log log;	/* what it read */
	const struct snap *snap;
	const struct proc_map *stack_map;
	bool hit_end_of_snapshot;
	bool ran_off;		/* the last walk ended with hit_end_of_snapshot */
	size_t stack_used;	/* the highest end of a read from snap->stack, as an offset */
	bool bad_memory;
	bool missing_reg;
	bool step_without_cfi;	/* the current step found no CFI for a pc */
	bool in_signal_ctx;	/* registers come from sig_regs, not the snapshot */
	bool start_from_sig_regs; /* a walk starts from sig_regs (set by the caller) */
	uint64_t parked_lo, parked_hi; /* a goroutine's stack, parked in a cgo call:
					* read as it is (see enter_cgo_caller) */
	struct user_regs_struct sig_regs; /* the context a signal interrupted, or
					   * the goroutine a cgo call left */
	bool rbp_probed;	/* remote_frame_pointer_guess ran for this walk */
	uint64_t rbp_guess;	/* its answer, 0 for none */
	uint64_t rbp_floor;	/* SP of the frame that needs %rbp; 0: do not guess */
	bool read_popped;	/* the walk read the word just below the copy's SP */
	bool live_ok;		/* a read of live memory the walk trusts (enter_cgo_caller) */
	bool last_rbp_known;	/* the walk's last frame's %rbp is known: */
	uint64_t last_rbp;	/* ... this (see go_chain_splice) */
	bool guess_popped;	/* ... which reads as the first frame's %rbp */
	/* Without a pid: the live memory given (remote_set_live), and the
	 * last live read that no span held (remote_needed). */
	const struct remote_live *live;
	size_t n_live;
	uint64_t needed;
};

/* remote_memory.c */
/* Empties the page cache. */
void remote_flush_pages(struct remote_unwinder *u);
/*
 * The one memory reader: snapshot first (the stack as it was at the stop),
 * then read-only mappings through the cache, then live memory.  Returns 0
 * or -EFAULT (also for the live stack beyond the snapshot: the walk is then
 * marked as having run off it).
 */
int remote_read(struct remote_unwinder *u, uint64_t addr, void *dst, size_t len);
/* A value for %rbp where the snapshot's is not a frame pointer, from the
 * frame records on the stack (see the definition); false for none. */
bool remote_frame_pointer_guess(struct remote_unwinder *u, uint64_t *rbp);

/* remote_access.c */
/* libunwind's accessors of an unwinder (arg: the struct remote_unwinder). */
extern unw_accessors_t remote_accessors;
/* What kind of root the frame at pc is (exact: pc is not a return address). */
enum roots_kind remote_root_kind(struct remote_unwinder *u, uint64_t pc, bool exact);

/* Whether ip is a signal restorer (the return address of a handler). */
bool remote_is_restorer(struct remote_unwinder *u, uint64_t ip);
/*
 * The first frames of a walk of s, one step at a time: pc[0] is the
 * sample's pc, pc[i] the return address into frame i, cfa[i] frame i's
 * CFA (the SP of its caller), for i < n - 1.  remote_steps_next adds a
 * frame, false when it cannot (no unwind rule, a signal frame, or
 * REMOTE_STEPS_MAX frames); remote_steps_end after the last.
 */
#define REMOTE_STEPS_MAX 4
struct remote_steps {
	unw_cursor_t c;
	size_t n;
	bool stuck;
	uint64_t pc[REMOTE_STEPS_MAX];
	uint64_t cfa[REMOTE_STEPS_MAX - 1];
};
void remote_steps_begin(struct remote_unwinder *u, const struct snap *s, struct remote_steps *w);
bool remote_steps_next(struct remote_unwinder *u, struct remote_steps *w);
void remote_steps_end(struct remote_unwinder *u);

/* go_chain.c */
/*
 * A walk of s that ended cut short (end: TRUNCATED, BAD_MEMORY, NO_INFO or
 * BAD_FRAME) after n frames, the last with %rbp u->last_rbp: goes on along
 * the kernel's frame-pointer walk of the sample (s->user), when that walk
 * passed through the last frame's frame record and reaches a goroutine's
 * or thread's root.  Returns the frames now in frames (n when nothing was
 * added; then *end is unchanged), with *end COMPLETE otherwise.
 */
/*
 * A Go sample's stack as the kernel's frame-pointer walk (s->user) gives
 * it, when that walk can be trusted from the sample's pc to a goroutine's
 * or thread's root (see the definition).  Returns the frames put in
 * frames, with *end COMPLETE, or 0: the copy is to be walked.
 */
size_t go_chain_take(struct remote_unwinder *u, const struct snap *s, struct prof_frame *frames,
		     size_t max, enum remote_end *end);
size_t go_chain_splice(struct remote_unwinder *u, const struct snap *s,
		       struct prof_frame *frames, size_t n, size_t max, enum remote_end *end);

#endif
