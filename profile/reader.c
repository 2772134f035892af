/* SPDX-License-Identifier: MIT */
/* Reading a pprof profile back: gunzip, protobuf-c decode, ids resolved to pointers. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <protobuf-c/protobuf-c.h>
#include <zlib.h>

#include "profile/profile.pb-c.h"
#include "profile/reader-impl.h"
#include "profile/reader.h"

/*
 * A bigger profile than this is more likely a gzip bomb than a profile; the
 * largest real ones (hours of many threads) stay well below.
 */
#define RD_MAX_DECODED ((size_t)1 << 31)

/*
 * pprof allows any non-zero ids; writers (Go, cprof) use 1..N in array
 * order, so that case is a plain subscript and only others pay for a
 * sorted table and binary search.
 */
struct id_pair {
	uint64_t id;
	size_t index;
};

struct id_index {
	size_t n;
	struct id_pair *sorted;	/* NULL when ids are 1..n in order */
};

/* Line with function_id 0: the API promises a function, so an empty one. */
static const struct prof_rd_function no_function = { "", "", "", 0 };

static int cmp_pair(const void *a, const void *b)
{
	const struct id_pair *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* ids[i] of n objects; -EBADMSG on a zero or repeated id. */
static int index_build(struct id_index *ix, const uint64_t *ids, size_t n)
{
	size_t i;

	ix->n = n;
	ix->sorted = NULL;
	for (i = 0; i < n; i++)
		if (ids[i] != i + 1)
			break;
	if (i == n)
		return 0;
	ix->sorted = calloc(n, sizeof(*ix->sorted));
	if (!ix->sorted)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (ids[i] == 0)
			return -EBADMSG;
		ix->sorted[i].id = ids[i];
		ix->sorted[i].index = i;
	}
	qsort(ix->sorted, n, sizeof(*ix->sorted), cmp_pair);
	for (i = 1; i < n; i++)
		if (ix->sorted[i].id == ix->sorted[i - 1].id)
			return -EBADMSG;
	return 0;
}

