/* SPDX-License-Identifier: MIT */
/* The parser's side of the stack walk: a module table from descriptors, snapshots walked in batches. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/futex.h>

#include "elf/objfile.h"
#include "lib/grow.h"
#include "unwind/remote.h"
#include "unwind/remote_client.h"
#include "unwind/remote_wire.h"
#include "unwind/walk_memo.h"

/* A walker of the privileged side: its modules, its maps, one unwinder. */
struct walker {
	uint32_t id;
	struct proc_modules *mods;	/* filled by REMOTE_REQ_MODULE, never updated */
	struct proc_maps maps;
	struct remote_unwinder *u;
	int *debug_fds;			/* by module id - 1 (up to the modules' count):
					 * its debug file, -1 none */
	size_t n_debug;			/* room in debug_fds */
	uint64_t gen;			/* the space last received; 0 none */
	struct snap snap;		/* a view of each snapshot of a request */
	struct remote_live live[REMOTE_WIRE_LIVE_MAX]; /* its live memory, a view */
};

struct walkers {
	struct walker **v;
	size_t n, cap;
};

/* The walkers of the one parser process, for find_debug_fd. */
static struct walkers *all_walkers;

static void free_walker(struct walker *w)
{
	size_t i;

	remote_destroy(w->u);
	for (i = 0; w->mods && i < proc_modules_count(w->mods); i++)
		if (w->debug_fds[i] >= 0)
			close(w->debug_fds[i]);
	if (w->mods)
		proc_modules_destroy(w->mods);
	proc_maps_free(&w->maps);
	free(w->debug_fds);
	free(w);
}

/* objfile_open_debug's source in the parser: a dup of what came with a module. */
static int find_debug_fd(void *arg, const char *build_id)
{
	const struct proc_module *m;
	struct walker *w;
	size_t i, k;

	(void)arg;
	for (i = 0; all_walkers && i < all_walkers->n; i++) {
		w = all_walkers->v[i];
		for (k = 0; k < proc_modules_count(w->mods); k++) {
			m = proc_modules_get(w->mods, (uint32_t)k + 1);
			if (w->debug_fds[k] >= 0 && m && m->build_id &&
			    strcmp(m->build_id, build_id) == 0)
				return dup(w->debug_fds[k]);
		}
	}
	return -1;
}

static size_t walker_index(const struct walkers *s, uint32_t id)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->v[i]->id == id)
			break;
	return i;
}

/* The walker called id; create: made when missing.  NULL: none (or no memory). */
static struct walker *find_walker(struct walkers *s, uint32_t id, bool create)
{
	struct walker *w;
	size_t i = walker_index(s, id);

	if (i < s->n)
		return s->v[i];
	if (!create || cprof_grow(&s->v, &s->cap, s->n + 1, sizeof(*s->v), 8) < 0)
		return NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->id = id;
	/* pid 0: the target's memory is never read here */
	if (proc_modules_create(&w->mods, 0) < 0 ||
	    remote_create(&w->u, 0, w->mods, &w->maps) < 0) {
		free_walker(w);
		return NULL;
	}
	s->v[s->n++] = w;
	return w;
}

/* len bytes at *off of req into *out (a view).  Returns false past the end. */
static bool take(const void *req, size_t len, size_t *off, size_t n, const void **out)
{
	if (n > len || *off > len - n)
		return false;
	*out = (const char *)req + *off;
	*off += n;
	return true;
}

/* A length-prefixed string of the request, copied (NULL for none). */
static int take_str(const void *req, size_t len, size_t *off, char **out)
{
	const void *p;
	uint32_t n;

	*out = NULL;
	if (!take(req, len, off, 4, &p))
		return -EPROTO;
	memcpy(&n, p, 4);
	if (n == UINT32_MAX)
		return 0;
	if (n > REMOTE_WIRE_PATH_MAX || !take(req, len, off, n, &p))
		return -EPROTO;
	*out = strndup(p, n);
	return *out ? 0 : -ENOMEM;
}

