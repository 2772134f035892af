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
 *
 * Most Go samples need no walk of the copy at all (go_chain_take): the
 * kernel's walk is the stack, once its start is checked against the
 * copy's first frame or two, and it reaches a root through Go frames
 * alone.  Walking a Go copy with its CFI was most of cprof's time per
 * sample on a Go program (doc/cost.md).
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

/* Whether the frame at pc (a return address unless exact) is in a Go
 * module, and no stack switch, cgo call, vdso call or signal return that
 * a frame-pointer walk could not follow as Go's traceback does; *root
 * says whether a goroutine's or thread's root. */
static bool plain_go_frame(struct remote_unwinder *u, uint64_t pc, bool exact, bool *root)
{
	const struct proc_module *m = proc_modules_lookup(u->mods, pc);
	enum roots_kind kind;

	if (!m || !m->go_build_id || remote_is_restorer(u, pc))
		return false;
	kind = remote_root_kind(u, pc, exact);
	*root = kind == ROOTS_THREAD;
	return kind == ROOTS_NONE || kind == ROOTS_THREAD;
}

/* Frame f as the walk would put it (its module known: plain_go_frame). */
static struct prof_frame go_frame(struct remote_unwinder *u, uint64_t pc, bool exact)
{
	return (struct prof_frame){ .addr = pc, .module = proc_modules_lookup(u->mods, pc)->id,
				    .flags = exact ? PROF_FRAME_EXACT : 0 };
}

/* The kernel's walk from its second frame on after the k frames of the
 * CFI in frames.  Returns the count, or 0 when it does not reach a root
 * through plain Go frames. */
static size_t kernel_rest(struct remote_unwinder *u, const struct snap *s,
			  struct prof_frame *frames, size_t k, size_t max)
{
	size_t i;
	bool root;

	for (i = 1; i < s->n_user && k < max; i++) {
		if (!plain_go_frame(u, s->user[i], false, &root))
			return 0;
		frames[k++] = go_frame(u, s->user[i], false);
		if (root)
			return k;
	}
	return 0;
}

/* The frame records from fp (a Go frame's, after the k frames in frames)
 * walked over the copy.  Returns the count, or 0 when the walk leaves the
 * copy or does not reach a root through plain Go frames. */
static size_t copy_rest(struct remote_unwinder *u, const struct snap *s,
			struct prof_frame *frames, size_t k, size_t max, uint64_t fp)
{
	uint64_t next, ra;
	bool root;

	while (k < max) {
		if (!copy_word(s, fp, &next) || !copy_word(s, fp + 8, &ra) ||
		    !plain_go_frame(u, ra, false, &root))
			return 0;
		frames[k++] = go_frame(u, ra, false);
		if (root)
			return k;
		/* (callers' records lie higher up the stack) */
		if (next <= fp)
			return 0;
		fp = next;
	}
	return 0;
}

/*
 * Go keeps a function's frame record (the caller's %rbp, then the return
 * address) just below its CFA, from its prologue's end to its epilogue's
 * start, and %rbp points at it.  So the kernel's walk, which starts at
 * %rbp, has the sample's caller as its second frame when %rbp is the
 * leaf's record (%rbp == CFA0 - 16); when the leaf has none (frameless,
 * or in its prologue or epilogue), %rbp is still the caller's (== CFA1 -
 * 16), and the walk's second frame is the caller's caller, the caller
 * itself (from the CFI) to be put in front.  Either is checked against
 * the CFI's first steps.  Neither (Go assembly that uses %rbp as data, as
 * crypto/sha256's block does): two frames of the CFI more, and when the
 * record frame 1 keeps points at frame 2's as the CFI says, the records
 * from there are walked over the copy.  Past the first frames every frame
 * is at a call, its record made: the rest is taken as it is, up to a
 * root, if every frame is plain Go (plain_go_frame): a stack switch (g0
 * stacks), a cgo call, a vdso call or a signal frame leaves the copy to
 * be walked, which follows them.
 */
size_t go_chain_take(struct remote_unwinder *u, const struct snap *s, struct prof_frame *frames,
		     size_t max, enum remote_end *end)
{
	bool chain = s->n_user >= 2 && s->user[0] == snap_pc(s), root;
	struct remote_steps w;
	size_t n = 0;
	uint64_t fp;

	if (!s->n_user || s->regs_partial || !s->stack_len || max < 2 * REMOTE_STEPS_MAX ||
	    !plain_go_frame(u, snap_pc(s), true, &root) || root)
		return 0;
	remote_steps_begin(u, s, &w);
	frames[0] = go_frame(u, w.pc[0], true);
	if (!remote_steps_next(u, &w))
		goto out;
	if (chain && s->regs.rbp == w.cfa[0] - 16 && s->user[1] == w.pc[1]) {
		n = kernel_rest(u, s, frames, 1, max);
		goto out;
	}
	if (!remote_steps_next(u, &w) || !plain_go_frame(u, w.pc[1], false, &root) || root)
		goto out;
	frames[1] = go_frame(u, w.pc[1], false);
	if (chain && s->regs.rbp == w.cfa[1] - 16 && s->user[1] == w.pc[2]) {
		n = kernel_rest(u, s, frames, 2, max);
		goto out;
	}
	if (!remote_steps_next(u, &w) || !plain_go_frame(u, w.pc[2], false, &root) || root ||
	    !copy_word(s, w.cfa[1] - 16, &fp) || fp != w.cfa[2] - 16)
		goto out;
	frames[2] = go_frame(u, w.pc[2], false);
	n = copy_rest(u, s, frames, 3, max, fp);
out:
	remote_steps_end(u);
	if (n)
		*end = REMOTE_END_COMPLETE;
	return n;
}
