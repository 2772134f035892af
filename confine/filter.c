/* SPDX-License-Identifier: MIT */
/* The helper's seccomp filter (libseccomp): memory, futexes, its own descriptors, exit; nothing else. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <stddef.h>
#include <sys/mman.h>
#include <unistd.h>

#include "confine/confine-impl.h"

/*
 * Allowed with any arguments: what libelf, libdw, libunwind, libiberty and
 * the C library need to compute over descriptors already open and memory
 * (allocation, locks, reading and closing files, time, exit, and what
 * abort() does to end the helper on an assertion).
 */
static const int allowed[] = {
	SCMP_SYS(read), SCMP_SYS(pread64), SCMP_SYS(readv), SCMP_SYS(preadv),
	SCMP_SYS(lseek), SCMP_SYS(fstat), SCMP_SYS(close), SCMP_SYS(dup),
	SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(brk), SCMP_SYS(madvise),
	SCMP_SYS(futex), SCMP_SYS(sched_yield),
	SCMP_SYS(clock_gettime), SCMP_SYS(gettimeofday),
	SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(getrandom),
	/* qsort asks how much memory there is */
	SCMP_SYS(sysinfo),
	SCMP_SYS(rt_sigreturn), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigaction),
	SCMP_SYS(exit), SCMP_SYS(exit_group),
};

/*
 * Refused with an error rather than killed: paths libdw and libelf look up
 * on their own (a dwz alternate file, split DWARF) simply are not found;
 * libunwind's first use opens a pipe to check local memory, which remote
 * walks never read (nor mincore or msync, which it then tries).
 */
static const int refused[] = {
	SCMP_SYS(pipe), SCMP_SYS(pipe2), SCMP_SYS(mincore), SCMP_SYS(msync),
	SCMP_SYS(open), SCMP_SYS(openat), SCMP_SYS(openat2), SCMP_SYS(stat), SCMP_SYS(lstat),
	SCMP_SYS(access), SCMP_SYS(faccessat), SCMP_SYS(faccessat2), SCMP_SYS(readlink),
	SCMP_SYS(readlinkat), SCMP_SYS(statx),
};

/* The calls allowed on some arguments only: one comparison each. */
static int add_narrow(scmp_filter_ctx f, int sock)
{
	const struct {
		int nr;
		struct scmp_arg_cmp cmp;
	} narrow[] = {
		/* memory, never executable: parsing runs no code it reads */
		{ SCMP_SYS(mmap), SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0) },
		{ SCMP_SYS(mprotect), SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0) },
		/* fstat of a descriptor, as the C library spells it, not of a path */
		{ SCMP_SYS(newfstatat), SCMP_A3(SCMP_CMP_MASKED_EQ, AT_EMPTY_PATH, AT_EMPTY_PATH) },
		/* its socket only */
		{ SCMP_SYS(recvmsg), SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)sock) },
		{ SCMP_SYS(sendmsg), SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)sock) },
		/* fcntl to read flags or duplicate, never F_SETOWN and the like */
		{ SCMP_SYS(fcntl), SCMP_A1(SCMP_CMP_EQ, F_GETFL) },
		{ SCMP_SYS(fcntl), SCMP_A1(SCMP_CMP_EQ, F_GETFD) },
		{ SCMP_SYS(fcntl), SCMP_A1(SCMP_CMP_EQ, F_DUPFD_CLOEXEC) },
		/* writes only to standard error (an assertion's message) */
		{ SCMP_SYS(write), SCMP_A0(SCMP_CMP_EQ, STDERR_FILENO) },
		{ SCMP_SYS(writev), SCMP_A0(SCMP_CMP_EQ, STDERR_FILENO) },
		/* abort() signals itself, and no other process of its user */
		{ SCMP_SYS(tgkill), SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid()) },
	};
	size_t i;
	int r = 0;

	for (i = 0; !r && i < sizeof(narrow) / sizeof(narrow[0]); i++)
		r = seccomp_rule_add_array(f, SCMP_ACT_ALLOW, narrow[i].nr, 1, &narrow[i].cmp);
	return r;
}

int conf_install_filter(int sock)
{
	scmp_filter_ctx f;
	size_t i;
	int r = 0;

	/* Anything else kills the whole helper: a parser that calls ptrace,
	 * process_vm_readv, socket or execve has been taken over. */
	f = seccomp_init(SCMP_ACT_KILL_PROCESS);
	if (!f)
		return -ENOMEM;
	for (i = 0; !r && i < sizeof(allowed) / sizeof(allowed[0]); i++)
		r = seccomp_rule_add(f, SCMP_ACT_ALLOW, allowed[i], 0);
	for (i = 0; !r && i < sizeof(refused) / sizeof(refused[0]); i++)
		r = seccomp_rule_add(f, SCMP_ACT_ERRNO(EACCES), refused[i], 0);
	if (!r)
		r = add_narrow(f, sock);
	if (!r)
		r = seccomp_load(f);
	seccomp_release(f);
	return r < 0 ? r : 0;
}
