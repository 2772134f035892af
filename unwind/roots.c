/* SPDX-License-Identifier: MIT */
/* Thread-root and stack-switch functions of a module, from its symbols. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/gopclntab.h"
#include "elf/objfile.h"
#include "lib/grow.h"
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
	{ "_start", ROOTS_START },
	{ "clone", ROOTS_START },
	{ "__clone", ROOTS_START },
	{ "clone3", ROOTS_START },
	{ "__clone3", ROOTS_START },
	{ "start_thread", ROOTS_START },
	{ "runtime.goexit", ROOTS_THREAD },
	{ "runtime.mstart", ROOTS_THREAD },
	{ "runtime.rt0_go", ROOTS_THREAD },
	{ "runtime.mcall", ROOTS_SWITCH },
	{ "runtime.systemstack", ROOTS_SWITCH },
	{ "runtime.morestack", ROOTS_SWITCH },
	{ "runtime.asmcgocall", ROOTS_CGO_SWITCH },
	{ "runtime.cgocall", ROOTS_CGO_CALLER },
	{ "time.now", ROOTS_VDSO_CALLER },
	{ "runtime.nanotime1", ROOTS_VDSO_CALLER },
	{ "runtime.walltime", ROOTS_VDSO_CALLER },
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
	if (cprof_grow(&r->r, &r->cap, r->n + 1, sizeof(*r->r), 8) < 0)
		return -ENOMEM;
	r->r[r->n++] = (struct root_range){ start, end, kind };
	return 0;
}

/* Where the sizeless symbol at value (section shndx) ends: at the next
 * symbol of that section, or one byte on if there is none. */
static uint64_t sizeless_end(Elf_Data *d, size_t n, GElf_Section shndx, uint64_t value)
{
	uint64_t end = UINT64_MAX;
	size_t i;

	for (i = 0; i < n; i++) {
		GElf_Sym sym;

		if (gelf_getsym(d, (int)i, &sym) && sym.st_shndx == shndx &&
		    sym.st_value > value && sym.st_value < end)
			end = sym.st_value;
	}
	return end == UINT64_MAX ? value + 1 : end;
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
		uint64_t end;
		int type;

		if (!gelf_getsym(d, (int)i, &sym) || !sym.st_value || sym.st_shndx == SHN_UNDEF ||
		    sym.st_shndx >= SHN_LORESERVE)
			continue;
		/* Assembly labels are often untyped: ld.so's _start is a
		 * NOTYPE symbol of size 0 in its debug file. */
		type = GELF_ST_TYPE(sym.st_info);
		if (type != STT_FUNC && !(type == STT_NOTYPE && !sym.st_size))
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!name || (kind = roots_name_kind(name)) == ROOTS_NONE)
			continue;
		/* An assembly root may have no size: it runs to the next
		 * symbol.  ld.so's _start is 8 bytes up to _dl_start_user, and
		 * the return address from _dl_start is the first byte after
		 * it; with one byte, a walk of a command starting up (cprof
		 * record) went past _start and ended [truncated]. */
		end = sym.st_size ? sym.st_value + sym.st_size
				  : sizeless_end(d, n, sym.st_shndx, sym.st_value);
		ret = add_range(r, sym.st_value + bias, end + bias, kind);
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

	ret = gopcln_open(&p, objfile_lock(m->file));
	objfile_unlock(m->file);
	if (ret < 0)
		return 0;
	ret = 0;
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

/*
 * Adds the roots in the symbol tables of type type (SHT_SYMTAB or
 * SHT_DYNSYM) of the ELF file f.  Returns how many tables there were, or
 * -errno.
 */
static int scan_file(struct roots *r, struct objfile *f, uint64_t bias, unsigned type)
{
	Elf_Scn *scn = NULL;
	int ret = 0, tables = 0;
	Elf *e;

	if (!objfile_is_elf(f))
		return 0;
	e = objfile_lock(f);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type)
			continue;
		ret = scan_symtab(r, e, scn, &sh, bias);
		if (ret < 0)
			break;
		tables++;
	}
	objfile_unlock(f);
	return ret < 0 ? ret : tables;
}

/* The .symtab of m's separate debug file, found by build id. */
static int scan_debug_file(struct roots *r, const struct proc_module *m)
{
	struct objfile *f;
	int ret;

	if (objfile_open_debug(&f, m->build_id) < 0)
		return 0;
	ret = scan_file(r, f, m->bias, SHT_SYMTAB);
	objfile_close(f);
	return ret;
}

int roots_load(struct roots **out, const struct proc_module *m)
{
	struct roots *r;
	int ret = 0;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (!m->file)
		goto done;
	/* .symtab has everything; a stripped library keeps only .dynsym, and
	 * its private roots (start_thread, __clone3) are in its debug file;
	 * a stripped Go binary has them in .gopclntab. */
	ret = scan_file(r, m->file, m->bias, SHT_SYMTAB);
	if (ret == 0) {
		ret = scan_debug_file(r, m);
		if (ret >= 0)
			ret = scan_file(r, m->file, m->bias, SHT_DYNSYM);
	}
	if (ret >= 0 && !r->n)
		ret = scan_gopclntab(r, m);
	if (ret < 0) {
		roots_free(r);
		return ret;
	}
done:
	*out = r;
	return 0;
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
