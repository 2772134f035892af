/* SPDX-License-Identifier: MIT */
/* Address to function, file:line and inline chain through libdwfl, memoized. */
#include "config.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/htab.h"
#include "symbolize/cu_index.h"
#include "symbolize/demangle.h"
#include "symbolize/debuginfo.h"
#include "symbolize/perfmap.h"
#include "symbolize/symbolize.h"
#include "unwind/gopclntab.h"

/* Deepest inline chain we report; deeper ones keep their innermost frames. */
#define MAX_FRAMES 64
#define ARENA_CHUNK (64 * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	char data[];
};

/* Per-module state, indexed by module id. */
struct mod_state {
	Dwfl_Module *dm;
	Dwarf_Addr dm_bias;	/* libdwfl's bias; 0 for ET_EXEC */
	const char *build_id;	/* interned, the cache key */
	bool tried;		/* reported (or failed to) */
	bool looked_up;		/* some address was asked for */
	bool has_functions;	/* some address was named */
	bool has_lines;
	bool cus_built;		/* cus was tried */
	struct cu_index *cus;	/* CUs by their own ranges, for DWARF without aranges */
	Dwarf_Addr cus_bias;
	bool go_tried;		/* go was tried */
	struct gopcln *go;	/* Go's pc-line table, for a Go binary without symbols */
};

struct cache_entry {
	const char *build_id;	/* interned; NULL: keyed by module id */
	uint32_t mod_id;
	bool has_lines;
	uint64_t vaddr;		/* ELF address looked up (runtime - bias) */
	const struct sym_frame *frames;
	size_t n;
};

struct sym_ctx {
	const struct proc_modules *t;
	struct sym_perfmap *perfmap;	/* names of code outside modules; NULL: none */
	/* debug files found beyond this machine (downloads); NULL: none */
	const char *(*debuginfo)(void *arg, const char *build_id);
	void *debuginfo_arg;
	unsigned flags;
	Dwfl *dwfl;

	struct mod_state *mods;
	size_t nmods;

	/* Interned strings (pointers into the arena), found by content. */
	const char **strs;
	size_t nstrs, cap_strs;
	struct cprof_htab str_index;

	/* Resolved addresses, found by (build-id or module, ELF address). */
	struct cache_entry *cache;
	size_t ncache, cap_cache;
	struct cprof_htab cache_index;

	struct arena_chunk *arena;
};

static int find_debuginfo(Dwfl_Module *dm, void **userdata, const char *modname,
			  GElf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name);

/* Modules are reported with their open file, so find_elf is never asked. */
static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = NULL,
};

static void *arena_alloc(struct sym_ctx *ctx, size_t size)
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

/*
 * Sets *out to the ctx's copy of s (NULL for NULL).  Returns 0, or -ENOMEM:
 * a name that cannot be kept is an error, never an unknown symbol.
 */
static int intern(struct sym_ctx *ctx, const char *s, const char **out)
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
	copy = arena_alloc(ctx, len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, len + 1);
	ctx->strs[ctx->nstrs] = copy;
	cprof_htab_add(&ctx->str_index, hash, ctx->nstrs++);
	*out = copy;
	return 0;
}

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
	ctx->dwfl = dwfl_begin(&offline_callbacks);
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
	struct arena_chunk *next;
	size_t i;

	if (!ctx)
		return;
	/* dwfl_end closes the fds handed to dwfl_report_elf. */
	dwfl_end(ctx->dwfl);
	while (ctx->arena) {
		next = ctx->arena->next;
		free(ctx->arena);
		ctx->arena = next;
	}
	free(ctx->strs);
	cprof_htab_free(&ctx->str_index);
	free(ctx->cache);
	cprof_htab_free(&ctx->cache_index);
	for (i = 0; i < ctx->nmods; i++) {
		cu_index_free(ctx->mods[i].cus);
		gopcln_close(ctx->mods[i].go);
	}
	free(ctx->mods);
	free(ctx);
}

static struct mod_state *mod_state(struct sym_ctx *ctx, const struct proc_module *mod)
{
	struct mod_state *v;
	size_t n;

	if (!mod->id)
		return NULL;
	if (mod->id > ctx->nmods) {
		n = ctx->nmods ? ctx->nmods : 64;
		while (n < mod->id)
			n *= 2;
		v = realloc(ctx->mods, n * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + ctx->nmods, 0, (n - ctx->nmods) * sizeof(*v));
		ctx->mods = v;
		ctx->nmods = n;
	}
	return &ctx->mods[mod->id - 1];
}

