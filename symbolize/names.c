/* SPDX-License-Identifier: MIT */
/* The symbolizer's strings: an arena, interning, and names as people read them. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/htab.h"
#include "symbolize/demangle.h"
#include "symbolize/symbolize-impl.h"

#define ARENA_CHUNK (64 * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	char data[];
};

void *sym_arena_alloc(struct sym_ctx *ctx, size_t size)
{
	struct arena_chunk *c = ctx->arena;
	size_t csize;
	void *p;

	size = (size + 15) & ~(size_t)15;
	if (!c || c->size - c->used < size) {
		csize = size > ARENA_CHUNK ? size : ARENA_CHUNK;
		c = malloc(sizeof(*c) + csize);
		if (!c)
			return NULL;
		c->next = ctx->arena;
		c->used = 0;
		c->size = csize;
		ctx->arena = c;
	}
	p = c->data + c->used;
	c->used += size;
	return p;
}

static uint32_t str_hash(const struct sym_ctx *ctx, const char *key)
{
	(void)ctx;
	return cprof_hash_finish(cprof_hash_bytes(CPROF_HASH_SEED, key, strlen(key)));
}

static bool str_eq(const struct sym_ctx *ctx, uint32_t index, const char *key)
{
	return strcmp(ctx->strs[index], key) == 0;
}

#define HTAB_NAME str_index
#define HTAB_CTX struct sym_ctx
#define HTAB_KEY char
#define HTAB_HASH str_hash
#define HTAB_COMPARE str_eq
#include "lib/htab-type.h"

int sym_intern(struct sym_ctx *ctx, const char *s, const char **out)
{
	uint32_t ref, hash;
	size_t len;
	char *copy;

	*out = NULL;
	if (!s)
		return 0;
	ref = str_index_find(&ctx->str_index, ctx, s, &hash);
	if (ref) {
		*out = ctx->strs[ref - 1];
		return 0;
	}
	if (cprof_grow(&ctx->strs, &ctx->cap_strs, ctx->nstrs + 1, sizeof(*ctx->strs), 1024) < 0 ||
	    cprof_htab_reserve(&ctx->str_index, 1) < 0)
		return -ENOMEM;
	len = strlen(s);
	copy = sym_arena_alloc(ctx, len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, len + 1);
	ctx->strs[ctx->nstrs] = copy;
	cprof_htab_add(&ctx->str_index, hash, ctx->nstrs++);
	*out = copy;
	return 0;
}

static int demangle_bare(struct sym_ctx *ctx, const char *name, const char **out)
{
	char *d = NULL;
	int ret;

	ret = sym_demangle(name, &d);
	if (ret < 0)
		return ret;
	ret = sym_intern(ctx, d ? d : name, out);
	free(d);
	return ret;
}

/*
 * Sets *out to the name shown to people: without an ELF symbol version
 * ("__libc_start_main@@GLIBC_2.34" is __libc_start_main to anyone reading a
 * profile; system_name keeps it whole), without the ABI suffix Go's linker
 * adds (".abi0", ".abiinternal": Go's own profiles drop it), demangled when
 * it is C++ or Rust; a PLT stub's "@plt" (plt.h) stays, as perf shows it.
 * Interned.  Returns 0 or -ENOMEM.
 */
static int demangle(struct sym_ctx *ctx, const char *name, const char **out)
{
	static const char *const go_abi[] = { ".abi0", ".abiinternal" };
	const char *at;
	char *bare;
	size_t len, i, k;
	int ret;

	at = strrchr(name ? name : "", '@');
	if (at && at != name && strcmp(at, "@plt") == 0) {
		bare = strndup(name, (size_t)(at - name));
		ret = bare ? demangle(ctx, bare, out) : -ENOMEM;
		free(bare);
		if (ret < 0 || asprintf(&bare, "%s@plt", *out) < 0)
			return ret < 0 ? ret : -ENOMEM;
		ret = sym_intern(ctx, bare, out);
		free(bare);
		return ret;
	}

	*out = NULL;
	if (!name)
		return 0;
	at = strchr(name, '@');
	len = at && at != name ? (size_t)(at - name) : strlen(name);
	for (i = 0; i < sizeof(go_abi) / sizeof(go_abi[0]); i++) {
		k = strlen(go_abi[i]);
		if (len > k && !memcmp(name + len - k, go_abi[i], k)) {
			len -= k;
			break;
		}
	}
	if (!name[len])
		return demangle_bare(ctx, name, out);
	bare = strndup(name, len);
	if (!bare)
		return -ENOMEM;
	ret = demangle_bare(ctx, bare, out);
	free(bare);
	return ret;
}

/* Fills f with a name pair: system_name raw, function demangled. */
int sym_name_frame(struct sym_ctx *ctx, const char *sys, struct sym_frame *f)
{
	int ret = sym_intern(ctx, sys, &f->system_name);

	return ret < 0 ? ret : demangle(ctx, sys, &f->function);
}

void sym_names_free(struct sym_ctx *ctx)
{
	struct arena_chunk *next;

	while (ctx->arena) {
		next = ctx->arena->next;
		free(ctx->arena);
		ctx->arena = next;
	}
	free(ctx->strs);
	cprof_htab_free(&ctx->str_index);
}
