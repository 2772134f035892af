/* SPDX-License-Identifier: MIT */
/* The helper's side: modules and perf maps from descriptors, lookups answered as plain bytes. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/objfile.h"
#include "lib/grow.h"
#include "symbolize/perfmap.h"
#include "symbolize/remote.h"
#include "symbolize/symbolize.h"

/* A module as the helper knows it: its file, its debug file. */
struct served_mod {
	struct proc_module mod;	/* id 0: slot unused */
	int debug_fd;		/* -1: none */
	char *debug_name;
};

/* One symbolizer of the privileged side. */
struct served_ctx {
	uint32_t id;
	struct sym_ctx *sym;
	struct served_mod *mods;	/* by module id - 1 */
	size_t cap;
};

/* A perf map of the privileged side, read here. */
struct served_map {
	uint32_t id;
	struct sym_perfmap *pm;
};

struct served {
	/* each its own allocation: its symbolizer keeps a pointer to it */
	struct served_ctx **ctxs;
	size_t n, cap;
	struct served_map *maps;
	size_t n_maps, cap_maps;
};

/* find_debuginfo's source in the helper: a dup of what was sent with the module. */
static int debug_fd_of(void *arg, const char *build_id, char **name)
{
	struct served_ctx *c = arg;
	struct served_mod *m;
	size_t i;
	int fd;

	for (i = 0; i < c->cap; i++) {
		m = &c->mods[i];
		if (!m->mod.id || m->debug_fd < 0 || !m->mod.build_id ||
		    strcmp(m->mod.build_id, build_id) != 0)
			continue;
		fd = dup(m->debug_fd);
		if (fd >= 0 && !(*name = strdup(m->debug_name ? m->debug_name : ""))) {
			close(fd);
			return -1;
		}
		return fd;
	}
	return -1;
}

static void free_mod(struct served_mod *m)
{
	if (!m->mod.id)
		return;
	objfile_close(m->mod.file);
	if (m->mod.fd >= 0)
		close(m->mod.fd);
	if (m->debug_fd >= 0)
		close(m->debug_fd);
	free(m->mod.path);
	free(m->mod.open_path);
	free(m->mod.build_id);
	free(m->debug_name);
	memset(m, 0, sizeof(*m));
}

static void free_ctx(struct served_ctx *c)
{
	size_t i;

	sym_destroy(c->sym);
	for (i = 0; i < c->cap; i++)
		free_mod(&c->mods[i]);
	free(c->mods);
	free(c);
}

/* Where the context called id is in s->ctxs, or s->n. */
static size_t ctx_index(const struct served *s, uint32_t id)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->ctxs[i]->id == id)
			break;
	return i;
}

/* The context called id; create: made when missing.  NULL: none (or no memory). */
static struct served_ctx *find_ctx(struct served *s, uint32_t id, bool create, unsigned flags)
{
	struct served_ctx *c;
	size_t i = ctx_index(s, id);

	if (i < s->n)
		return s->ctxs[i];
	if (!create || cprof_grow(&s->ctxs, &s->cap, s->n + 1, sizeof(*s->ctxs), 8) < 0)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c || sym_create(&c->sym, NULL, flags) < 0) {
		free(c);
		return NULL;
	}
	c->id = id;
	sym_use_debuginfo_fds(c->sym, debug_fd_of, c);
	s->ctxs[s->n++] = c;
	return c;
}

/* The fixed-size head of a request (size bytes) into w.  Returns false when req is shorter. */
static bool get_head(const void *req, size_t len, void *w, size_t size)
{
	if (len < size)
		return false;
	memcpy(w, req, size);
	return true;
}

/* A string of the request, copied (NULL for NULL).  Returns 0 or -errno. */
static int get_str(const void *req, size_t len, size_t *off, char **out)
{
	const char *s;
	size_t n;
	int r;

	*out = NULL;
	r = sym_wire_get_str(req, len, off, &s, &n);
	if (r < 0 || !s)
		return r;
	*out = strndup(s, n);
	return *out ? 0 : -ENOMEM;
}