/* First vaddr of the first PT_LOAD, aligned as libdwfl aligns it. */
static bool first_load_vaddr(int fd, GElf_Half *type, GElf_Addr *vaddr)
{
	bool ok = false;
	GElf_Ehdr ehdr;
	GElf_Phdr ph;
	size_t phnum, i;
	Elf *elf;

	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return false;
	if (!gelf_getehdr(elf, &ehdr) || elf_getphdrnum(elf, &phnum) != 0)
		goto end_elf;
	*type = ehdr.e_type;
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			break;
		if (ph.p_type == PT_LOAD) {
			*vaddr = ph.p_vaddr & -ph.p_align;
			ok = true;
			break;
		}
	}
end_elf:
	elf_end(elf);
	return ok;
}

/* The module's build ID as lowercase hex, into buf (2 * 64 + 1 bytes). */
static bool build_id_hex(Dwfl_Module *dm, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len, i;

	len = dwfl_module_build_id(dm, &bits, &vaddr);
	if (len <= 0 || len > 64)
		return false;
	for (i = 0; i < len; i++) {
		buf[2 * i] = hex[bits[i] >> 4];
		buf[2 * i + 1] = hex[bits[i] & 15];
	}
	buf[2 * len] = '\0';
	return true;
}

/*
 * libdwfl's find_debuginfo: by build ID under /usr/lib/debug, then a file
 * the session downloaded, then .gnu_debuglink; never the network.  A dwz
 * alternate file (asked with a zero CRC) is looked up by its build ID.
 */
static int find_debuginfo(Dwfl_Module *dm, void **userdata, const char *modname,
			  GElf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct sym_ctx *ctx = *userdata;
	char id[2 * 64 + 1];
	const char *path;
	int fd;

	fd = dwfl_build_id_find_debuginfo(dm, userdata, modname, base, file_name, debuglink_file,
					  debuglink_crc, debuginfo_file_name);
	if (fd >= 0 || (debuglink_file && !debuglink_crc))
		return fd;
	if (ctx && ctx->debuginfo && build_id_hex(dm, id) &&
	    (path = ctx->debuginfo(ctx->debuginfo_arg, id))) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			*debuginfo_file_name = strdup(path);
			return fd;
		}
	}
	fd = sym_debuglink_open(debuglink_file, debuglink_crc, file_name, debuginfo_file_name);
	return fd < 0 ? -1 : fd;
}

/*
 * Reports mod to libdwfl on first use.  dwfl_report_elf with add_p_vaddr
 * false places an ET_DYN so that libdwfl's bias = base - (first PT_LOAD
 * vaddr & -p_align): giving base = our bias + that vaddr makes libdwfl's bias
 * equal the real load bias.  For ET_EXEC libdwfl ignores base (bias 0).
 * Either way lookups go through ELF addresses (runtime - mod->bias) plus
 * libdwfl's bias, so its choice can never shift an address.
 * Returns 0 (st->dm NULL when the module cannot be read) or -ENOMEM.
 */
static int report_module(struct sym_ctx *ctx, const struct proc_module *mod,
			 struct mod_state *st)
{
	GElf_Half type = ET_NONE;
	GElf_Addr vaddr = 0;
	char *name = NULL;
	void **userdata;
	int fd;

	if (st->tried)
		return 0;
	st->tried = true;
	if (mod->fd < 0 || !first_load_vaddr(mod->fd, &type, &vaddr))
		return 0;

	/*
	 * libdwfl reuses a module reported with the same name and range, and
	 * ours may repeat (a rebuilt binary at the same address after exec):
	 * make the name unique.
	 */
	if (asprintf(&name, "%s#%" PRIu32, mod->path, mod->id) < 0) {
		st->tried = false;
		return -ENOMEM;
	}
	fd = dup(mod->fd);
	if (fd < 0)
		goto free_name;