static int serve_module(struct walkers *s, const void *req, size_t len, int *fds, size_t nfds)
{
	struct remote_wire_module w;
	struct proc_module_ident ident;
	struct proc_module m = { .fd = -1 };
	struct walker *k;
	size_t off = sizeof(w), nfd = 0;
	int debug_fd = -1, r;

	if (len < sizeof(w))
		return -EPROTO;
	memcpy(&w, req, sizeof(w));
	if (nfds < (size_t)(!!(w.flags & REMOTE_WIRE_HAS_FD) + !!(w.flags & REMOTE_WIRE_HAS_DEBUG)))
		return -EPROTO;
	k = find_walker(s, w.ctx, true);
	if (!k)
		return -ENOMEM;
	/* a module sent again (to a parser that has it): nothing new */
	if (w.id <= proc_modules_count(k->mods))
		return 0;
	if (w.id != proc_modules_count(k->mods) + 1)
		return -ESTALE;
	if (cprof_grow(&k->debug_fds, &k->n_debug, w.id, sizeof(*k->debug_fds), 64) < 0)
		return -ENOMEM;
	m = (struct proc_module){
		.id = w.id, .base = w.base, .bias = w.bias, .text_start = w.text_start,
		.text_end = w.text_end, .text_offset = w.text_offset,
		.eh_frame_hdr = w.eh_frame_hdr, .eh_frame_hdr_len = w.eh_frame_hdr_len,
		.rw_start = w.rw_start, .rw_end = w.rw_end, .fd = -1,
		.fd_exact = w.flags & REMOTE_WIRE_FD_EXACT, .is_vdso = w.flags & REMOTE_WIRE_IS_VDSO,
		.is_main = w.flags & REMOTE_WIRE_IS_MAIN, .mapped = w.flags & REMOTE_WIRE_MAPPED,
		.deleted = w.flags & REMOTE_WIRE_DELETED,
	};
	ident = (struct proc_module_ident){ w.inode, w.dev_major, w.dev_minor };
	r = take_str(req, len, &off, &m.path);
	if (!r)
		r = take_str(req, len, &off, &m.build_id);
	/* Go's: go_chain_take takes the kernel's walk of Go code only */
	if (!r)
		r = take_str(req, len, &off, &m.go_build_id);
	if (r < 0 || !m.path) {
		r = r < 0 ? r : -EPROTO;
		goto err;
	}
	if (w.flags & REMOTE_WIRE_HAS_FD) {
		m.fd = fds[nfd];
		fds[nfd++] = -1;
		/* the file's one ELF handle, parsed here and not in cprof */
		if (objfile_from_fd(&m.file, m.fd) < 0)
			m.file = NULL;
	}
	if (w.flags & REMOTE_WIRE_HAS_DEBUG) {
		debug_fd = fds[nfd];
		fds[nfd++] = -1;
	}
	r = proc_modules_add_copy(k->mods, &m, &ident);
	if (r < 0)
		goto err;
	k->debug_fds[w.id - 1] = debug_fd;
	return 0;

err:
	objfile_close(m.file);
	if (m.fd >= 0)
		close(m.fd);
	if (debug_fd >= 0)
		close(debug_fd);
	free(m.path);
	free(m.build_id);
	free(m.go_build_id);
	return r;
}

/* The maps of a REMOTE_REQ_SPACE into out (sorted, apart). */
static int take_maps(const void *req, size_t len, size_t *off, size_t n, struct proc_maps *out)
{
	struct remote_wire_map w;
	const void *p;
	size_t i;

	out->v = calloc(n ? n : 1, sizeof(*out->v));
	if (!out->v)
		return -ENOMEM;
	for (out->n = 0; out->n < n; out->n++) {
		struct proc_map *m = &out->v[out->n];

		if (!take(req, len, off, sizeof(w), &p))
			return -EPROTO;
		memcpy(&w, p, sizeof(w));
		if (w.path_len > REMOTE_WIRE_PATH_MAX ||
		    !take(req, len, off, remote_wire_pad8(w.path_len), &p))
			return -EPROTO;
		i = out->n;
		if (w.start >= w.end || (i && w.start < out->v[i - 1].end))
			return -EPROTO;
		*m = (struct proc_map){ .start = w.start, .end = w.end, .offset = w.offset,
					.inode = w.inode, .dev_major = w.dev_major,
					.dev_minor = w.dev_minor, .perms = w.perms,
					.deleted = w.deleted != 0 };
		m->path = strndup(p, w.path_len);
		if (!m->path)
			return -ENOMEM;
	}
	return 0;
}

