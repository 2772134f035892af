/* SPDX-License-Identifier: MIT */
/* The kernel's symbol table read from /proc/kallsyms; see kallsyms.h. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bsearch.h"
#include "lib/grow.h"
#include "symbolize/kallsyms.h"

/* A kernel address this far past the last symbol is in no function of the
 * table (a module loaded since, or data). */
#define LAST_SYMBOL_SPAN (1u << 20)

struct ksym {
	uint64_t addr;
	uint32_t name;		/* offsets into names */
	uint32_t module;	/* 0: the core kernel */
};

struct sym_kallsyms {
	struct ksym *syms;
	size_t n, cap;
	char *names;		/* "" at offset 0, then each string once */
	size_t len, cap_names;
};

static int add_string(struct sym_kallsyms *k, const char *s, size_t n, uint32_t *off)
{
	if (k->len + n + 1 > UINT32_MAX ||
	    cprof_grow(&k->names, &k->cap_names, k->len + n + 1, 1, 1 << 20) < 0)
		return -ENOMEM;
	memcpy(k->names + k->len, s, n);
	k->names[k->len + n] = '\0';
	*off = (uint32_t)k->len;
	k->len += n + 1;
	return 0;
}

/* The module of the previous line, reused: its symbols come together. */
static int module_of(struct sym_kallsyms *k, const char *s, size_t n, uint32_t *last)
{
	if (*last && strlen(k->names + *last) == n && memcmp(k->names + *last, s, n) == 0)
		return 0;
	return add_string(k, s, n, last);
}

/* One line: 1 kept, 0 not a text symbol, -ENOMEM. */
static int parse_line(struct sym_kallsyms *k, char *line, uint32_t *last_mod, bool *nonzero)
{
	char *end, *name, *mod;
	uint64_t addr;
	size_t n;
	int ret;
	char t;

	addr = strtoull(line, &end, 16);
	if (end == line || end[0] != ' ' || !end[1] || end[2] != ' ')
		return 0;
	*nonzero |= addr != 0;
	t = end[1];
	if (t != 't' && t != 'T' && t != 'w' && t != 'W')
		return 0;
	name = end + 3;
	n = strcspn(name, "\t\n");
	/* The padding before each function (CFI, call thunks) is no function
	 * of its own: an address there goes to the one before, as perf does. */
	if (!n || strncmp(name, "__pfx_", 6) == 0 || strncmp(name, "__cfi_", 6) == 0)
		return 0;
	mod = name[n] == '\t' ? strchr(name + n, '[') : NULL;
	if (cprof_grow(&k->syms, &k->cap, k->n + 1, sizeof(*k->syms), 1 << 16) < 0)
		return -ENOMEM;
	k->syms[k->n] = (struct ksym){ .addr = addr };
	ret = add_string(k, name, n, &k->syms[k->n].name);
	if (!ret && mod) {
		ret = module_of(k, mod + 1, strcspn(mod + 1, "]\n"), last_mod);
		k->syms[k->n].module = *last_mod;
	}
	if (ret < 0)
		return ret;
	k->n++;
	return 1;
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

int sym_kallsyms_read(FILE *f, struct sym_kallsyms **out)
{
	struct sym_kallsyms *k;
	uint32_t last_mod = 0, empty;
	bool nonzero = false;
	char line[1024];
	int ret = 0;

	*out = NULL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	ret = add_string(k, "", 0, &empty);
	while (ret >= 0 && fgets(line, sizeof(line), f))
		ret = parse_line(k, line, &last_mod, &nonzero);
	if (ret >= 0 && ferror(f))
		ret = -EIO;
	else if (ret >= 0 && !nonzero && k->n)
		ret = -EPERM;
	else if (ret >= 0 && !k->n)
		ret = -ENOENT;
	if (ret < 0) {
		sym_kallsyms_free(k);
		return ret;
	}
	qsort(k->syms, k->n, sizeof(*k->syms), cmp_ksym);
	*out = k;
	return 0;
}

void sym_kallsyms_free(struct sym_kallsyms *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->names);
	free(k);
}

const char *sym_kallsyms_lookup(const struct sym_kallsyms *k, uint64_t addr,
				const char **module)
{
	size_t lo;

	/* the last symbol at or below addr: syms[lo - 1] */
	lo = cprof_count_le(k->syms, k->n, sizeof(*k->syms), offsetof(struct ksym, addr), addr);
	if (!lo || (lo == k->n && addr - k->syms[lo - 1].addr > LAST_SYMBOL_SPAN))
		return NULL;
	if (module)
		*module = k->syms[lo - 1].module ? k->names + k->syms[lo - 1].module : NULL;
	return k->names + k->syms[lo - 1].name;
}
