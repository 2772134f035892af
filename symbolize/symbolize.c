/* SPDX-License-Identifier: MIT */
/* Address to function, file:line and inline chain through libdwfl, memoized. */
#include "config.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "elf/gopclntab.h"
#include "elf/objfile.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/htab.h"
#include "symbolize/cu_index.h"
#include "symbolize/perfmap.h"
#include "symbolize/plt.h"
#include "symbolize/symbolize-impl.h"
#include "symbolize/symbolize.h"

/* What a cache entry is found by. */
struct cache_key {
	const char *build_id;	/* interned, so compared by pointer */
	uint32_t mod_id;
	uint64_t vaddr;
};

static uint32_t cache_hash(const struct sym_ctx *ctx, const struct cache_key *k)
{
	(void)ctx;
	return cprof_hash_finish(cprof_hash_mix(cprof_hash_mix((uintptr_t)k->build_id, k->mod_id),
						k->vaddr));
}

static bool cache_eq(const struct sym_ctx *ctx, uint32_t index, const struct cache_key *k)
{
	const struct cache_entry *e = &ctx->cache[index];

	return e->vaddr == k->vaddr && e->build_id == k->build_id && e->mod_id == k->mod_id;
}

#define HTAB_NAME cache_index
#define HTAB_CTX struct sym_ctx
#define HTAB_KEY struct cache_key
#define HTAB_HASH cache_hash
#define HTAB_COMPARE cache_eq
#include "lib/htab-type.h"

/* A new entry for k (which is not in the cache), fields past the key zero. */
static struct cache_entry *cache_insert(struct sym_ctx *ctx, const struct cache_key *k,
					uint32_t hash)
{
	struct cache_entry *e;

	if (cprof_grow(&ctx->cache, &ctx->cap_cache, ctx->ncache + 1, sizeof(*ctx->cache), 4096) < 0 ||
	    cprof_htab_reserve(&ctx->cache_index, 1) < 0)
		return NULL;
	e = &ctx->cache[ctx->ncache];
	memset(e, 0, sizeof(*e));
	e->build_id = k->build_id;
	e->mod_id = k->mod_id;
	e->vaddr = k->vaddr;
	cprof_htab_add(&ctx->cache_index, hash, ctx->ncache++);
	return e;
}

int sym_create(struct sym_ctx **out, const struct proc_modules *t, unsigned flags)
{
	struct sym_ctx *ctx;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->t = t;
	ctx->flags = flags;
	ctx->dwfl = sym_dwfl_begin();
	if (!ctx->dwfl)
		goto free_ctx;
	*out = ctx;
	return 0;

free_ctx:
	free(ctx);
	return -ENOMEM;
}

void sym_destroy(struct sym_ctx *ctx)
{
	size_t i;

	if (!ctx)
		return;
	if (ctx->helper)
		sym_remote_close(ctx);
	/* dwfl_end closes the fds handed to dwfl_report_elf. */
	dwfl_end(ctx->dwfl);
	sym_names_free(ctx);
	free(ctx->cache);
	cprof_htab_free(&ctx->cache_index);
	for (i = 0; i < ctx->nmods; i++) {
		cu_index_free(ctx->mods[i].cus);
		gopcln_close(ctx->mods[i].go);
		sym_plt_free(ctx->mods[i].plt);
	}
	free(ctx->mods);
	free(ctx);
}

static struct mod_state *mod_state(struct sym_ctx *ctx, const struct proc_module *mod)
{
	if (!mod->id)
		return NULL;
	/* Every slot up to the capacity is in use (zero until first asked). */
	if (cprof_grow_zeroed(&ctx->mods, &ctx->nmods, mod->id, sizeof(*ctx->mods), 64) < 0)
		return NULL;
	return &ctx->mods[mod->id - 1];
}

/* The symbol table's name for da (libdwfl prefers global aliases), or NULL. */
static const char *resolve_symbol(Dwfl_Module *dm, Dwarf_Addr da)
{
	GElf_Off off;
	GElf_Sym sym;

	return dwfl_module_addrinfo(dm, da, &off, &sym, NULL, NULL, NULL);
}
/* No DWARF scope (assembly, stripped): the symbol and the line table. */
static int resolve_flat(struct sym_ctx *ctx, struct resolved *r)
{
	struct sym_frame *f = &r->frames[0];
	int ret;

	if (!r->symname && !r->src)
		return 0;
	memset(f, 0, sizeof(*f));
	ret = sym_name_frame(ctx, r->symname, f);
	if (ret < 0)
		return ret;
	f->line = r->src ? r->line : 0;
	r->n = 1;
	return sym_intern(ctx, r->src, &f->file);
}

