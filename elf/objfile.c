/* SPDX-License-Identifier: MIT */
/* One libelf handle per ELF file, shared by everything that reads the file. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/objfile.h"

#define DEBUG_DIR "/usr/lib/debug"

struct objfile {
	pthread_mutex_t lock;	/* held around every use of elf */
	Elf *elf;
	int fd;		/* closed with the handle when owned */
	bool owns_fd;
};

int objfile_from_fd(struct objfile **out, int fd)
{
	struct objfile *f;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->fd = fd;
	f->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!f->elf) {
		free(f);
		return -EINVAL;
	}
	pthread_mutex_init(&f->lock, NULL);
	*out = f;
	return 0;
}

/* objfile_from_fd on a descriptor the objfile then owns (closed with it,
 * or here when it cannot be read). */
static int from_owned_fd(struct objfile **out, int fd)
{
	int ret = objfile_from_fd(out, fd);

	if (ret < 0) {
		close(fd);
		return ret;
	}
	(*out)->owns_fd = true;
	return 0;
}

int objfile_open(struct objfile **out, const char *path)
{
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	return from_owned_fd(out, fd);
}

void objfile_close(struct objfile *f)
{
	if (!f)
		return;
	elf_end(f->elf);
	pthread_mutex_destroy(&f->lock);
	if (f->owns_fd)
		close(f->fd);
	free(f);
}

Elf *objfile_lock(struct objfile *f)
{
	pthread_mutex_lock(&f->lock);
	return f->elf;
}

void objfile_unlock(struct objfile *f)
{
	pthread_mutex_unlock(&f->lock);
}

bool objfile_is_elf(const struct objfile *f)
{
	return f && elf_kind(f->elf) == ELF_K_ELF;
}

Elf_Scn *objfile_section(Elf *elf, const char *name, unsigned type, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr mem;
	const char *s;

	if (!sh)
		sh = &mem;
	if (elf_kind(elf) != ELF_K_ELF || elf_getshdrstrndx(elf, &shstrndx) < 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, sh) || sh->sh_type != type)
			continue;
		s = elf_strptr(elf, shstrndx, sh->sh_name);
		if (s && strcmp(s, name) == 0)
			return scn;
	}
	return NULL;
}

static objfile_debug_fd_fn debug_fd_fn;
static void *debug_fd_arg;

void objfile_use_debug_fds(objfile_debug_fd_fn fn, void *arg)
{
	debug_fd_fn = fn;
	debug_fd_arg = arg;
}

int objfile_open_debug_fd(const char *build_id)
{
	char path[PATH_MAX];
	int fd;

	if (!build_id || strlen(build_id) < 3)
		return -ENOENT;
	snprintf(path, sizeof(path), DEBUG_DIR "/.build-id/%.2s/%s.debug", build_id, build_id + 2);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int objfile_open_debug(struct objfile **out, const char *build_id)
{
	int fd;

	if (!build_id || strlen(build_id) < 3)
		return -ENOENT;
	fd = debug_fd_fn ? debug_fd_fn(debug_fd_arg, build_id) : objfile_open_debug_fd(build_id);
	if (fd < 0)
		return debug_fd_fn ? -ENOENT : fd;
	return from_owned_fd(out, fd);
}
