/* SPDX-License-Identifier: MIT */
/* Reading Go's pc-line table: functions, names, SP deltas, lines. */
#include "config.h"

#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "elf/gopclntab.h"
#include "lib/grow.h"
#include "lib/unaligned.h"

/* Header words after magic(4), pad(2), minLC(1), ptrSize(1): nfunc, nfiles,
 * textStart, funcnameOffset, cuOffset, filetabOffset, pctabOffset,
 * pclnOffset (runtime/symtab.go pcHeader). */
enum { H_NFUNC, H_NFILES, H_TEXT, H_FUNCNAME, H_CU, H_FILETAB, H_PCTAB, H_PCLN, H_WORDS };

/* _func (runtime/runtime2.go): entryoff, nameoff, args, deferreturn, pcsp,
 * pcfile, pcln, npcdata, cuOffset, ... as uint32 words. */
enum { F_ENTRY, F_NAME, F_ARGS, F_DEFER, F_PCSP, F_PCFILE, F_PCLN, F_NPCDATA, F_CU, F_WORDS };

struct gopcln {
	uint8_t *data;
	size_t len;
	uint64_t text;		/* textStart, link-time */
	uint64_t nfunc;
	unsigned quantum;	/* minLC */
	const uint8_t *funcname, *cutab, *filetab, *pctab, *functab;
	size_t funcname_len, cutab_len, filetab_len, pctab_len, functab_len;
};

/* Copies the .gopclntab section; *text_addr gets .text's address. */
static int read_section(Elf *e, uint8_t **buf, size_t *len, uint64_t *text_addr)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int ret = -ENOENT;

	if (!e || elf_kind(e) != ELF_K_ELF || elf_getshdrstrndx(e, &shstrndx) < 0)
		return -EINVAL;
	*text_addr = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		if (!strcmp(name, ".text"))
			*text_addr = sh.sh_addr;
		/* PIE builds put it in .data.rel.ro.gopclntab. */
		if ((strcmp(name, ".gopclntab") && strcmp(name, ".data.rel.ro.gopclntab")) ||
		    sh.sh_type != SHT_PROGBITS || ret == 0)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || d->d_size < 8 + 8 * H_WORDS) {
			ret = -EINVAL;
			continue;
		}
		*buf = malloc(d->d_size);
		if (!*buf) {
			ret = -ENOMEM;
			break;
		}
		memcpy(*buf, d->d_buf, d->d_size);
		*len = d->d_size;
		ret = 0;
	}
	return ret;
}

/* Sets *p and *plen to the part of the table at header offset off. */
static bool region(struct gopcln *t, uint64_t off, const uint8_t **p, size_t *plen)
{
	if (off >= t->len)
		return false;
	*p = t->data + off;
	*plen = t->len - off;
	return true;
}

int gopcln_open(struct gopcln **out, Elf *elf)
{
	uint64_t h[H_WORDS], text_addr = 0;
	struct gopcln *t;
	uint32_t magic;
	int ret, i;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	ret = read_section(elf, &t->data, &t->len, &text_addr);
	if (ret < 0)
		goto err;
	magic = cprof_load_u32(t->data);
	ret = -ENOTSUP;
	if ((magic != 0xfffffff0u && magic != 0xfffffff1u) || t->data[4] || t->data[5] ||
	    t->data[7] != 8 || !t->data[6])
		goto err;
	for (i = 0; i < H_WORDS; i++)
		h[i] = cprof_load_u64(t->data + 8 + 8 * i);
	t->quantum = t->data[6];
	t->nfunc = h[H_NFUNC];
	t->text = h[H_TEXT] ? h[H_TEXT] : text_addr;
	ret = -EINVAL;
	if (!region(t, h[H_FUNCNAME], &t->funcname, &t->funcname_len) ||
	    !region(t, h[H_CU], &t->cutab, &t->cutab_len) ||
	    !region(t, h[H_FILETAB], &t->filetab, &t->filetab_len) ||
	    !region(t, h[H_PCTAB], &t->pctab, &t->pctab_len) ||
	    !region(t, h[H_PCLN], &t->functab, &t->functab_len) ||
	    !t->nfunc || (t->nfunc + 1) * 8 > t->functab_len)
		goto err;
	*out = t;
	return 0;
err:
	gopcln_close(t);
	return ret;
}