/* Index of id, or -1 when no object has it. */
static ssize_t index_find(const struct id_index *ix, uint64_t id)
{
	size_t lo = 0, hi = ix->n;

	if (!ix->sorted)
		return id >= 1 && id <= ix->n ? (ssize_t)(id - 1) : -1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ix->sorted[mid].id == id)
			return (ssize_t)ix->sorted[mid].index;
		if (ix->sorted[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* String i of the table, or NULL when the index points outside it. */
static const char *str_at(const Perftools__Profiles__Profile *m, int64_t i)
{
	if (i < 0 || (uint64_t)i >= m->n_string_table)
		return NULL;
	return m->string_table[i];
}

#define BAD(reason) do { *why = (reason); ret = -EBADMSG; goto out; } while (0)

/* Inflates gzip data, members one after another as gzip(1) and Go accept. */
static int gunzip(const unsigned char *in, size_t len, unsigned char **out, size_t *out_len,
		  const char **why)
{
	unsigned char *buf = NULL, *nbuf;
	size_t cap = len * 4 + 4096, used = 0;
	z_stream zs;
	int ret = 0, zr;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return -ENOMEM;
	zs.next_in = (unsigned char *)in;
	zs.avail_in = (uInt)len;
	if (len > UINT32_MAX)
		BAD("compressed file over 4 GiB");
	for (;;) {
		if (used == cap || !buf) {
			if (buf)
				cap *= 2;
			if (cap > RD_MAX_DECODED)
				cap = RD_MAX_DECODED;
			if (buf && used == cap)
				BAD("more than 2 GiB once decompressed");
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				ret = -ENOMEM;
				goto out;
			}
			buf = nbuf;
		}
		zs.next_out = buf + used;
		zs.avail_out = (uInt)(cap - used);
		zr = inflate(&zs, Z_NO_FLUSH);
		used = cap - zs.avail_out;
		if (zr == Z_STREAM_END) {
			if (zs.avail_in == 0)
				break;
			if (zs.avail_in < 2 || zs.next_in[0] != 0x1f || zs.next_in[1] != 0x8b)
				BAD("data after the end of the gzip stream");
			if (inflateReset(&zs) != Z_OK)
				BAD("bad gzip data");
			continue;
		}
		if (zr == Z_MEM_ERROR) {
			ret = -ENOMEM;
			goto out;
		}
		if (zr == Z_BUF_ERROR && zs.avail_in == 0)
			BAD("truncated gzip data");
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			BAD("bad gzip data");
	}
	*out = buf;
	*out_len = used;
	buf = NULL;
out:
	inflateEnd(&zs);
	free(buf);
	return ret;
}

/* Fills the public struct from the decoded message; o->msg is set. */
static int resolve(struct prof_rd_owner *o, const char **why)
{
	const Perftools__Profiles__Profile *m = o->msg;
	struct prof_rd_profile *p = &o->pub;
	struct id_index fx = { 0, NULL }, mx = { 0, NULL }, lx = { 0, NULL };
	uint64_t *ids = NULL;
	size_t i, j, n_lines = 0, n_locs = 0, n_labels = 0, n_ids;
	size_t lines_at = 0, locs_at = 0, labels_at = 0;
	const char *s;
	ssize_t k;
	int ret = 0;

	if (m->n_string_table == 0 || m->string_table[0][0] != '\0')
		BAD("the string table does not start with \"\"");
	if (m->n_sample_type == 0)
		BAD("no sample types");

	n_ids = m->n_function;
	if (m->n_mapping > n_ids)
		n_ids = m->n_mapping;
	if (m->n_location > n_ids)
		n_ids = m->n_location;
	ids = calloc(n_ids ? n_ids : 1, sizeof(*ids));
	o->types = calloc(m->n_sample_type, sizeof(*o->types));
	o->functions = calloc(m->n_function ? m->n_function : 1, sizeof(*o->functions));
	o->mappings = calloc(m->n_mapping ? m->n_mapping : 1, sizeof(*o->mappings));
	o->locations = calloc(m->n_location ? m->n_location : 1, sizeof(*o->locations));
	o->samples = calloc(m->n_sample ? m->n_sample : 1, sizeof(*o->samples));
	o->comments = calloc(m->n_comment ? m->n_comment : 1, sizeof(*o->comments));
	if (!ids || !o->types || !o->functions || !o->mappings || !o->locations ||
	    !o->samples || !o->comments) {
		ret = -ENOMEM;
		goto out;
	}

	for (i = 0; i < m->n_sample_type; i++) {
		o->types[i].type = str_at(m, m->sample_type[i]->type);
		o->types[i].unit = str_at(m, m->sample_type[i]->unit);
		if (!o->types[i].type || !o->types[i].unit)
			BAD("a sample type's string index is out of range");
	}
	p->sample_types = o->types;
	p->n_sample_types = m->n_sample_type;
	/* As pprof: the type named by default_sample_type, else the last. */
	p->default_type = m->n_sample_type - 1;
	if (m->default_sample_type) {
		s = str_at(m, m->default_sample_type);
		if (!s)
			BAD("default_sample_type is out of the string table");
		for (i = 0; i < m->n_sample_type; i++)
			if (strcmp(o->types[i].type, s) == 0)
				p->default_type = i;
	}
	p->period_type.type = "";
	p->period_type.unit = "";
	if (m->period_type) {
		p->period_type.type = str_at(m, m->period_type->type);
		p->period_type.unit = str_at(m, m->period_type->unit);
		if (!p->period_type.type || !p->period_type.unit)
			BAD("the period type's string index is out of range");
	}
	p->period = m->period;
	p->time_nanos = m->time_nanos;
	p->duration_nanos = m->duration_nanos;
	for (i = 0; i < m->n_comment; i++) {
		o->comments[i] = str_at(m, m->comment[i]);
		if (!o->comments[i])
			BAD("a comment's string index is out of range");
	}
	p->comments = o->comments;
	p->n_comments = m->n_comment;

	for (i = 0; i < m->n_function; i++) {
		const Perftools__Profiles__Function *f = m->function[i];

		ids[i] = f->id;
		o->functions[i].name = str_at(m, f->name);
		o->functions[i].system_name = str_at(m, f->system_name);
		o->functions[i].filename = str_at(m, f->filename);
		o->functions[i].start_line = f->start_line;
		if (!o->functions[i].name || !o->functions[i].system_name ||
		    !o->functions[i].filename)
			BAD("a function's string index is out of range");
	}
	ret = index_build(&fx, ids, m->n_function);
	if (ret == -EBADMSG)
		BAD("function ids are zero or repeated");
	if (ret < 0)
		goto out;

	for (i = 0; i < m->n_mapping; i++) {
		const Perftools__Profiles__Mapping *mp = m->mapping[i];

		ids[i] = mp->id;
		o->mappings[i].start = mp->memory_start;
		o->mappings[i].limit = mp->memory_limit;
		o->mappings[i].offset = mp->file_offset;
		o->mappings[i].filename = str_at(m, mp->filename);
		o->mappings[i].build_id = str_at(m, mp->build_id);
		if (!o->mappings[i].filename || !o->mappings[i].build_id)
			BAD("a mapping's string index is out of range");
	}
	ret = index_build(&mx, ids, m->n_mapping);
	if (ret == -EBADMSG)
		BAD("mapping ids are zero or repeated");
	if (ret < 0)
		goto out;

	for (i = 0; i < m->n_location; i++) {
		ids[i] = m->location[i]->id;
		n_lines += m->location[i]->n_line;
	}
	ret = index_build(&lx, ids, m->n_location);
	if (ret == -EBADMSG)
		BAD("location ids are zero or repeated");
	if (ret < 0)
		goto out;
	o->lines = calloc(n_lines ? n_lines : 1, sizeof(*o->lines));
	if (!o->lines) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < m->n_location; i++) {
		const Perftools__Profiles__Location *l = m->location[i];
		struct prof_rd_location *rl = &o->locations[i];

		rl->address = l->address;
		rl->mapping = NULL;
		if (l->mapping_id) {
			k = index_find(&mx, l->mapping_id);
			if (k < 0)
				BAD("a location's mapping id points nowhere");
			rl->mapping = &o->mappings[k];
		}
		rl->lines = &o->lines[lines_at];
		rl->n_lines = l->n_line;
		for (j = 0; j < l->n_line; j++, lines_at++) {
			o->lines[lines_at].line = l->line[j]->line;
			o->lines[lines_at].function = &no_function;
			if (l->line[j]->function_id) {
				k = index_find(&fx, l->line[j]->function_id);
				if (k < 0)
					BAD("a line's function id points nowhere");
				o->lines[lines_at].function = &o->functions[k];
			}
		}
	}

	for (i = 0; i < m->n_sample; i++) {
		n_locs += m->sample[i]->n_location_id;
		n_labels += m->sample[i]->n_label;
	}
	o->sample_locs = calloc(n_locs ? n_locs : 1, sizeof(*o->sample_locs));
	o->labels = calloc(n_labels ? n_labels : 1, sizeof(*o->labels));
	if (!o->sample_locs || !o->labels) {
		ret = -ENOMEM;
		goto out;
	}
	for (i = 0; i < m->n_sample; i++) {
		const Perftools__Profiles__Sample *sm = m->sample[i];
		struct prof_rd_sample *rs = &o->samples[i];

		if (sm->n_value != m->n_sample_type)
			BAD("a sample's value count differs from the number of sample types");
		rs->values = sm->value;
		rs->locations = &o->sample_locs[locs_at];
		rs->n_locations = sm->n_location_id;
		for (j = 0; j < sm->n_location_id; j++) {
			k = index_find(&lx, sm->location_id[j]);
			if (k < 0)
				BAD("a sample's location id points nowhere");
			o->sample_locs[locs_at++] = &o->locations[k];
		}
		rs->labels = &o->labels[labels_at];
		rs->n_labels = sm->n_label;
		for (j = 0; j < sm->n_label; j++, labels_at++) {
			const Perftools__Profiles__Label *lb = sm->label[j];
			struct prof_rd_label *rb = &o->labels[labels_at];

			rb->key = str_at(m, lb->key);
			rb->str = lb->str ? str_at(m, lb->str) : NULL;
			rb->num = lb->num;
			rb->num_unit = lb->num_unit ? str_at(m, lb->num_unit) : NULL;
			if (!rb->key || (lb->str && !rb->str) || (lb->num_unit && !rb->num_unit))
				BAD("a label's string index is out of range");
		}
	}
	p->samples = o->samples;
	p->n_samples = m->n_sample;
out:
	free(fx.sorted);
	free(mx.sorted);
	free(lx.sorted);
	free(ids);
	return ret;
}

