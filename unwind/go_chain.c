/* SPDX-License-Identifier: MIT */
/*
 * Where a walk of a Go sample's stack copy ends because the goroutine's
 * frames are on another stack (a call into the vdso on the g0 stack, a
 * signal handler on the gsignal stack), it goes on along the kernel's
 * frame-pointer walk of the same sample (snap.user), as Go's own traceback
 * goes on along the goroutine's stack.
 *
 * The kernel's walk starts at %rbp and reads a frame record (the saved
 * %rbp, then the return address) at each step; the records it read in the
 * copy are in the copy, so its steps are replayed there, each return
 * address checked against the word the copy holds, until the next record
 * lies outside the copy.  If that record is the one the walk's last frame
 * keeps %rbp on (the frame record of a Go function past its prologue, or
 * of the vdso's code), the rest of the kernel's walk is that frame's
 * callers.  The frames are kept only if they reach a goroutine's root
 * (runtime.goexit, runtime.mstart...), without passing a stack switch.
 *
 * A frame without a frame record of its own (a frameless Go leaf, or code
 * caught in its prologue) when the signal came is the one case where the
 * kernel's walk skips a caller: its %rbp is still its caller's record.
 */
#include "config.h"

#include <string.h>

#include "unwind/remote-impl.h"

/* The word at addr of s's copies (the stack, or the second region), into
 * *v.  Returns false when the copies do not hold it. */
static bool copy_word(const struct snap *s, uint64_t addr, uint64_t *v)
{
	if (addr >= s->stack_start && addr + 8 <= s->stack_start + s->stack_len &&
	    addr + 8 > addr) {
		memcpy(v, s->stack + (addr - s->stack_start), 8);
		return true;
	}
	if (s->stack2_len && addr >= s->stack2_start &&
	    addr + 8 <= s->stack2_start + s->stack2_len && addr + 8 > addr) {
		memcpy(v, s->stack2 + (addr - s->stack2_start), 8);
		return true;
	}
	return false;
}

/*
 * The index in s->user of the caller of the frame whose %rbp is rbp, by
 * the kernel's walk replayed over the copy; 0 for none (the walk left the
 * copy at another record, or read other words than the copy holds).
 */
static size_t caller_index(const struct snap *s, uint64_t rbp)
{
	uint64_t fp = s->regs.rbp, ra, next;
	size_t i;

	for (i = 1; i < s->n_user; i++) {
		if (fp == rbp)
			return i;
		if (!copy_word(s, fp, &next) || !copy_word(s, fp + 8, &ra) || ra != s->user[i])
			return 0;
		fp = next;
	}
	return 0;
}

size_t go_chain_splice(struct remote_unwinder *u, const struct snap *s,
		       struct prof_frame *frames, size_t n, size_t max, enum remote_end *end)
{
	const struct proc_module *m;
	enum roots_kind kind;
	size_t i, k = n;

	if (!s->n_user || !n || !u->last_rbp_known || s->regs_partial || n >= max ||
	    (*end != REMOTE_END_TRUNCATED && *end != REMOTE_END_BAD_MEMORY &&
	     *end != REMOTE_END_NO_INFO && *end != REMOTE_END_BAD_FRAME))
		return n;
	i = caller_index(s, u->last_rbp);
	if (!i)
		return n;
	for (; i < s->n_user && k < max; i++) {
		m = proc_modules_lookup(u->mods, s->user[i]);
		if (!m)
			return n;
		frames[k] = (struct prof_frame){ .addr = s->user[i], .module = m->id };
		k++;
		kind = remote_root_kind(u, s->user[i], false);
		if (kind == ROOTS_THREAD) {
			*end = REMOTE_END_COMPLETE;
			u->ran_off = false;
			return k;
		}
		if (kind == ROOTS_SWITCH || kind == ROOTS_CGO_SWITCH)
			return n;	/* g0 frames below: not the goroutine's */
	}
	return n;
}
