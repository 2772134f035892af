/* SPDX-License-Identifier: MIT */
/* Demangling through libiberty's callback interface, into a growing buffer. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "lib/grow.h"
#include "symbolize/demangle.h"

/*
 * What perf prints: C++ with parameter lists and cv-qualifiers; Rust
 * without its hash (no DMGL_VERBOSE).
 */
#define DEMANGLE_OPTIONS (DMGL_PARAMS | DMGL_ANSI)

/*
 * libiberty's C++ demangler keeps its parse tree in variable-length arrays
 * on the stack, sized by the name's length: longer names (real ones stay far
 * below) are shown mangled rather than risking the stack on a hostile file.
 */
#define MAX_MANGLED 8192

struct out_buf {
	char *s;
	size_t len, cap;
	bool failed;		/* out of memory: the result is dropped */
};

static void append(const char *s, size_t n, void *opaque)
{
	struct out_buf *b = opaque;

	if (b->failed)
		return;
	if (cprof_grow(&b->s, &b->cap, b->len + n + 1, 1, 256) < 0) {
		b->failed = true;
		return;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

/* Runs one demangler; true when it understood name and b holds the result. */
static bool try_demangle(int (*fn)(const char *, int, demangle_callbackref, void *),
			 const char *name, struct out_buf *b)
{
	b->len = 0;
	b->failed = false;
	return fn(name, DEMANGLE_OPTIONS, append, b) && (b->failed || b->len > 0);
}

int sym_demangle(const char *name, char **out)
{
	struct out_buf b = { NULL, 0, 0, false };
	bool ok = false;

	*out = NULL;
	if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return 0;
	if (strnlen(name, MAX_MANGLED) == MAX_MANGLED)
		return 0;
	/* Legacy Rust names are valid Itanium names too: Rust first, as
	 * libiberty's own cplus_demangle does. */
	ok = try_demangle(rust_demangle_callback, name, &b);
	if (!ok && name[1] == 'Z')
		ok = try_demangle(cplus_demangle_v3_callback, name, &b);
	if (ok && b.failed) {
		free(b.s);
		return -ENOMEM;
	}
	if (!ok) {
		free(b.s);
		return 0;
	}
	*out = b.s;
	return 0;
}
