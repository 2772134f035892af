/* SPDX-License-Identifier: MIT */
/* The perf map of a target: incremental reads, anonymous code ranges, lookup. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/bsearch.h"
#include "lib/grow.h"
#include "symbolize/perfmap.h"

/* One line of the map: [start, end), read as the seq-th entry. */
struct pm_entry {
	uint64_t start, end;
	uint64_t seq;
	char *name;
};

struct pm_range {
	uint64_t start, end;
};

struct sym_perfmap {
	pid_t pid;
	char *path;		/* NULL until the target's own pid is known */
	off_t read_to;		/* bytes of the file parsed (whole lines) */
	struct pm_entry *v;
	size_t n, cap;
	bool sorted;
	struct pm_range *anon;	/* anonymous executable mappings seen */
	size_t n_anon, cap_anon;
};

/* The pid of the target in its own pid namespace: the last NSpid field. */
static pid_t own_pid(pid_t pid)
{
	char path[64], line[256], *p, *end;
	pid_t ns = pid;
	long v;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return pid;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "NSpid:", 6) != 0)
			continue;
		for (p = line + 6;; p = end) {
			v = strtol(p, &end, 10);
			if (end == p)
				break;
			ns = (pid_t)v;
		}
		break;
	}
	fclose(f);
	return ns;
}

int sym_perfmap_create(struct sym_perfmap **out, pid_t pid)
{
	struct sym_perfmap *pm = calloc(1, sizeof(*pm));

	if (!pm)
		return -ENOMEM;
	pm->pid = pid;
	*out = pm;
	return 0;
}

static void clear_entries(struct sym_perfmap *pm)
{
	size_t i;

	for (i = 0; i < pm->n; i++)
		free(pm->v[i].name);
	pm->n = 0;
	pm->read_to = 0;
}

void sym_perfmap_reset(struct sym_perfmap *pm)
{
	clear_entries(pm);
	pm->n_anon = 0;
	/* exec may have put the target in another pid namespace */
	free(pm->path);
	pm->path = NULL;
}

void sym_perfmap_destroy(struct sym_perfmap *pm)
{
	if (!pm)
		return;
	sym_perfmap_reset(pm);
	free(pm->v);
	free(pm->anon);
	free(pm);
}

/* Parses one line "START SIZE name"; a malformed one is skipped. */
static int add_line(struct sym_perfmap *pm, char *line)
{
	uint64_t start, size;
	char *p = line, *end;
	struct pm_entry *e;

	start = strtoull(p, &end, 16);
	if (end == p || *end != ' ')
		return 0;
	p = end + 1;
	size = strtoull(p, &end, 16);
	if (end == p || *end != ' ' || !size || start + size < start)
		return 0;
	p = end + 1;
	if (!*p)
		return 0;
	if (cprof_grow(&pm->v, &pm->cap, pm->n + 1, sizeof(*pm->v), 256) < 0)
		return -ENOMEM;
	e = &pm->v[pm->n];
	e->name = strdup(p);
	if (!e->name)
		return -ENOMEM;
	e->start = start;
	e->end = start + size;
	e->seq = pm->n;
	pm->n++;
	pm->sorted = false;
	return 0;
}

/* Parses the whole lines of buf[0, len); returns the bytes consumed or -ENOMEM. */
static ssize_t add_lines(struct sym_perfmap *pm, char *buf, size_t len)
{
	size_t done = 0;
	char *nl;
	int ret;

	while (done < len && (nl = memchr(buf + done, '\n', len - done))) {
		*nl = '\0';
		ret = add_line(pm, buf + done);
		if (ret < 0)
			return ret;
		done = (size_t)(nl - buf) + 1;
	}
	return (ssize_t)done;
}

/* The file's path, worked out on first use (and again after an exec). */
static int set_path(struct sym_perfmap *pm)
{
	if (!pm->path && asprintf(&pm->path, "/proc/%d/root/tmp/perf-%d.map", (int)pm->pid,
				  (int)own_pid(pm->pid)) < 0) {
		pm->path = NULL;
		return -ENOMEM;
	}
	return 0;
}

bool sym_perfmap_exists(struct sym_perfmap *pm)
{
	return set_path(pm) == 0 && access(pm->path, F_OK) == 0;
}