/*
 * Neither a symbol nor a line (a Go binary built with -ldflags=-s -w): the
 * name and file:line from Go's own pc-line table, read on first need.
 */
static void resolve_go(const struct proc_module *mod, struct mod_state *st, uint64_t vaddr,
		       bool lines, struct resolved *r)
{
	struct gopcln_func f;

	if (!st->go_tried) {
		st->go_tried = true;
		if (!mod->file || gopcln_open(&st->go, objfile_lock(mod->file)) < 0)
			st->go = NULL;
		if (mod->file)
			objfile_unlock(mod->file);
	}
	if (!st->go || gopcln_find(st->go, vaddr, &f) < 0 || !f.name)
		return;
	r->symname = f.name;
	if (lines && gopcln_line(st->go, &f, vaddr, &r->src, &r->line) < 0) {
		r->src = NULL;
		r->line = 0;
	}
}

/* No symbol and no line: a PLT stub, named as perf names it (plt.h). */
static void resolve_plt(const struct proc_module *mod, struct mod_state *st, uint64_t vaddr,
			struct resolved *r)
{
	if (!st->plt_tried) {
		st->plt_tried = true;
		if (!mod->file || sym_plt_read(objfile_lock(mod->file), &st->plt) < 0)
			st->plt = NULL;
		if (mod->file)
			objfile_unlock(mod->file);
	}
	if (st->plt)
		r->symname = sym_plt_lookup(st->plt, vaddr);
}

