/* SPDX-License-Identifier: MIT */
/* libunwind remote address space over snapshots and a read-only page cache. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libunwind.h>

#include "process/memory.h"
#include "unwind/debug_frame.h"
#include "unwind/remote.h"
#include "unwind/roots.h"
#include "unwind/sigframe.h"
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
	bool rbp_probed;	/* frame_pointer_guess ran for this walk */
	uint64_t rbp_guess;	/* its answer, 0 for none */
	uint64_t rbp_floor;	/* SP of the frame that needs %rbp; 0: do not guess */
	bool read_popped;	/* the walk read the word just below the copy's SP */
	bool guess_popped;	/* ... which reads as the first frame's %rbp */
};

static uint64_t page_hash(uint64_t page)
{
	return (page >> 12) * 0x9e3779b97f4a7c15ull;
}

static void flush_pages(struct remote_unwinder *u)
{
	size_t i;

	for (i = 0; i < PAGE_SLOTS; i++)
		u->pages[i].addr = 0;
	u->n_pages = 0;
}

/* Copies len bytes at addr from a cached read-only page.  Fails on pages
 * that cannot be read. */
static int read_cached(struct remote_unwinder *u, uint64_t addr, void *dst, size_t len)
{
	uint64_t page = addr & ~(uint64_t)(PAGE_SIZE_ - 1);
	size_t off = (size_t)(addr - page), i;
	struct page *slot;

	if (off + len > PAGE_SIZE_)
		return -EINVAL;
	i = (size_t)(page_hash(page) & (PAGE_SLOTS - 1));
	for (;;) {
		slot = &u->pages[i];
		if (slot->addr == page + 1) {
			memcpy(dst, slot->data + off, len);
			return 0;
		}
		if (!slot->addr)
			break;
		i = (i + 1) & (PAGE_SLOTS - 1);
	}
	/* Keep the table at most half full; beyond that start over: code
	 * working sets are small, and this keeps probing short. */
	if (u->n_pages >= PAGE_SLOTS / 2) {
		flush_pages(u);
		return read_cached(u, addr, dst, len);
	}
	if (!slot->data) {
		slot->data = malloc(PAGE_SIZE_);
		if (!slot->data)
			return -ENOMEM;
	}
	if (proc_mem_read_all(u->pid, page, slot->data, PAGE_SIZE_) < 0)
		return -EFAULT;
	slot->addr = page + 1;
	u->n_pages++;
	memcpy(dst, slot->data + off, len);
	return 0;
}

static int read_live(struct remote_unwinder *u, uint64_t addr, void *dst, size_t len)
{
	return proc_mem_read_all(u->pid, addr, dst, len) == 0 ? 0 : -EFAULT;
}

/*
 * The one memory reader: snapshot first (the stack as it was at the stop),
 * then read-only mappings through the cache, then live memory.  Reading the
 * live stack beyond the snapshot would mix two moments, so it is refused and
 * the sample marked truncated instead.
 */
static int read_mem(struct remote_unwinder *u, uint64_t addr, void *dst, size_t len)
{
	const struct snap *s = u->snap;
	const struct proc_map *m;

	if (s && addr >= s->stack_start && addr + len <= s->stack_start + s->stack_len) {
		size_t off = (size_t)(addr - s->stack_start);

		memcpy(dst, s->stack + off, len);
		if (off + len > u->stack_used)
			u->stack_used = off + len;
		walk_log_stack(&u->log, addr, dst, len);
		return 0;
	}
	/* The word just below SP, which no copy holds (both start at SP):
	 * see popped_second_chance. */
	if (s && !s->regs_partial && addr + len <= s->stack_start && addr >= s->stack_start - 8) {
		u->read_popped = true;
		if (u->guess_popped) {
			uint64_t v = s->regs.rbp;

			memcpy(dst, (const uint8_t *)&v + (addr - (s->stack_start - 8)), len);
			walk_log_spoil(&u->log);
			return 0;
		}
	}
	/* Anything but the copy and read-only file pages may read
	 * differently for another copy: such a walk is not remembered. */
	if (s && s->stack2_len && addr >= s->stack2_start &&
	    addr + len <= s->stack2_start + s->stack2_len) {
		memcpy(dst, s->stack2 + (addr - s->stack2_start), len);
		walk_log_spoil(&u->log);
		return 0;
	}
	if (addr >= u->parked_lo && addr + len <= u->parked_hi) {
		walk_log_spoil(&u->log);
		return read_live(u, addr, dst, len);
	}
	if (u->stack_map && addr >= u->stack_map->start && addr < u->stack_map->end) {
		if (s && addr >= s->stack_start)
			u->hit_end_of_snapshot = true;
		walk_log_spoil(&u->log);
		return -EFAULT;
	}
	m = proc_maps_find(u->maps, addr);
	if (m && !(m->perms & PROC_MAP_W) && (m->perms & PROC_MAP_R) &&
	    (addr & (PAGE_SIZE_ - 1)) + len <= PAGE_SIZE_) {
		if (read_cached(u, addr, dst, len) == 0)
			return 0;
		walk_log_spoil(&u->log);
		return -EFAULT;
	}
	walk_log_spoil(&u->log);
	return read_live(u, addr, dst, len);
}