static int read_file(struct sym_perfmap *pm)
{
	char buf[65536];
	struct stat st;
	ssize_t got, used;
	size_t have = 0;
	int fd, ret;

	ret = set_path(pm);
	if (ret < 0)
		return ret;
	fd = open(pm->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || st.st_size == pm->read_to)
		goto close_fd;
	if (st.st_size < pm->read_to)
		clear_entries(pm);	/* rewritten from the start */
	for (;;) {
		got = pread(fd, buf + have, sizeof(buf) - 1 - have, pm->read_to + (off_t)have);
		if (got <= 0)
			break;
		have += (size_t)got;
		used = add_lines(pm, buf, have);
		if (used < 0) {
			ret = (int)used;
			break;
		}
		if (!used && have == sizeof(buf) - 1) {
			/* a line longer than the buffer: skip it whole */
			used = (ssize_t)have;
		}
		memmove(buf, buf + used, have - (size_t)used);
		have -= (size_t)used;
		pm->read_to += used;
	}
close_fd:
	close(fd);
	return ret;
}

static bool is_anon_code(const struct proc_map *m)
{
	return (m->perms & PROC_MAP_X) && !m->inode &&
	       (!m->path[0] || strncmp(m->path, "[anon:", 6) == 0);
}

static int note_anon(struct sym_perfmap *pm, const struct proc_maps *maps)
{
	size_t i, j;

	for (i = 0; maps && i < maps->n; i++) {
		if (!is_anon_code(&maps->v[i]))
			continue;
		for (j = 0; j < pm->n_anon; j++)
			if (pm->anon[j].start == maps->v[i].start && pm->anon[j].end == maps->v[i].end)
				break;
		if (j < pm->n_anon)
			continue;
		if (cprof_grow(&pm->anon, &pm->cap_anon, pm->n_anon + 1, sizeof(*pm->anon), 16) < 0)
			return -ENOMEM;
		pm->anon[pm->n_anon++] = (struct pm_range){ maps->v[i].start, maps->v[i].end };
	}
	return 0;
}

int sym_perfmap_refresh(struct sym_perfmap *pm, const struct proc_maps *maps)
{
	int ret = note_anon(pm, maps);

	return ret < 0 ? ret : read_file(pm);
}

ssize_t sym_perfmap_parse(struct sym_perfmap *pm, char *text, size_t len)
{
	return add_lines(pm, text, len);
}

int sym_perfmap_note_code(struct sym_perfmap *pm, const struct proc_maps *maps)
{
	return note_anon(pm, maps);
}

static int cmp_entry(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static bool in_anon(const struct sym_perfmap *pm, uint64_t addr)
{
	size_t i;

	for (i = 0; i < pm->n_anon; i++)
		if (addr >= pm->anon[i].start && addr < pm->anon[i].end)
			return true;
	return false;
}

/* How far back from the last entry starting at or below addr a covering
 * entry is looked for: JIT stubs overlap little. */
#define OVERLAP_SCAN 64

const char *sym_perfmap_lookup(struct sym_perfmap *pm, uint64_t addr)
{
	const struct pm_entry *best = NULL;
	size_t lo, k;

	if (!pm->n || !in_anon(pm, addr))
		return NULL;
	if (!pm->sorted) {
		qsort(pm->v, pm->n, sizeof(*pm->v), cmp_entry);
		pm->sorted = true;
	}
	lo = cprof_count_le(pm->v, pm->n, sizeof(*pm->v), offsetof(struct pm_entry, start), addr);
	for (k = 0; k < OVERLAP_SCAN && k < lo; k++) {
		const struct pm_entry *e = &pm->v[lo - 1 - k];

		if (addr < e->end && (!best || e->seq > best->seq))
			best = e;
	}
	return best ? best->name : NULL;
}

bool sym_perfmap_name(void *pm, uint64_t addr, char *buf, size_t len)
{
	const char *name = sym_perfmap_lookup(pm, addr);

	if (!name)
		return false;
	snprintf(buf, len, "%s", name);
	return true;
}

size_t sym_perfmap_entries(const struct sym_perfmap *pm)
{
	return pm->n;
}
