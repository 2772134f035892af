/* SPDX-License-Identifier: MIT */
/* The privileged side of the stack walk in the parser: modules and maps sent once, snapshots in batches. */
#include "config.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/objfile.h"
#include "lib/grow.h"
#include "process/memory.h"
#include "unwind/remote_client-impl.h"
#include "unwind/remote_wire.h"
#include "unwind/walk_memo.h"

int remote_client_create(struct remote_client **out, struct conf_helper *h, pid_t pid,
			 const struct proc_modules *mods, const struct proc_maps *maps)
{
	static atomic_uint next_id;
	struct remote_client *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->req = malloc(CONF_MSG_MAX);
	c->answer = malloc(CONF_MSG_MAX);
	if (!c->req || !c->answer) {
		free(c->req);
		free(c->answer);
		free(c);
		return -ENOMEM;
	}
	if (walk_memo_create(&c->memo) < 0)
		c->memo = NULL;	/* every copy goes to the parser */
	c->h = h;
	c->pid = pid;
	c->mods = mods;
	c->maps = maps;
	c->id = atomic_fetch_add(&next_id, 1) + 1;
	c->space_gen = 1;
	*out = c;
	return 0;
}

void remote_client_destroy(struct remote_client *c)
{
	struct remote_wire_space q;
	struct conf_status cs;
	size_t alen;

	if (!c)
		return;
	/* only to the parser that has the walker: never a restart for this */
	cs = conf_status(c->h);
	if (c->sent_mods && c->parser_gen == cs.generation && cs.pid >= 0) {
		q = (struct remote_wire_space){ .ctx = c->id };
		conf_call(c->h, REMOTE_REQ_CLOSE, &q, sizeof(q), NULL, 0, c->answer, 16, &alen,
			  NULL, NULL);
	}
	free(c->req);
	free(c->answer);
	free(c->errs);
	free(c->deadly);
	walk_memo_destroy(c->memo);
	free(c->miss_idx);
	free(c->miss_snaps);
	free(c->miss_out);
	free(c->live_bytes);
	free(c->live_frames);
	free(c);
}

const struct remote_client_error *remote_client_errors(const struct remote_client *c, size_t *n)
{
	*n = c->n_errs;
	return c->errs;
}

/* Keeps err (an answer, not a death) against module id, once a module. */
static void note_error(struct remote_client *c, uint32_t id, int err)
{
	size_t i;

	if (!id || err == -EPIPE || err == -ECHILD || err == -ESTALE || err == -ENOMEM)
		return;
	for (i = 0; i < c->n_errs; i++)
		if (c->errs[i].module == id)
			return;
	if (cprof_grow(&c->errs, &c->cap_errs, c->n_errs + 1, sizeof(*c->errs), 4) == 0)
		c->errs[c->n_errs++] = (struct remote_client_error){ id, err };
}

/* Whether module id failed in a parser or killed one as it was sent: the
 * next parsers get it without its files (its frames end the walks). */
static bool module_withheld(const struct remote_client *c, uint32_t id)
{
	size_t i;

	for (i = 0; i < c->n_deadly; i++)
		if (c->deadly[i] == id)
			return true;
	for (i = 0; i < c->n_errs; i++)
		if (c->errs[i].module == id)
			return true;
	return false;
}

static void note_deadly(struct remote_client *c, uint32_t id)
{
	if (cprof_grow(&c->deadly, &c->cap_deadly, c->n_deadly + 1, sizeof(*c->deadly), 4) == 0)
		c->deadly[c->n_deadly++] = id;
}

void remote_client_flush(struct remote_client *c)
{
	c->space_gen++;
}

void remote_client_take_pages(struct remote_client *c, uint64_t *from_file, uint64_t *from_memory)
{
	*from_file = c->pages_file;
	*from_memory = c->pages_memory;
	c->pages_file = c->pages_memory = 0;
}

static int put(struct remote_client *c, size_t *off, const void *p, size_t n)
{
	if (n > CONF_MSG_MAX || *off > CONF_MSG_MAX - n)
		return -EMSGSIZE;
	memcpy(c->req + *off, p, n);
	*off += n;
	return 0;
}

static int put_str(struct remote_client *c, size_t *off, const char *s)
{
	uint32_t n = s ? (uint32_t)strnlen(s, REMOTE_WIRE_PATH_MAX) : UINT32_MAX;
	int r = put(c, off, &n, 4);

	return r < 0 || !s ? r : put(c, off, s, n);
}

static const char *id_of(const struct proc_module *m)
{
	return m && m->build_id ? m->build_id : "none";
}

/* Sends module m (its file, its debug file, unless with_files is false).
 * Returns 0 or -errno. */
