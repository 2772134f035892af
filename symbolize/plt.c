/* SPDX-License-Identifier: MIT */
/* The PLT stubs of an x86-64 ELF file, named; see plt.h. */
#include "config.h"

#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/bsearch.h"
#include "lib/grow.h"
#include "symbolize/plt.h"

/* The stubs' size on x86-64, when a section does not say. */
#define PLT_ENTRY 16u

/* A GOT slot and the function a dynamic relocation binds it to. */
struct slot {
	uint64_t got;
	uint32_t name;		/* offset in names */
};

struct stub {
	uint64_t addr, end;
	uint32_t name;
};

struct sym_plt {
	struct stub *stubs;
	size_t n, cap;
	char *names;
	size_t len, cap_names;
};

/* What plt_read collects from the sections before the stubs are named. */
struct plt_scan {
	Elf *e;
	struct sym_plt *p;
	struct slot *slots;	/* by got, once sorted */
	size_t n_slots, cap_slots;
	Elf_Scn *jump[3];	/* .plt, .plt.sec, .plt.got */
};

static int add_name(struct sym_plt *p, const char *s, uint32_t *off)
{
	size_t n = strlen(s) + sizeof("@plt");

	if (p->len + n > UINT32_MAX || cprof_grow(&p->names, &p->cap_names, p->len + n, 1, 4096) < 0)
		return -ENOMEM;
	memcpy(p->names + p->len, s, n - sizeof("@plt"));
	memcpy(p->names + p->len + n - sizeof("@plt"), "@plt", sizeof("@plt"));
	*off = (uint32_t)p->len;
	p->len += n;
	return 0;
}

/* The GOT slots a SHT_RELA section binds to named functions (jump slots of
 * .rela.plt, GLOB_DAT of .rela.dyn for .plt.got). */
static int scan_rela(struct plt_scan *s, Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *data = elf_getdata(scn, NULL), *syms;
	Elf_Scn *symscn = elf_getscn(s->e, sh->sh_link);
	GElf_Shdr symsh;
	size_t i, n;

	if (!data || !symscn || !gelf_getshdr(symscn, &symsh) || !(syms = elf_getdata(symscn, NULL)))
		return 0;
	n = sh->sh_entsize ? (size_t)(sh->sh_size / sh->sh_entsize) : 0;
	for (i = 0; i < n; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		const char *name;
		uint32_t type;

		if (!gelf_getrela(data, (int)i, &r))
			break;
		type = (uint32_t)GELF_R_TYPE(r.r_info);
		if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
		    !GELF_R_SYM(r.r_info) || !gelf_getsym(syms, (int)GELF_R_SYM(r.r_info), &sym) ||
		    !(name = elf_strptr(s->e, symsh.sh_link, sym.st_name)) || !*name)
			continue;
		if (cprof_grow(&s->slots, &s->cap_slots, s->n_slots + 1, sizeof(*s->slots), 64) < 0 ||
		    add_name(s->p, name, &s->slots[s->n_slots].name) < 0)
			return -ENOMEM;
		s->slots[s->n_slots++].got = r.r_offset;
	}
	return 0;
}

/*
 * The GOT slot a stub at addr jumps through: its `jmp *disp32(%rip)`
 * (ff 25, perhaps after endbr64 and a bnd prefix) read from its first
 * bytes b.  Returns false for a stub without one (PLT0, the lazy stubs
 * of an IBT .plt, whose jumps are in .plt.sec).
 */
static bool stub_slot(const uint8_t *b, size_t len, uint64_t addr, uint64_t *got)
{
	size_t i;
	int32_t disp;

	for (i = 0; i + 6 <= len && i <= 6; i++) {
		if (b[i] == 0xff && b[i + 1] == 0x25) {
			memcpy(&disp, b + i + 2, 4);
			*got = addr + i + 6 + (uint64_t)(int64_t)disp;
			return true;
		}
	}
	return false;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;

	return x->got < y->got ? -1 : x->got > y->got;
}

static const struct slot *find_slot(const struct plt_scan *s, uint64_t got)
{
	struct slot key = { .got = got };

	return bsearch(&key, s->slots, s->n_slots, sizeof(*s->slots), cmp_slot);
}

