/* SPDX-License-Identifier: MIT */
/* .debug_frame FDE index per module, searched through libunwind's table format. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "unwind/debug_frame.h"
#include "elf/gopclntab.h"
#include "elf/objfile.h"
#include "lib/unaligned.h"

extern int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
					       unw_dyn_info_t *di, unw_proc_info_t *pi,
					       int need_unwind_info, void *arg);

/*
 * libunwind reads a UNW_INFO_FORMAT_TABLE unwind table as its own
 * struct unw_debug_frame_list (include/dwarf.h, unchanged from 1.1 through
 * 1.8): the section in local memory plus a sorted index of
 * { int32 start_ip, int32 offset of the FDE in the section }.  Both are
 * parsed with libunwind's local address space, i.e. straight from this
 * process's memory, which is what we want: the copy is ours.  These two
 * mirror its layout; doc/unwinding.md says why this is relied upon.
 */
struct lu_table_entry {
	int32_t start_ip_offset;
	int32_t fde_offset;
};

struct lu_debug_frame_list {
	unw_word_t start;
	unw_word_t end;
	unw_word_t load_offset;
	char *debug_frame;
	size_t debug_frame_size;
	struct lu_table_entry *index;
	size_t index_size;	/* in bytes */
	struct lu_debug_frame_list *next;
};

struct dframe {
	struct lu_debug_frame_list list;
	unw_word_t start_ip;	/* runtime span the index may answer for */
	unw_word_t end_ip;
	size_t count;
};

/*
 * Copies the (decompressed) .debug_frame of the ELF file f, if any.  Go
 * compresses its DWARF (SHF_COMPRESSED, zlib): the handle then keeps the
 * section decompressed, for any later reader of the file.
 */
static int copy_section(Elf *elf, char **buf, size_t *len)
{
	Elf_Scn *scn;
	GElf_Shdr sh;
	Elf_Data *d;

	scn = objfile_section(elf, ".debug_frame", SHT_PROGBITS, &sh);
	if (!scn)
		return -ENOENT;
	if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return -EINVAL;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || !d->d_size || d->d_size > INT32_MAX)
		return -EINVAL;
	*buf = malloc(d->d_size);
	if (!*buf)
		return -ENOMEM;
	memcpy(*buf, d->d_buf, d->d_size);
	*len = d->d_size;
	return 0;
}

static int read_section(struct objfile *f, char **buf, size_t *len)
{
	int ret;

	if (!objfile_is_elf(f))
		return -EINVAL;
	ret = copy_section(objfile_lock(f), buf, len);
	objfile_unlock(f);
	return ret;
}

/* The section from the module's file, else from its build-id debuginfo. */
static int load_section(const struct proc_module *m, char **buf, size_t *len)
{
	struct objfile *debug;
	int ret = -ENOENT;

	if (m->file) {
		ret = read_section(m->file, buf, len);
		if (ret != -ENOENT && ret != -EINVAL)
			return ret;
	}
	if (objfile_open_debug(&debug, m->build_id) < 0)
		return ret;
	ret = read_section(debug, buf, len);
	objfile_close(debug);
	return ret;
}

/* No .debug_frame (a Go binary built with -ldflags=-s -w): CFI made from
 * Go's own pc-line table, whose SP deltas are what Go unwinds with. */
static int go_section(const struct proc_module *m, char **buf, size_t *len)
{
	struct gopcln *p;
	int ret;

	if (!m->file)
		return -ENOENT;
	ret = gopcln_open(&p, objfile_lock(m->file));
	objfile_unlock(m->file);
	if (ret < 0)
		return ret == -ENOMEM ? ret : -ENOENT;
	ret = gopcln_make_cfi(p, buf, len);
	gopcln_close(p);
	return ret;
}

/*
 * One pass over the entries; with out, records each FDE whose start fits
 * libunwind's int32 index.  x86_64 only: FDE addresses are 8 bytes.
 */
