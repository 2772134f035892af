/* SPDX-License-Identifier: MIT */
/* The table of ELF modules mapped in a target: discovery, ELF facts, fast lookup. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include "process/modules.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

/* Largest vdso we copy; real ones are one or two pages. */
#define VDSO_MAX (1u << 20)

/* A module plus what identifies it in the maps; callers see only pub. */
struct mod_entry {
	struct proc_module pub;
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	bool fd_borrowed;	/* pub.fd is another entry's: not closed here */
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

/* One executable file instance found in the maps during an update. */
struct candidate {
	const struct proc_map *first_x;	/* first executable mapping */
	const struct proc_module *mod;	/* the module it became */
	uint64_t base;
	uint64_t text_start, text_end, text_offset;
	bool have_base;
};

int proc_modules_create(struct proc_modules **out, pid_t pid)
{
	struct proc_modules *t;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
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

		if (e->pub.fd >= 0 && !e->fd_borrowed)
			close(e->pub.fd);
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

/*
 * Reads build-id, bias and PT_GNU_EH_FRAME from the module's file.  A file
 * that is not ELF, or is truncated, leaves the fields at their defaults: the
 * module stays, unsymbolizable.
 */
static void read_elf_facts(struct proc_module *mod, const struct candidate *c)
{
	struct load_facts lf = { 0 };
	GElf_Ehdr ehdr;
	size_t phnum;
	Elf *elf;

	elf = elf_begin(mod->fd, ELF_C_READ_MMAP, NULL);
	if (!elf)
		return;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &ehdr) ||
	    elf_getphdrnum(elf, &phnum) != 0)
		goto end_elf;

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
	if (!mod->build_id)
		read_section_build_id(elf, mod);
end_elf:
	elf_end(elf);
}

/* Copies the target's vdso into a memfd, so that it reads like a file. */
static int copy_vdso(pid_t pid, const struct proc_map *m)
{
	size_t len = (size_t)(m->end - m->start);
#ifdef HAVE_PROCESS_VM_READV
	struct iovec local, remote = { (void *)(uintptr_t)m->start, len };
#endif
	void *buf;
	ssize_t got = -1;
	int fd = -1;

	if (len == 0 || len > VDSO_MAX)
		return -EINVAL;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;

#ifdef HAVE_PROCESS_VM_READV
	local = (struct iovec){ buf, len };
	got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
#endif
	if (got != (ssize_t)len) {
		/* Some kernels refuse process_vm_readv on special mappings. */
		char path[64];
		int mem;

		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		mem = open(path, O_RDONLY | O_CLOEXEC);
		if (mem < 0) {
			fd = -errno;
			goto free_buf;
		}
		got = pread(mem, buf, len, (off_t)m->start);
		close(mem);
		if (got != (ssize_t)len) {
			fd = -EIO;
			goto free_buf;
		}
	}

	fd = memfd_create("cprof-vdso", MFD_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		goto free_buf;
	}
	if (write(fd, buf, len) != (ssize_t)len) {
		close(fd);
		fd = -EIO;
	}

free_buf:
	free(buf);
	return fd;
}

static bool fd_is(int fd, const struct proc_map *m)
{
	struct stat st;

	/* Overlay filesystems may report another st_dev: the inode decides. */
	return fstat(fd, &st) == 0 && (uint64_t)st.st_ino == m->inode;
}

/*
 * Opens the file of mapping m as the target sees it.  On success stores the
 * path used in *open_path.  A deleted file is only reachable through
 * map_files (its path may name a newer file by now).
 */
static int open_module_file(pid_t pid, const struct proc_map *m, char **open_path)
{
	char *root_path = NULL, *mf_path = NULL;
	int fd = -1, mf_fd;

	if (!m->deleted && m->path[0] == '/') {
		if (asprintf(&root_path, "/proc/%d/root%s", (int)pid, m->path) < 0)
			return -ENOMEM;
		fd = open(root_path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && fd_is(fd, m)) {
			struct stat st_fd, st_path;

			/*
			 * When the target shares our view of the file, keep
			 * the plain path: it outlives the target, which the
			 * debuglink search at symbolization time may need.
			 */
			if (fstat(fd, &st_fd) == 0 && stat(m->path, &st_path) == 0 &&
			    st_fd.st_dev == st_path.st_dev &&
			    st_fd.st_ino == st_path.st_ino) {
				char *plain = strdup(m->path);

				if (plain) {
					free(root_path);
					root_path = plain;
				}
			}
			*open_path = root_path;
			return fd;
		}
	}

	if (asprintf(&mf_path, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
		     (int)pid, m->start, m->end) < 0) {
		mf_fd = -ENOMEM;
		goto fallback;
	}
	mf_fd = open(mf_path, O_RDONLY | O_CLOEXEC);
	if (mf_fd >= 0) {
		if (fd >= 0)
			close(fd);
		free(root_path);
		*open_path = mf_path;
		return mf_fd;
	}
	mf_fd = -errno;
	free(mf_path);

fallback:
	/* Not the same inode, but the best we have without privileges. */
	if (fd >= 0) {
		*open_path = root_path;
		return fd;
	}
	free(root_path);
	return mf_fd;
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

static int add_module(struct proc_modules *owner, const struct candidate *c,
		      const struct stat *exe, const char *exe_path)
{
	const struct proc_map *m = c->first_x;
	struct proc_modules *t = owner->store;
	const struct mod_entry *twin = NULL;
	struct mod_entry *e;

	if (t->n == t->cap) {
		size_t ncap = t->cap != 0 ? t->cap * 2 : 32;
		struct mod_entry **v = realloc(t->mods, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->mods = v;
		t->cap = ncap;
	}
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

	if (is_vdso(m)) {
		e->pub.is_vdso = true;
		e->pub.fd = copy_vdso(owner->pid, m);
		if (e->pub.fd >= 0) {
			e->pub.open_path = strdup("[vdso]");
			if (!e->pub.open_path)
				goto close_fd;
		}
	} else {
		twin = !m->deleted ? same_inode(t, m) : NULL;
		if (twin) {
			e->pub.fd = twin->pub.fd;
			e->fd_borrowed = true;
			e->pub.open_path = twin->pub.open_path ? strdup(twin->pub.open_path) : NULL;
			if (twin->pub.open_path && !e->pub.open_path)
				goto free_path;
		} else {
			e->pub.fd = open_module_file(owner->pid, m, &e->pub.open_path);
		}
		if (e->pub.fd == -ENOMEM)
			goto free_path;
		e->pub.is_main = is_exe(m, exe, exe_path);
	}
	if (e->pub.fd < 0)
		e->pub.fd = -1;
	else
		read_elf_facts(&e->pub, c);

	t->mods[t->n++] = e;
	return 0;

close_fd:
	close(e->pub.fd);
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
	size_t lo = 0, hi = t->nindex;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->index[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
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
