/* SPDX-License-Identifier: MIT */
/* The privileged side of symbolization in the helper: modules' files sent once, addresses asked, frames kept. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "symbolize/debuginfo.h"
#include "symbolize/remote.h"
#include "symbolize/symbolize-impl.h"

/* Room for one answer: MAX_FRAMES frames of three strings each. */
#define ANSWER_MAX (sizeof(struct sym_wire_frames) + \
		    MAX_FRAMES * (sizeof(struct sym_wire_frame) + 3 * (4 + SYM_WIRE_STR_MAX)))

int sym_wire_put_str(void *buf, size_t cap, size_t *off, const char *s, size_t max)
{
	uint32_t n = s ? (uint32_t)strnlen(s, max) : UINT32_MAX;
	size_t bytes = s ? n : 0;

	if (*off + 4 + bytes > cap)
		return -EMSGSIZE;
	memcpy((char *)buf + *off, &n, 4);
	if (bytes)
		memcpy((char *)buf + *off + 4, s, bytes);
	*off += 4 + bytes;
	return 0;
}

int sym_wire_get_str(const void *in, size_t len, size_t *off, const char **s, size_t *slen)
{
	uint32_t n;

	if (*off + 4 > len)
		return -EPROTO;
	memcpy(&n, (const char *)in + *off, 4);
	*off += 4;
	if (n == UINT32_MAX) {
		*s = NULL;
		*slen = 0;
		return 0;
	}
	if (n > SYM_WIRE_STR_MAX || *off + n > len)
		return -EPROTO;
	*s = (const char *)in + *off;
	*slen = n;
	*off += n;
	return 0;
}

void sym_use_helper(struct sym_ctx *ctx, struct conf_helper *h)
{
	static atomic_uint next_id;

	ctx->helper = h;
	if (h && !ctx->remote_id)
		ctx->remote_id = atomic_fetch_add(&next_id, 1) + 1;
}

/* The debug file of mod, searched as find_debuginfo (dwfl_report.c)
 * searches it, opened here: the helper opens nothing.  -1: none. */
static int open_debug(struct sym_ctx *ctx, const struct proc_module *mod, char **found)
{
	const char *path;
	int fd;

	*found = NULL;
	fd = sym_debuginfo_open_build_id(mod->build_id, found);
	if (fd >= 0)
		return fd;
	if (mod->build_id && ctx->debuginfo && (path = ctx->debuginfo(ctx->debuginfo_arg, mod->build_id))) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && (*found = strdup(path)))
			return fd;
		if (fd >= 0)
			close(fd);
	}
	fd = sym_debuginfo_open_link(mod->file, mod->open_path ? mod->open_path : mod->path, found);
	return fd < 0 ? -1 : fd;
}

/* Sends mod (its file and debug file) to the helper.  Returns 0 or -errno. */
static int send_module(struct sym_ctx *ctx, const struct proc_module *mod)
{
	char req[3 * 4096 + 3 * 4 + sizeof(struct sym_wire_module) + 256 + 4];
	struct sym_wire_module m = {
		.ctx = ctx->remote_id, .flags = ctx->flags, .mod_id = mod->id, .bias = mod->bias,
	};
	char *debug_name = NULL, answer[16];
	size_t off = sizeof(m), alen;
	int fds[2] = { mod->fd, -1 };
	int r;

	fds[1] = open_debug(ctx, mod, &debug_name);
	m.has_debug = fds[1] >= 0;
	memcpy(req, &m, sizeof(m));
	r = sym_wire_put_str(req, sizeof(req), &off, mod->path, 4096);
	if (!r)
		r = sym_wire_put_str(req, sizeof(req), &off, mod->open_path, 4096);
	if (!r)
		r = sym_wire_put_str(req, sizeof(req), &off, mod->build_id, 256);
	if (!r)
		r = sym_wire_put_str(req, sizeof(req), &off, debug_name, 4096);
	if (!r)
		r = conf_call(ctx->helper, SYM_REQ_MODULE, req, off, fds, m.has_debug ? 2 : 1,
			      answer, sizeof(answer), &alen, mod->path,
			      mod->build_id ? mod->build_id : "none");
	if (fds[1] >= 0)
		close(fds[1]);
	free(debug_name);
	return r < 0 ? r : 0;
}

/* One frame of an answer into f (strings interned in ctx).  Returns 0 or -errno. */
static int read_frame(struct sym_ctx *ctx, const char *in, size_t len, size_t *off,
		      struct sym_frame *f)
{
	const char **dst[3] = { &f->function, &f->system_name, &f->file };
	char str[SYM_WIRE_STR_MAX + 1];
	struct sym_wire_frame w;
	const char *s;
	size_t slen, i;
	int r;