static int serve_module(struct served *s, const void *req, size_t len, int *fds, size_t nfds)
{
	struct sym_wire_module w;
	struct served_ctx *c;
	struct served_mod *m;
	size_t off = sizeof(w);
	int r;

	if (nfds < 1 || !get_head(req, len, &w, sizeof(w)))
		return -EPROTO;
	if (!w.mod_id || w.mod_id > (1u << 24) || (w.has_debug && nfds < 2))
		return -EPROTO;
	c = find_ctx(s, w.ctx, true, w.flags);
	if (!c || cprof_grow_zeroed(&c->mods, &c->cap, w.mod_id, sizeof(*c->mods), 64) < 0)
		return -ENOMEM;
	/* a module sent again (after a helper died, to this one: unlikely) */
	m = &c->mods[w.mod_id - 1];
	if (m->mod.id)
		return 0;
	m->mod.id = w.mod_id;
	m->mod.bias = w.bias;
	m->mod.fd = fds[0];
	m->debug_fd = w.has_debug ? fds[1] : -1;
	fds[0] = -1;
	if (w.has_debug)
		fds[1] = -1;
	r = get_str(req, len, &off, &m->mod.path);
	if (!r)
		r = get_str(req, len, &off, &m->mod.open_path);
	if (!r)
		r = get_str(req, len, &off, &m->mod.build_id);
	if (!r)
		r = get_str(req, len, &off, &m->debug_name);
	if (r < 0 || !m->mod.path) {
		free_mod(m);
		return r < 0 ? r : -EPROTO;
	}
	/* the one ELF handle of the file, parsed here and not in cprof */
	if (objfile_from_fd(&m->mod.file, m->mod.fd) < 0)
		m->mod.file = NULL;
	return 0;
}

/* frames[0..n) as the wire has them, into resp. */
static int put_frames(const struct sym_frame *frames, size_t n, bool has_lines, void *resp,
		      size_t cap, size_t *resp_len)
{
	struct sym_wire_frames h = { .n = (uint32_t)n, .has_lines = has_lines };
	struct sym_wire_frame w;
	size_t off = sizeof(h), i;
	int r = 0;

	if (cap < sizeof(h))
		return -EMSGSIZE;
	memcpy(resp, &h, sizeof(h));
	for (i = 0; i < n && !r; i++) {
		w = (struct sym_wire_frame){ frames[i].line, frames[i].start_line, frames[i].inlined };
		if (off + sizeof(w) > cap)
			return -EMSGSIZE;
		memcpy((char *)resp + off, &w, sizeof(w));
		off += sizeof(w);
		r = sym_wire_put_str(resp, cap, &off, frames[i].function, SYM_WIRE_STR_MAX);
		if (!r)
			r = sym_wire_put_str(resp, cap, &off, frames[i].system_name, SYM_WIRE_STR_MAX);
		if (!r)
			r = sym_wire_put_str(resp, cap, &off, frames[i].file, SYM_WIRE_STR_MAX);
	}
	*resp_len = off;
	return r;
}

static int serve_lookup(struct served *s, const void *req, size_t len, void *resp, size_t cap,
			size_t *resp_len)
{
	const struct sym_frame *frames;
	struct sym_wire_lookup q;
	struct served_ctx *c;
	bool has_lines = false;
	size_t n, i;
	int r;

	if (!get_head(req, len, &q, sizeof(q)))
		return -EPROTO;
	c = find_ctx(s, q.ctx, false, 0);
	/* a helper started after the last one died has not seen the module */
	if (!c || !q.mod_id || q.mod_id > c->cap || !c->mods[q.mod_id - 1].mod.id)
		return -ESTALE;
	r = sym_lookup(c->sym, &c->mods[q.mod_id - 1].mod, q.addr, false, &frames, &n);
	if (r < 0)
		return r;
	for (i = 0; i < n; i++)
		has_lines |= frames[i].file && frames[i].line > 0;
	return put_frames(frames, n, has_lines, resp, cap, resp_len);
}