static int serve_space(struct walkers *s, const void *req, size_t len)
{
	struct remote_wire_space w;
	struct proc_maps maps = { 0 };
	struct walker *k;
	const void *p;
	size_t off = sizeof(w);
	int r;

	if (len < sizeof(w))
		return -EPROTO;
	memcpy(&w, req, sizeof(w));
	k = find_walker(s, w.ctx, false);
	/* a parser started after the last one died lacks the modules */
	if (!k || proc_modules_count(k->mods) != w.n_mods)
		return -ESTALE;
	r = take_maps(req, len, &off, w.n_maps, &maps);
	if (!r && !take(req, len, &off, (size_t)w.n_spans * sizeof(struct proc_module_span), &p))
		r = -EPROTO;
	if (!r) {
		struct proc_module_span *spans = malloc((w.n_spans ? w.n_spans : 1) *
							sizeof(*spans));

		r = spans ? 0 : -ENOMEM;
		if (spans) {
			memcpy(spans, p, (size_t)w.n_spans * sizeof(*spans));
			r = proc_modules_set_spans(k->mods, spans, w.n_spans);
		}
		free(spans);
	}
	if (r < 0) {
		proc_maps_free(&maps);
		return r == -EINVAL ? -EPROTO : r;
	}
	proc_maps_free(&k->maps);
	k->maps = maps;
	k->gen = w.gen;
	/* what was read under the old maps may not hold under these */
	remote_flush(k->u);
	return 0;
}

/* One snapshot of a REMOTE_REQ_WALK into k->snap, a view of the request. */
static int take_snap(struct walker *k, const void *req, size_t len, size_t *off)
{
	struct remote_wire_snap w;
	struct remote_wire_live l;
	struct snap *s = &k->snap;
	const void *p;
	uint32_t i;

	if (!take(req, len, off, sizeof(w), &p))
		return -EPROTO;
	memcpy(&w, p, sizeof(w));
	if (w.n_user > SNAP_USER_MAX || w.stack_len > CONF_MSG_MAX ||
	    w.stack2_len > CONF_MSG_MAX || w.n_live > REMOTE_WIRE_LIVE_MAX)
		return -EPROTO;
	s->regs = w.regs;
	s->stack_start = w.stack_start;
	s->stack_len = (size_t)w.stack_len;
	s->regs_partial = w.flags & REMOTE_WIRE_REGS_PARTIAL;
	s->unstopped = w.flags & REMOTE_WIRE_UNSTOPPED;
	if (!take(req, len, off, remote_wire_pad8(w.stack_len), &p))
		return -EPROTO;
	s->stack = (uint8_t *)p;
	s->stack2_start = w.stack2_start;
	s->stack2_len = (size_t)w.stack2_len;
	if (!take(req, len, off, remote_wire_pad8(w.stack2_len), &p))
		return -EPROTO;
	s->stack2 = (uint8_t *)p;
	s->n_user = w.n_user;
	if (!take(req, len, off, w.n_user * sizeof(uint64_t), &p))
		return -EPROTO;
	memcpy(s->user, p, w.n_user * sizeof(uint64_t));
	for (i = 0; i < w.n_live; i++) {
		if (!take(req, len, off, sizeof(l), &p))
			return -EPROTO;
		memcpy(&l, p, sizeof(l));
		if (l.len > REMOTE_WIRE_LIVE_BYTES || !take(req, len, off, remote_wire_pad8(l.len), &p))
			return -EPROTO;
		k->live[i] = (struct remote_live){ .start = l.start, .len = (size_t)l.len,
						   .data = p };
	}
	remote_set_live(k->u, k->live, w.n_live);
	return 0;
}

/* What CPROF_TEST_HELPER_WALK (tests only) makes a parser do at its first
 * walk, after the modules it walks with were sent: "1" a system call the
 * filter forbids, as a parser taken over by a hostile unwind table would;
 * "hang" sleep on a futex nobody wakes, for a test to kill it mid-walk. */
