/* SPDX-License-Identifier: MIT */
/* The remote unwinder's memory: the snapshot, a cache of read-only pages (from the modules' files), the target. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "process/memory.h"
#include "unwind/remote-impl.h"

static uint64_t page_hash(uint64_t page)
{
	return (page >> 12) * 0x9e3779b97f4a7c15ull;
}

void remote_flush_pages(struct remote_unwinder *u)
{
	size_t i;

	for (i = 0; i < PAGE_SLOTS; i++)
		u->pages[i].addr = 0;
	u->n_pages = 0;
}

/* Without a pid: len bytes at addr from the live memory given
 * (remote_set_live), or -EFAULT, addr then remembered as needed. */
static int read_given(struct remote_unwinder *u, uint64_t addr, void *dst, size_t len)
{
	const struct remote_live *l;
	size_t i;

	for (i = 0; i < u->n_live; i++) {
		l = &u->live[i];
		if (addr >= l->start && addr - l->start <= l->len && len <= l->len - (addr - l->start)) {
			memcpy(dst, l->data + (addr - l->start), len);
			return 0;
		}
	}
	u->needed = addr;
	return -EFAULT;
}

void remote_set_live(struct remote_unwinder *u, const struct remote_live *live, size_t n)
{
	u->live = live;
	u->n_live = n;
}

uint64_t remote_needed(const struct remote_unwinder *u)
{
	return u->needed;
}

/*
 * Page page of read-only mapping m into data: from the open file of its
 * module, at the file offset the mapping gives, or from the target when
 * the file may not hold what the target maps there (anonymous memory, a
 * writable segment made read-only after relocation, a file not known to
 * be the mapped one).  Returns 0 or -EFAULT.
 */
static int fill_page(struct remote_unwinder *u, const struct proc_map *m, uint64_t page,
		     uint8_t *data)
{
	const struct proc_module *mod = proc_modules_of_map(u->mods, m);
	int r = mod ? proc_module_read_mapped(mod, m, page, data, PAGE_SIZE_) : -ENODATA;

	if (r == 0) {
		u->pages_file++;
		return 0;
	}
	if (r != -ENODATA)
		return -EFAULT;
	if (u->pid <= 0) {
		if (read_given(u, page, data, PAGE_SIZE_) < 0)
			return -EFAULT;
	} else if (proc_mem_read_all(u->pid, page, data, PAGE_SIZE_) < 0) {
		return -EFAULT;
	}
	u->pages_memory++;
	return 0;
}

/* Copies len bytes at addr, in read-only mapping m, from a cached page.
 * Fails on pages that cannot be read. */
static int read_cached(struct remote_unwinder *u, const struct proc_map *m, uint64_t addr,
		       void *dst, size_t len)
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
		remote_flush_pages(u);
		return read_cached(u, m, addr, dst, len);
	}
	if (!slot->data) {
		slot->data = malloc(PAGE_SIZE_);
		if (!slot->data)
			return -ENOMEM;
	}
	if (fill_page(u, m, page, slot->data) < 0)
		return -EFAULT;
	slot->addr = page + 1;
	u->n_pages++;
	memcpy(dst, slot->data + off, len);
	return 0;
}

/* The target's memory, never read by an unwinder without a pid (the
 * confined parser's: it has the copies, the files and what the privileged
 * side read for it, nothing else). */
static int read_live(struct remote_unwinder *u, uint64_t addr, void *dst, size_t len)
{
	if (u->pid <= 0)
		return read_given(u, addr, dst, len);
	return proc_mem_read_all(u->pid, addr, dst, len) == 0 ? 0 : -EFAULT;
}

/*
 * The one memory reader: snapshot first (the stack as it was at the stop),
 * then read-only mappings through the cache, then live memory.  Reading the
 * live stack beyond the snapshot would mix two moments, so it is refused and
 * the sample marked truncated instead.
 */
int remote_read(struct remote_unwinder *u, uint64_t addr, void *dst, size_t len)
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
		if (read_cached(u, m, addr, dst, len) == 0)
			return 0;
		walk_log_spoil(&u->log);
		return -EFAULT;
	}
	walk_log_spoil(&u->log);
	/* The kernel's copy of a Go thread's stack is read some time after
	 * the thread ran on: another stack of it (the goroutine's, under a
	 * g0 or signal stack) reads as it is now, not as it was.  The walk
	 * ends there and goes on along the kernel's frame-pointer walk
	 * (go_chain_splice). */
	if (s && s->unstopped && s->n_user && !u->live_ok && (!m || (m->perms & PROC_MAP_W)))
		return -EFAULT;
	return read_live(u, addr, dst, len);
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
	if (remote_read(u, ra - 8, b, 8) < 0)
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
bool remote_frame_pointer_guess(struct remote_unwinder *u, uint64_t *rbp)
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

void remote_take_pages(struct remote_unwinder *u, uint64_t *from_file, uint64_t *from_memory)
{
	*from_file = u->pages_file;
	*from_memory = u->pages_memory;
	u->pages_file = 0;
	u->pages_memory = 0;
}
