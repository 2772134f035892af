/* SPDX-License-Identifier: MIT */
/* The table of ELF modules mapped in a target: discovery and fast lookup. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "elf/objfile.h"
#include "lib/bsearch.h"
#include "lib/grow.h"
#include "process/modules-impl.h"

/* A module plus what identifies it in the maps; callers see only pub. */
struct mod_entry {
	struct proc_module pub;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	bool fd_borrowed;	/* pub.fd and pub.file are another entry's: not closed here */
};

struct index_entry {
	uint64_t start, end;
	const struct proc_module *mod;
};

struct proc_modules {
	pid_t pid;
	/* The table that holds the modules (and numbers them): this one, or
	 * the one given to proc_modules_create_shared. */
	struct proc_modules *store;
	/* Pointers, so that a module never moves once handed out.  Used in
	 * the store only. */
	struct mod_entry **mods;
	size_t n, cap;
	struct index_entry *index;	/* mapped modules by text_start */
	size_t nindex;
};

int proc_modules_create(struct proc_modules **out, pid_t pid)
{
	struct proc_modules *t;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->pid = pid;
	t->store = t;
	*out = t;
	return 0;
}

int proc_modules_create_shared(struct proc_modules **out, pid_t pid, struct proc_modules *store)
{
	int ret = proc_modules_create(out, pid);

	if (ret == 0)
		(*out)->store = store->store;
	return ret;
}

void proc_modules_destroy(struct proc_modules *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->n; i++) {
		struct mod_entry *e = t->mods[i];

		if (!e->fd_borrowed) {
			objfile_close(e->pub.file);
			if (e->pub.fd >= 0)
				close(e->pub.fd);
		}
		free(e->pub.path);
		free(e->pub.build_id);
		free(e->pub.go_build_id);
		free(e->pub.open_path);
		free(e);
	}
	free(t->mods);
	free(t->index);
	free(t);
}

static bool same_file(const struct proc_map *a, const struct proc_map *b)
{
	return a->inode == b->inode && a->dev_major == b->dev_major &&
	       a->dev_minor == b->dev_minor && strcmp(a->path, b->path) == 0;
}

static bool is_vdso(const struct proc_map *m)
{
	return strcmp(m->path, "[vdso]") == 0;
}

/*
 * Executable mappings worth a module: file-backed ones and [vdso].  Anonymous
 * code (JITs), [vsyscall] and other pseudo-files have no ELF file to read.
 */
static bool wanted(const struct proc_map *m)
{
	if (!(m->perms & PROC_MAP_X))
		return false;
	if (is_vdso(m))
		return true;
	if (m->path[0] == '\0' || m->path[0] == '[')
		return false;
	return true;
}

/* An open file of the same inode another module holds: processes of one
 * tree map the same libraries at different places (each exec randomizes
 * them), and one descriptor a file is enough. */
static const struct mod_entry *same_inode(const struct proc_modules *t, const struct proc_map *m)
{
	size_t i;

	if (!m->inode)
		return NULL;
	for (i = 0; i < t->n; i++) {
		const struct mod_entry *e = t->mods[i];

		if (e->pub.fd >= 0 && !e->pub.is_vdso && !e->pub.deleted && e->inode == m->inode &&
		    e->dev_major == m->dev_major && e->dev_minor == m->dev_minor &&
		    strcmp(e->pub.path, m->path) == 0)
			return e;
	}
	return NULL;
}

/* Whether mapping m is of the process's executable (/proc/PID/exe). */
static bool is_exe(const struct proc_map *m, const struct stat *exe, const char *exe_path)
{
	if (exe && m->inode != 0 && (uint64_t)exe->st_ino == m->inode &&
	    major(exe->st_dev) == m->dev_major && minor(exe->st_dev) == m->dev_minor)
		return true;
	return exe_path && strcmp(exe_path, m->path) == 0;
}

/*
 * Opens e's file, that of mapping m: a copy of the vdso, the open file of a
 * module of the same inode, or the file as the target sees it; then its
 * ELF handle, shared as the descriptor is.  A file that cannot be opened
 * leaves fd -1, one libelf refuses leaves file NULL.  Returns 0 or -ENOMEM.
 */
