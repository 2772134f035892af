/* SPDX-License-Identifier: MIT */
/*
 * What the files of the symbolizer share: the context, the per-module
 * state, and the steps one lookup goes through (symbolize.c drives them;
 * names.c keeps the strings, dwfl_report.c reports modules to libdwfl,
 * dwarf_scopes.c reads lines and inline chains).  Not for other modules.
 */
#ifndef CPROF_SYMBOLIZE_SYMBOLIZE_IMPL_H
#define CPROF_SYMBOLIZE_SYMBOLIZE_IMPL_H

#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/htab.h"
#include "symbolize/symbolize.h"

/* Deepest inline chain we report; deeper ones keep their innermost frames. */
#define MAX_FRAMES 64

struct arena_chunk;

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
	uint64_t remote_gen;	/* the helper's generation it was sent to (remote.c) */
	bool remote_dead;	/* the helper died or failed on it: its frames stay unnamed */
	int remote_err;		/* the error the helper answered for it (no death), or 0 */
	bool plt_tried;		/* plt was tried */
	struct sym_plt *plt;	/* its PLT stubs' names (plt.h) */
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
	/* names of code outside modules (a perf map's); NULL: none */
	bool (*jit_name)(void *arg, uint64_t addr, char *buf, size_t len);
	void *jit_arg;
	/* debug files found beyond this machine (downloads); NULL: none */
	const char *(*debuginfo)(void *arg, const char *build_id);
	void *debuginfo_arg;
	/* In the helper: the debug file of build_id, opened by the privileged
	 * side (a descriptor of its own, *name its path), or -1; nothing is
	 * opened by path then.  NULL: outside the helper. */
	int (*debuginfo_fd)(void *arg, const char *build_id, char **name);
	void *debuginfo_fd_arg;
	unsigned flags;
	Dwfl *dwfl;

	/* Parsing in the confined helper (remote.c); NULL: in this process. */
	struct conf_helper *helper;
	uint32_t remote_id;	/* this context's name in the helper */
	uint64_t remote_sent;	/* the helper generation modules were last sent to */
	char *remote_buf;	/* room for one answer */

	struct mod_state *mods;
	size_t nmods;		/* slots (all zeroed until used), by module id - 1 */

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

/* What one address resolves to before it becomes frames. */
struct resolved {
	const char *symname;	/* from the symbol table, NULL if none */
	const char *src;	/* file of the line table row, NULL if none */
	int line;
	struct sym_frame frames[MAX_FRAMES];
	size_t n;
};

/* names.c */
/* size bytes that live as long as ctx, or NULL. */
void *sym_arena_alloc(struct sym_ctx *ctx, size_t size);
/*
 * Sets *out to the ctx's copy of s (NULL for NULL).  Returns 0, or -ENOMEM:
 * a name that cannot be kept is an error, never an unknown symbol.
 */
int sym_intern(struct sym_ctx *ctx, const char *s, const char **out);
/* Fills f with a name pair: system_name raw (sys), function as people read
 * it.  Returns 0 or -ENOMEM. */
int sym_name_frame(struct sym_ctx *ctx, const char *sys, struct sym_frame *f);
/* Frees the strings and the arena. */
void sym_names_free(struct sym_ctx *ctx);

/* dwfl_report.c */
/* The libdwfl session modules are reported to, or NULL. */
Dwfl *sym_dwfl_begin(void);
/*
 * Reports mod to libdwfl on first use (st->tried).  Returns 0 (st->dm NULL
 * when the module cannot be read) or -ENOMEM.
 */
int sym_report_module(struct sym_ctx *ctx, const struct proc_module *mod, struct mod_state *st);

/* remote.c */
/* resolve() done by the helper: the same contract, but a module the helper
 * dies on is unnamed (0 frames), not an error.  Returns 0 or -ENOMEM. */
int sym_remote_resolve(struct sym_ctx *ctx, const struct proc_module *mod, struct mod_state *st,
		       uint64_t vaddr, struct sym_frame **out, size_t *n, bool *has_lines);
/*
 * The helper's answer in (len bytes, which a helper taken over chooses)
 * into ctx-owned frames (*n of them, 0 when it named nothing).  Returns 0,
 * -EPROTO (malformed) or -ENOMEM.
 */
int sym_remote_read_answer(struct sym_ctx *ctx, const char *in, size_t len,
			   struct sym_frame **out, size_t *n, bool *has_lines);
/* Tells the helper ctx is done (when it still has ctx's modules). */
void sym_remote_close(struct sym_ctx *ctx);

/* dwarf_scopes.c */
/* The line table row for DWARF address da into r->src, r->line. */
void sym_resolve_line(struct mod_state *st, Dwarf_Addr da, struct resolved *r);
/* The inline chain at da as r's frames (innermost first); none without a
 * CU.  Returns 0 or -ENOMEM. */
int sym_resolve_inline(struct sym_ctx *ctx, struct mod_state *st, Dwarf_Addr da,
		       struct resolved *r);

#endif
