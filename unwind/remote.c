/* SPDX-License-Identifier: MIT */
/* Walking a snapshot with libunwind: the unwinder's life, the walk and its second chances. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libunwind.h>

#include "unwind/debug_frame.h"
#include "unwind/remote-impl.h"
#include "unwind/remote.h"
#include "unwind/roots.h"
#include "unwind/sigframe.h"
#include "unwind/walk_memo.h"

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
	u->as = unw_create_addr_space(&remote_accessors, 0);
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
	remote_flush_pages(u);
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

	return remote_read(u, ip, code, sizeof(code)) == 0 && sigframe_is_restorer_code(code);
}

bool remote_is_restorer(struct remote_unwinder *u, uint64_t ip)
{
	return is_restorer(u, ip);
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
	    remote_read(u, sp + SIGFRAME_GREGS_OFFSET, gregs, sizeof(gregs)) < 0)
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
	int r;

	if (unw_get_reg(c, UNW_REG_SP, &sp_a) < 0 || remote_read(u, sp_a + 40, &depth, 8) < 0 ||
	    remote_read(u, sp_a + 48, &g, 8) < 0)
		return 0;
	if (g) {
		/* (the goroutine's g, live: see remote_read) */
		u->live_ok = true;
		r = remote_read(u, g + 8, &hi, 8);
		u->live_ok = false;
		if (r < 0 || depth > hi || depth > (1u << 30))
			return 0;
		sp = hi - depth;
		/* Its stack may share a mapping with the copied one (Go's
		 * heap holds both goroutine and signal stacks). */
		u->parked_lo = sp;
		u->parked_hi = hi;
	} else {
		sp = depth;	/* called on a system stack: the SP itself */
	}
	u->live_ok = !g;	/* a system stack: not parked */
	r = remote_read(u, sp, &ret, 8);
	u->live_ok = false;
	if (r < 0 || remote_root_kind(u, ret, false) != ROOTS_CGO_CALLER) {
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

/* The %rbp of the frame c is at, for go_chain_splice (only for samples
 * that carry the kernel's frame-pointer walk: it may read memory). */
static void note_rbp(struct remote_unwinder *u, unw_cursor_t *c)
{
	unw_word_t rbp;

	if (!u->snap->n_user)
		return;
	u->last_rbp_known = unw_get_reg(c, UNW_X86_64_RBP, &rbp) == 0;
	u->last_rbp = rbp;
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
	u->last_rbp_known = !s->regs_partial;
	u->last_rbp = s->regs.rbp;
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
	enum roots_kind kind = remote_root_kind(u, ip, was_signal);

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
		kind = remote_root_kind(u, ip, false);
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
		u->last_rbp_known = false;
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
	note_rbp(u, c);
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
	kind = remote_root_kind(u, snap_pc(s), true);
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

void remote_steps_begin(struct remote_unwinder *u, const struct snap *s, struct remote_steps *w)
{
	walk_begin(u, s);
	w->pc[0] = snap_pc(s);
	w->n = 1;
	w->stuck = unw_init_remote(&w->c, u->as, u) < 0;
}

bool remote_steps_next(struct remote_unwinder *u, struct remote_steps *w)
{
	unw_word_t ip, sp;

	if (w->stuck || w->n >= REMOTE_STEPS_MAX || unw_step(&w->c) <= 0 ||
	    unw_get_reg(&w->c, UNW_REG_IP, &ip) < 0 || !ip ||
	    unw_get_reg(&w->c, UNW_REG_SP, &sp) < 0 || is_restorer(u, ip)) {
		w->stuck = true;
		return false;
	}
	w->cfa[w->n - 1] = sp;
	w->pc[w->n++] = ip;
	return true;
}

void remote_steps_end(struct remote_unwinder *u)
{
	u->snap = NULL;
	u->stack_map = NULL;
	u->in_signal_ctx = false;
}

size_t remote_stack_used(const struct remote_unwinder *u)
{
	return u->stack_used;
}

bool remote_ran_off_copy(const struct remote_unwinder *u)
{
	return u->ran_off;
}

bool remote_from_chain(const struct remote_unwinder *u)
{
	return u->from_chain;
}

bool remote_reused(const struct remote_unwinder *u)
{
	return u->reused;
}

const struct walk_log *remote_walk_log(const struct remote_unwinder *u)
{
	return u->log_kept ? &u->log : NULL;
}

bool remote_walk_needs_target(struct remote_unwinder *u, const struct prof_frame *frames,
			      size_t n, enum remote_end end)
{
	if (end == REMOTE_END_BAD_MEMORY)
		return true;
	if (end != REMOTE_END_GO_SWITCH || !n)
		return false;
	return remote_root_kind(u, frames[n - 1].addr, n == 1) == ROOTS_CGO_SWITCH;
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
	    remote_root_kind(u, snap_pc(s), true) != ROOTS_VDSO_CALLER)
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

	u->from_chain = false;
	u->log_kept = false;
	u->needed = 0;
	n = go_chain_take(u, s, frames, max, end);
	if (n) {
		u->reused = false;
		u->from_chain = true;
		u->stack_used = 0;
		u->ran_off = false;
		return n;
	}
	u->reused = u->memo && walk_memo_find(u->memo, s, u->gen, max, remote_snap_reg, frames, &r);
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
	if (remote_end_is_root(*end)) {
		r = (struct walk_result){ .n_frames = n, .end = *end, .stack_used = u->stack_used,
					  .ran_off = u->ran_off };
		u->log_kept = walk_memo_keeps(&u->log, s, n);
		if (u->memo)
			walk_memo_store(u->memo, s, u->gen, max, &u->log, frames, &r);
	}
	u->log.off = true;
	if (remote_end_is_root(*end))
		return n;
	n = go_chain_splice(u, s, frames, n, max, end);
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
	case REMOTE_END_PARSER: return "parser";
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
	case REMOTE_END_PARSER: return "the parser could not walk it";
	case REMOTE_END_ERROR: break;
	}
	return "unwinder error";
}