static int acc_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write,
			  void *arg)
{
	struct remote_unwinder *u = arg;

	if (write)
		return -UNW_EREADONLYREG;
	if (read_mem(u, addr, val, sizeof(*val)) < 0) {
		if (!u->hit_end_of_snapshot)
			u->bad_memory = true;
		return -UNW_EINVAL;
	}
	return 0;
}

/* Whether ra follows a call instruction in a module's code: e8 rel32, or
 * ff /2 (indirect call) in its 2..7-byte forms, with or without REX. */
static bool is_return_address(struct remote_unwinder *u, uint64_t ra)
{
	static const unsigned ff_back[] = { 2, 3, 4, 6, 7 };
	uint8_t b[8];
	size_t i;

	if (ra < 8 || !proc_modules_lookup(u->mods, ra))
		return false;
	if (read_mem(u, ra - 8, b, 8) < 0)
		return false;
	if (b[8 - 5] == 0xe8)
		return true;
	for (i = 0; i < sizeof(ff_back) / sizeof(ff_back[0]); i++) {
		unsigned k = ff_back[i];

		if (b[8 - k] == 0xff && (b[8 - k + 1] & 0x38) == 0x10)
			return true;
	}
	return false;
}

/* A frame record at v: [v] the caller's frame pointer, [v+8] a return
 * address; followed for depth more records. */
static bool frame_record(struct remote_unwinder *u, uint64_t v, int depth)
{
	uint64_t next, ra;

	if (!snap_word(u->snap, v, &next) || !snap_word(u->snap, v + 8, &ra))
		return false;
	if (!is_return_address(u, ra))
		return false;
	if (depth == 0 || next == 0)
		return true;
	if (next <= v || !u->stack_map || next >= u->stack_map->end)
		return false;
	return frame_record(u, next, depth - 1);
}

/*
 * A thread read without a stop has only SP and PC.  When code built with
 * frame pointers calls a libc wrapper that leaves %rbp alone, the caller's
 * frame is found through %rbp, which /proc does not give.  That frame's
 * record lies at or above its stack pointer (rbp_floor, learnt from a first
 * walk that stopped there): the lowest address from there holding a
 * frame-pointer/return-address pair whose chain goes on through two more
 * such pairs.  The walk with the guess must then reach the thread's start,
 * or the thread is stopped instead (missing_reg).
 */
static bool frame_pointer_guess(struct remote_unwinder *u, uint64_t *rbp)
{
	const struct snap *s = u->snap;
	uint64_t v;

	if (!u->rbp_probed) {
		u->rbp_probed = true;
		u->rbp_guess = 0;
		for (v = (u->rbp_floor + 7) & ~7ull; v + 16 <= s->stack_start + s->stack_len;
		     v += 8) {
			if (frame_record(u, v, 2)) {
				u->rbp_guess = v;
				break;
			}
		}
	}
	*rbp = u->rbp_guess;
	return u->rbp_guess != 0;
}

/* Register reg of r, in libunwind's numbering.  Returns false for one
 * the snapshot does not hold. */
static bool reg_value(const struct user_regs_struct *r, unw_regnum_t reg, unw_word_t *val)
{
	switch (reg) {
	case UNW_X86_64_RAX: *val = r->rax; break;
	case UNW_X86_64_RDX: *val = r->rdx; break;
	case UNW_X86_64_RCX: *val = r->rcx; break;
	case UNW_X86_64_RBX: *val = r->rbx; break;
	case UNW_X86_64_RSI: *val = r->rsi; break;
	case UNW_X86_64_RDI: *val = r->rdi; break;
	case UNW_X86_64_RBP: *val = r->rbp; break;
	case UNW_X86_64_RSP: *val = r->rsp; break;
	case UNW_X86_64_R8: *val = r->r8; break;
	case UNW_X86_64_R9: *val = r->r9; break;
	case UNW_X86_64_R10: *val = r->r10; break;
	case UNW_X86_64_R11: *val = r->r11; break;
	case UNW_X86_64_R12: *val = r->r12; break;
	case UNW_X86_64_R13: *val = r->r13; break;
	case UNW_X86_64_R14: *val = r->r14; break;
	case UNW_X86_64_R15: *val = r->r15; break;
	case UNW_X86_64_RIP: *val = r->rip; break;
	default:
		return false;
	}
	return true;
}

static uint64_t snap_reg(const struct snap *s, unsigned reg)
{
	unw_word_t v = 0;

	reg_value(&s->regs, (unw_regnum_t)reg, &v);
	return v;
}

