/* SPDX-License-Identifier: MIT */
/* hostile: live profiling target whose address space holds what a profiler
 * must survive.
 *
 * hostile -D DIR -T OFFSET [-s SECONDS] [-r READYFILE]
 *
 * DIR holds files the test prepared:
 *   trunc.so       a shared library cut short (no section headers); mapped
 *                  PROT_READ|PROT_EXEC from offset 0, and its function at
 *                  file offset OFFSET (hostile_trunc_work) is called in place
 *   libc-trunc.so  another truncated ELF file, mapped PROT_READ|PROT_EXEC,
 *                  never run; the mapper thread maps and unmaps it as well
 *   corrupt.so     a library whose .debug_info is garbage; dlopened, and
 *                  hostile_corrupt_work is called
 *   deleted.so     dlopened, then unlinked; hostile_deleted_work is called
 *   churn.so       dlopened and dlclosed over and over by the churner thread,
 *                  which calls hostile_churn_work while it is loaded
 * and gets DIR/anon.range ("0xSTART 0xEND"): an anonymous page, written and
 * then made PROT_READ|PROT_EXEC, holding a copy of a small counting loop
 * that the spinner calls (no ELF file, no unwind info).
 *
 * Threads:
 *   spinner  spinner_main -> spin_step -> spin_leaf (arithmetic), then the
 *            corrupt, deleted, truncated and anonymous functions in turn
 *   churner  churner_main -> churn_cycle: dlopen, hostile_churn_work x 10,
 *            dlclose
 *   mapper   mmap/mprotect/munmap of anonymous memory and of libc-trunc.so
 * Every result is checked: at the end "result: OK steps=N cycles=N maps=N"
 * (or "result: BAD ...") is printed.  "ready\n" is written to READYFILE (via
 * READYFILE.tmp and rename) once each thread has done its first round.
 * Built -O0 -g -fno-omit-frame-pointer.  SIGUSR2 ends the run early. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "target.h"

#define NOINLINE __attribute__((noinline, noipa))

#define LEAF_LOOP 2000u		/* as in hostile-lib.c for the libraries */
#define LIB_LOOP 2000u
#define ANON_LOOP 20000u
#define CHURN_CALLS 10

typedef uint64_t (*work_fn)(uint64_t);
typedef uint32_t (*anon_fn)(uint32_t);

/*
 * The anonymous function, x86-64:
 *	mov  eax, edi
 * 1:	dec  eax
 *	jnz  1b
 *	mov  eax, 1
 *	ret
 * It counts edi (> 0) down and returns 1; no frame, no CFI.
 */
static const unsigned char anon_code[] = {
	0x89, 0xf8, 0xff, 0xc8, 0x75, 0xfc, 0xb8, 0x01, 0x00, 0x00, 0x00, 0xc3,
};

static const char *dir;
static work_fn corrupt_work, deleted_work, trunc_work;
static anon_fn anon_work;
static int libc_trunc_fd = -1;
static size_t libc_trunc_size;

static int ready_spinner, ready_churner, ready_mapper;	/* atomic builtins only */
static uint64_t steps, cycles, maps;
static int bad_spinner, bad_churner, bad_mapper;

static void die(const char *what, const char *obj)
{
	fprintf(stderr, "hostile: cannot %s '%s': %s\n", what, obj,
		errno != 0 ? strerror(errno) : "failed");
	exit(2);
}

static char *in_dir(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		die("allocate", name);
	return p;
}

static uint64_t leaf_expected(uint64_t x)
{
	return 3u * (uint64_t)LEAF_LOOP * (LEAF_LOOP - 1) / 2 + (uint64_t)LEAF_LOOP * x;
}

static uint64_t lib_expected(uint64_t x)
{
	return 5u * (uint64_t)LIB_LOOP * (LIB_LOOP - 1) / 2 + (uint64_t)LIB_LOOP * x;
}

NOINLINE static uint64_t spin_leaf(uint64_t x)
{
	volatile uint64_t acc = 0;

	for (unsigned k = 0; k < LEAF_LOOP; k++)
		acc += 3u * k + x;
	return acc;
}

