/* SPDX-License-Identifier: MIT */
/* Finding CPython in a process: _PyRuntime, the exact version, the layout. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf/objfile.h"
#include "python/internal.h"

/* The symbols cprof reads, by name: value and size, 0 when absent. */
struct py_syms {
	GElf_Sym runtime, version, eval, code_type;
};

static void note_sym(struct py_syms *s, const char *name, const GElf_Sym *sym)
{
	static const struct {
		const char *name;
		size_t off;
	} wanted[] = {
		{ "_PyRuntime", offsetof(struct py_syms, runtime) },
		{ "Py_Version", offsetof(struct py_syms, version) },
		{ "_PyEval_EvalFrameDefault", offsetof(struct py_syms, eval) },
		{ "PyCode_Type", offsetof(struct py_syms, code_type) },
	};
	size_t i;

	if (sym->st_shndx == SHN_UNDEF || !sym->st_value)
		return;
	for (i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++)
		if (!strcmp(name, wanted[i].name))
			memcpy((char *)s + wanted[i].off, sym, sizeof(*sym));
}

/* Scans the symbol tables (.dynsym, which stripped builds keep, and .symtab). */
static void scan_syms(Elf *elf, struct py_syms *s)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_DYNSYM && sh.sh_type != SHT_SYMTAB) ||
		    !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    !(name = elf_strptr(elf, sh.sh_link, sym.st_name)))
				continue;
			if (name[0] == '_' || name[0] == 'P')
				note_sym(s, name, &sym);
		}
	}
}

/* Whether s is a CPython version string of minor version minor ("3.9.18"). */
static bool is_version(const char *s, size_t len, unsigned minor)
{
	char prefix[16];
	size_t k = (size_t)snprintf(prefix, sizeof(prefix), "3.%u.", minor), i;

	if (len <= k || len > 20 || memcmp(s, prefix, k))
		return false;
	for (i = k; i < len; i++)
		if (!isdigit((unsigned char)s[i]) && !strchr("abrc+", s[i]))
			return false;
	return isdigit((unsigned char)s[k]);
}

/* The version string (PY_VERSION) among the module's read-only strings. */
static bool rodata_version(Elf *elf, unsigned minor, char *out, size_t len)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *name, *p, *end;
		size_t i;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".rodata") || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		p = d->d_buf;
		end = p + d->d_size;
		while (p < end) {
			size_t n = strnlen(p, (size_t)(end - p));

			/* Linkers merge "3.8.18" into the tail of a longer string
			 * ("Python-3.8.18", a path), so tails count too. */
			for (i = 0; i < n; i++) {
				if ((i == 0 || strchr("-/ ", p[i - 1])) &&
				    is_version(p + i, n - i, minor)) {
					snprintf(out, len, "%.*s", (int)(n - i), p + i);
					return true;
				}
			}
			p += n + 1;
		}
	}
	return false;
}

/* The minor version from a module's file name: python3.9, libpython3.10.so... */
static unsigned path_minor(const char *path)
{
	const char *b = strrchr(path, '/'), *p;

	b = b ? b + 1 : path;
	p = strstr(b, "python3.");
	return p ? (unsigned)strtoul(p + 8, NULL, 10) : 0;
}

static int open_symbols(const struct proc_module *mod, struct py_syms *s, Elf **elfp)
{
	Elf *elf;

	if (!mod->file || mod->is_vdso || !mod->mapped)
		return -ENOENT;
	/* The module's one ELF handle, which the module table owns: held
	 * until the caller's objfile_unlock on success. */
	elf = objfile_lock(mod->file);
	memset(s, 0, sizeof(*s));
	scan_syms(elf, s);
	if (!s->runtime.st_value) {
		objfile_unlock(mod->file);
		return -ENOENT;
	}
	*elfp = elf;
	return 0;
}

/* The exact version: Py_Version (3.11+), else the module's version string. */
static int find_version(struct py_proc *py, Elf *elf, const struct py_syms *s)
{
	uint32_t hex;
	unsigned minor;

	if (s->version.st_value &&
	    py_mem(py->pid, s->version.st_value + py->mod->bias, &hex, sizeof(hex)) == 0 &&
	    hex >> 24 == 3) {
		snprintf(py->version, sizeof(py->version), "3.%u.%u", (hex >> 16) & 0xff,
			 (hex >> 8) & 0xff);
		py->l.minor = (hex >> 16) & 0xff;
		return 0;
	}
	minor = path_minor(py->mod->path);
	if (minor && rodata_version(elf, minor, py->version, sizeof(py->version))) {
		py->l.minor = (uint16_t)minor;
		return 0;
	}
	if (minor) {
		snprintf(py->version, sizeof(py->version), "3.%u", minor);
		py->l.minor = (uint16_t)minor;
		return 0;
	}
	snprintf(py->version, sizeof(py->version), "3.?");
	return -EPROTO;
}

static int refuse(struct py_proc *py, char *why, size_t why_len)
{
	snprintf(why, why_len, "python frames: unknown CPython layout %s; native frames only",
		 py->version);
	return -EPROTO;
}

/* Version, layout and its check, for the module that has _PyRuntime. */
static int setup(struct py_proc *py, Elf *elf, const struct py_syms *s, char *why, size_t why_len)
{
	const struct py_layout *t;
	uint16_t minor;

	py->runtime = s->runtime.st_value + py->mod->bias;
	py->eval_start = s->eval.st_value ? s->eval.st_value + py->mod->bias : 0;
	py->eval_end = py->eval_start + s->eval.st_size;
	py->code_type = s->code_type.st_value ? s->code_type.st_value + py->mod->bias : 0;
	if (find_version(py, elf, s) < 0)
		return refuse(py, why, why_len);
	minor = py->l.minor;
	if (minor >= 13) {
		if (py_layout_debug_offsets(py->pid, py->runtime, &py->l) < 0)
			return refuse(py, why, why_len);
	} else if ((t = py_layout_table(minor))) {
		py->l = *t;
	} else {
		return refuse(py, why, why_len);
	}
	if (!py->eval_start || py_layout_check(py) < 0)
		return refuse(py, why, why_len);
	return 0;
}

int py_proc_open(struct py_proc **out, pid_t pid, const struct proc_modules *mods, char *why,
		 size_t why_len)
{
	size_t i, n = proc_modules_count(mods);
	struct py_proc *py;
	int ret = -ENOENT;

	why[0] = '\0';
	py = calloc(1, sizeof(*py));
	if (!py)
		return -ENOMEM;
	py->pid = pid;
	for (i = 1; i <= n && ret == -ENOENT; i++) {
		const struct proc_module *mod = proc_modules_get(mods, (uint32_t)i);
		struct py_syms s;
		Elf *elf;

		if (!mod || open_symbols(mod, &s, &elf) < 0)
			continue;
		py->mod = mod;
		ret = setup(py, elf, &s, why, why_len);
		objfile_unlock(mod->file);
	}
	if (ret < 0) {
		free(py);
		return ret;
	}
	*out = py;
	return 0;
}

void py_proc_close(struct py_proc *py)
{
	if (!py)
		return;
	py_codes_free(py);
	free(py);
}

const char *py_proc_version(const struct py_proc *py)
{
	return py->version;
}

const char *py_proc_module(const struct py_proc *py)
{
	return py->mod ? py->mod->path : "";
}