/* Names the stubs of one PLT section by the slots they jump through. */
static int name_stubs(struct plt_scan *s, Elf_Scn *scn)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	GElf_Shdr sh;
	uint64_t off, step, got;
	const struct slot *slot;

	if (!data || !data->d_buf || !gelf_getshdr(scn, &sh))
		return 0;
	step = sh.sh_entsize >= 8 ? sh.sh_entsize : PLT_ENTRY;
	for (off = 0; off + step <= data->d_size; off += step) {
		if (!stub_slot((const uint8_t *)data->d_buf + off, (size_t)step, sh.sh_addr + off, &got) ||
		    !(slot = find_slot(s, got)))
			continue;
		if (cprof_grow(&s->p->stubs, &s->p->cap, s->p->n + 1, sizeof(*s->p->stubs), 64) < 0)
			return -ENOMEM;
		s->p->stubs[s->p->n++] = (struct stub){
			.addr = sh.sh_addr + off, .end = sh.sh_addr + off + step, .name = slot->name,
		};
	}
	return 0;
}

static int cmp_stub(const void *a, const void *b)
{
	const struct stub *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* The sections of s->e: the relocations read, the PLTs found. */
static int scan_sections(struct plt_scan *s)
{
	static const char *const jumps[] = { ".plt", ".plt.sec", ".plt.got" };
	Elf_Scn *scn = NULL;
	size_t shstrndx, i;
	GElf_Shdr sh;
	const char *name;
	int ret;

	if (elf_getshdrstrndx(s->e, &shstrndx) < 0)
		return -EIO;
	while ((scn = elf_nextscn(s->e, scn))) {
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(s->e, shstrndx, sh.sh_name)))
			continue;
		if (sh.sh_type == SHT_RELA && sh.sh_link) {
			ret = scan_rela(s, scn, &sh);
			if (ret < 0)
				return ret;
		}
		for (i = 0; i < sizeof(jumps) / sizeof(jumps[0]); i++) {
			if (sh.sh_type == SHT_PROGBITS && strcmp(name, jumps[i]) == 0)
				s->jump[i] = scn;
		}
	}
	return 0;
}

int sym_plt_read(Elf *elf, struct sym_plt **out)
{
	struct plt_scan s = { .e = elf };
	GElf_Ehdr eh;
	size_t i;
	int ret = -ENOENT;

	*out = NULL;
	s.p = calloc(1, sizeof(*s.p));
	if (!s.p)
		return -ENOMEM;
	if (!s.e || elf_kind(s.e) != ELF_K_ELF || !gelf_getehdr(s.e, &eh) ||
	    eh.e_machine != EM_X86_64)
		goto out;
	ret = scan_sections(&s);
	if (ret < 0)
		goto out;
	/* (no relocation of a GOT slot: a static or Go binary has no PLT) */
	if (!s.n_slots) {
		ret = -ENOENT;
		goto out;
	}
	qsort(s.slots, s.n_slots, sizeof(*s.slots), cmp_slot);
	for (i = 0; i < 3 && !ret; i++)
		ret = s.jump[i] ? name_stubs(&s, s.jump[i]) : 0;
	if (!ret && !s.p->n)
		ret = -ENOENT;
	if (!ret) {
		qsort(s.p->stubs, s.p->n, sizeof(*s.p->stubs), cmp_stub);
		*out = s.p;
		s.p = NULL;
	}
out:
	free(s.slots);
	sym_plt_free(s.p);
	return ret;
}

void sym_plt_free(struct sym_plt *p)
{
	if (!p)
		return;
	free(p->stubs);
	free(p->names);
	free(p);
}

const char *sym_plt_lookup(const struct sym_plt *p, uint64_t vaddr)
{
	size_t lo;

	lo = cprof_count_le(p->stubs, p->n, sizeof(*p->stubs), offsetof(struct stub, addr), vaddr);
	if (!lo || vaddr >= p->stubs[lo - 1].end)
		return NULL;
	return p->names + p->stubs[lo - 1].name;
}
