/* SPDX-License-Identifier: MIT */
/* libunwind's accessors for a snapshot, and where a pc's unwind table is found. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libunwind.h>

#include "lib/grow.h"
#include "unwind/debug_frame.h"
#include "unwind/remote-impl.h"
#include "unwind/roots.h"

static int acc_access_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write,
			  void *arg)
{
	struct remote_unwinder *u = arg;

	if (write)
		return -UNW_EREADONLYREG;
	if (remote_read(u, addr, val, sizeof(*val)) < 0) {
		if (!u->hit_end_of_snapshot)
			u->bad_memory = true;
		return -UNW_EINVAL;
	}
	return 0;
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

uint64_t remote_snap_reg(const struct snap *s, unsigned reg)
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
		if (reg == UNW_X86_64_RBP && u->rbp_floor && remote_frame_pointer_guess(u, val))
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
	return remote_read(u, addr, v, sizeof(*v));
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

	if (cprof_grow_zeroed(&u->eh, &u->n_eh, (size_t)m->id + 1, sizeof(*u->eh), 64) < 0)
		return NULL;
	e = &u->eh[m->id];
	if (e->probed)
		return e;
	e->probed = true;
	if (!m->eh_frame_hdr || remote_read(u, m->eh_frame_hdr, hdr, sizeof(hdr)) < 0)
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
		if (remote_read(u, m->eh_frame_hdr + 4 + psize, &count, 8) < 0)
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
	if (cprof_grow_zeroed(&u->df, &u->n_df, (size_t)m->id + 1, sizeof(*u->df), 64) < 0)
		return NULL;
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
enum roots_kind remote_root_kind(struct remote_unwinder *u, uint64_t pc, bool exact)
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

int remote_warm(struct remote_unwinder *u, uint32_t id)
{
	const struct proc_module *m = proc_modules_get(u->mods, id);

	if (!m || proc_modules_lookup(u->mods, m->text_start) != m)
		return -ENOENT;
	probe_eh(u, m);
	remote_root_kind(u, m->text_start, true);
	return 0;
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

unw_accessors_t remote_accessors = {
	.find_proc_info = acc_find_proc_info,
	.put_unwind_info = acc_put_unwind_info,
	.get_dyn_info_list_addr = acc_get_dyn_info_list_addr,
	.access_mem = acc_access_mem,
	.access_reg = acc_access_reg,
	.access_fpreg = acc_access_fpreg,
	.resume = acc_resume,
	.get_proc_name = acc_get_proc_name,
};