static int acc_access_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write,
			  void *arg)
{
	struct remote_unwinder *u = arg;

	if (write)
		return -UNW_EREADONLYREG;
	if (u->snap->regs_partial && !u->in_signal_ctx && reg != UNW_X86_64_RSP && reg != UNW_X86_64_RIP) {
		if (reg == UNW_X86_64_RBP && u->rbp_floor && frame_pointer_guess(u, val))
			return 0;
		/* Captured without a stop: the caller stops the thread instead. */
		u->missing_reg = true;
		return -UNW_EBADREG;
	}
	if (u->in_signal_ctx) {
		/* Registers made from memory and the snapshot's together. */
		walk_log_spoil(&u->log);
		return reg_value(&u->sig_regs, reg, val) ? 0 : -UNW_EBADREG;
	}
	if (!reg_value(&u->snap->regs, reg, val))
		return -UNW_EBADREG;
	walk_log_reg(&u->log, (unsigned)reg, *val);
	return 0;
}

static int acc_access_fpreg(unw_addr_space_t as, unw_regnum_t reg, unw_fpreg_t *val, int write,
			    void *arg)
{
	return -UNW_EBADREG;
}

static int acc_resume(unw_addr_space_t as, unw_cursor_t *c, void *arg)
{
	return -UNW_EINVAL;
}

static int acc_get_proc_name(unw_addr_space_t as, unw_word_t addr, char *buf, size_t len,
			     unw_word_t *off, void *arg)
{
	/* Names come from symbolize/ after sampling, never from here. */
	return -UNW_ENOINFO;
}

static int acc_get_dyn_info_list_addr(unw_addr_space_t as, unw_word_t *addr, void *arg)
{
	return -UNW_ENOINFO;
}

static void acc_put_unwind_info(unw_addr_space_t as, unw_proc_info_t *pi, void *arg)
{
	/* Tables found by dwarf_search_unwind_table are freed by libunwind. */
}

static int read_u32(struct remote_unwinder *u, uint64_t addr, uint32_t *v)
{
	return read_mem(u, addr, v, sizeof(*v));
}

/* Size of a DW_EH_PE-encoded value with format fmt, 0 if unsupported. */
static size_t eh_pe_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x00: return 8;	/* absptr */
	case 0x02: case 0x0a: return 2;
	case 0x03: case 0x0b: return 4;
	case 0x04: case 0x0c: return 8;
	default: return 0;
	}
}

/* Reads a module's .eh_frame_hdr once: version, encodings, FDE count. */
static const struct eh_info *probe_eh(struct remote_unwinder *u, const struct proc_module *m)
{
	struct eh_info *e;
	uint8_t hdr[4];
	size_t psize, csize;
	uint64_t count = 0;

	if (m->id >= u->n_eh) {
		size_t n = (m->id + 1) * 2;
		struct eh_info *nv = realloc(u->eh, n * sizeof(*nv));

		if (!nv)
			return NULL;
		memset(nv + u->n_eh, 0, (n - u->n_eh) * sizeof(*nv));
		u->eh = nv;
		u->n_eh = n;
	}
	e = &u->eh[m->id];
	if (e->probed)
		return e;
	e->probed = true;
	if (!m->eh_frame_hdr || read_mem(u, m->eh_frame_hdr, hdr, sizeof(hdr)) < 0)
		return e;
	/* version 1; the search table must be datarel sdata4 pairs */
	if (hdr[0] != 1 || hdr[3] != DW_EH_PE_datarel_sdata4 || hdr[2] == DW_EH_PE_omit)
		return e;
	psize = eh_pe_size(hdr[1]);
	csize = eh_pe_size(hdr[2]);
	if (!psize || !csize)
		return e;
	if (csize == 4) {
		uint32_t c32;

		if (read_u32(u, m->eh_frame_hdr + 4 + psize, &c32) < 0)
			return e;
		count = c32;
	} else if (csize == 8) {
		if (read_mem(u, m->eh_frame_hdr + 4 + psize, &count, 8) < 0)
			return e;
	} else {
		return e;
	}
	e->table = m->eh_frame_hdr + 4 + psize + csize;
	e->fde_count = count;
	e->usable = count > 0;
	return e;
}

static int search_eh(struct remote_unwinder *u, unw_addr_space_t as,
		     const struct proc_module *m, const struct eh_info *e, unw_word_t ip,
		     unw_proc_info_t *pi, int need_unwind_info)
{
	unw_dyn_info_t di;

	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
	di.start_ip = m->text_start;
	di.end_ip = m->text_end;
	di.u.rti.segbase = m->eh_frame_hdr;
	di.u.rti.table_data = e->table;
	/* in words; each entry is two int32 */
	di.u.rti.table_len = e->fde_count * 8 / sizeof(unw_word_t);
	return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, u);
}