static int send_module(struct remote_client *c, const struct proc_module *m, bool with_files)
{
	struct proc_module_ident ident;
	struct remote_wire_module w;
	int fds[2], nfds = 0, debug_fd = -1, r;
	size_t off = sizeof(w), alen;

	proc_module_ident(m, &ident);
	w = (struct remote_wire_module){
		.ctx = c->id, .id = m->id, .dev_major = ident.dev_major,
		.dev_minor = ident.dev_minor, .inode = ident.inode, .base = m->base,
		.bias = m->bias, .text_start = m->text_start, .text_end = m->text_end,
		.text_offset = m->text_offset, .eh_frame_hdr = m->eh_frame_hdr,
		.eh_frame_hdr_len = m->eh_frame_hdr_len, .rw_start = m->rw_start,
		.rw_end = m->rw_end,
		.flags = (m->fd_exact ? REMOTE_WIRE_FD_EXACT : 0) |
			 (m->is_vdso ? REMOTE_WIRE_IS_VDSO : 0) |
			 (m->is_main ? REMOTE_WIRE_IS_MAIN : 0) |
			 (m->mapped ? REMOTE_WIRE_MAPPED : 0) |
			 (m->deleted ? REMOTE_WIRE_DELETED : 0),
	};
	if (m->fd >= 0 && with_files) {
		fds[nfds++] = m->fd;
		w.flags |= REMOTE_WIRE_HAS_FD;
		/* thread roots of libc live in its debug file: opened here */
		debug_fd = objfile_open_debug_fd(m->build_id);
		if (debug_fd >= 0) {
			fds[nfds++] = debug_fd;
			w.flags |= REMOTE_WIRE_HAS_DEBUG;
		}
	}
	memcpy(c->req, &w, sizeof(w));
	r = put_str(c, &off, m->path);
	if (!r)
		r = put_str(c, &off, m->build_id);
	if (!r)
		r = put_str(c, &off, m->go_build_id);
	if (!r)
		r = conf_call(c->h, REMOTE_REQ_MODULE, c->req, off, fds, (size_t)nfds, c->answer,
			      16, &alen, m->path, id_of(m));
	if (debug_fd >= 0)
		close(debug_fd);
	return r < 0 ? r : 0;
}

/* Sends the maps and the modules' spans.  Returns 0 or -errno. */
static int send_space(struct remote_client *c)
{
	struct remote_wire_space w = { .ctx = c->id, .n_maps = (uint32_t)c->maps->n,
				       .n_mods = (uint32_t)c->sent_mods, .gen = c->space_gen };
	struct proc_module_span *spans;
	size_t off = sizeof(w), n_spans, i, alen;
	int r;

	r = proc_modules_spans(c->mods, &spans, &n_spans);
	if (r < 0)
		return r;
	w.n_spans = (uint32_t)n_spans;
	memcpy(c->req, &w, sizeof(w));
	for (i = 0; i < c->maps->n && !r; i++) {
		const struct proc_map *m = &c->maps->v[i];
		size_t plen = strnlen(m->path ? m->path : "", REMOTE_WIRE_PATH_MAX);
		struct remote_wire_map wm = {
			.start = m->start, .end = m->end, .offset = m->offset, .inode = m->inode,
			.dev_major = m->dev_major, .dev_minor = m->dev_minor, .perms = m->perms,
			.deleted = m->deleted, .path_len = (uint32_t)plen,
		};
		static const char zeros[8];

		r = put(c, &off, &wm, sizeof(wm));
		if (!r && plen)
			r = put(c, &off, m->path, plen);
		if (!r)
			r = put(c, &off, zeros, remote_wire_pad8(plen) - plen);
	}
	if (!r)
		r = put(c, &off, spans, n_spans * sizeof(*spans));
	free(spans);
	if (!r)
		r = conf_call(c->h, REMOTE_REQ_SPACE, c->req, off, NULL, 0, c->answer, 16, &alen,
			      NULL, NULL);
	return r < 0 ? r : 0;
}

/* Brings the parser in line: modules not sent yet, the maps when they
 * changed.  Returns 0 or -errno. */