/* The ctx-owned frames for ELF address vaddr of mod; *n 0 when unknown. */
static int resolve(struct sym_ctx *ctx, const struct proc_module *mod, struct mod_state *st,
		   uint64_t vaddr, struct sym_frame **out, size_t *n, bool *has_lines)
{
	struct resolved r = { .n = 0 };
	Dwarf_Addr da;
	int ret;

	if (ctx->helper)
		return sym_remote_resolve(ctx, mod, st, vaddr, out, n, has_lines);
	*out = NULL;
	*n = 0;
	*has_lines = false;
	ret = sym_report_module(ctx, mod, st);
	if (ret < 0 || !st->dm)
		return ret;
	da = vaddr + st->dm_bias;
	r.symname = resolve_symbol(st->dm, da);
	if (!(ctx->flags & SYM_NO_SOURCE)) {
		sym_resolve_line(st, da, &r);
		ret = sym_resolve_inline(ctx, st, da, &r);
		if (ret < 0)
			return ret;
	}
	if (!r.n && !r.symname && !r.src)
		resolve_plt(mod, st, vaddr, &r);
	if (!r.n && !r.symname && !r.src)
		resolve_go(mod, st, vaddr, !(ctx->flags & SYM_NO_SOURCE), &r);
	if (!r.n && (ret = resolve_flat(ctx, &r)) < 0)
		return ret;
	if (!r.n)
		return 0;

	*has_lines = r.src && r.line > 0;
	*out = sym_arena_alloc(ctx, r.n * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	memcpy(*out, r.frames, r.n * sizeof(**out));
	*n = r.n;
	return 0;
}

void sym_use_perfmap(struct sym_ctx *ctx, struct sym_perfmap *pm)
{
	sym_use_jit_names(ctx, pm ? sym_perfmap_name : NULL, pm);
}

void sym_use_jit_names(struct sym_ctx *ctx,
		       bool (*fn)(void *arg, uint64_t addr, char *buf, size_t len), void *arg)
{
	ctx->jit_name = fn;
	ctx->jit_arg = arg;
}

void sym_use_debuginfo(struct sym_ctx *ctx, const char *(*fn)(void *arg, const char *build_id),
		       void *arg)
{
	ctx->debuginfo = fn;
	ctx->debuginfo_arg = arg;
}

void sym_use_debuginfo_fds(struct sym_ctx *ctx,
			   int (*fn)(void *arg, const char *build_id, char **name), void *arg)
{
	ctx->debuginfo_fd = fn;
	ctx->debuginfo_fd_arg = arg;
}

/* Code outside any module: named by the runtime's perf map, if anything. */
static int lookup_jit(struct sym_ctx *ctx, uint64_t addr, const struct sym_frame **frames,
		      size_t *n)
{
	struct cache_key key = { .build_id = NULL, .mod_id = 0, .vaddr = addr };
	struct sym_frame *f;
	struct cache_entry *e;
	char name[SYM_JIT_NAME_MAX];
	uint32_t ref, hash;
	int ret;

	if (!ctx->jit_name)
		return 0;
	ref = cache_index_find(&ctx->cache_index, ctx, &key, &hash);
	if (ref) {
		*frames = ctx->cache[ref - 1].frames;
		*n = ctx->cache[ref - 1].n;
		return 0;
	}
	f = NULL;
	if (ctx->jit_name(ctx->jit_arg, addr, name, sizeof(name))) {
		f = sym_arena_alloc(ctx, sizeof(*f));
		if (!f)
			return -ENOMEM;
		memset(f, 0, sizeof(*f));
		ret = sym_intern(ctx, name, &f->system_name);
		if (ret < 0)
			return ret;
		f->function = f->system_name;
	}
	e = cache_insert(ctx, &key, hash);
	if (!e)
		return -ENOMEM;
	e->frames = f;
	e->n = f ? 1 : 0;
	*frames = e->frames;
	*n = e->n;
	return 0;
}

int sym_lookup(struct sym_ctx *ctx, const struct proc_module *mod, uint64_t addr,
	       bool is_return_address, const struct sym_frame **frames, size_t *n)
{
	struct cache_key key;
	struct sym_frame *found;
	struct cache_entry *e;
	struct mod_state *st;
	uint32_t ref, hash;
	size_t count;
	bool has_lines;
	int ret;

	*frames = NULL;
	*n = 0;
	if (!ctx)
		return 0;
	if (!mod || !mod->id)
		return lookup_jit(ctx, is_return_address ? addr - 1 : addr, frames, n);
	st = mod_state(ctx, mod);
	if (!st)
		return -ENOMEM;
	st->looked_up = true;
	if (!st->build_id && mod->build_id && (ret = sym_intern(ctx, mod->build_id, &st->build_id)) < 0)
		return ret;
	/*
	 * The same file has the same answers wherever and in whichever process
	 * it is mapped: key by build-id and ELF address when there is one.
	 */
	key.build_id = st->build_id;
	key.mod_id = st->build_id ? 0 : mod->id;
	key.vaddr = (is_return_address ? addr - 1 : addr) - mod->bias;

	ref = cache_index_find(&ctx->cache_index, ctx, &key, &hash);
	if (ref) {
		e = &ctx->cache[ref - 1];
		st->has_functions |= e->n > 0;
		st->has_lines |= e->has_lines;
		*frames = e->frames;
		*n = e->n;
		return 0;
	}

	ret = resolve(ctx, mod, st, key.vaddr, &found, &count, &has_lines);
	if (ret < 0)
		return ret;
	e = cache_insert(ctx, &key, hash);
	if (!e)
		return -ENOMEM;
	e->frames = found;
	e->n = count;
	e->has_lines = has_lines;
	st->has_functions |= count > 0;
	st->has_lines |= has_lines;
	*frames = found;
	*n = count;
	return 0;
}

bool sym_module_has_lines(struct sym_ctx *ctx, const struct proc_module *mod)
{
	if (!ctx || !mod || !mod->id || mod->id > ctx->nmods)
		return false;
	return ctx->mods[mod->id - 1].has_lines;
}

bool sym_module_has_functions(struct sym_ctx *ctx, const struct proc_module *mod)
{
	if (!ctx || !mod || !mod->id || mod->id > ctx->nmods)
		return false;
	return ctx->mods[mod->id - 1].has_functions;
}

bool sym_module_unnamed(struct sym_ctx *ctx, const struct proc_module *mod)
{
	if (!ctx || !mod || !mod->id || mod->id > ctx->nmods)
		return false;
	/* one the parser died on is not one without symbols */
	return ctx->mods[mod->id - 1].looked_up && !ctx->mods[mod->id - 1].has_functions &&
	       !ctx->mods[mod->id - 1].remote_dead;
}

int sym_module_parser_error(struct sym_ctx *ctx, const struct proc_module *mod)
{
	if (!ctx || !mod || !mod->id || mod->id > ctx->nmods)
		return 0;
	return ctx->mods[mod->id - 1].remote_err;
}