/* One round of the spinner; returns whether every answer was right. */
NOINLINE static int spin_step(uint64_t x)
{
	int ok = 1;

	ok &= spin_leaf(x) == leaf_expected(x);
	ok &= spin_leaf(x + 1) == leaf_expected(x + 1);
	ok &= corrupt_work(x) == lib_expected(x);
	ok &= deleted_work(x) == lib_expected(x);
	ok &= trunc_work(x) == lib_expected(x);
	ok &= anon_work(ANON_LOOP) == 1;
	return ok;
}

NOINLINE static void *spinner_main(void *arg)
{
	pthread_setname_np(pthread_self(), "spinner");
	do {
		if (!spin_step(steps & 0xffff))
			bad_spinner = 1;
		steps++;
		__atomic_store_n(&ready_spinner, 1, __ATOMIC_SEQ_CST);
	} while (!target_past_deadline());
	return NULL;
}

/* One dlopen / call / dlclose cycle; returns whether it worked. */
NOINLINE static int churn_cycle(const char *path, uint64_t x)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	work_fn f;
	int ok = 1;

	if (h == NULL) {
		fprintf(stderr, "hostile: dlopen '%s': %s\n", path, dlerror());
		return 0;
	}
	f = (work_fn)(uintptr_t)dlsym(h, "hostile_churn_work");
	if (f == NULL) {
		fprintf(stderr, "hostile: dlsym hostile_churn_work: %s\n", dlerror());
		ok = 0;
	} else {
		for (int i = 0; i < CHURN_CALLS; i++)
			ok &= f(x + (uint64_t)i) == lib_expected(x + (uint64_t)i);
	}
	if (dlclose(h) != 0) {
		fprintf(stderr, "hostile: dlclose: %s\n", dlerror());
		ok = 0;
	}
	return ok;
}

NOINLINE static void *churner_main(void *arg)
{
	char *path = in_dir("churn.so");

	pthread_setname_np(pthread_self(), "churner");
	do {
		if (!churn_cycle(path, cycles & 0xffff))
			bad_churner = 1;
		cycles++;
		__atomic_store_n(&ready_churner, 1, __ATOMIC_SEQ_CST);
	} while (!bad_churner && !target_past_deadline());
	free(path);
	return NULL;
}

/* One round of mapping churn; returns whether every call worked. */
NOINLINE static int map_round(uint64_t i)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)page * (1 + i % 16);
	unsigned char *p;
	void *q;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	memset(p, (int)(i & 0xff), len);
	if (mprotect(p, (size_t)page, PROT_READ | PROT_EXEC) != 0 || p[len - 1] != (i & 0xff))
		return 0;
	if (munmap(p, len) != 0)
		return 0;
	q = mmap(NULL, libc_trunc_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, libc_trunc_fd, 0);
	if (q == MAP_FAILED)
		return 0;
	return munmap(q, libc_trunc_size) == 0;
}

NOINLINE static void *mapper_main(void *arg)
{
	pthread_setname_np(pthread_self(), "mapper");
	do {
		if (!map_round(maps)) {
			fprintf(stderr, "hostile: mapping churn: %s\n", strerror(errno));
			bad_mapper = 1;
		}
		maps++;
		__atomic_store_n(&ready_mapper, 1, __ATOMIC_SEQ_CST);
	} while (!bad_mapper && !target_past_deadline());
	return NULL;
}

/* Maps the whole of DIR/name PROT_READ|PROT_EXEC; returns the address. */
static void *map_file(const char *name, int *fd_out, size_t *size_out)
{
	char *path = in_dir(name);
	struct stat st;
	void *p;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0)
		die("open", path);
	if (st.st_size == 0) {
		errno = EINVAL;
		die("map an empty", path);
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		die("map", path);
	*size_out = (size_t)st.st_size;
	if (fd_out != NULL)
		*fd_out = fd;
	else
		close(fd);
	free(path);
	return p;
}

static work_fn open_lib(const char *name, const char *fn, int unlink_it)
{
	char *path = in_dir(name);
	void *h, *f;

	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		fprintf(stderr, "hostile: dlopen '%s': %s\n", path, dlerror());
		exit(2);
	}
	f = dlsym(h, fn);
	if (f == NULL) {
		fprintf(stderr, "hostile: dlsym %s in '%s': %s\n", fn, path, dlerror());
		exit(2);
	}
	if (unlink_it && unlink(path) != 0)
		die("unlink", path);
	free(path);
	return (work_fn)(uintptr_t)f;
}