static int sync_parser(struct remote_client *c)
{
	uint64_t gen = conf_status(c->h).generation;
	const struct proc_module *m;
	int r;

	if (gen != c->parser_gen) {
		/* a new parser: it has nothing of this walker, and may get
		 * modules without their files (module_withheld): the walks
		 * remembered from the last one are not its */
		c->parser_gen = gen;
		c->sent_mods = 0;
		c->space_sent = 0;
		c->space_gen++;
	}
	while (c->sent_mods < proc_modules_count(c->mods)) {
		m = proc_modules_get(c->mods, (uint32_t)c->sent_mods + 1);
		if (!m)
			return -EPROTO;
		r = send_module(c, m, !module_withheld(c, m->id));
		/* a parser that died on its files: the next one goes without,
		 * rather than each restart dying on the same module (the
		 * death is the helper's to report) */
		if (r == -EPIPE)
			note_deadly(c, m->id);
		if (r < 0 && r != -EPIPE && r != -ECHILD && r != -ESTALE) {
			/* failed on its files, alive: the module without them */
			note_error(c, m->id, r);
			r = send_module(c, m, false);
		}
		if (r < 0)
			return r;
		c->sent_mods++;
		c->space_sent = 0;	/* the spans may name it now */
	}
	if (c->space_sent == c->space_gen)
		return 0;
	r = send_space(c);
	if (r < 0)
		return r;
	c->space_sent = c->space_gen;
	return 0;
}

int remote_client_sync(struct remote_client *c)
{
	const struct proc_module *m;
	struct remote_wire_space q;
	size_t i, alen;
	int r;

	r = sync_parser(c);
	if (r == -ESTALE) {
		c->parser_gen = 0;
		r = sync_parser(c);
	}
	/* one call a module, so that a death names the module it died on */
	for (i = 1; !r && i <= c->sent_mods; i++) {
		m = proc_modules_get(c->mods, (uint32_t)i);
		if (!m || m->fd < 0 || proc_modules_lookup(c->mods, m->text_start) != m)
			continue;
		q = (struct remote_wire_space){ .ctx = c->id, .n_mods = (uint32_t)i };
		r = conf_call(c->h, REMOTE_REQ_WARM, &q, sizeof(q), NULL, 0, c->answer, 16, &alen,
			      m->path, id_of(m));
		if (r == -EPIPE)
			note_deadly(c, m->id);	/* died on its tables */
		else if (r < 0)
			note_error(c, m->id, r);
	}
	return r < 0 ? r : 0;
}

size_t remote_client_snap_size(const struct snap *s)
{
	return sizeof(struct remote_wire_snap) + remote_wire_pad8(s->stack_len) +
	       remote_wire_pad8(s->stack2_len) + s->n_user * sizeof(uint64_t);
}

/* s, and with it the live memory read for it (c->live: n_live spans,
 * 0 for none). */
static int put_snap(struct remote_client *c, size_t *off, const struct snap *s, size_t n_live)
{
	static const char zeros[8];
	struct remote_wire_snap w = {
		.regs = s->regs, .stack_start = s->stack_start, .stack_len = s->stack_len,
		.stack2_start = s->stack2_start, .stack2_len = s->stack2_len,
		.flags = (s->regs_partial ? REMOTE_WIRE_REGS_PARTIAL : 0) |
			 (s->unstopped ? REMOTE_WIRE_UNSTOPPED : 0),
		.n_user = (uint32_t)s->n_user, .n_live = (uint32_t)n_live,
	};
	size_t i, at = 0;
	int r = put(c, off, &w, sizeof(w));

	if (!r)
		r = put(c, off, s->stack, s->stack_len);
	if (!r)
		r = put(c, off, zeros, remote_wire_pad8(s->stack_len) - s->stack_len);
	if (!r && s->stack2_len)
		r = put(c, off, s->stack2, s->stack2_len);
	if (!r)
		r = put(c, off, zeros, remote_wire_pad8(s->stack2_len) - s->stack2_len);
	if (!r)
		r = put(c, off, s->user, s->n_user * sizeof(uint64_t));
	for (i = 0; i < n_live && !r; i++) {
		r = put(c, off, &c->live[i], sizeof(c->live[i]));
		if (!r)
			r = put(c, off, c->live_bytes + at, c->live[i].len);
		if (!r)
			r = put(c, off, zeros, remote_wire_pad8(c->live[i].len) - c->live[i].len);
		at += c->live[i].len;
	}
	return r;
}

/* What a snapshot the parser could not walk keeps: its leaf, its module. */
static void leaf_only(struct remote_client *c, const struct snap *s, struct remote_walk *o,
		      size_t max_frames)
{
	const struct proc_module *m = proc_modules_lookup(c->mods, snap_pc(s));

	o->n_frames = 0;
	o->end = REMOTE_END_PARSER;
	o->stack_used = 0;
	o->ran_off = o->reused = o->from_chain = o->continued = false;
	o->needed = 0;
	if (!max_frames)
		return;
	o->frames[o->n_frames++] = (struct prof_frame){ .addr = snap_pc(s), .module = m ? m->id : 0,
							.flags = PROF_FRAME_EXACT };
	if (o->n_frames < max_frames)
		o->frames[o->n_frames++] = (struct prof_frame){ .flags = PROF_FRAME_TRUNCATED };
}