static struct df_slot *df_slot(struct remote_unwinder *u, const struct proc_module *m)
{
	if (m->id >= u->n_df) {
		size_t n = (m->id + 1) * 2;
		struct df_slot *nv = realloc(u->df, n * sizeof(*nv));

		if (!nv)
			return NULL;
		memset(nv + u->n_df, 0, (n - u->n_df) * sizeof(*nv));
		u->df = nv;
		u->n_df = n;
	}
	return &u->df[m->id];
}

/* m's .debug_frame index, loaded on first use; NULL if it has none. */
static struct dframe *probe_df(struct remote_unwinder *u, const struct proc_module *m)
{
	struct df_slot *d = df_slot(u, m);

	if (!d)
		return NULL;
	if (!d->probed) {
		d->probed = true;
		if (dframe_load(&d->df, m) < 0)
			d->df = NULL;
	}
	return d->df;
}

/* What kind of root the frame at pc is (exact: pc is not a return address). */
static enum roots_kind root_kind(struct remote_unwinder *u, uint64_t pc, bool exact)
{
	const struct proc_module *m = proc_modules_lookup(u->mods, pc);
	struct df_slot *d;

	if (!m || !(d = df_slot(u, m)))
		return ROOTS_NONE;
	if (!d->roots_probed) {
		d->roots_probed = true;
		if (roots_load(&d->roots, m) < 0)
			d->roots = NULL;
	}
	return roots_at(d->roots, exact ? pc : pc - 1);
}

static int find_proc_info(struct remote_unwinder *u, unw_addr_space_t as, unw_word_t ip,
			  unw_proc_info_t *pi, int need_unwind_info)
{
	const struct proc_module *m = proc_modules_lookup(u->mods, ip);
	const struct eh_info *e;
	struct dframe *df;
	int ret = -UNW_ENOINFO;

	if (!m)
		return -UNW_ENOINFO;
	e = probe_eh(u, m);
	if (e && e->usable) {
		ret = search_eh(u, as, m, e, ip, pi, need_unwind_info);
		if (ret != -UNW_ENOINFO)
			return ret;
	}
	/* No .eh_frame entry for ip: the module's .debug_frame, if any. */
	df = probe_df(u, m);
	if (df)
		ret = dframe_find_proc_info(df, as, ip, pi, need_unwind_info, u);
	return ret;
}

static int acc_find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t *pi,
			      int need_unwind_info, void *arg)
{
	struct remote_unwinder *u = arg;
	int ret = find_proc_info(u, as, ip, pi, need_unwind_info);

	/* The step in progress falls back to frame pointers: it cannot mark
	 * the end of the stack by CFI. */
	if (ret == -UNW_ENOINFO)
		u->step_without_cfi = true;
	return ret;
}

static unw_accessors_t accessors = {
	.find_proc_info = acc_find_proc_info,
	.put_unwind_info = acc_put_unwind_info,
	.get_dyn_info_list_addr = acc_get_dyn_info_list_addr,
	.access_mem = acc_access_mem,
	.access_reg = acc_access_reg,
	.access_fpreg = acc_access_fpreg,
	.resume = acc_resume,
	.get_proc_name = acc_get_proc_name,
};

int remote_create(struct remote_unwinder **out, pid_t pid, const struct proc_modules *mods,
		  const struct proc_maps *maps)
{
	struct remote_unwinder *u;

	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->pages = calloc(PAGE_SLOTS, sizeof(*u->pages));
	if (!u->pages)
		goto err_free;
	u->pid = pid;
	u->mods = mods;
	u->maps = maps;
	u->gen = 1;
	u->log.off = true;
	if (walk_memo_create(&u->memo) < 0)
		u->memo = NULL;	/* walks are then all made */
	u->as = unw_create_addr_space(&accessors, 0);
	if (!u->as)
		goto err_pages;
	/* Global caching: libunwind then remembers each ip's register rules
	 * and skips find_proc_info for ips it has seen (doc/ptrace.md). */
	unw_set_caching_policy(u->as, UNW_CACHE_GLOBAL);
	*out = u;
	return 0;

err_pages:
	free(u->pages);
err_free:
	free(u);
	return -ENOMEM;
}

void remote_flush(struct remote_unwinder *u)
{
	u->gen++;
	flush_pages(u);
	if (u->n_eh)
		memset(u->eh, 0, u->n_eh * sizeof(*u->eh));
	unw_flush_cache(u->as, 0, 0);
}

void remote_destroy(struct remote_unwinder *u)
{
	size_t i;

	if (!u)
		return;
	unw_destroy_addr_space(u->as);
	walk_memo_destroy(u->memo);
	for (i = 0; i < PAGE_SLOTS; i++)
		free(u->pages[i].data);
	free(u->pages);
	free(u->eh);
	for (i = 0; i < u->n_df; i++) {
		dframe_free(u->df[i].df);
		roots_free(u->df[i].roots);
	}
	free(u->df);
	free(u);
}