static int write_file(const char *path, const char *text)
{
	char tmp[4096];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -1;
	f = fopen(tmp, "w");
	if (f == NULL)
		return -1;
	fputs(text, f);
	if (fclose(f) != 0)
		return -1;
	return rename(tmp, path);
}

static void usage(void)
{
	fprintf(stderr, "usage: hostile -D DIR -T OFFSET [-s SECONDS] [-r READYFILE]\n");
	exit(64);
}

int main(int argc, char **argv)
{
	const char *ready = NULL;
	double seconds = 5;
	unsigned long long trunc_off = 0;
	int have_off = 0, opt;
	long page = sysconf(_SC_PAGESIZE);
	pthread_t spinner, churner, mapper;
	size_t trunc_size;
	unsigned char *trunc_base, *anon;
	char range[64], *range_path;

	while ((opt = getopt(argc, argv, "D:T:s:r:")) != -1) {
		switch (opt) {
		case 'D': dir = optarg; break;
		case 'T': trunc_off = strtoull(optarg, NULL, 0); have_off = 1; break;
		case 's': seconds = strtod(optarg, NULL); break;
		case 'r': ready = optarg; break;
		default: usage();
		}
	}
	if (dir == NULL || !have_off || !(seconds > 0))
		usage();

	target_start_deadline(seconds);

	/* (a) truncated ELF files, mapped executable. */
	trunc_base = map_file("trunc.so", NULL, &trunc_size);
	if (trunc_off + 256 > trunc_size) {
		fprintf(stderr, "hostile: offset %#llx is not inside trunc.so (%zu bytes)\n",
			trunc_off, trunc_size);
		return 2;
	}
	trunc_work = (work_fn)(uintptr_t)(trunc_base + trunc_off);
	map_file("libc-trunc.so", &libc_trunc_fd, &libc_trunc_size);

	/* (b) corrupt DWARF, (c) a deleted library. */
	corrupt_work = open_lib("corrupt.so", "hostile_corrupt_work", 0);
	deleted_work = open_lib("deleted.so", "hostile_deleted_work", 1);

	/* (d) code in anonymous memory. */
	anon = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (anon == MAP_FAILED)
		die("map", "anonymous page");
	memcpy(anon, anon_code, sizeof(anon_code));
	if (mprotect(anon, (size_t)page, PROT_READ | PROT_EXEC) != 0)
		die("mprotect", "anonymous page");
	anon_work = (anon_fn)(uintptr_t)anon;
	snprintf(range, sizeof(range), "%#llx %#llx\n", (unsigned long long)(uintptr_t)anon,
		 (unsigned long long)(uintptr_t)(anon + page));
	range_path = in_dir("anon.range");
	if (write_file(range_path, range) != 0)
		die("write", range_path);
	free(range_path);

	/* (e) dlopen/dlclose churn, (f) mapping churn, and the spinner. */
	if (pthread_create(&spinner, NULL, spinner_main, NULL) != 0 ||
	    pthread_create(&churner, NULL, churner_main, NULL) != 0 ||
	    pthread_create(&mapper, NULL, mapper_main, NULL) != 0) {
		fprintf(stderr, "hostile: pthread_create failed\n");
		return 2;
	}
	while (!__atomic_load_n(&ready_spinner, __ATOMIC_SEQ_CST) ||
	       !__atomic_load_n(&ready_churner, __ATOMIC_SEQ_CST) ||
	       !__atomic_load_n(&ready_mapper, __ATOMIC_SEQ_CST)) {
		struct timespec ms = { 0, 1000000 };

		if (bad_churner || bad_mapper)
			break;
		nanosleep(&ms, NULL);
	}
	if (ready && write_file(ready, "ready\n") != 0) {
		fprintf(stderr, "hostile: cannot write '%s': %s\n", ready, strerror(errno));
		return 2;
	}
	pthread_join(spinner, NULL);
	pthread_join(churner, NULL);
	pthread_join(mapper, NULL);

	if (bad_spinner || bad_churner || bad_mapper || steps == 0 || cycles == 0 || maps == 0)
		printf("result: BAD spinner=%d churner=%d mapper=%d ", bad_spinner,
		       bad_churner, bad_mapper);
	else
		printf("result: OK ");
	printf("steps=%llu cycles=%llu maps=%llu\n", (unsigned long long)steps,
	       (unsigned long long)cycles, (unsigned long long)maps);
	if (fflush(stdout) != 0)
		return 2;
	return bad_spinner || bad_churner || bad_mapper;
}
