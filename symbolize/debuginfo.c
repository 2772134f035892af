/* SPDX-License-Identifier: MIT */
/* Local separate debug files: build-id paths and .gnu_debuglink with its CRC. */
#include "config.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "elf/objfile.h"
#include "symbolize/debuginfo.h"

#define DEBUG_DIR "/usr/lib/debug"

/* The standard CRC-32 of the whole file, as .gnu_debuglink records it. */
static int file_crc(int fd, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0L, Z_NULL, 0);
	off_t off = 0;
	ssize_t got;

	while ((got = pread(fd, buf, sizeof(buf), off)) > 0) {
		c = crc32(c, buf, (uInt)got);
		off += got;
	}
	if (got < 0)
		return -errno;
	*crc = (uint32_t)c;
	return 0;
}

static int open_if_crc(const char *path, uint32_t want)
{
	uint32_t crc;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (file_crc(fd, &crc) < 0 || crc != want) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

/* The i-th place gdb and libdwfl look for debuglink name of a file in dir. */
static int candidate(int i, const char *dir, const char *name, char **path)
{
	int n;

	if (i == 0)
		n = asprintf(path, "%s/%s", dir, name);
	else if (i == 1)
		n = asprintf(path, "%s/.debug/%s", dir, name);
	else
		n = asprintf(path, DEBUG_DIR "%s/%s", dir, name);
	if (n < 0) {
		*path = NULL;
		return -ENOMEM;
	}
	return 0;
}

int sym_debuglink_open(const char *link, uint32_t crc, const char *file_name, char **found)
{
	const char *slash;
	char *dir, *path;
	int i, fd = -ENOENT;

	*found = NULL;
	if (!link || !*link || strchr(link, '/') || !file_name)
		return -ENOENT;
	slash = strrchr(file_name, '/');
	dir = slash ? strndup(file_name, (size_t)(slash - file_name)) : strdup(".");
	if (!dir)
		return -ENOMEM;
	for (i = 0; i < 3; i++) {
		if (candidate(i, dir, link, &path) < 0) {
			fd = -ENOMEM;
			break;
		}
		/* DIR/NAME may be the stripped file itself: its CRC differs. */
		fd = open_if_crc(path, crc);
		if (fd >= 0) {
			*found = path;
			break;
		}
		free(path);
		fd = -ENOENT;
	}
	free(dir);
	return fd;
}

static bool has_dwarf(Elf *elf)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	GElf_Shdr sh;
	const char *name;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (strcmp(name, ".debug_info") == 0 || strcmp(name, ".zdebug_info") == 0))
			return true;
	}
	return false;
}

bool sym_debuginfo_local(struct objfile *f, const char *file_name, const char *build_id)
{
	char *path = NULL, *found = NULL;
	bool local = false;
	const char *link;
	GElf_Word crc;
	Elf *elf;
	int dfd;

	if (build_id && strlen(build_id) > 2 &&
	    asprintf(&path, DEBUG_DIR "/.build-id/%.2s/%s.debug", build_id, build_id + 2) >= 0) {
		local = access(path, R_OK) == 0;
		free(path);
		if (local)
			return true;
	}
	if (!f)
		return false;
	elf = objfile_lock(f);
	local = has_dwarf(elf);
	link = local ? NULL : dwelf_elf_gnu_debuglink(elf, &crc);
	/* The link's name lives in the mapped file, which outlives the lock. */
	objfile_unlock(f);
	if (!local) {
		dfd = sym_debuglink_open(link, crc, file_name, &found);
		local = dfd >= 0;
		if (dfd >= 0)
			close(dfd);
		free(found);
	}
	return local;
}

int sym_debuginfo_open_build_id(const char *build_id, char **found)
{
	char *path = NULL;
	int fd;

	if (!build_id || strlen(build_id) < 3 ||
	    asprintf(&path, DEBUG_DIR "/.build-id/%.2s/%s.debug", build_id, build_id + 2) < 0)
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fd = -errno;
		free(path);
		return fd;
	}
	*found = path;
	return fd;
}

int sym_debuginfo_open_link(struct objfile *f, const char *file_name, char **found)
{
	const char *link;
	GElf_Word crc = 0;

	if (!f)
		return -ENOENT;
	link = dwelf_elf_gnu_debuglink(objfile_lock(f), &crc);
	/* The link's name lives in the mapped file, which outlives the lock. */
	objfile_unlock(f);
	return sym_debuglink_open(link, crc, file_name, found);
}
