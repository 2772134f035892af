/* SPDX-License-Identifier: MIT */
/* What a module's ELF file says: its build ids, load bias and .eh_frame_hdr. */
#include "config.h"

#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/objfile.h"
#include "process/modules-impl.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

/* Reads the build-id out of one note buffer. */
static char *build_id_from_notes(Elf_Data *data)
{
	static const char hex[] = "0123456789abcdef";
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nhdr;
	size_t i;

	while (off < data->d_size &&
	       (next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)data->d_buf + name_off;

		if (nhdr.n_type == NT_GNU_BUILD_ID && nhdr.n_namesz == 4 &&
		    memcmp(name, "GNU", 4) == 0 && nhdr.n_descsz > 0 &&
		    nhdr.n_descsz <= 64) {
			const unsigned char *d =
				(const unsigned char *)data->d_buf + desc_off;
			char *s = malloc(nhdr.n_descsz * 2 + 1);

			if (!s)
				return NULL;
			for (i = 0; i < nhdr.n_descsz; i++) {
				s[2 * i] = hex[d[i] >> 4];
				s[2 * i + 1] = hex[d[i] & 15];
			}
			s[nhdr.n_descsz * 2] = '\0';
			return s;
		}
		off = next;
	}
	return NULL;
}

/*
 * Go's build id: a note named "Go" (Go pads the name to 4 bytes) of type 4 whose descriptor is the id as
 * printable text ("actionID/contentID" hashes, as `go tool buildid` prints).
 */
static char *go_build_id_from_notes(Elf_Data *data)
{
	size_t off = 0, next, name_off, desc_off, i;
	GElf_Nhdr nhdr;

	while (off < data->d_size &&
	       (next = gelf_getnote(data, off, &nhdr, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)data->d_buf + name_off;
		const char *d = (const char *)data->d_buf + desc_off;

		if (nhdr.n_type == 4 && (nhdr.n_namesz == 3 || nhdr.n_namesz == 4) &&
		    memcmp(name, "Go", 3) == 0 &&
		    nhdr.n_descsz > 0 && nhdr.n_descsz <= 256) {
			for (i = 0; i < nhdr.n_descsz; i++)
				if (d[i] <= ' ' || d[i] > '~')
					return NULL;
			return strndup(d, nhdr.n_descsz);
		}
		off = next;
	}
	return NULL;
}

/* Where the program headers say the file is loaded. */
struct load_facts {
	bool have_load, have_x_load;
	uint64_t first_rel;	/* first PT_LOAD's page vaddr - its page offset */
	uint64_t x_bias;	/* the bias, from the executable segment c maps */
	uint64_t rw_lo, rw_hi;	/* virtual pages of the writable PT_LOAD segments */
};

/* The build ids in a PT_NOTE segment, those mod has not found yet. */
static void read_phdr_notes(Elf *elf, const GElf_Phdr *ph, struct proc_module *mod)
{
	Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph->p_offset, ph->p_filesz,
					   ph->p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);

	if (d && !mod->build_id)
		mod->build_id = build_id_from_notes(d);
	if (d && !mod->go_build_id)
		mod->go_build_id = go_build_id_from_notes(d);
}

static void scan_phdrs(Elf *elf, size_t phnum, struct proc_module *mod,
		       const struct candidate *c, struct load_facts *lf)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t page_mask = ~(uint64_t)((page > 0 ? page : 4096) - 1);
	size_t i;

	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			break;
		if (ph.p_type == PT_LOAD && !lf->have_load) {
			/* The loader maps the first segment from its page at
			 * file offset 0 (base): bias = base - that page's vaddr. */
			lf->first_rel = (ph.p_vaddr & page_mask) - (ph.p_offset & page_mask);
			lf->have_load = true;
		}
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X) && !lf->have_x_load &&
		    c->text_offset >= (ph.p_offset & page_mask) &&
		    c->text_offset < ph.p_offset + ph.p_filesz) {
			/* The same bias, from where the text really is. */
			lf->x_bias = c->text_start + (ph.p_offset - c->text_offset) - ph.p_vaddr;
			lf->have_x_load = true;
		}
		if (ph.p_type == PT_LOAD && (ph.p_flags & PF_W)) {
			uint64_t lo = ph.p_vaddr & page_mask;
			uint64_t hi = (ph.p_vaddr + ph.p_memsz + ~page_mask) & page_mask;

			if (lf->rw_hi == 0 || lo < lf->rw_lo)
				lf->rw_lo = lo;
			if (hi > lf->rw_hi)
				lf->rw_hi = hi;
		}
		if (ph.p_type == PT_NOTE && (!mod->build_id || !mod->go_build_id))
			read_phdr_notes(elf, &ph, mod);
	}
}

/* PT_GNU_EH_FRAME, once the bias is known. */
static void find_eh_frame_hdr(Elf *elf, size_t phnum, struct proc_module *mod)
{
	size_t i;

	for (i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			break;
		if (ph.p_type == PT_GNU_EH_FRAME) {
			mod->eh_frame_hdr = mod->bias + ph.p_vaddr;
			mod->eh_frame_hdr_len = ph.p_memsz;
			return;
		}
	}
}

/* Objects without PT_NOTE (rare, hand-made): the build id from the sections. */
static void read_section_build_id(Elf *elf, struct proc_module *mod)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(elf, scn)) && !mod->build_id) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (d && (d->d_type == ELF_T_NHDR || d->d_type == ELF_T_NHDR8))
			mod->build_id = build_id_from_notes(d);
	}
}

void proc_module_read_facts(struct proc_module *mod, const struct candidate *c)
{
	struct load_facts lf = { 0 };
	GElf_Ehdr ehdr;
	size_t phnum;
	Elf *elf;

	if (!objfile_is_elf(mod->file))
		return;
	elf = objfile_lock(mod->file);
	if (!gelf_getehdr(elf, &ehdr) || elf_getphdrnum(elf, &phnum) != 0)
		goto unlock;

	scan_phdrs(elf, phnum, mod, c, &lf);
	if (c->have_base && lf.have_load) {
		mod->bias = c->base - lf.first_rel;
	} else if (lf.have_x_load) {
		/* No mapping at offset 0 (seen while the loader is still
		 * mapping the file): the executable segment is the truth. */
		mod->bias = lf.x_bias;
		mod->base = lf.x_bias + lf.first_rel;
	}
	find_eh_frame_hdr(elf, phnum, mod);
	/* The pages of every writable segment (and any between them): the
	 * rest is mapped from the file and never written. */
	mod->rw_start = lf.rw_lo;
	mod->rw_end = lf.rw_hi;
	if (!mod->build_id)
		read_section_build_id(elf, mod);
unlock:
	objfile_unlock(mod->file);
}