void gopcln_close(struct gopcln *p)
{
	if (!p)
		return;
	free(p->data);
	free(p);
}

size_t gopcln_count(const struct gopcln *p)
{
	return (size_t)p->nfunc;
}

/* A NUL-terminated string at off in a region, or NULL. */
static const char *str_at(const uint8_t *base, size_t len, uint64_t off)
{
	if (off >= len || !memchr(base + off, 0, len - off))
		return NULL;
	return (const char *)base + off;
}

int gopcln_func_at(const struct gopcln *p, size_t i, struct gopcln_func *f)
{
	const uint8_t *e;
	uint32_t funcoff;
	int32_t nameoff;

	if (i >= p->nfunc)
		return -EINVAL;
	e = p->functab + 8 * i;
	funcoff = cprof_load_u32(e + 4);
	if ((uint64_t)funcoff + 4 * F_WORDS > p->functab_len)
		return -EINVAL;
	f->entry = p->text + cprof_load_u32(e);
	f->end = p->text + cprof_load_u32(e + 8);
	f->off = funcoff;
	nameoff = (int32_t)cprof_load_u32(p->functab + funcoff + 4 * F_NAME);
	f->name = nameoff >= 0 ? str_at(p->funcname, p->funcname_len, (uint64_t)nameoff) : NULL;
	return f->end > f->entry ? 0 : -EINVAL;
}

int gopcln_find(const struct gopcln *p, uint64_t addr, struct gopcln_func *f)
{
	size_t lo = 0, hi = (size_t)p->nfunc;

	if (addr < p->text)
		return -ENOENT;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->text + cprof_load_u32(p->functab + 8 * mid) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || gopcln_func_at(p, lo - 1, f) < 0 || addr >= f->end)
		return -ENOENT;
	return 0;
}

static uint32_t func_word(const struct gopcln *p, const struct gopcln_func *f, int w)
{
	return cprof_load_u32(p->functab + f->off + 4 * w);
}

/* An unsigned LEB128 varint from the pc table at *off; false past its end. */
static bool uvarint(const struct gopcln *p, size_t *off, uint32_t *v)
{
	unsigned shift = 0;

	*v = 0;
	while (*off < p->pctab_len && shift < 35) {
		uint8_t b = p->pctab[(*off)++];

		*v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return true;
		shift += 7;
	}
	return false;
}

/*
 * One step of a pc-value table (runtime.step): the value changes by a
 * zig-zag delta, then holds up to *pc.  Returns false at the end.
 */
static bool step(const struct gopcln *p, size_t *off, uint64_t *pc, int32_t *val, bool first)
{
	uint32_t uv, pcdelta;

	if (!uvarint(p, off, &uv) || (uv == 0 && !first))
		return false;
	/* Unsigned, as the table's values may be garbage: no overflow. */
	*val = (int32_t)((uint32_t)*val + ((uv >> 1) ^ (0u - (uv & 1))));
	if (!uvarint(p, off, &pcdelta))
		return false;
	*pc += (uint64_t)pcdelta * p->quantum;
	return true;
}

/* The value of table tab (offset into pctab) at addr in f. */
static int pcvalue(const struct gopcln *p, const struct gopcln_func *f, uint32_t tab,
		   uint64_t addr, int32_t *out)
{
	size_t off = tab;
	uint64_t pc = f->entry;
	int32_t val = -1;
	bool first = true;

	if (!tab)
		return -ENOENT;
	while (step(p, &off, &pc, &val, first)) {
		first = false;
		if (addr < pc) {
			*out = val;
			return 0;
		}
	}
	return -ENOENT;
}

int gopcln_line(const struct gopcln *p, const struct gopcln_func *f, uint64_t addr,
		const char **file, int *line)
{
	int32_t fileno, ln;
	uint64_t cu;
	uint32_t foff;

	if (pcvalue(p, f, func_word(p, f, F_PCFILE), addr, &fileno) < 0 ||
	    pcvalue(p, f, func_word(p, f, F_PCLN), addr, &ln) < 0 || fileno < 0 || ln <= 0)
		return -ENOENT;
	cu = (uint64_t)func_word(p, f, F_CU) + (uint64_t)fileno;
	if ((cu + 1) * 4 > p->cutab_len)
		return -ENOENT;
	foff = cprof_load_u32(p->cutab + 4 * cu);
	*file = foff == UINT32_MAX ? NULL : str_at(p->filetab, p->filetab_len, foff);
	if (!*file)
		return -ENOENT;
	*line = ln;
	return 0;
}

