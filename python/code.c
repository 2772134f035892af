/* SPDX-License-Identifier: MIT */
/* CPython code objects read once: names, file, line tables; lines of instructions. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/hash.h"
#include "python/internal.h"

/* Longest name or file name read, in characters. */
#define MAX_STR_CHARS 4096
/* Largest line table read: functions of a few thousand lines. */
#define MAX_LINETABLE (256u << 10)
/* Bytes of a code object read: enough for every field cprof uses. */
#define CODE_BYTES 256

static bool code_eq(const struct py_proc *py, uint32_t index, const uint64_t *addr)
{
	return py->codes[index].addr == *addr;
}

#define HTAB_NAME code_index
#define HTAB_CTX struct py_proc
#define HTAB_KEY uint64_t
#define HTAB_HASH(py, k) cprof_hash_finish(cprof_hash_mix(0, *(k)))
#define HTAB_COMPARE code_eq
#include "lib/htab-type.h"

/* Appends code point c as UTF-8 to out (room for 4 bytes). */
static size_t put_utf8(char *out, uint32_t c)
{
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c >= 0xd800 && (c < 0xe000 || c > 0x10ffff))
		c = 0xfffd;	/* a lone surrogate or no code point: not UTF-8 */
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | c >> 12);
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | c >> 18);
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* A compact str object as UTF-8 (malloc'd), or NULL. */
static char *read_str(const struct py_proc *py, uint64_t obj)
{
	const struct py_layout *l = &py->l;
	unsigned kind, compact, ascii;
	uint32_t state;
	int64_t len;
	uint8_t *raw = NULL;
	char *out = NULL;
	size_t i, k = 0;

	if (py_mem(py->pid, obj + l->uni_length, &len, sizeof(len)) < 0 ||
	    py_mem(py->pid, obj + l->uni_state, &state, sizeof(state)) < 0)
		return NULL;
	kind = (state >> 2) & 7;
	compact = (state >> 5) & 1;
	ascii = (state >> 6) & 1;
	if (!compact || len < 0 || len > MAX_STR_CHARS || (kind != 1 && kind != 2 && kind != 4))
		return NULL;
	raw = malloc((size_t)len * kind + 1);
	out = malloc((size_t)len * 4 + 1);
	if (!raw || !out ||
	    py_mem(py->pid, obj + (ascii ? l->uni_ascii_size : l->uni_compact_size), raw,
		   (size_t)len * kind) < 0) {
		free(out);
		out = NULL;
		goto out;
	}
	for (i = 0; i < (size_t)len; i++) {
		uint32_t c = kind == 1 ? raw[i] : kind == 2 ? ((uint16_t *)raw)[i] :
			     ((uint32_t *)raw)[i];

		k += put_utf8(out + k, c);
	}
	out[k] = '\0';
out:
	free(raw);
	return out;
}

/* A bytes object's contents (malloc'd, *len bytes), or NULL. */
static uint8_t *read_bytes(const struct py_proc *py, uint64_t obj, size_t *len)
{
	int64_t size;
	uint8_t *buf;

	if (py_mem(py->pid, obj + py->l.bytes_size, &size, sizeof(size)) < 0 || size < 0 ||
	    size > MAX_LINETABLE)
		return NULL;
	buf = malloc(size ? (size_t)size : 1);
	if (buf && py_mem(py->pid, obj + py->l.bytes_sval, buf, (size_t)size) < 0 && size) {
		free(buf);
		return NULL;
	}
	*len = (size_t)size;
	return buf;
}

static uint64_t field(const uint8_t *raw, uint16_t off)
{
	uint64_t v;

	memcpy(&v, raw + off, sizeof(v));
	return v;
}

/* Reads the code object at addr into c.  Returns 0 or -EFAULT. */
static int read_code(struct py_proc *py, uint64_t addr, struct py_code *c)
{
	const struct py_layout *l = &py->l;
	uint8_t raw[CODE_BYTES];
	int32_t first;

	memset(c, 0, sizeof(*c));
	if (py_mem(py->pid, addr, raw, sizeof(raw)) < 0)
		return -EFAULT;
	/* ob_type follows ob_refcnt: what is not a code object is not read. */
	if (py->code_type && field(raw, 8) != py->code_type)
		return -EFAULT;
	c->addr = addr;
	c->checked = py->epoch;
	c->name_obj = field(raw, l->minor >= 11 ? l->co_qualname : l->co_name);
	c->file_obj = field(raw, l->co_filename);
	c->linetable_obj = field(raw, l->co_linetable);
	c->name = read_str(py, c->name_obj);
	c->file = read_str(py, c->file_obj);
	memcpy(&first, raw + l->co_firstlineno, sizeof(first));
	c->firstlineno = first;
	c->linetable = read_bytes(py, c->linetable_obj, &c->linetable_len);
	return 0;
}

/*
 * Whether the code object cached as c is still the one at its address: a
 * code object freed (a module reloaded, code compiled at run time) may
 * have its memory reused by another, whose name, file, line table and
 * first line are other objects and numbers.
 */
static bool code_same(const struct py_proc *py, const struct py_code *c)
{
	const struct py_layout *l = &py->l;
	uint8_t raw[CODE_BYTES];
	int32_t first;

	if (py_mem(py->pid, c->addr, raw, sizeof(raw)) < 0)
		return false;
	memcpy(&first, raw + l->co_firstlineno, sizeof(first));
	return (!py->code_type || field(raw, 8) == py->code_type) &&
	       field(raw, l->minor >= 11 ? l->co_qualname : l->co_name) == c->name_obj &&
	       field(raw, l->co_filename) == c->file_obj &&
	       field(raw, l->co_linetable) == c->linetable_obj && first == c->firstlineno;
}

void py_proc_new_epoch(struct py_proc *py)
{
	py->epoch++;
}

const struct py_code *py_code_get(struct py_proc *py, uint64_t addr, uint32_t *index)
{
	uint32_t hash, ref;
	struct py_code c;

	ref = code_index_find(&py->code_index, py, &addr, &hash);
	if (ref) {
		struct py_code *old = &py->codes[ref - 1];

		if (old->checked == py->epoch || code_same(py, old)) {
			old->checked = py->epoch;
			*index = ref - 1;
			return old;
		}
		/* Another code object now: the old entry stays for the
		 * locations that name it, unfindable by address. */
		old->addr = 0;
	}
	if (cprof_htab_reserve(&py->code_index, 1) < 0 ||
	    cprof_grow(&py->codes, &py->cap_codes, py->n_codes + 1, sizeof(*py->codes), 64) < 0 ||
	    read_code(py, addr, &c) < 0)
		return NULL;
	py->codes[py->n_codes] = c;
	cprof_htab_add(&py->code_index, hash, py->n_codes);
	*index = (uint32_t)py->n_codes;
	return &py->codes[py->n_codes++];
}

/* 3.8-3.9 co_lnotab: (bytecode offset delta, signed line delta) pairs. */
static int lnotab_line(const struct py_code *c, int64_t offset)
{
	int line = c->firstlineno;
	int64_t addr = 0;
	size_t i;

	for (i = 0; i + 1 < c->linetable_len; i += 2) {
		addr += c->linetable[i];
		if (addr > offset)
			break;
		line += (int8_t)c->linetable[i + 1];
	}
	return line;
}

/* 3.10 co_linetable: (bytecode length, signed line delta or -128: none) pairs. */
static int linetable310_line(const struct py_code *c, int64_t offset)
{
	int line = c->firstlineno, cur = c->firstlineno;
	int64_t end = 0;
	size_t i;

	for (i = 0; i + 1 < c->linetable_len; i += 2) {
		int8_t delta = (int8_t)c->linetable[i + 1];
		int64_t start = end;

		end += c->linetable[i];
		if (delta != -128)
			cur += delta;
		line = delta == -128 ? 0 : cur;
		if (offset >= start && offset < end)
			return line;
	}
	return cur;
}

static uint64_t varint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*p >= end || shift > 60)
			return 0;
		b = *(*p)++;
		v |= (uint64_t)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