	if (*off + sizeof(w) > len)
		return -EPROTO;
	memcpy(&w, in + *off, sizeof(w));
	*off += sizeof(w);
	memset(f, 0, sizeof(*f));
	f->line = w.line > 0 ? w.line : 0;
	f->start_line = w.start_line > 0 ? w.start_line : 0;
	f->inlined = w.inlined != 0;
	for (i = 0; i < 3; i++) {
		r = sym_wire_get_str(in, len, off, &s, &slen);
		if (r < 0)
			return r;
		if (s) {
			memcpy(str, s, slen);
			str[slen] = '\0';
		}
		r = sym_intern(ctx, s ? str : NULL, dst[i]);
		if (r < 0)
			return r;
	}
	return 0;
}

int sym_remote_read_answer(struct sym_ctx *ctx, const char *in, size_t len,
			   struct sym_frame **out, size_t *n, bool *has_lines)
{
	struct sym_wire_frames h;
	size_t off = sizeof(h), i;
	int r;

	if (len < sizeof(h))
		return -EPROTO;
	memcpy(&h, in, sizeof(h));
	if (h.n > MAX_FRAMES)
		return -EPROTO;
	if (!h.n)
		return 0;
	*out = sym_arena_alloc(ctx, h.n * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (i = 0; i < h.n; i++) {
		r = read_frame(ctx, in, len, &off, &(*out)[i]);
		if (r < 0)
			return r;
	}
	*n = h.n;
	*has_lines = h.has_lines != 0;
	return 0;
}

/* Asks the helper about addr in mod, sending mod first when it lacks it. */
static int ask(struct sym_ctx *ctx, const struct proc_module *mod, struct mod_state *st,
	       uint64_t addr, char *answer, size_t *alen)
{
	struct sym_wire_lookup q = { .ctx = ctx->remote_id, .mod_id = mod->id, .addr = addr };
	int r, tries;

	for (tries = 0; tries < 2; tries++) {
		if (st->remote_gen != conf_status(ctx->helper).generation) {
			r = send_module(ctx, mod);
			if (r < 0)
				return r;
			st->remote_gen = conf_status(ctx->helper).generation;
			ctx->remote_sent = st->remote_gen;
		}
		r = conf_call(ctx->helper, SYM_REQ_LOOKUP, &q, sizeof(q), NULL, 0, answer,
			      ANSWER_MAX, alen, mod->path, mod->build_id ? mod->build_id : "none");
		/* -ESTALE: a new helper (the last one died idle) lacks mod */
		if (r != -ESTALE)
			return r;
		st->remote_gen = 0;
	}
	return r;
}

int sym_remote_resolve(struct sym_ctx *ctx, const struct proc_module *mod, struct mod_state *st,
		       uint64_t vaddr, struct sym_frame **out, size_t *n, bool *has_lines)
{
	char *answer;
	size_t alen = 0;
	int r;

	*out = NULL;
	*n = 0;
	*has_lines = false;
	if (st->remote_dead || mod->fd < 0)
		return 0;
	if (!ctx->remote_buf && !(ctx->remote_buf = malloc(ANSWER_MAX)))
		return -ENOMEM;
	answer = ctx->remote_buf;
	/*
	 * The helper died on mod (its death is recorded), or every helper is
	 * used up (reported with the deaths), or it failed (out of its memory
	 * on a hostile file), or it answered nonsense (both kept for the
	 * command to report, sym_module_parser_error): mod's frames keep
	 * their addresses.  Only this process running out of memory is an
	 * error.
	 */
	r = ask(ctx, mod, st, vaddr + mod->bias, answer, &alen);
	if (r >= 0) {
		r = sym_remote_read_answer(ctx, answer, alen, out, n, has_lines);
		if (r == -ENOMEM)
			return r;
	}
	if (r < 0) {
		*n = 0;
		st->remote_dead = true;
		if (r != -EPIPE && r != -ECHILD)
			st->remote_err = r;
	}
	return 0;
}

void sym_remote_close(struct sym_ctx *ctx)
{
	struct sym_wire_lookup q = { .ctx = ctx->remote_id };
	struct conf_status cs;
	char answer[16];
	size_t alen;

	free(ctx->remote_buf);
	ctx->remote_buf = NULL;
	if (!ctx->remote_sent)
		return;
	/* only to the helper that has its modules: never a restart for this */
	cs = conf_status(ctx->helper);
	if (ctx->remote_sent != cs.generation || cs.pid < 0)
		return;
	conf_call(ctx->helper, SYM_REQ_CLOSE, &q, sizeof(q), NULL, 0, answer, sizeof(answer),
		  &alen, NULL, NULL);
}