static int rd_buffer(const void *data, size_t len, struct prof_rd_profile **out,
		     const char **why)
{
	const unsigned char *in = data;
	unsigned char *plain = NULL;
	struct prof_rd_owner *o = NULL;
	int ret = 0;

	if (len == 0)
		BAD("empty file");
	if (len >= 2 && in[0] == 0x1f && in[1] == 0x8b) {
		size_t plain_len = 0;

		ret = gunzip(in, len, &plain, &plain_len, why);
		if (ret < 0)
			goto out;
		in = plain;
		len = plain_len;
	}
	o = calloc(1, sizeof(*o));
	if (!o) {
		ret = -ENOMEM;
		goto out;
	}
	o->msg = perftools__profiles__profile__unpack(NULL, len, in);
	if (!o->msg)
		BAD("protobuf decoding failed");
	ret = resolve(o, why);
	if (ret < 0)
		goto out;
	*out = &o->pub;
	o = NULL;
out:
	prof_rd_free(o ? &o->pub : NULL);
	free(plain);
	return ret;
}

int prof_rd_buffer_why(const void *data, size_t len, struct prof_rd_profile **out,
		       const char **why)
{
	const char *ignored;

	*out = NULL;
	if (!why)
		why = &ignored;
	*why = NULL;
	return rd_buffer(data, len, out, why);
}