	dwfl_report_begin_add(ctx->dwfl);
	st->dm = dwfl_report_elf(ctx->dwfl, name, mod->open_path ? mod->open_path : mod->path,
				 fd, type == ET_EXEC ? 0 : mod->bias + vaddr, false);
	dwfl_report_end(ctx->dwfl, NULL, NULL);
	if (!st->dm) {
		/* On failure libdwfl does not take the descriptor. */
		close(fd);
		goto free_name;
	}
	/* find_debuginfo needs the context */
	dwfl_module_info(st->dm, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	*userdata = ctx;
	if (!dwfl_module_getelf(st->dm, &st->dm_bias))
		st->dm = NULL;

free_name:
	free(name);
	return 0;
}

static int demangle_bare(struct sym_ctx *ctx, const char *name, const char **out)
{
	char *d = NULL;
	int ret;

	ret = sym_demangle(name, &d);
	if (ret < 0)
		return ret;
	ret = intern(ctx, d ? d : name, out);
	free(d);
	return ret;
}

/*
 * Sets *out to the name shown to people: without an ELF symbol version
 * ("__libc_start_main@@GLIBC_2.34" is __libc_start_main to anyone reading a
 * profile; system_name keeps it whole), without the ABI suffix Go's linker
 * adds (".abi0", ".abiinternal": Go's own profiles drop it), demangled when
 * it is C++ or Rust.  Interned.  Returns 0 or -ENOMEM.
 */
static int demangle(struct sym_ctx *ctx, const char *name, const char **out)
{
	static const char *const go_abi[] = { ".abi0", ".abiinternal" };
	const char *at;
	char *bare;
	size_t len, i, k;
	int ret;

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

static const char *die_linkage_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *s;

	s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!s)
		s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	return s;
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

static int die_decl_line(Dwarf_Die *die)
{
	int line = 0;

	if (dwarf_decl_line(die, &line) != 0 || line < 0)
		return 0;
	return line;
}

static bool is_function_tag(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

/* DIEs that hold no code themselves but may hold functions that do. */
static bool may_hold_scopes(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_class_type ||
	       tag == DW_TAG_structure_type || tag == DW_TAG_union_type;
}

/*
 * The innermost DIE below parent whose ranges hold da (a function, an
 * inlined call or a lexical block) into *out.  Returns true if there is
 * one.  Not dwarf_getscopes: once its innermost scope is an inlined call, it
 * looks for the call's abstract origin in the same CU only; Go's origins
 * live in other CUs, and libdw 0.188 then fails and leaks the scopes it had
 * found.  The concrete DIE is all the caller needs.
 */
static bool innermost_scope(Dwarf_Die *parent, Dwarf_Addr da, Dwarf_Die *out, int depth)
{
	Dwarf_Die child;
	int r, has;

	if (depth > 64)
		return false;
	for (r = dwarf_child(parent, &child); r == 0; r = dwarf_siblingof(&child, &child)) {
		has = dwarf_haspc(&child, da);
		if (has > 0) {
			*out = child;
			innermost_scope(&child, da, out, depth + 1);
			return true;
		}
		if (has == 0 && may_hold_scopes(dwarf_tag(&child)) &&
		    innermost_scope(&child, da, out, depth + 1))
			return true;
	}
	return false;
}

/*
 * The chain of function DIEs at dwarf address da, innermost first, ending at
 * the physical subprogram: the scopes around the concrete innermost one
 * (dwarf_getscopes_die, as addr2line and eu-stack walk them).
 */
static int inline_chain(Dwarf_Die *cudie, Dwarf_Addr da, Dwarf_Die *fns, int max)
{
	Dwarf_Die *scopes = NULL, innermost;
	int nscopes, n = 0, i, tag;

	if (!innermost_scope(cudie, da, &innermost, 0))
		return 0;
	nscopes = dwarf_getscopes_die(&innermost, &scopes);
	for (i = 0; i < nscopes && n < max; i++) {
		tag = dwarf_tag(&scopes[i]);
		if (!is_function_tag(tag))
			continue;
		fns[n++] = scopes[i];
		if (tag != DW_TAG_inlined_subroutine)
			break;
	}
	free(scopes);
	return n;
}

/* What one address resolves to before it becomes frames. */
struct resolved {
	const char *symname;	/* from the symbol table, NULL if none */
	const char *src;	/* file of the line table row, NULL if none */
	int line;
	struct sym_frame frames[MAX_FRAMES];
	size_t n;
};

/* The symbol table's name for da (libdwfl prefers global aliases), or NULL. */
static const char *resolve_symbol(Dwfl_Module *dm, Dwarf_Addr da)
{
	GElf_Off off;
	GElf_Sym sym;

	return dwfl_module_addrinfo(dm, da, &off, &sym, NULL, NULL, NULL);
}

/*
 * The CU DIE holding da (*bias: libdwfl's DWARF bias): libdw's answer
 * through .debug_aranges, else the module's index of the CUs' own ranges,
 * built on first need (Go writes no aranges; in a cgo binary only the C
 * CUs have them).
 */
static Dwarf_Die *addr_cu(struct mod_state *st, Dwarf_Addr da, Dwarf_Die *mem, Dwarf_Addr *bias)
{
	Dwarf_Die *cu = dwfl_module_addrdie(st->dm, da, bias);
	Dwarf *dbg;

	if (cu && dwarf_haspc(cu, da - *bias) > 0)
		return cu;
	if (!st->cus_built) {
		st->cus_built = true;
		dbg = dwfl_module_getdwarf(st->dm, &st->cus_bias);
		if (dbg && cu_index_build(&st->cus, dbg) < 0)
			st->cus = NULL;
	}
	*bias = st->cus_bias;
	return cu_index_find(st->cus, da - st->cus_bias, mem);
}

/* The line row for da from the CU index, when libdwfl found no CU. */
static void resolve_line_indexed(struct mod_state *st, Dwarf_Addr da, struct resolved *r)
{
	Dwarf_Die mem, *cu;
	Dwarf_Addr bias = 0;
	Dwarf_Line *line;

	cu = addr_cu(st, da, &mem, &bias);
	if (!cu || !(line = dwarf_getsrc_die(cu, da - bias)))
		return;
	r->src = dwarf_linesrc(line, NULL, NULL);
	if (!r->src || dwarf_lineno(line, &r->line) != 0)
		r->line = 0;
}

/* The line table row for da, kept only when its CU covers da. */
static void resolve_line(struct mod_state *st, Dwarf_Addr da, struct resolved *r)
{
	Dwfl_Module *dm = st->dm;
	Dwfl_Line *line = dwfl_module_getsrc(dm, da);
	Dwarf_Addr lbias = 0, laddr;
	Dwarf_Die *lcu;

	if (!line) {
		resolve_line_indexed(st, da, r);
		return;
	}
	/* libdw answers with the nearest line even past the end of its CU's
	 * code (crt1's _start got the last line of main's file). */
	lcu = dwfl_linecu(line);
	if (lcu && dwfl_module_getdwarf(dm, &lbias) && dwarf_haspc(lcu, da - lbias) == 0) {
		/* .debug_aranges may cover only part of the CUs (a cgo
		 * binary: the C ones): ask the CUs' own ranges. */
		resolve_line_indexed(st, da, r);
		return;
	}
	r->src = dwfl_lineinfo(line, &laddr, &r->line, NULL, NULL, NULL);
	if (!r->src)
		r->line = 0;
}

/*
 * The system name of function DIE fn.  The physical function is named by its
 * symbol, where libdwfl prefers the global alias (__nanosleep over glibc's
 * asm-renamed __GI___nanosleep linkage name), as perf and eu-stack do.  An
 * inlined one has no symbol: its mangled name, else its source name.
 */
static const char *frame_system_name(Dwarf_Die *fn, bool physical, const char *symname)
{
	const char *sys = die_linkage_name(fn);

	if (physical && symname)
		return symname;
	if (sys && !(sys[0] == '_' && (sys[1] == 'Z' || sys[1] == 'R')) && die_name(fn))
		return die_name(fn);
	return sys ? sys : die_name(fn);
}

/* Sets f's file:line to where the inlined callee was called from. */
static int call_site(struct sym_ctx *ctx, Dwarf_Files *files, Dwarf_Die *callee,
		     struct sym_frame *f)
{
	Dwarf_Attribute attr;
	Dwarf_Word val;
	int ret;

	if (files && dwarf_formudata(dwarf_attr(callee, DW_AT_call_file, &attr), &val) == 0) {
		ret = intern(ctx, dwarf_filesrc(files, val, NULL, NULL), &f->file);
		if (ret < 0)
			return ret;
	}
	if (dwarf_formudata(dwarf_attr(callee, DW_AT_call_line, &attr), &val) == 0 &&
	    val <= INT32_MAX)
		f->line = (int)val;
	return 0;
}

/* Fills f with a name pair: system_name raw, function demangled. */
static int name_frame(struct sym_ctx *ctx, const char *sys, struct sym_frame *f)
{
	int ret = intern(ctx, sys, &f->system_name);

	return ret < 0 ? ret : demangle(ctx, sys, &f->function);
}

/* The inline chain at da as frames (innermost first); none without a CU. */
static int resolve_inline(struct sym_ctx *ctx, struct mod_state *st, Dwarf_Addr da,
			  struct resolved *r)
{
	Dwarf_Die fns[MAX_FRAMES], *cudie, cumem;
	Dwarf_Files *files = NULL;
	Dwarf_Addr bias = 0;
	struct sym_frame *f;
	int nfns, j, ret;

	cudie = addr_cu(st, da, &cumem, &bias);
	if (!cudie)
		return 0;
	nfns = inline_chain(cudie, da - bias, fns, MAX_FRAMES);
	if (nfns > 1 && dwarf_getsrcfiles(cudie, &files, NULL) != 0)
		files = NULL;
	for (j = 0; j < nfns; j++) {
		f = &r->frames[j];
		memset(f, 0, sizeof(*f));
		ret = name_frame(ctx, frame_system_name(&fns[j], j == nfns - 1, r->symname), f);
		if (ret < 0)
			return ret;
		f->start_line = die_decl_line(&fns[j]);
		f->inlined = j != nfns - 1;
		if (j > 0) {
			ret = call_site(ctx, files, &fns[j - 1], f);
		} else {
			f->line = r->src ? r->line : 0;
			ret = intern(ctx, r->src, &f->file);
		}
		if (ret < 0)
			return ret;
	}
	r->n = (size_t)nfns;
	return 0;
}

/* No DWARF scope (assembly, stripped): the symbol and the line table. */
static int resolve_flat(struct sym_ctx *ctx, struct resolved *r)
{
	struct sym_frame *f = &r->frames[0];
	int ret;

	if (!r->symname && !r->src)
		return 0;
	memset(f, 0, sizeof(*f));
	ret = name_frame(ctx, r->symname, f);
	if (ret < 0)
		return ret;
	f->line = r->src ? r->line : 0;
	r->n = 1;
	return intern(ctx, r->src, &f->file);
}

/* The ctx-owned frames for ELF address vaddr of mod; *n 0 when unknown. */
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
		if (mod->fd < 0 || gopcln_open(&st->go, mod->fd) < 0)
			st->go = NULL;
	}
	if (!st->go || gopcln_find(st->go, vaddr, &f) < 0 || !f.name)
		return;
	r->symname = f.name;
	if (lines && gopcln_line(st->go, &f, vaddr, &r->src, &r->line) < 0) {
		r->src = NULL;
		r->line = 0;
	}
}

