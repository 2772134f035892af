/* SPDX-License-Identifier: MIT */
/*
 * Address -> function, file:line and inline chain, through libdw.  Works on
 * the modules of a proc_modules (their open ELF files), so it needs no live
 * process: symbolization runs after sampling, never while a thread is stopped.
 */
#ifndef CPROF_SYMBOLIZE_SYMBOLIZE_H
#define CPROF_SYMBOLIZE_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "process/modules.h"

struct sym_frame {
	const char *function;	 /* demangled name; NULL when unknown */
	const char *system_name; /* raw (mangled) symbol name; NULL when unknown */
	const char *file;	 /* source file, NULL when unknown */
	int line;		 /* 0 when unknown */
	int start_line;		 /* line of the function's declaration, 0 when unknown */
	bool inlined;		 /* this frame was inlined into the next one */
};

struct sym_ctx;

enum {
	SYM_NO_SOURCE = 1 << 0,	/* skip file:line and inline chains (names only) */
};

/* Creates a symbolizer over the modules of t (which must outlive it). */
int sym_create(struct sym_ctx **out, const struct proc_modules *t, unsigned flags);
void sym_destroy(struct sym_ctx *ctx);

struct sym_perfmap;

/*
 * Names addresses outside any module (JIT code) from pm, which outlives ctx
 * and is not refreshed while ctx uses it.  NULL: no such names.
 */
void sym_use_perfmap(struct sym_ctx *ctx, struct sym_perfmap *pm);

/* Longest JIT name kept (longer ones are cut), terminator included. */
#define SYM_JIT_NAME_MAX 1024

/*
 * The same from any source: fn(arg, addr, buf, len) writes the name of the
 * code at addr into buf (len bytes, terminated) and returns true, or
 * returns false.  fn may take its own locks (its names may be learned on
 * another thread while ctx is used); it is called once per address, whose
 * answer ctx keeps.  fn NULL: no such names.
 */
void sym_use_jit_names(struct sym_ctx *ctx,
		       bool (*fn)(void *arg, uint64_t addr, char *buf, size_t len), void *arg);

/*
 * Separate debug files from beyond this machine: fn(arg, build_id) returns
 * the path of the one for build_id (lowercase hex) or NULL.  Asked only when
 * no local file is found; fn must answer at once (no download).
 */
void sym_use_debuginfo(struct sym_ctx *ctx, const char *(*fn)(void *arg, const char *build_id),
		       void *arg);

struct conf_helper;

/*
 * Parses in the confined helper h (confine/confine.h, started with
 * sym_remote_serve as its handler), which must outlive ctx: modules' files
 * and debug files are opened here and handed over, the helper sends back
 * names, files and lines.  A module the helper dies on keeps its frames
 * unnamed (h records the death).  Before the first sym_lookup.  NULL:
 * parse in this process.
 */
void sym_use_helper(struct sym_ctx *ctx, struct conf_helper *h);

/*
 * In the helper: the separate debug file of a module comes from fn(arg,
 * build_id, &name) (a descriptor for the symbolizer to own, or -1), and
 * nothing is opened by path.
 */
void sym_use_debuginfo_fds(struct sym_ctx *ctx,
			   int (*fn)(void *arg, const char *build_id, char **name), void *arg);

/*
 * Symbolizes addr (a runtime address inside mod's mapping at sampling time).
 * is_return_address: addr is a caller frame's return address, so the call
 * site is looked up at addr - 1 (leaf and signal frames pass false).
 * On success *frames points to *n frames, innermost (most deeply inlined)
 * first, the physical function last; *n is 0 when nothing is known about
 * addr.  The frames and their strings belong to ctx and stay valid until
 * sym_destroy.  Results are cached by (build-id or module, offset).
 * mod NULL: addr is in no module (JIT code), named only through
 * sym_use_perfmap's perf map.
 * Returns 0 or -errno (never fails for a missing symbol: *n = 0).
 */
int sym_lookup(struct sym_ctx *ctx, const struct proc_module *mod, uint64_t addr,
	       bool is_return_address, const struct sym_frame **frames, size_t *n);

/* Whether mod has DWARF line info / inline info, for pprof mapping flags.
 * Valid after at least one sym_lookup in mod. */
bool sym_module_has_lines(struct sym_ctx *ctx, const struct proc_module *mod);

/* Whether some address of mod was named (a symbol or DWARF); a module with
 * none is one a reader may symbolize later, from its build id.  Valid after
 * the lookups. */
bool sym_module_has_functions(struct sym_ctx *ctx, const struct proc_module *mod);

/* Whether addresses of mod were looked up and none could be named: a module
 * without symbols or debuginfo here (stripped), for the user to be told. */
bool sym_module_unnamed(struct sym_ctx *ctx, const struct proc_module *mod);

/* The error the confined parser answered for mod instead of its names
 * (-errno; it did not die: sym_use_helper), or 0 when none.  Its frames
 * keep their addresses.  Valid after the lookups. */
int sym_module_parser_error(struct sym_ctx *ctx, const struct proc_module *mod);

#endif