/*
 * The reads of walk o of s, n of them at *off of the answer (alen bytes),
 * remembered when they check against s (walk_log_check): the parser is
 * not trusted, so a log is kept only when it could be what a walk of this
 * very copy read, for a walk that starts at its pc and reached a root.
 * Returns 0 or -EPROTO (the answer is cut short).
 */
static int take_log(struct remote_client *c, size_t alen, size_t *off, uint32_t n,
		    const struct snap *s, const struct remote_walk *o, size_t max_frames)
{
	struct remote_wire_read rd;
	struct walk_result r;
	uint32_t i;

	if (n > WALK_MEMO_READS || (alen - *off) / sizeof(rd) < n)
		return -EPROTO;
	c->log = (struct walk_log){ .n = n };
	for (i = 0; i < n; i++) {
		memcpy(&rd, c->answer + *off, sizeof(rd));
		*off += sizeof(rd);
		if (rd.len > 8)
			return -EPROTO;
		c->log.reads[i] = (struct walk_read){ .addr = rd.addr, .val = rd.val,
						      .len = (uint8_t)rd.len };
	}
	if (!c->memo || !o->n_frames || o->frames[0].addr != snap_pc(s) ||
	    !remote_end_is_root(o->end) || !walk_log_check(&c->log, s, remote_snap_reg))
		return 0;
	r = (struct walk_result){ .n_frames = o->n_frames, .end = o->end,
				  .stack_used = o->stack_used, .ran_off = o->ran_off };
	walk_memo_store(c->memo, s, c->space_gen, max_frames, &c->log, o->frames, &r);
	return 0;
}

/* The parser's answer for snaps[0..n) into out.  Returns 0 or -EPROTO. */
static int read_answer(struct remote_client *c, size_t alen, const struct snap *const *snaps,
		       struct remote_walk *out, size_t n, size_t max_frames)
{
	struct remote_wire_walked h;
	struct remote_wire_result res;
	size_t off = sizeof(h), i;
	int r;

	if (alen < sizeof(h))
		return -EPROTO;
	memcpy(&h, c->answer, sizeof(h));
	if (h.n != n)
		return -EPROTO;
	for (i = 0; i < n; i++) {
		if (alen - off < sizeof(res))
			return -EPROTO;
		memcpy(&res, c->answer + off, sizeof(res));
		off += sizeof(res);
		if (res.n_frames > max_frames || res.end > REMOTE_END_ERROR ||
		    (alen - off) / sizeof(struct prof_frame) < res.n_frames)
			return -EPROTO;
		memcpy(out[i].frames, c->answer + off, res.n_frames * sizeof(struct prof_frame));
		off += res.n_frames * sizeof(struct prof_frame);
		out[i].n_frames = res.n_frames;
		out[i].end = (enum remote_end)res.end;
		out[i].stack_used = (size_t)res.stack_used;
		out[i].ran_off = res.ran_off != 0;
		out[i].reused = res.reused != 0;
		out[i].from_chain = res.from_chain != 0;
		out[i].needed = res.needed;
		out[i].continued = false;
		/* (it says how much of the thread's stack its next copies take) */
		if (out[i].stack_used > snaps[i]->stack_len)
			out[i].stack_used = snaps[i]->stack_len;
		if (res.logged) {
			r = take_log(c, alen, &off, res.n_reads, snaps[i], &out[i], max_frames);
			if (r < 0)
				return r;
		}
	}
	c->pages_file += h.pages_file;
	c->pages_memory += h.pages_memory;
	return 0;
}

/* Walks snaps[0..n), which fit one request and one answer (n 1 when
 * n_live, the spans of c->live sent with it). */
int remote_client_walk_batch(struct remote_client *c, const struct snap *const *snaps,
			     struct remote_walk *out, size_t n, size_t max_frames, size_t n_live)
{
	const struct proc_module *m = proc_modules_lookup(c->mods, snap_pc(snaps[0]));
	struct remote_wire_walk w;
	size_t off, alen, i;
	int r = 0, tries;

