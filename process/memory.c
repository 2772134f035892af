/* SPDX-License-Identifier: MIT */
/* Copies out of a target's address space: process_vm_readv, or /proc/PID/mem. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/uio.h>
#include <unistd.h>

#include "process/memory.h"

ssize_t proc_mem_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
#ifdef HAVE_PROCESS_VM_READV
	struct iovec l = { .iov_base = buf, .iov_len = len };
	struct iovec r = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n;

	/* A single iovec pair: the kernel stops at the first unreadable page
	 * and returns what it copied before it. */
	n = process_vm_readv(pid, &l, 1, &r, 1, 0);
	if (n < 0)
		return -errno;
	return n > 0 || len == 0 ? n : -EFAULT;
#else
	(void)pid;
	(void)addr;
	(void)buf;
	(void)len;
	return -ENOSYS;
#endif
}

int proc_mem_read_all(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = proc_mem_read(pid, addr, buf, len);

	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EFAULT;
}

int proc_mem_read_special(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	char path[64];
	ssize_t got;
	int fd, ret;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	got = pread(fd, buf, len, (off_t)addr);
	ret = got < 0 ? -errno : (size_t)got == len ? 0 : -EIO;
	close(fd);
	return ret;
}