static int resolve(struct sym_ctx *ctx, const struct proc_module *mod, struct mod_state *st,
		   uint64_t vaddr, struct sym_frame **out, size_t *n, bool *has_lines)
{
	struct resolved r = { .n = 0 };
	Dwarf_Addr da;
	int ret;

	*out = NULL;
	*n = 0;
	*has_lines = false;
	ret = report_module(ctx, mod, st);
	if (ret < 0 || !st->dm)
		return ret;
	da = vaddr + st->dm_bias;
	r.symname = resolve_symbol(st->dm, da);
	if (!(ctx->flags & SYM_NO_SOURCE)) {
		resolve_line(st, da, &r);
		ret = resolve_inline(ctx, st, da, &r);
		if (ret < 0)
			return ret;
	}
	if (!r.n && !r.symname && !r.src)
		resolve_go(mod, st, vaddr, !(ctx->flags & SYM_NO_SOURCE), &r);
	if (!r.n && (ret = resolve_flat(ctx, &r)) < 0)
		return ret;
	if (!r.n)
		return 0;

	*has_lines = r.src && r.line > 0;
	*out = arena_alloc(ctx, r.n * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	memcpy(*out, r.frames, r.n * sizeof(**out));
	*n = r.n;
	return 0;
}

void sym_use_perfmap(struct sym_ctx *ctx, struct sym_perfmap *pm)
{
	ctx->perfmap = pm;
}

void sym_use_debuginfo(struct sym_ctx *ctx, const char *(*fn)(void *arg, const char *build_id),
		       void *arg)
{
	ctx->debuginfo = fn;
	ctx->debuginfo_arg = arg;
}

/* Code outside any module: named by the runtime's perf map, if anything. */
static int lookup_jit(struct sym_ctx *ctx, uint64_t addr, const struct sym_frame **frames,
		      size_t *n)
{
	struct cache_key key = { .build_id = NULL, .mod_id = 0, .vaddr = addr };
	struct sym_frame *f;
	struct cache_entry *e;
	const char *name;
	uint32_t ref, hash;
	int ret;

	if (!ctx->perfmap)
		return 0;
	ref = cache_index_find(&ctx->cache_index, ctx, &key, &hash);
	if (ref) {
		*frames = ctx->cache[ref - 1].frames;
		*n = ctx->cache[ref - 1].n;
		return 0;
	}
	name = sym_perfmap_lookup(ctx->perfmap, addr);
	f = NULL;
	if (name) {
		f = arena_alloc(ctx, sizeof(*f));
		if (!f)
			return -ENOMEM;
		memset(f, 0, sizeof(*f));
		ret = intern(ctx, name, &f->system_name);
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
	if (!st->build_id && mod->build_id && (ret = intern(ctx, mod->build_id, &st->build_id)) < 0)
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
	return ctx->mods[mod->id - 1].looked_up && !ctx->mods[mod->id - 1].has_functions;
}