static int open_entry(struct proc_modules *owner, struct mod_entry *e, const struct proc_map *m)
{
	const struct mod_entry *twin;

	if (is_vdso(m)) {
		e->pub.is_vdso = true;
		e->pub.fd = proc_module_copy_vdso(owner->pid, m);
		e->pub.fd_exact = e->pub.fd >= 0;
		if (e->pub.fd >= 0 && !(e->pub.open_path = strdup("[vdso]"))) {
			close(e->pub.fd);
			return -ENOMEM;
		}
	} else if ((twin = !m->deleted ? same_inode(owner->store, m) : NULL)) {
		e->pub.fd = twin->pub.fd;
		e->pub.file = twin->pub.file;
		e->fd_borrowed = true;
		e->pub.fd_exact = twin->pub.fd_exact;
		e->pub.open_path = twin->pub.open_path ? strdup(twin->pub.open_path) : NULL;
		if (twin->pub.open_path && !e->pub.open_path)
			return -ENOMEM;
	} else {
		e->pub.fd = proc_module_open_file(owner->pid, m, &e->pub.open_path);
		if (e->pub.fd == -ENOMEM)
			return -ENOMEM;
		e->pub.fd_exact = e->pub.fd >= 0 && proc_module_fd_is(e->pub.fd, m);
	}
	if (e->pub.fd < 0)
		e->pub.fd = -1;
	else if (!e->fd_borrowed && objfile_from_fd(&e->pub.file, e->pub.fd) < 0)
		e->pub.file = NULL;
	return 0;
}

static int add_module(struct proc_modules *owner, const struct candidate *c,
		      const struct stat *exe, const char *exe_path)
{
	const struct proc_map *m = c->first_x;
	struct proc_modules *t = owner->store;
	struct mod_entry *e;

	if (cprof_grow(&t->mods, &t->cap, t->n + 1, sizeof(*t->mods), 32) < 0)
		return -ENOMEM;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->pub.path = strdup(m->path);
	if (!e->pub.path)
		goto free_entry;
	e->inode = m->inode;
	e->dev_major = m->dev_major;
	e->dev_minor = m->dev_minor;
	e->pub.id = (uint32_t)t->n + 1;
	e->pub.base = c->base;
	e->pub.bias = c->base;
	e->pub.text_start = c->text_start;
	e->pub.text_end = c->text_end;
	e->pub.text_offset = c->text_offset;
	e->pub.mapped = true;
	e->pub.deleted = m->deleted;
	e->pub.fd = -1;
	e->pub.rw_end = UINT64_MAX;	/* until the program headers say */
	if (open_entry(owner, e, m) < 0)
		goto free_path;
	if (!e->pub.is_vdso)
		e->pub.is_main = is_exe(m, exe, exe_path);
	if (e->pub.fd >= 0)
		proc_module_read_facts(&e->pub, c);

	t->mods[t->n++] = e;
	return 0;

free_path:
	free(e->pub.path);
free_entry:
	free(e);
	return -ENOMEM;
}

static int cmp_index(const void *a, const void *b)
{
	const struct index_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return 0;
}

static const struct proc_map *find_base(const struct proc_maps *maps, size_t i);

/*
 * The lookup index: one entry per executable mapping, not per module span.
 * A module's span (text_start..text_end) may cover gaps, and a span kept
 * from an earlier sighting may cover memory another library now uses
 * (dlopen/dlclose churn reuses addresses), so only the mappings present in
 * these maps say which module an address is in.
 */