static void put_frame(struct remote_unwinder *u, struct prof_frame *f, uint64_t pc, bool exact)
{
	const struct proc_module *m = proc_modules_lookup(u->mods, pc);

	f->addr = pc;
	f->module = m ? m->id : 0;
	f->flags = exact ? PROF_FRAME_EXACT : 0;
}

/* Whether ip is a signal restorer (the return address of a handler). */
static bool is_restorer(struct remote_unwinder *u, uint64_t ip)
{
	uint8_t code[SIGFRAME_RESTORER_LEN];

	return read_mem(u, ip, code, sizeof(code)) == 0 && sigframe_is_restorer_code(code);
}

/*
 * c is at a restorer frame: its SP is the ucontext of the signal.  Restarts
 * c from the registers of the code the signal interrupted, which libunwind
 * cannot reach itself when the restorer has no CFI (Go's).  Returns 0 or
 * -EFAULT (the ucontext could not be read).
 */
static int enter_signal_context(struct remote_unwinder *u, unw_cursor_t *c)
{
	uint64_t gregs[SIGFRAME_GREGS];
	unw_word_t sp;

	if (unw_get_reg(c, UNW_REG_SP, &sp) < 0 ||
	    read_mem(u, sp + SIGFRAME_GREGS_OFFSET, gregs, sizeof(gregs)) < 0)
		return -EFAULT;
	sigframe_regs(gregs, &u->sig_regs);
	if (!u->sig_regs.rip)
		return -EFAULT;
	u->in_signal_ctx = true;
	return unw_init_remote(c, u->as, u) < 0 ? -EFAULT : 0;
}

/*
 * c is at runtime.asmcgocall on the g0 stack, where C code called from Go
 * runs.  Go's asmcgocall keeps, at 40(SP) and 48(SP) of its frame, the
 * depth of the goroutine's SP below its stack top and the goroutine (g,
 * whose second word is stack.hi); at that SP lies the return address into
 * runtime.cgocall.  The goroutine does not run while its C call lasts, so
 * its stack is read as it is (it is not in the copy); the return address
 * must land in runtime.cgocall, or the walk ends at the switch.  Restarts c
 * there and returns its pc, or 0.
 */
static uint64_t enter_cgo_caller(struct remote_unwinder *u, unw_cursor_t *c)
{
	uint64_t depth, g, hi, sp, ret;
	unw_word_t sp_a;

	if (unw_get_reg(c, UNW_REG_SP, &sp_a) < 0 || read_mem(u, sp_a + 40, &depth, 8) < 0 ||
	    read_mem(u, sp_a + 48, &g, 8) < 0)
		return 0;
	if (g) {
		if (read_mem(u, g + 8, &hi, 8) < 0 || depth > hi || depth > (1u << 30))
			return 0;
		sp = hi - depth;
		/* Its stack may share a mapping with the copied one (Go's
		 * heap holds both goroutine and signal stacks). */
		u->parked_lo = sp;
		u->parked_hi = hi;
	} else {
		sp = depth;	/* called on a system stack: the SP itself */
	}
	if (read_mem(u, sp, &ret, 8) < 0 || root_kind(u, ret, false) != ROOTS_CGO_CALLER) {
		u->parked_lo = u->parked_hi = 0;
		return 0;
	}
	u->sig_regs = u->in_signal_ctx ? u->sig_regs : u->snap->regs;
	u->sig_regs.rsp = sp + 8;
	u->sig_regs.rip = ret;
	u->sig_regs.rbp = 0;	/* Go's CFI does not need it */
	u->in_signal_ctx = true;
	return unw_init_remote(c, u->as, u) < 0 ? 0 : ret;
}

/*
 * c is at a return address in time.now or runtime.nanotime1, which call the
 * vdso on the g0 stack: their CFI describes their frame on the goroutine's
 * stack, whose SP they keep in %r12 across the call (Go's
 * sys_linux_amd64.s, time_linux_amd64.s).  Restarts c at the same pc from
 * that SP.  Returns 0, or -1 when the walk should go on as it is.
 */
static int leave_vdso_stack(struct remote_unwinder *u, unw_cursor_t *c, uint64_t ip)
{
	unw_word_t sp, r12, rbp;

	const struct snap *s = u->snap;

	if (unw_get_reg(c, UNW_REG_SP, &sp) < 0 || unw_get_reg(c, UNW_X86_64_R12, &r12) < 0 ||
	    unw_get_reg(c, UNW_X86_64_RBP, &rbp) < 0 || r12 == sp || !r12)
		return -1;
	/* The goroutine runs on once resumed: its stack counts only if it
	 * was copied at the stop (sigframe_capture_vdso_caller). */
	if (!(r12 >= s->stack_start && r12 < s->stack_start + s->stack_len) &&
	    !(s->stack2_len && r12 >= s->stack2_start && r12 < s->stack2_start + s->stack2_len)) {
		u->hit_end_of_snapshot = true;
		return -1;
	}
	u->sig_regs = u->in_signal_ctx ? u->sig_regs : u->snap->regs;
	u->sig_regs.rip = ip;
	u->sig_regs.rsp = r12;
	u->sig_regs.r12 = r12;
	u->sig_regs.rbp = rbp;
	u->in_signal_ctx = true;
	return unw_init_remote(c, u->as, u) < 0 ? -1 : 0;
}