int prof_rd_buffer(const void *data, size_t len, struct prof_rd_profile **out)
{
	return prof_rd_buffer_why(data, len, out, NULL);
}

/* Reads all of fd into a malloc'ed buffer.  0 or -errno. */
static int read_all(int fd, unsigned char **out, size_t *out_len)
{
	unsigned char *buf = NULL, *nbuf;
	size_t cap = 0, used = 0;
	struct stat st;
	ssize_t n;
	int ret = 0;

	if (fstat(fd, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		/* One read and no copying for a regular file. */
		if (S_ISREG(st.st_mode) && st.st_size > 0)
			cap = (size_t)st.st_size + 1;
	}
	for (;;) {
		if (used == cap || !buf) {
			if (used == cap)
				cap = cap ? cap * 2 : 64 * 1024;
			if (cap > RD_MAX_DECODED * 2) {
				ret = -EFBIG;
				goto out;
			}
			nbuf = realloc(buf, cap);
			if (!nbuf) {
				ret = -ENOMEM;
				goto out;
			}
			buf = nbuf;
		}
		n = read(fd, buf + used, cap - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			goto out;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	*out = buf;
	*out_len = used;
	buf = NULL;
out:
	free(buf);
	return ret;
}

int prof_rd_file_why(const char *path, struct prof_rd_profile **out, const char **why)
{
	unsigned char *data = NULL;
	bool is_stdin = strcmp(path, "-") == 0;
	size_t len = 0;
	int fd = STDIN_FILENO, ret;

	*out = NULL;
	if (why)
		*why = NULL;
	if (!is_stdin) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	ret = read_all(fd, &data, &len);
	if (!is_stdin)
		close(fd);
	if (ret < 0)
		goto out_free;
	ret = prof_rd_buffer_why(data, len, out, why);
out_free:
	free(data);
	return ret;
}

int prof_rd_file(const char *path, struct prof_rd_profile **out)
{
	return prof_rd_file_why(path, out, NULL);
}

void prof_rd_free(struct prof_rd_profile *p)
{
	struct prof_rd_owner *o = (struct prof_rd_owner *)p;

	if (!o)
		return;
	if (o->msg)
		perftools__profiles__profile__free_unpacked(o->msg, NULL);
	free(o->types);
	free(o->functions);
	free(o->mappings);
	free(o->locations);
	free(o->lines);
	free(o->sample_locs);
	free(o->labels);
	free(o->samples);
	free(o->comments);
	free(o);
}

int prof_rd_find_type(const struct prof_rd_profile *p, const char *type)
{
	size_t i;

	for (i = 0; i < p->n_sample_types; i++)
		if (strcmp(p->sample_types[i].type, type) == 0)
			return (int)i;
	return -1;
}