static int rebuild_index(struct proc_modules *t, const struct proc_maps *maps,
			 const struct candidate *cands, size_t ncands)
{
	struct index_entry *idx;
	size_t n = 0, i, k;

	idx = malloc((maps->n != 0 ? maps->n : 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		const struct proc_map *b;
		uint64_t base;

		if (!wanted(m))
			continue;
		b = is_vdso(m) ? m : find_base(maps, i);
		base = b ? b->start : m->start - m->offset;
		for (k = 0; k < ncands; k++) {
			if (cands[k].base == base && same_file(cands[k].first_x, m) &&
			    cands[k].mod) {
				idx[n].start = m->start;
				idx[n].end = m->end;
				idx[n].mod = cands[k].mod;
				n++;
				break;
			}
		}
	}
	qsort(idx, n, sizeof(*idx), cmp_index);
	free(t->index);
	t->index = idx;
	t->nindex = n;
	return 0;
}

static struct mod_entry *find_entry(struct proc_modules *owner, const struct proc_map *m,
				    uint64_t base)
{
	struct proc_modules *t = owner->store;
	size_t i;

	for (i = t->n; i-- > 0;) {
		struct mod_entry *e = t->mods[i];

		if (e->pub.base == base && e->inode == m->inode &&
		    e->dev_major == m->dev_major && e->dev_minor == m->dev_minor &&
		    strcmp(e->pub.path, m->path) == 0)
			return e;
	}
	return NULL;
}

/* The mapping at file offset 0 of the same file at or below maps->v[i]. */
static const struct proc_map *find_base(const struct proc_maps *maps, size_t i)
{
	const struct proc_map *m = &maps->v[i];
	size_t j;

	for (j = i + 1; j-- > 0;) {
		const struct proc_map *b = &maps->v[j];

		if (b->offset == 0 && same_file(b, m) && b->start <= m->start &&
		    m->start - b->start == m->offset)
			return b;
	}
	/* Loaders may leave a gap (or a different layout): accept any offset-0 one. */
	for (j = i + 1; j-- > 0;) {
		const struct proc_map *b = &maps->v[j];

		if (b->offset == 0 && same_file(b, m))
			return b;
	}
	return NULL;
}

/*
 * Groups the executable mappings into file instances, keyed by their base,
 * into cands (room for maps->n).  Returns how many.
 */
static size_t group_candidates(const struct proc_maps *maps, struct candidate *cands)
{
	size_t i, k, ncands = 0;

	for (i = 0; i < maps->n; i++) {
		const struct proc_map *m = &maps->v[i];
		const struct proc_map *b;
		struct candidate *c = NULL;
		uint64_t base;

		if (!wanted(m))
			continue;
		b = is_vdso(m) ? m : find_base(maps, i);
		base = b ? b->start : m->start - m->offset;
		for (k = 0; k < ncands && !c; k++)
			if (cands[k].base == base && same_file(cands[k].first_x, m))
				c = &cands[k];
		if (!c) {
			c = &cands[ncands++];
			c->first_x = m;
			c->base = base;
			c->have_base = b != NULL;
			c->text_start = m->start;
			c->text_offset = m->offset;
		}
		c->text_end = m->end;
	}
	return ncands;
}

/* The process's executable as /proc/PID/exe names it (without " (deleted)")
 * into buf, and its identity into *st.  Returns the path or NULL; *have_st
 * tells whether *st is valid. */
static const char *read_exe(pid_t pid, char *buf, size_t size, struct stat *st, bool *have_st)
{
	const size_t slen = sizeof(" (deleted)") - 1;
	char path[64];
	ssize_t r;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	*have_st = stat(path, st) == 0;
	r = readlink(path, buf, size - 1);
	if (r <= 0)
		return NULL;
	buf[r] = '\0';
	if ((size_t)r > slen && strcmp(buf + r - slen, " (deleted)") == 0)
		buf[r - slen] = '\0';
	return buf;
}

/* Candidate c is module e mapped again: marks it mapped, main again after
 * an exec of the same file, and widens its text to what c covers. */
static void remap_module(struct mod_entry *e, const struct candidate *c,
			 const struct stat *exe_st, const char *exe_path)
{
	e->pub.mapped = true;
	if (!e->pub.is_vdso && is_exe(c->first_x, exe_st, exe_path))
		e->pub.is_main = true;
	if (c->text_start < e->pub.text_start) {
		e->pub.text_start = c->text_start;
		e->pub.text_offset = c->text_offset;
	}
	if (c->text_end > e->pub.text_end)
		e->pub.text_end = c->text_end;
}

int proc_modules_update(struct proc_modules *t, const struct proc_maps *maps)
{
	struct candidate *cands;
	size_t i, k, ncands;
	struct stat exe_st;
	char exe_buf[4096];
	const char *exe_path;
	bool have_exe;
	int added = 0, ret = 0;

	cands = calloc(maps->n != 0 ? maps->n : 1, sizeof(*cands));
	if (!cands)
		return -ENOMEM;
	ncands = group_candidates(maps, cands);
	exe_path = read_exe(t->pid, exe_buf, sizeof(exe_buf), &exe_st, &have_exe);

	for (i = 0; i < t->store->n; i++)
		t->store->mods[i]->pub.mapped = false;
	for (k = 0; k < ncands; k++) {
		struct candidate *c = &cands[k];
		struct mod_entry *e = find_entry(t, c->first_x, c->base);

		if (e) {
			/* Same file at the same place: the same module again. */
			c->mod = &e->pub;
			remap_module(e, c, have_exe ? &exe_st : NULL, exe_path);
			continue;
		}
		ret = add_module(t, c, have_exe ? &exe_st : NULL, exe_path);
		if (ret < 0)
			goto free_cands;
		c->mod = &t->store->mods[t->store->n - 1]->pub;
		added++;
	}

	ret = rebuild_index(t, maps, cands, ncands);
	if (ret == 0)
		ret = added;

free_cands:
	free(cands);
	return ret;
}

void proc_modules_unmap_all(struct proc_modules *t)
{
	size_t i;

	/* After an exec the old executable is the process's main one no
	 * more: the new one, found by the next update, is (and comes first
	 * in profiles). */
	for (i = 0; i < t->store->n; i++) {
		t->store->mods[i]->pub.mapped = false;
		t->store->mods[i]->pub.is_main = false;
	}
	t->nindex = 0;
}

const struct proc_module *proc_modules_lookup(const struct proc_modules *t, uint64_t addr)
{
	size_t lo;

	lo = cprof_count_le(t->index, t->nindex, sizeof(*t->index),
			    offsetof(struct index_entry, start), addr);
	if (lo == 0 || addr >= t->index[lo - 1].end)
		return NULL;
	return t->index[lo - 1].mod;
}

const struct proc_module *proc_modules_get(const struct proc_modules *t, uint32_t id)
{
	t = t->store;
	if (id == 0 || id > t->n)
		return NULL;
	return &t->mods[id - 1]->pub;
}

size_t proc_modules_count(const struct proc_modules *t)
{
	return t->store->n;
}

const struct proc_module *proc_modules_of_map(const struct proc_modules *t,
					      const struct proc_map *m)
{
	size_t i;

	for (i = 0; i < t->nindex; i++) {
		const struct mod_entry *e = (const struct mod_entry *)t->index[i].mod;

		if (e->pub.is_vdso ? is_vdso(m) :
		    m->inode && e->inode == m->inode && e->dev_major == m->dev_major &&
		    e->dev_minor == m->dev_minor && e->pub.deleted == m->deleted &&
		    strcmp(e->pub.path, m->path) == 0)
			return &e->pub;
	}
	return NULL;
}

void proc_module_ident(const struct proc_module *m, struct proc_module_ident *out)
{
	const struct mod_entry *e = (const struct mod_entry *)m;

	*out = (struct proc_module_ident){ e->inode, e->dev_major, e->dev_minor };
}

int proc_modules_add_copy(struct proc_modules *t, const struct proc_module *m,
			  const struct proc_module_ident *ident)
{
	struct mod_entry *e;

	if (t->store != t || m->id != t->n + 1)
		return -EINVAL;
	if (cprof_grow(&t->mods, &t->cap, t->n + 1, sizeof(*t->mods), 32) < 0)
		return -ENOMEM;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->pub = *m;
	e->inode = ident->inode;
	e->dev_major = ident->dev_major;
	e->dev_minor = ident->dev_minor;
	t->mods[t->n++] = e;
	return 0;
}

int proc_modules_spans(const struct proc_modules *t, struct proc_module_span **out, size_t *n)
{
	size_t i;

	*out = malloc((t->nindex ? t->nindex : 1) * sizeof(**out));
	if (!*out)
		return -ENOMEM;
	for (i = 0; i < t->nindex; i++)
		(*out)[i] = (struct proc_module_span){ t->index[i].start, t->index[i].end,
						       t->index[i].mod->id };
	*n = t->nindex;
	return 0;
}

int proc_modules_set_spans(struct proc_modules *t, const struct proc_module_span *v, size_t n)
{
	struct index_entry *idx;
	size_t i;

	idx = malloc((n ? n : 1) * sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		/* sorted and apart, as the lookup's binary search needs */
		if (!v[i].mod || v[i].mod > t->store->n || v[i].start >= v[i].end ||
		    (i && v[i].start < v[i - 1].end)) {
			free(idx);
			return -EINVAL;
		}
		idx[i] = (struct index_entry){ v[i].start, v[i].end,
					       &t->store->mods[v[i].mod - 1]->pub };
	}
	free(t->index);
	t->index = idx;
	t->nindex = n;
	return 0;
}