/* Readies u for a walk of s. */
static void walk_begin(struct remote_unwinder *u, const struct snap *s)
{
	u->snap = s;
	u->stack_map = proc_maps_find(u->maps, s->stack_start);
	u->hit_end_of_snapshot = false;
	u->bad_memory = false;
	u->missing_reg = false;
	u->rbp_probed = false;
	u->read_popped = false;
	u->parked_lo = u->parked_hi = 0;
	u->in_signal_ctx = u->start_from_sig_regs;
}

/* Why a step that returned ret (< 0, or ip 0) ended the walk at c. */
static enum remote_end step_failure(struct remote_unwinder *u, unw_cursor_t *c, int ret,
				    unw_word_t ip, uint64_t *fail_sp)
{
	if (u->missing_reg) {
		unw_get_reg(c, UNW_REG_SP, fail_sp);
		return REMOTE_END_NEED_REGS;
	}
	if (u->hit_end_of_snapshot || u->snap->stack_len == 0)
		return REMOTE_END_TRUNCATED;
	if (u->bad_memory)
		return REMOTE_END_BAD_MEMORY;
	if (ret == -UNW_EBADFRAME)
		return REMOTE_END_BAD_FRAME;
	if (ret == -UNW_ENOINFO || ip == 0)
		return ip == 0 && ret > 0 && !u->step_without_cfi ?
			REMOTE_END_COMPLETE : REMOTE_END_NO_INFO;
	return REMOTE_END_ERROR;
}

/*
 * The frame at ip may switch stacks (Go's vdso calls and cgo calls):
 * follows the switch, adding the caller's frame when there is one.
 * Returns the root kind of the frame the walk is now at, or -1 with *end
 * set when the switch ends the walk.
 */
static int follow_stack_switch(struct remote_unwinder *u, unw_cursor_t *c, unw_word_t ip,
			       bool was_signal, struct prof_frame *frames, size_t *n, size_t max,
			       enum remote_end *end, uint64_t *fail_sp)
{
	enum roots_kind kind = root_kind(u, ip, was_signal);

	if (kind == ROOTS_VDSO_CALLER && !was_signal && leave_vdso_stack(u, c, ip) < 0) {
		if (u->missing_reg) {
			*end = REMOTE_END_NEED_REGS;
			unw_get_reg(c, UNW_REG_SP, fail_sp);
			return -1;
		}
		if (u->hit_end_of_snapshot) {
			/* The goroutine's stack was not copied. */
			*end = REMOTE_END_TRUNCATED;
			return -1;
		}
	}
	if (kind == ROOTS_CGO_SWITCH && *n < max && (ip = enter_cgo_caller(u, c))) {
		/* Continued on the goroutine's stack. */
		put_frame(u, &frames[(*n)++], ip, false);
		kind = root_kind(u, ip, false);
	}
	return kind;
}

/*
 * One step of the walk from c, adding the caller's frame(s).  Returns 1 to
 * go on, 0 when the walk ended (*end set); *kind is the new frame's root kind.
 */
static int walk_step(struct remote_unwinder *u, unw_cursor_t *c, struct prof_frame *frames,
		     size_t *n, size_t max, enum roots_kind *kind, enum remote_end *end,
		     uint64_t *fail_sp)
{
	int ret, was_signal, k;
	unw_word_t ip;

	was_signal = unw_is_signal_frame(c) > 0;
	u->step_without_cfi = false;
	ret = unw_step(c);
	if (ret == 0) {
		/* libunwind ends a walk both where CFI marks the outermost
		 * frame and where its frame-pointer guess finds a null %rbp:
		 * only the first is an end. */
		*end = u->step_without_cfi ? REMOTE_END_NO_INFO : REMOTE_END_COMPLETE;
		return 0;
	}
	if (ret < 0 || unw_get_reg(c, UNW_REG_IP, &ip) < 0 || ip == 0) {
		*end = step_failure(u, c, ret, ip, fail_sp);
		return 0;
	}
	if (is_restorer(u, ip)) {
		/* A signal frame: go on from the interrupted code. */
		put_frame(u, &frames[(*n)++], ip, true);
		if (enter_signal_context(u, c) < 0) {
			*end = u->hit_end_of_snapshot ? REMOTE_END_TRUNCATED : REMOTE_END_BAD_MEMORY;
			return 0;
		}
		if (*n == max) {
			*end = REMOTE_END_MAX_FRAMES;
			return 0;
		}
		ip = u->sig_regs.rip;
		was_signal = 1;
	}
	/* The frame interrupted by a signal resumes at its exact pc; every
	 * other caller's ip is a return address. */
	put_frame(u, &frames[(*n)++], ip, was_signal);
	k = follow_stack_switch(u, c, ip, was_signal, frames, n, max, end, fail_sp);
	if (k < 0)
		return 0;
	*kind = k;
	return 1;
}

