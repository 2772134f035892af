/* SPDX-License-Identifier: MIT */
/* A target's perf map: appended lines read, anonymous code, lookups; here or in the parser. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/bsearch.h"
#include "lib/grow.h"
#include "symbolize/perfmap.h"
#include "symbolize/remote.h"
#include "symbolize/symbolize.h"

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

	/* Parsed in the confined parser (helper non-NULL): v stays empty
	 * here, the file stays open here to be handed over again. */
	struct conf_helper *helper;
	uint32_t remote_id;	/* its name in the parser */
	int fd;			/* the file handed over; -1: none yet */
	dev_t dev;
	ino_t ino;
	off_t sent_size;	/* its size when it was last handed over */
	uint64_t sent_gen;	/* the parser generation it went to; 0: none */
	bool remote_reset;	/* the parser is to forget what it read first */
	bool remote_dead;	/* the parser failed on it: it names nothing more */
	uint64_t remote_n;	/* the entries the parser says it holds */
	char name[SYM_JIT_NAME_MAX];	/* the parser's last answer */
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

int sym_perfmap_create(struct sym_perfmap **out, pid_t pid, struct conf_helper *h)
{
	static atomic_uint next_id;
	struct sym_perfmap *pm = calloc(1, sizeof(*pm));

	if (!pm)
		return -ENOMEM;
	pm->pid = pid;
	pm->fd = -1;
	pm->helper = h;
	if (h)
		pm->remote_id = atomic_fetch_add(&next_id, 1) + 1;
	*out = pm;
	return 0;
}

/* The file handed over is let go: the next one is read from its start. */
static void forget_file(struct sym_perfmap *pm)
{
	if (pm->fd >= 0)
		close(pm->fd);
	pm->fd = -1;
	pm->sent_size = 0;
	pm->remote_n = 0;
	pm->remote_reset = true;
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
	forget_file(pm);
}

/* Tells the parser pm is done, when it is the one that read it. */
static void close_remote(struct sym_perfmap *pm)
{
	struct sym_wire_perfmap q = { .id = pm->remote_id };
	struct conf_status cs;
	char answer[16];
	size_t alen;

	if (!pm->helper || !pm->sent_gen)
		return;
	/* never a new parser started for this */
	cs = conf_status(pm->helper);
	if (pm->sent_gen != cs.generation || cs.pid < 0)
		return;
	conf_call(pm->helper, SYM_REQ_PERFMAP_CLOSE, &q, sizeof(q), NULL, 0, answer,
		  sizeof(answer), &alen, NULL, NULL);
}

void sym_perfmap_destroy(struct sym_perfmap *pm)
{
	if (!pm)
		return;
	close_remote(pm);
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

int sym_perfmap_read_fd(struct sym_perfmap *pm, int fd)
{
	char buf[65536];
	struct stat st;
	ssize_t got, used;
	size_t have = 0;
	int ret = 0;

	if (fstat(fd, &st) < 0 || st.st_size == pm->read_to)
		return 0;
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
	return ret;
}

/*
 * Hands the open file to the parser, which reads what it has not read yet
 * (all of it after a reset).  A parser that fails on it (dies, hangs, runs
 * out of its memory, answers nonsense) leaves pm naming nothing: the
 * death, recorded by the helper, names the file.  Returns 0.
 */
static int send_file(struct sym_perfmap *pm, off_t size)
{
	struct sym_wire_perfmap w = { .id = pm->remote_id, .reset = pm->remote_reset };
	struct sym_wire_perfmap_read a;
	size_t alen = 0;
	int r;

	r = conf_call(pm->helper, SYM_REQ_PERFMAP, &w, sizeof(w), &pm->fd, 1, &a, sizeof(a), &alen,
		      pm->path, NULL);
	if (r < 0 || alen != sizeof(a)) {
		pm->remote_dead = true;
		pm->remote_n = 0;
		return 0;
	}
	/* after the call: a parser started for it is the one that has it */
	pm->sent_gen = conf_status(pm->helper).generation;
	pm->sent_size = size;
	pm->remote_reset = false;
	pm->remote_n = a.entries;
	return 0;
}

/* A refresh parsed by the parser: the file opened here, handed over only
 * when it changed (grown, rewritten, replaced) or the parser is new. */
static int refresh_remote(struct sym_perfmap *pm)
{
	struct stat st;
	int fd;

	if (pm->remote_dead)
		return 0;
	fd = open(pm->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return 0;
	}
	if (pm->fd >= 0 && (st.st_dev != pm->dev || st.st_ino != pm->ino))
		forget_file(pm);	/* another file by that name */
	if (pm->fd < 0) {
		pm->fd = fd;
		pm->dev = st.st_dev;
		pm->ino = st.st_ino;
	} else {
		close(fd);
	}
	/* never re-read what did not change */
	if (st.st_size == pm->sent_size && pm->sent_gen &&
	    pm->sent_gen == conf_status(pm->helper).generation)
		return 0;
	if (st.st_size < pm->sent_size)
		pm->remote_reset = true;	/* rewritten from the start */
	return send_file(pm, st.st_size);
}

static int read_file(struct sym_perfmap *pm)
{
	int fd, ret;

	ret = set_path(pm);
	if (ret < 0)
		return ret;
	if (pm->helper)
		return refresh_remote(pm);
	fd = open(pm->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ret = sym_perfmap_read_fd(pm, fd);
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

const char *sym_perfmap_lookup_entry(struct sym_perfmap *pm, uint64_t addr)
{
	const struct pm_entry *best = NULL;
	size_t lo, k;

	if (!pm->n)
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

/* The parser's name for addr, the file handed over again to a parser
 * started since (the last one died). */
static const char *lookup_remote(struct sym_perfmap *pm, uint64_t addr)
{
	struct sym_wire_perfmap q = { .id = pm->remote_id, .addr = addr };
	size_t alen = 0;
	int r, tries;

	for (tries = 0; tries < 2 && !pm->remote_dead && pm->fd >= 0; tries++) {
		if (pm->sent_gen != conf_status(pm->helper).generation) {
			pm->remote_reset = true;
			send_file(pm, pm->sent_size);
			if (pm->remote_dead)
				break;
		}
		r = conf_call(pm->helper, SYM_REQ_JIT_NAME, &q, sizeof(q), NULL, 0, pm->name,
			      sizeof(pm->name) - 1, &alen, pm->path, NULL);
		if (r == -ESTALE) {
			pm->sent_gen = 0;	/* a new parser lacks the file */
			continue;
		}
		if (r < 0) {
			pm->remote_dead = true;
			break;
		}
		if (!alen)
			return NULL;
		pm->name[alen] = '\0';
		return pm->name;
	}
	return NULL;
}

const char *sym_perfmap_lookup(struct sym_perfmap *pm, uint64_t addr)
{
	if (pm->helper)
		return pm->remote_n && in_anon(pm, addr) ? lookup_remote(pm, addr) : NULL;
	if (!pm->n || !in_anon(pm, addr))
		return NULL;
	return sym_perfmap_lookup_entry(pm, addr);
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
	return pm->helper ? (size_t)pm->remote_n : pm->n;
}