static void test_walk_trigger(void)
{
	static bool done;
	static int never;
	const char *test;

	if (done)
		return;
	done = true;
	test = getenv("CPROF_TEST_HELPER_WALK");
	if (test && strcmp(test, "1") == 0)
		syscall(SYS_ptrace, PTRACE_TRACEME, 0, NULL, NULL);
	while (test && strcmp(test, "hang") == 0)
		syscall(SYS_futex, &never, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}

/* What walk log l read, as the wire has it, at out of resp (room made
 * by the caller).  Returns the offset past it. */
static size_t put_log(const struct walk_log *l, void *resp, size_t out)
{
	struct remote_wire_read rd;
	unsigned i;

	for (i = 0; l && i < l->n; i++) {
		rd = (struct remote_wire_read){ .addr = l->reads[i].addr, .val = l->reads[i].val,
						.len = l->reads[i].len };
		memcpy((char *)resp + out, &rd, sizeof(rd));
		out += sizeof(rd);
	}
	return out;
}

static int serve_walk(struct walkers *s, const void *req, size_t len, void *resp, size_t cap,
		      size_t *resp_len)
{
	struct remote_wire_walked h = { 0 };
	struct remote_wire_result res;
	struct remote_wire_walk w;
	const struct walk_log *log;
	const struct prof_frame *fr;
	enum remote_end end;
	struct walker *k;
	size_t off = sizeof(w), out = sizeof(h), i, n;
	int r;

	if (len < sizeof(w))
		return -EPROTO;
	memcpy(&w, req, sizeof(w));
	k = find_walker(s, w.ctx, false);
	if (!k || k->gen != w.gen)
		return -ESTALE;
	if (!w.max_frames || w.max_frames > 65536)
		return -EPROTO;
	test_walk_trigger();
	for (i = 0; i < w.n; i++) {
		r = take_snap(k, req, len, &off);
		if (r < 0)
			return r;
		if (out + sizeof(res) + (size_t)w.max_frames * sizeof(struct prof_frame) +
		    WALK_MEMO_READS * sizeof(struct remote_wire_read) > cap)
			return -EMSGSIZE;
		n = remote_unwind(k->u, &k->snap, (struct prof_frame *)((char *)resp + out +
									sizeof(res)),
				  w.max_frames, &end);
		log = remote_walk_log(k->u);
		fr = (const struct prof_frame *)((char *)resp + out + sizeof(res));
		res = (struct remote_wire_result){
			/* (only where the walk would go on with it: see
			 * remote_walk_needs_target) */
			.needed = remote_walk_needs_target(k->u, fr, n, end) ? remote_needed(k->u) : 0,
			.n_frames = (uint32_t)n, .end = end, .stack_used = remote_stack_used(k->u),
			.ran_off = remote_ran_off_copy(k->u), .reused = remote_reused(k->u),
			.from_chain = remote_from_chain(k->u), .logged = log != NULL,
			.n_reads = log ? log->n : 0,
		};
		memcpy((char *)resp + out, &res, sizeof(res));
		out += sizeof(res) + n * sizeof(struct prof_frame);
		out = put_log(log, resp, out);
	}
	h.n = w.n;
	remote_take_pages(k->u, &h.pages_file, &h.pages_memory);
	memcpy(resp, &h, sizeof(h));
	*resp_len = out;
	return 0;
}

bool remote_serves(uint32_t type)
{
	return type >= REMOTE_REQ_MODULE && type <= REMOTE_REQ_WARM;
}

int remote_serve(void **state, uint32_t type, const void *req, size_t len, int *fds,
		 size_t nfds, void *resp, size_t cap, size_t *resp_len)
{
	struct walkers *s = *state;
	struct remote_wire_space q;
	size_t i;
	int r = -EPROTO;

	if (!s && (s = *state = calloc(1, sizeof(*s)))) {
		all_walkers = s;
		objfile_use_debug_fds(find_debug_fd, NULL);
	}
	if (!s)
		r = -ENOMEM;
	else if (type == REMOTE_REQ_MODULE)
		r = serve_module(s, req, len, fds, nfds);
	else if (type == REMOTE_REQ_SPACE)
		r = serve_space(s, req, len);
	else if (type == REMOTE_REQ_WALK)
		r = serve_walk(s, req, len, resp, cap, resp_len);
	else if (type == REMOTE_REQ_WARM && len >= sizeof(q)) {
		struct walker *k;

		memcpy(&q, req, sizeof(q));
		k = find_walker(s, q.ctx, false);
		r = k && k->gen ? remote_warm(k->u, q.n_mods) : -ESTALE;
	} else if (type == REMOTE_REQ_CLOSE && len >= sizeof(q)) {
		memcpy(&q, req, sizeof(q));
		i = walker_index(s, q.ctx);
		if (i < s->n) {
			free_walker(s->v[i]);
			s->v[i] = s->v[--s->n];
		}
		r = 0;
	}
	for (i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r;
}