static size_t walk(struct remote_unwinder *u, const struct snap *s, struct prof_frame *frames,
		   size_t max, enum remote_end *end, uint64_t *fail_sp)
{
	enum roots_kind kind;
	size_t start_frames = 0;	/* frames up to the last C thread start seen */
	unw_cursor_t c;
	size_t n = 0;

	*end = REMOTE_END_ERROR;
	*fail_sp = 0;
	if (!max)
		return 0;
	walk_begin(u, s);
	put_frame(u, &frames[n++], snap_pc(s), true);
	kind = root_kind(u, snap_pc(s), true);
	if (kind == ROOTS_THREAD) {
		*end = REMOTE_END_COMPLETE;
		goto out;
	}
	if (kind == ROOTS_START)
		start_frames = n;
	if (unw_init_remote(&c, u->as, u) < 0) {
		if (u->missing_reg)
			*end = REMOTE_END_NEED_REGS;
		goto out;
	}
	for (;;) {
		if (n == max) {
			*end = REMOTE_END_MAX_FRAMES;
			break;
		}
		if (!walk_step(u, &c, frames, &n, max, &kind, end, fail_sp))
			break;
		if (kind == ROOTS_THREAD) {
			*end = REMOTE_END_COMPLETE;
			break;
		}
		if (kind == ROOTS_SWITCH || kind == ROOTS_CGO_SWITCH) {
			*end = REMOTE_END_GO_SWITCH;
			break;
		}
		if (kind == ROOTS_START)
			start_frames = n;
	}
out:
	/* A walk that failed above a C thread's start function reached the
	 * start all the same; what it found past it is dropped. */
	if (start_frames && *end != REMOTE_END_COMPLETE && *end != REMOTE_END_GO_SWITCH &&
	    *end != REMOTE_END_MAX_FRAMES && *end != REMOTE_END_NEED_REGS) {
		n = start_frames;
		*end = REMOTE_END_COMPLETE;
	}
	u->ran_off = u->hit_end_of_snapshot;
	u->snap = NULL;
	u->stack_map = NULL;
	u->in_signal_ctx = false;
	u->parked_lo = u->parked_hi = 0;
	return n;
}

size_t remote_stack_used(const struct remote_unwinder *u)
{
	return u->stack_used;
}

bool remote_ran_off_copy(const struct remote_unwinder *u)
{
	return u->ran_off;
}

bool remote_reused(const struct remote_unwinder *u)
{
	return u->reused;
}

bool remote_end_is_root(enum remote_end e)
{
	return e == REMOTE_END_COMPLETE || e == REMOTE_END_GO_SWITCH;
}

/* A stack that did not reach a root keeps a [truncated] frame as its root,
 * so that profiles show the cut instead of a short stack. */
static size_t mark_truncated(struct prof_frame *frames, size_t n, size_t max,
			     enum remote_end end)
{
	if (!n || remote_end_is_root(end) || end == REMOTE_END_NEED_REGS)
		return n;
	if (n == max)
		n--;
	frames[n] = (struct prof_frame){ .addr = 0, .module = 0, .flags = PROF_FRAME_TRUNCATED };
	return n + 1;
}

/*
 * A leaf in time.now or runtime.nanotime1 may be past their switch to the g0
 * stack (see leave_vdso_stack): when the walk from the snapshot's SP found
 * no root, walk again from %r12, and keep that walk if it reaches one; else
 * the first walk is made again.  Returns the frames of the walk kept.
 */
static size_t vdso_second_chance(struct remote_unwinder *u, const struct snap *s,
				 struct prof_frame *frames, size_t max, enum remote_end *end,
				 size_t n)
{
	enum remote_end end2;
	uint64_t fail_sp;
	size_t n2;

	if (s->regs_partial || !s->regs.r12 || s->regs.r12 == s->regs.rsp ||
	    root_kind(u, snap_pc(s), true) != ROOTS_VDSO_CALLER)
		return n;
	u->sig_regs = s->regs;
	u->sig_regs.rsp = s->regs.r12;
	u->start_from_sig_regs = true;
	n2 = walk(u, s, frames, max, &end2, &fail_sp);
	u->start_from_sig_regs = false;
	if (remote_end_is_root(end2)) {
		*end = end2;
		return n2;
	}
	return walk(u, s, frames, max, end, &fail_sp);
}

