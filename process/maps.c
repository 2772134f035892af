/* SPDX-License-Identifier: MIT */
/* Reading and parsing /proc/PID/maps into a sorted array of mappings. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lib/bsearch.h"
#include "lib/grow.h"
#include "process/maps.h"

#define DELETED_SUFFIX " (deleted)"

void proc_maps_free(struct proc_maps *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

/* Parses a hex number at *p up to a non-hex character; advances *p. */
static int parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	while (s < end) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (*s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		/* More than 16 digits cannot be an address: reject, not wrap. */
		if (++digits > 16)
			return -EINVAL;
		v = v << 4 | d;
		s++;
	}
	if (digits == 0)
		return -EINVAL;
	*p = s;
	*out = v;
	return 0;
}

static int parse_dec(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;

	if (s >= end || *s < '0' || *s > '9')
		return -EINVAL;
	while (s < end && *s >= '0' && *s <= '9') {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
		s++;
	}
	*p = s;
	*out = v;
	return 0;
}

static int expect_char(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

static void skip_spaces(const char **p, const char *end)
{
	while (*p < end && (**p == ' ' || **p == '\t'))
		(*p)++;
}

/*
 * One line, without its newline:
 *   start-end perms offset major:minor inode [path]
 * The path is everything after the blanks that follow the inode, so it may
 * contain spaces; only the kernel's " (deleted)" suffix is taken off.
 */
static int parse_line(const char *s, const char *end, struct proc_map *m)
{
	size_t len, slen = sizeof(DELETED_SUFFIX) - 1;
	uint64_t major, minor;
	int ret;

	memset(m, 0, sizeof(*m));
	if ((ret = parse_hex(&s, end, &m->start)) < 0 ||
	    (ret = expect_char(&s, end, '-')) < 0 ||
	    (ret = parse_hex(&s, end, &m->end)) < 0 ||
	    (ret = expect_char(&s, end, ' ')) < 0)
		return ret;
	if (m->end < m->start)
		return -EINVAL;

	if (end - s < 4)
		return -EINVAL;
	if (s[0] == 'r')
		m->perms |= PROC_MAP_R;
	if (s[1] == 'w')
		m->perms |= PROC_MAP_W;
	if (s[2] == 'x')
		m->perms |= PROC_MAP_X;
	if (s[3] == 'p')
		m->perms |= PROC_MAP_P;
	s += 4;

	skip_spaces(&s, end);
	if ((ret = parse_hex(&s, end, &m->offset)) < 0)
		return ret;
	skip_spaces(&s, end);
	if ((ret = parse_hex(&s, end, &major)) < 0 ||
	    (ret = expect_char(&s, end, ':')) < 0 ||
	    (ret = parse_hex(&s, end, &minor)) < 0)
		return ret;
	m->dev_major = (uint32_t)major;
	m->dev_minor = (uint32_t)minor;
	skip_spaces(&s, end);
	if ((ret = parse_dec(&s, end, &m->inode)) < 0)
		return ret;
	skip_spaces(&s, end);

	len = (size_t)(end - s);
	if (len >= slen && memcmp(end - slen, DELETED_SUFFIX, slen) == 0) {
		m->deleted = true;
		len -= slen;
	}
	m->path = strndup(s, len);
	if (!m->path)
		return -ENOMEM;
	return 0;
}

static int cmp_map(const void *a, const void *b)
{
	const struct proc_map *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

int proc_maps_parse(const char *text, size_t len, struct proc_maps *out)
{
	struct proc_maps m = { NULL, 0 };
	size_t cap = 0;
	const char *p = text, *end = text + len;
	int ret;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line_end = nl ? nl : end;

		if (line_end == p) {
			p = line_end + 1;
			continue;
		}
		if (cprof_grow(&m.v, &cap, m.n + 1, sizeof(*m.v), 64) < 0) {
			ret = -ENOMEM;
			goto free_maps;
		}
		ret = parse_line(p, line_end, &m.v[m.n]);
		if (ret < 0)
			goto free_maps;
		m.n++;
		p = line_end + 1;
	}

	/* The kernel emits them sorted; sort anyway so lookups never depend on it. */
	if (m.n > 1)
		qsort(m.v, m.n, sizeof(*m.v), cmp_map);

	proc_maps_free(out);
	*out = m;
	return 0;

free_maps:
	proc_maps_free(&m);
	proc_maps_free(out);
	return ret;
}

int proc_maps_read(pid_t pid, struct proc_maps *out)
{
	char path[64];
	char *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t r;
	int fd, ret;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = errno == ENOENT ? -ESRCH : -errno;
		goto out;
	}

	/*
	 * The file is generated as it is read, a page at a time: read until
	 * EOF into a growing buffer rather than trusting any size.
	 */
	for (;;) {
		if (cprof_grow(&buf, &cap, len + 4096, 1, 16384) < 0) {
			ret = -ENOMEM;
			goto free_buf;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			/* A process that exits while we read gives ESRCH or EIO. */
			ret = errno == EIO ? -ESRCH : -errno;
			goto free_buf;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}

	ret = proc_maps_parse(buf, len, out);

free_buf:
	free(buf);
	close(fd);
out:
	if (ret < 0)
		proc_maps_free(out);
	return ret;
}

static bool overlaps_any(const struct proc_maps *m, const struct proc_map *x)
{
	size_t lo;

	/* the first mapping of m that ends after x starts */
	lo = cprof_count_le(m->v, m->n, sizeof(*m->v), offsetof(struct proc_map, end), x->start);
	return lo < m->n && m->v[lo].start < x->end;
}

int proc_maps_add(struct proc_maps *m, const struct proc_map *e)
{
	struct proc_map *v;
	size_t i, k = 0, keep = 0;
	bool placed = false;
	char *path;

	for (i = 0; i < m->n; i++)
		keep += m->v[i].end <= e->start || m->v[i].start >= e->end;
	path = strdup(e->path ? e->path : "");
	v = calloc(keep + 1, sizeof(*v));
	if (!path || !v) {
		free(path);
		free(v);
		return -ENOMEM;
	}
	for (i = 0; i < m->n; i++) {
		struct proc_map *o = &m->v[i];

		if (o->end > e->start && o->start < e->end) {
			free(o->path);
			continue;
		}
		if (!placed && o->start >= e->end) {
			v[k] = *e;
			v[k++].path = path;
			placed = true;
		}
		v[k++] = *o;
	}
	if (!placed) {
		v[k] = *e;
		v[k++].path = path;
	}
	free(m->v);
	m->v = v;
	m->n = k;
	return 0;
}

int proc_maps_merge_older(struct proc_maps *newer, const struct proc_maps *older)
{
	struct proc_map *v;
	size_t i, j = 0, k = 0, add = 0, n;

	for (i = 0; i < older->n; i++)
		add += !overlaps_any(newer, &older->v[i]);
	if (!add)
		return 0;
	n = newer->n + add;
	v = calloc(n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	/* Both sorted by start: merge, copying the older ones' paths. */
	for (i = 0; i < older->n; i++) {
		const struct proc_map *o = &older->v[i];

		if (overlaps_any(newer, o))
			continue;
		while (j < newer->n && newer->v[j].start < o->start)
			v[k++] = newer->v[j++];
		v[k] = *o;
		v[k].path = strdup(o->path ? o->path : "");
		if (!v[k].path)
			goto nomem;
		k++;
	}
	while (j < newer->n)
		v[k++] = newer->v[j++];
	free(newer->v);
	newer->v = v;
	newer->n = n;
	return 0;
nomem:
	/* Only the paths strdup'd here are ours to free. */
	for (i = 0; i < k; i++) {
		bool from_newer = false;
		size_t m;

		for (m = 0; m < newer->n; m++)
			from_newer |= newer->v[m].path == v[i].path;
		if (!from_newer)
			free(v[i].path);
	}
	free(v);
	return -ENOMEM;
}

const struct proc_map *proc_maps_find(const struct proc_maps *m, uint64_t addr)
{
	size_t lo;

	if (!m || m->n == 0)
		return NULL;
	/* Find the last mapping whose start is <= addr. */
	lo = cprof_count_le(m->v, m->n, sizeof(*m->v), offsetof(struct proc_map, start), addr);
	if (lo == 0)
		return NULL;
	if (addr < m->v[lo - 1].end)
		return &m->v[lo - 1];
	return NULL;
}

/* <linux/fs.h> of Linux 6.11, which the build machine's headers may lack. */
struct proc_maps_procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start;
	uint64_t vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};
#define PROC_MAPS_PROCMAP_QUERY _IOWR('f', 17, struct proc_maps_procmap_query)
#define PROC_MAPS_PROCMAP_VMA_EXEC 4

int proc_maps_query(int maps_fd, uint64_t addr, struct proc_map *vma)
{
	struct proc_maps_procmap_query q;

	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.query_addr = addr;	/* flags 0: the mapping covering addr */
	if (ioctl(maps_fd, PROC_MAPS_PROCMAP_QUERY, &q) < 0)
		return errno == EINVAL ? -ENOTTY : -errno;
	vma->start = q.vma_start;
	vma->end = q.vma_end;
	vma->offset = q.vma_offset;
	vma->inode = q.inode;
	vma->dev_major = q.dev_major;
	vma->dev_minor = q.dev_minor;
	vma->perms = q.vma_flags & PROC_MAPS_PROCMAP_VMA_EXEC ? PROC_MAP_X : 0;
	vma->deleted = false;
	vma->path = NULL;
	return 0;
}