static size_t index_fdes(const char *buf, size_t len, struct lu_table_entry *out)
{
	size_t off = 0, n = 0;

	while (off + 4 <= len) {
		uint64_t unit, id, start, range;
		size_t hdr, body;
		bool is64;

		unit = cprof_load_u32(buf + off);
		if (unit == 0)
			break;
		is64 = unit == 0xffffffffu;
		if (is64) {
			if (off + 12 > len)
				break;
			unit = cprof_load_u64(buf + off + 4);
			hdr = 12;
		} else {
			hdr = 4;
		}
		if (unit > len - off - hdr)
			break;
		body = off + hdr;
		if (unit < (is64 ? 8u : 4u) + 16)
			goto next;
		id = is64 ? cprof_load_u64(buf + body) : cprof_load_u32(buf + body);
		if (id == (is64 ? ~0ull : 0xffffffffull))
			goto next;	/* a CIE */
		body += is64 ? 8 : 4;
		start = cprof_load_u64(buf + body);
		range = cprof_load_u64(buf + body + 8);
		/* FDEs of discarded code keep address 0; skip them and any
		 * start beyond libunwind's int32 index. */
		if (!range || !start || start > INT32_MAX || off > INT32_MAX)
			goto next;
		if (out) {
			out[n].start_ip_offset = (int32_t)start;
			out[n].fde_offset = (int32_t)off;
		}
		n++;
next:
		off += hdr + unit;
	}
	return n;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct lu_table_entry *x = a, *y = b;

	return (x->start_ip_offset > y->start_ip_offset) - (x->start_ip_offset < y->start_ip_offset);
}

int dframe_load(struct dframe **out, const struct proc_module *m)
{
	struct dframe *d;
	char *buf = NULL;
	size_t len = 0, n;
	int ret;

	ret = load_section(m, &buf, &len);
	if (ret == -ENOENT || ret == -EINVAL)
		ret = go_section(m, &buf, &len);
	if (ret < 0)
		return ret;
	n = index_fdes(buf, len, NULL);
	if (!n) {
		ret = -ENOENT;
		goto err_buf;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		ret = -ENOMEM;
		goto err_buf;
	}
	d->list.index = malloc(n * sizeof(*d->list.index));
	if (!d->list.index) {
		ret = -ENOMEM;
		goto err_d;
	}
	index_fdes(buf, len, d->list.index);
	qsort(d->list.index, n, sizeof(*d->list.index), cmp_entry);
	d->count = n;
	d->list.index_size = n * sizeof(*d->list.index);
	d->list.debug_frame = buf;
	d->list.debug_frame_size = len;
	d->list.load_offset = m->bias;
	d->list.start = m->text_start;
	d->list.end = m->text_end;
	d->start_ip = m->text_start;
	d->end_ip = m->text_end;
	*out = d;
	return 0;

err_d:
	free(d);
err_buf:
	free(buf);
	return ret;
}

void dframe_free(struct dframe *d)
{
	if (!d)
		return;
	free(d->list.index);
	free(d->list.debug_frame);
	free(d);
}

size_t dframe_count(const struct dframe *d)
{
	return d ? d->count : 0;
}

int dframe_find_proc_info(struct dframe *d, unw_addr_space_t as, unw_word_t ip,
			  unw_proc_info_t *pi, int need_unwind_info, void *arg)
{
	unw_dyn_info_t di;

	if (ip < d->start_ip || ip >= d->end_ip)
		return -UNW_ENOINFO;
	memset(&di, 0, sizeof(di));
	di.format = UNW_INFO_FORMAT_TABLE;
	di.start_ip = d->start_ip;
	di.end_ip = d->end_ip;
	/* FDE addresses are link-time: libunwind adds load_offset (the bias)
	 * to them, and looks ip - segbase - load_offset up in the index. */
	di.load_offset = d->list.load_offset;
	di.u.ti.segbase = 0;
	di.u.ti.table_len = sizeof(d->list) / sizeof(unw_word_t);
	di.u.ti.table_data = (unw_word_t *)&d->list;
	return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
}
