/* SPDX-License-Identifier: MIT */
/* Thread-root and stack-switch functions of a module, from its symbols. */
#include "config.h"

#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/gopclntab.h"
#include "unwind/roots.h"

struct root_range {
	uint64_t start, end;	/* runtime addresses, [start, end) */
	enum roots_kind kind;
};

struct roots {
	struct root_range *r;
	size_t n, cap;
};

static const struct {
	const char *name;
	enum roots_kind kind;
} root_names[] = {
	{ "_start", ROOTS_THREAD },
	{ "clone", ROOTS_THREAD },
	{ "__clone", ROOTS_THREAD },
	{ "clone3", ROOTS_THREAD },
	{ "__clone3", ROOTS_THREAD },
	{ "start_thread", ROOTS_THREAD },
	{ "runtime.goexit", ROOTS_THREAD },
	{ "runtime.mstart", ROOTS_THREAD },
	{ "runtime.rt0_go", ROOTS_THREAD },
	{ "runtime.mcall", ROOTS_SWITCH },
	{ "runtime.systemstack", ROOTS_SWITCH },
	{ "runtime.morestack", ROOTS_SWITCH },
	{ "runtime.asmcgocall", ROOTS_CGO_SWITCH },
	{ "runtime.cgocall", ROOTS_CGO_CALLER },
};

/* Go's linker marks a function's ABI with a suffix the root list omits. */
static bool same_go_name(const char *sym, const char *base)
{
	size_t n = strlen(base);

	if (strncmp(sym, base, n))
		return false;
	return !sym[n] || !strcmp(sym + n, ".abi0") || !strcmp(sym + n, ".abiinternal");
}

enum roots_kind roots_name_kind(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(root_names) / sizeof(root_names[0]); i++)
		if (same_go_name(name, root_names[i].name))
			return root_names[i].kind;
	return ROOTS_NONE;
}

static int add_range(struct roots *r, uint64_t start, uint64_t end, enum roots_kind kind)
{
	if (r->n == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 8;
		struct root_range *nv = realloc(r->r, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		r->r = nv;
		r->cap = cap;
	}
	r->r[r->n++] = (struct root_range){ start, end, kind };
	return 0;
}

/* Adds the roots in one symbol table; returns how many, or -errno. */
static int scan_symtab(struct roots *r, Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, uint64_t bias)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t i, n;
	int found = 0, ret;

	if (!d || !sh->sh_entsize)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		enum roots_kind kind;

		if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    !sym.st_value || sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!name || (kind = roots_name_kind(name)) == ROOTS_NONE)
			continue;
		/* Assembly symbols may have no size: one byte still marks
		 * the entry, where a return address of a root points. */
		ret = add_range(r, sym.st_value + bias, sym.st_value + bias + (sym.st_size ? sym.st_size : 1),
				kind);
		if (ret < 0)
			return ret;
		found++;
	}
	return found;
}

/* A stripped Go binary: the roots by their names in .gopclntab. */
static int scan_gopclntab(struct roots *r, const struct proc_module *m)
{
	struct gopcln *p;
	size_t i, n;
	int ret = 0;

	if (gopcln_open(&p, m->fd) < 0)
		return 0;
	n = gopcln_count(p);
	for (i = 0; i < n && ret == 0; i++) {
		struct gopcln_func f;
		enum roots_kind kind;

		if (gopcln_func_at(p, i, &f) < 0 || !f.name ||
		    (kind = roots_name_kind(f.name)) == ROOTS_NONE)
			continue;
		ret = add_range(r, f.entry + m->bias, f.end + m->bias, kind);
	}
	gopcln_close(p);
	return ret;
}

int roots_load(struct roots **out, const struct proc_module *m)
{
	struct roots *r;
	Elf *e = NULL;
	Elf_Scn *scn = NULL;
	int ret = 0, pass;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (m->fd < 0)
		goto done;
	elf_version(EV_CURRENT);
	e = elf_begin(m->fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF)
		goto done;
	/* .symtab has everything .dynsym has; .dynsym only when stripped. */
	for (pass = 0; pass < 2; pass++) {
		int found = 0;

		scn = NULL;
		while ((scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;

			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM))
				continue;
			ret = scan_symtab(r, e, scn, &sh, m->bias);
			if (ret < 0)
				goto err;
			found += ret;
			ret = 0;
		}
		if (found)
			break;
	}
	if (!r->n && (ret = scan_gopclntab(r, m)) < 0)
		goto err;
done:
	if (e)
		elf_end(e);
	*out = r;
	return 0;
err:
	elf_end(e);
	roots_free(r);
	return ret;
}

void roots_free(struct roots *r)
{
	if (!r)
		return;
	free(r->r);
	free(r);
}

enum roots_kind roots_at(const struct roots *r, uint64_t pc)
{
	size_t i;

	/* A handful of ranges per module: a linear scan is the fast way. */
	for (i = 0; r && i < r->n; i++)
		if (pc >= r->r[i].start && pc < r->r[i].end)
			return r->r[i].kind;
	return ROOTS_NONE;
}