	for (tries = 0; tries < 2; tries++) {
		r = sync_parser(c);
		if (r == -ESTALE) {
			c->parser_gen = 0;
			continue;
		}
		if (r < 0)
			break;
		w = (struct remote_wire_walk){ .ctx = c->id, .n = (uint32_t)n,
					       .max_frames = (uint32_t)max_frames,
					       .gen = c->space_gen };
		memcpy(c->req, &w, sizeof(w));
		off = sizeof(w);
		for (i = 0; i < n && !r; i++)
			r = put_snap(c, &off, snaps[i], n_live);
		if (r < 0)
			break;
		/* named after the leaf's module: where a walk starts parsing */
		r = conf_call(c->h, REMOTE_REQ_WALK, c->req, off, NULL, 0, c->answer, CONF_MSG_MAX,
			      &alen, m ? m->path : "the stacks", m ? id_of(m) : NULL);
		if (r >= 0)
			r = read_answer(c, alen, snaps, out, n, max_frames);
		if (r < 0)
			note_error(c, m ? m->id : 0, r);
		/* -ESTALE: a new parser (the last one died idle) lacks the walker */
		if (r != -ESTALE)
			break;
		c->parser_gen = 0;
	}
	if (r < 0)
		for (i = 0; i < n; i++)
			leaf_only(c, snaps[i], &out[i], max_frames);
	return 0;
}

/* Walks snaps[0..n) in the parser, in as few calls as fit the shared area. */
static void walk_in_parser(struct remote_client *c, const struct snap *const *snaps,
			   struct remote_walk *out, size_t n, size_t max_frames)
{
	size_t answer_one = sizeof(struct remote_wire_result) +
			    max_frames * sizeof(struct prof_frame) +
			    WALK_MEMO_READS * sizeof(struct remote_wire_read);
	size_t i = 0, k, req, ans;

	while (i < n) {
		req = sizeof(struct remote_wire_walk);
		ans = sizeof(struct remote_wire_walked);
		for (k = i; k < n; k++) {
			size_t one = remote_client_snap_size(snaps[k]);

			if (req + one > CONF_MSG_MAX || ans + answer_one > CONF_MSG_MAX)
				break;
			req += one;
			ans += answer_one;
		}
		if (k == i) {
			/* one snapshot larger than a request: not walked */
			leaf_only(c, snaps[i], &out[i], max_frames);
			i++;
			continue;
		}
		remote_client_walk_batch(c, snaps + i, out + i, k - i, max_frames, 0);
		i = k;
	}
}

/* Whether the memo answers s: o filled as the parser's walk would be. */
static bool memo_answers(struct remote_client *c, const struct snap *s, struct remote_walk *o,
			 size_t max_frames)
{
	const struct proc_module *m;
	struct walk_result r;

	if (!c->memo || s->regs_partial || s->stack2_len)
		return false;
	/* A Go sample that carries the kernel's walk: the parser takes that
	 * walk before it looks at its own memo (go_chain_take). */
	if (s->n_user && (m = proc_modules_lookup(c->mods, snap_pc(s))) && m->go_build_id)
		return false;
	if (!walk_memo_find(c->memo, s, c->space_gen, max_frames, remote_snap_reg, o->frames, &r))
		return false;
	o->n_frames = r.n_frames;
	o->end = (enum remote_end)r.end;
	o->stack_used = r.stack_used;
	o->ran_off = r.ran_off;
	o->reused = true;
	o->from_chain = o->continued = false;
	o->needed = 0;
	return true;
}

int remote_client_unwind(struct remote_client *c, const struct snap *const *snaps,
			 struct remote_walk *out, size_t n, size_t max_frames)
{
	size_t i, k = 0, cap;

	if (n > c->cap_miss) {
		cap = c->cap_miss;
		if (cprof_grow(&c->miss_idx, &cap, n, sizeof(*c->miss_idx), 16) < 0)
			return -ENOMEM;
		cap = c->cap_miss;
		if (cprof_grow(&c->miss_snaps, &cap, n, sizeof(*c->miss_snaps), 16) < 0)
			return -ENOMEM;
		cap = c->cap_miss;
		if (cprof_grow(&c->miss_out, &cap, n, sizeof(*c->miss_out), 16) < 0)
			return -ENOMEM;
		c->cap_miss = cap;
	}
	/* The copies the memo answers need no call; the others go together. */
	for (i = 0; i < n; i++) {
		if (memo_answers(c, snaps[i], &out[i], max_frames))
			continue;
		c->miss_idx[k] = i;
		c->miss_snaps[k] = snaps[i];
		c->miss_out[k] = (struct remote_walk){ .frames = out[i].frames };
		k++;
	}
	if (!k)
		return 0;
	walk_in_parser(c, c->miss_snaps, c->miss_out, k, max_frames);
	for (i = 0; i < k; i++) {
		remote_client_continue(c, c->miss_snaps[i], &c->miss_out[i], max_frames);
		out[c->miss_idx[i]] = c->miss_out[i];
	}
	return (int)k;
}