/* The perf map called id; create: made when missing.  NULL: none (or no memory). */
static struct served_map *find_map(struct served *s, uint32_t id, bool create)
{
	struct served_map *m;
	size_t i;

	for (i = 0; i < s->n_maps; i++)
		if (s->maps[i].id == id)
			return &s->maps[i];
	if (!create || cprof_grow(&s->maps, &s->cap_maps, s->n_maps + 1, sizeof(*s->maps), 8) < 0)
		return NULL;
	m = &s->maps[s->n_maps];
	/* no pid: the file comes as a descriptor, never by its path */
	if (sym_perfmap_create(&m->pm, 0, NULL) < 0)
		return NULL;
	m->id = id;
	s->n_maps++;
	return m;
}

/* SYM_REQ_PERFMAP, SYM_REQ_JIT_NAME and SYM_REQ_PERFMAP_CLOSE. */
static int serve_perfmap(struct served *s, uint32_t type, const void *req, size_t len, int *fds,
			 size_t nfds, void *resp, size_t cap, size_t *resp_len)
{
	struct sym_wire_perfmap_read a;
	struct sym_wire_perfmap w;
	struct served_map *m;
	const char *name;
	int r;

	if (!get_head(req, len, &w, sizeof(w)))
		return -EPROTO;
	m = find_map(s, w.id, type == SYM_REQ_PERFMAP);
	if (type == SYM_REQ_PERFMAP_CLOSE) {
		if (m) {
			sym_perfmap_destroy(m->pm);
			*m = s->maps[--s->n_maps];
		}
		return 0;
	}
	/* a helper started after the last one died has not read the file */
	if (!m)
		return type == SYM_REQ_PERFMAP ? -ENOMEM : -ESTALE;
	if (type == SYM_REQ_JIT_NAME) {
		name = sym_perfmap_lookup_entry(m->pm, w.addr);
		*resp_len = name ? strnlen(name, SYM_JIT_NAME_MAX - 1) : 0;
		if (*resp_len > cap)
			return -EMSGSIZE;
		memcpy(resp, name ? name : "", *resp_len);
		return 0;
	}
	if (nfds < 1 || cap < sizeof(a))
		return -EPROTO;
	if (w.reset)
		sym_perfmap_reset(m->pm);
	r = sym_perfmap_read_fd(m->pm, fds[0]);
	if (r < 0)
		return r;
	a.entries = sym_perfmap_entries(m->pm);
	memcpy(resp, &a, sizeof(a));
	*resp_len = sizeof(a);
	return 0;
}

int sym_remote_serve(void **state, uint32_t type, const void *req, size_t len, int *fds,
		     size_t nfds, void *resp, size_t cap, size_t *resp_len)
{
	struct served *s = *state;
	struct sym_wire_lookup q;
	size_t i;
	int r = -EPROTO;

	if (!s && !(s = *state = calloc(1, sizeof(*s))))
		r = -ENOMEM;
	else if (type == SYM_REQ_MODULE)
		r = serve_module(s, req, len, fds, nfds);
	else if (type == SYM_REQ_LOOKUP)
		r = serve_lookup(s, req, len, resp, cap, resp_len);
	else if (type == SYM_REQ_PERFMAP || type == SYM_REQ_JIT_NAME ||
		 type == SYM_REQ_PERFMAP_CLOSE)
		r = serve_perfmap(s, type, req, len, fds, nfds, resp, cap, resp_len);
	else if (type == SYM_REQ_CLOSE && get_head(req, len, &q, sizeof(q))) {
		i = ctx_index(s, q.ctx);
		if (i < s->n) {
			free_ctx(s->ctxs[i]);
			s->ctxs[i] = s->ctxs[--s->n];
		}
		r = 0;
	}
	for (i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return r;
}