static int64_t svarint(const uint8_t **p, const uint8_t *end)
{
	uint64_t v = varint(p, end);

	return v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
}

/* 3.11+ co_linetable: entries of (code, length in code units), then data. */
static int locations_line(const struct py_code *c, int64_t index)
{
	const uint8_t *p = c->linetable, *end = p + c->linetable_len;
	int64_t line = c->firstlineno, at = 0;

	while (p < end) {
		uint8_t b = *p++;
		unsigned code = (b >> 3) & 15, len = (b & 7) + 1;
		bool none = false;

		if (!(b & 0x80))
			break;
		if (code == 15) {
			none = true;
		} else if (code == 14) {
			line += svarint(&p, end);
			varint(&p, end);
			varint(&p, end);
			varint(&p, end);
		} else if (code == 13) {
			line += svarint(&p, end);
		} else if (code >= 10) {
			line += code - 10;
			p += 2;
		} else {
			p += 1;
		}
		if (index < at + len)
			return none ? 0 : (int)line;
		at += len;
	}
	return 0;
}

int py_code_line(const struct py_proc *py, const struct py_code *c, uint64_t instr)
{
	int64_t index;

	if (!c->linetable)
		return c->firstlineno;
	if (py->l.minor <= 10) {
		int32_t lasti = (int32_t)instr;

		if (lasti < 0)
			return c->firstlineno;
		return py->l.minor <= 9 ? lnotab_line(c, lasti) : linetable310_line(c, 2 * (int64_t)lasti);
	}
	index = ((int64_t)instr - (int64_t)(c->addr + py->l.co_code_adaptive)) / 2;
	return index < 0 ? c->firstlineno : locations_line(c, index);
}

void py_codes_free(struct py_proc *py)
{
	size_t i;

	for (i = 0; i < py->n_codes; i++) {
		free(py->codes[i].name);
		free(py->codes[i].file);
		free(py->codes[i].linetable);
	}
	free(py->codes);
	free(py->locs);
	free(py->splice);
	py->splice = NULL;
	py->cap_splice = 0;
	free(py->tstates);
	py->tstates = NULL;
	py->n_tstates = py->cap_tstates = 0;
	cprof_htab_free(&py->code_index);
	cprof_htab_free(&py->loc_index);
	py->codes = NULL;
	py->locs = NULL;
	py->n_codes = py->cap_codes = py->n_locs = py->cap_locs = 0;
}