/*
 * A sample between an epilogue's `pop %rbp` (or `leave`) and its `ret`:
 * the CFI still says the caller's %rbp is saved at CFA-16, the word just
 * below SP, which neither a stop's copy nor the kernel's holds.  That word
 * is what the pop just loaded: %rbp now.  The walk is tried again with
 * that word read as %rbp, and kept only if it reaches the thread's start
 * (a word popped into another register would not get there by chance).
 * attach-walk-memo met it once in about 1,500 samples of a 3-instruction
 * epilogue, with stops and with perf events.  As vdso_second_chance, the
 * first walk (n frames) is made again when the guess does not reach a
 * root.  Returns the frames of the walk kept.
 */
static size_t popped_second_chance(struct remote_unwinder *u, const struct snap *s,
				   struct prof_frame *frames, size_t max, enum remote_end *end,
				   size_t n)
{
	enum remote_end end2;
	uint64_t fail_sp;
	size_t n2;

	if (*end != REMOTE_END_BAD_MEMORY || !u->read_popped || s->regs_partial)
		return n;
	u->guess_popped = true;
	n2 = walk(u, s, frames, max, &end2, &fail_sp);
	u->guess_popped = false;
	if (remote_end_is_root(end2)) {
		*end = end2;
		return n2;
	}
	return walk(u, s, frames, max, end, &fail_sp);
}

size_t remote_unwind(struct remote_unwinder *u, const struct snap *s, struct prof_frame *frames,
		     size_t max, enum remote_end *end)
{
	struct walk_result r;
	uint64_t fail_sp;
	size_t n;

	u->reused = u->memo && walk_memo_find(u->memo, s, u->gen, max, snap_reg, frames, &r);
	if (u->reused) {
		*end = (enum remote_end)r.end;
		u->stack_used = r.stack_used;
		u->ran_off = r.ran_off;
		return r.n_frames;
	}
	walk_log_begin(&u->log, s);
	u->rbp_floor = 0;
	u->stack_used = 0;
	n = walk(u, s, frames, max, end, &fail_sp);
	/* Only a first walk that reached a root is remembered. */
	if (remote_end_is_root(*end) && u->memo) {
		r = (struct walk_result){ .n_frames = n, .end = *end, .stack_used = u->stack_used,
					  .ran_off = u->ran_off };
		walk_memo_store(u->memo, s, u->gen, max, &u->log, frames, &r);
	}
	u->log.off = true;
	if (remote_end_is_root(*end))
		return n;
	n = popped_second_chance(u, s, frames, max, end, n);
	if (remote_end_is_root(*end))
		return n;
	if (!remote_end_is_root(*end) && *end != REMOTE_END_NEED_REGS &&
	    (n = vdso_second_chance(u, s, frames, max, end, n)) && remote_end_is_root(*end))
		return n;
	if (*end != REMOTE_END_NEED_REGS || !s->regs_partial || !fail_sp)
		return mark_truncated(frames, n, max, *end);
	/* Second chance without a stop: guess %rbp from the frame records
	 * above the frame that needed it, and keep the walk only if it
	 * reaches the thread's start. */
	u->rbp_floor = fail_sp;
	n = walk(u, s, frames, max, end, &fail_sp);
	u->rbp_floor = 0;
	if (!remote_end_is_root(*end) && *end != REMOTE_END_MAX_FRAMES)
		*end = REMOTE_END_NEED_REGS;
	return mark_truncated(frames, n, max, *end);
}

const char *remote_end_key(enum remote_end e)
{
	switch (e) {
	case REMOTE_END_COMPLETE: return "complete";
	case REMOTE_END_TRUNCATED: return "truncated";
	case REMOTE_END_NO_INFO: return "no_info";
	case REMOTE_END_BAD_MEMORY: return "bad_memory";
	case REMOTE_END_MAX_FRAMES: return "max_frames";
	case REMOTE_END_NEED_REGS: return "need_regs";
	case REMOTE_END_BAD_FRAME: return "bad_frame";
	case REMOTE_END_GO_SWITCH: return "go_switch";
	case REMOTE_END_ERROR: break;
	}
	return "error";
}

const char *remote_end_str(enum remote_end e)
{
	switch (e) {
	case REMOTE_END_COMPLETE: return "complete";
	case REMOTE_END_TRUNCATED: return "stack deeper than the snapshot";
	case REMOTE_END_NO_INFO: return "no unwind information";
	case REMOTE_END_BAD_MEMORY: return "unreadable memory";
	case REMOTE_END_MAX_FRAMES: return "frame limit reached";
	case REMOTE_END_NEED_REGS: return "registers unknown without a stop";
	case REMOTE_END_BAD_FRAME: return "bad frame";
	case REMOTE_END_GO_SWITCH: return "Go stack switch (g0)";
	case REMOTE_END_ERROR: break;
	}
	return "unwinder error";
}
