/* SPDX-License-Identifier: MIT */
/* Opening a module's file as the target sees it, copying its vdso, reading what it maps. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "process/memory.h"
#include "process/modules-impl.h"

/* Largest vdso we copy; real ones are one or two pages. */
#define VDSO_MAX (1u << 20)

int proc_module_copy_vdso(pid_t pid, const struct proc_map *m)
{
	size_t len = (size_t)(m->end - m->start);
	void *buf;
	int fd;

	if (len == 0 || len > VDSO_MAX)
		return -EINVAL;
	buf = malloc(len);
	if (!buf)
		return -ENOMEM;

	/* Some kernels refuse process_vm_readv on special mappings. */
	if (proc_mem_read_all(pid, m->start, buf, len) < 0 &&
	    (fd = proc_mem_read_special(pid, m->start, buf, len)) < 0)
		goto free_buf;

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

bool proc_module_fd_is(int fd, const struct proc_map *m)
{
	struct stat st;

	/* Overlay filesystems may report another st_dev: the inode decides. */
	return fstat(fd, &st) == 0 && (uint64_t)st.st_ino == m->inode;
}

/* A deleted file is only reachable through map_files (its path may name a
 * newer file by now). */
int proc_module_open_file(pid_t pid, const struct proc_map *m, char **open_path)
{
	char *root_path = NULL, *mf_path = NULL;
	int fd = -1, mf_fd;

	if (!m->deleted && m->path[0] == '/') {
		if (asprintf(&root_path, "/proc/%d/root%s", (int)pid, m->path) < 0)
			return -ENOMEM;
		fd = open(root_path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0 && proc_module_fd_is(fd, m)) {
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

int proc_module_read_mapped(const struct proc_module *mod, const struct proc_map *m,
			    uint64_t addr, void *dst, size_t len)
{
	uint64_t off = m->offset + (addr - m->start), vaddr = addr - mod->bias;
	ssize_t r;

	if (!mod->fd_exact || mod->fd < 0 || addr < m->start || addr + len > m->end ||
	    (vaddr < mod->rw_end && vaddr + len > mod->rw_start))
		return -ENODATA;
	r = pread(mod->fd, dst, len, (off_t)off);
	if (r < 0)
		return -errno;
	/* A page past the end of the file is not mapped (SIGBUS); the rest
	 * of the last one reads as zeros. */
	if (r == 0)
		return -EFAULT;
	memset((char *)dst + r, 0, len - (size_t)r);
	return 0;
}