/* A growing byte buffer for the CFI. */
struct out {
	char *b;
	size_t n, cap;
	bool oom;
};

static void put(struct out *o, const void *src, size_t n)
{
	if (o->oom)
		return;
	if (n > SIZE_MAX - o->n || cprof_grow(&o->b, &o->cap, o->n + n, 1, 65536) < 0) {
		o->oom = true;
		return;
	}
	memcpy(o->b + o->n, src, n);
	o->n += n;
}

static void put_u8(struct out *o, uint8_t v) { put(o, &v, 1); }
static void put_u32(struct out *o, uint32_t v) { put(o, &v, 4); }
static void put_u64(struct out *o, uint64_t v) { put(o, &v, 8); }

static void put_uleb(struct out *o, uint64_t v)
{
	do {
		uint8_t b = v & 0x7f;

		v >>= 7;
		put_u8(o, v ? b | 0x80 : b);
	} while (v);
}

#define DW_CFA_advance_loc4 0x04
#define DW_CFA_def_cfa 0x0c
#define DW_CFA_def_cfa_offset 0x0e
#define DW_CFA_offset 0x80
#define DWARF_RSP 7
#define DWARF_RA 16

/* Sets the 32-bit length of the entry starting at start. */
static void close_entry(struct out *o, size_t start)
{
	uint32_t len = (uint32_t)(o->n - start - 4);

	if (!o->oom)
		memcpy(o->b + start, &len, 4);
}

int gopcln_make_cfi(const struct gopcln *p, char **buf, size_t *len)
{
	struct out o = { 0 };
	size_t i, start;

	/* CIE: version 3, no augmentation, code align 1, data align -8, RA is
	 * column 16; at a function's entry CFA = rsp + 8, RA at CFA - 8. */
	start = o.n;
	put_u32(&o, 0);
	put_u32(&o, 0xffffffffu);
	put_u8(&o, 3);
	put_u8(&o, 0);
	put_uleb(&o, 1);
	put_u8(&o, 0x78);	/* sleb128 -8 */
	put_uleb(&o, DWARF_RA);
	put_u8(&o, DW_CFA_def_cfa);
	put_uleb(&o, DWARF_RSP);
	put_uleb(&o, 8);
	put_u8(&o, DW_CFA_offset | DWARF_RA);
	put_uleb(&o, 1);
	close_entry(&o, start);

	for (i = 0; i < p->nfunc; i++) {
		struct gopcln_func f;
		uint64_t pc, last_pc;
		int32_t val = -1, last = 0;
		size_t off;
		bool first = true;

		if (gopcln_func_at(p, i, &f) < 0 || !func_word(p, &f, F_PCSP))
			continue;
		start = o.n;
		put_u32(&o, 0);
		put_u32(&o, 0);		/* the CIE, at offset 0 */
		put_u64(&o, f.entry);
		put_u64(&o, f.end - f.entry);
		/* Each row of the pcsp table holds from the previous pc up to
		 * its own; the value is the SP delta, CFA = rsp + delta + 8. */
		off = func_word(p, &f, F_PCSP);
		pc = last_pc = f.entry;
		while (pc < f.end) {
			uint64_t row_start = pc;

			if (!step(p, &off, &pc, &val, first))
				break;
			first = false;
			if (val < 0)
				break;
			if (val != last) {
				if (row_start > last_pc) {
					put_u8(&o, DW_CFA_advance_loc4);
					put_u32(&o, (uint32_t)(row_start - last_pc));
					last_pc = row_start;
				}
				put_u8(&o, DW_CFA_def_cfa_offset);
				put_uleb(&o, (uint64_t)val + 8);
				last = val;
			}
		}
		while ((o.n - start) % 8)
			put_u8(&o, 0);	/* DW_CFA_nop */
		close_entry(&o, start);
	}
	if (o.oom) {
		free(o.b);
		return -ENOMEM;
	}
	*buf = o.b;
	*len = o.n;
	return 0;
}
