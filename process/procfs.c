/* SPDX-License-Identifier: MIT */
/* Readers of a thread's /proc files (stat, schedstat, status, syscall), opened under /proc/TID. */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <string.h>
#include <unistd.h>

#include "lib/grow.h"
#include "lib/utf8.h"
#include "process/procfs.h"

/* Generated at build time from <asm/unistd_64.h>: [nr] = "name", ... */
static const char *const syscall_names[] = {
#include "process/syscall-names.h"
};

int procfs_open_thread(pid_t tid, const char *name)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)tid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return fd;
}

static ssize_t pread_all(int fd, char *buf, size_t size)
{
	ssize_t r;

	do
		r = pread(fd, buf, size - 1, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	buf[r] = '\0';
	return r;
}

void procfs_sanitize_name(char *dst, size_t n, const char *src, size_t len)
{
	const unsigned char *s = (const unsigned char *)src;
	size_t i = 0, o = 0, k;

	if (!n)
		return;
	while (i < len && o + 1 < n) {
		k = cprof_utf8_seq_len(s + i, len - i);
		if (k == 1 && !isprint(s[i]))
			k = 0;
		if (k == 0) {
			dst[o++] = '?';
			i++;
			continue;
		}
		if (o + k >= n)
			break;
		memcpy(dst + o, s + i, k);
		o += k;
		i += k;
	}
	dst[o] = '\0';
}

/* Past n space-separated fields of p; NULL when the text ends first. */
static const char *skip_fields(const char *p, unsigned n)
{
	while (n--) {
		while (*p == ' ')
			p++;
		if (!*p)
			return NULL;
		while (*p && *p != ' ')
			p++;
	}
	return p;
}

/* The unsigned decimal field at *p, *p moved past it.  Returns 0 or
 * -EINVAL.  (The sampler reads these files at every tick: no sscanf.) */
static int next_u64(const char **p, unsigned long long *v)
{
	char *end;

	while (**p == ' ')
		(*p)++;
	if (**p < '0' || **p > '9')
		return -EINVAL;
	*v = strtoull(*p, &end, 10);
	*p = end;
	return 0;
}

/*
 * stat: "pid (comm) S ppid ...".  comm may hold spaces and parentheses, so
 * the fields are parsed from the last ')'.
 */
static int parse_stat(const char *buf, struct procfs_stat *st)
{
	const char *open = strchr(buf, '('), *close = strrchr(buf, ')'), *p;
	unsigned long long flags, utime, stime;

	if (!open || !close || close < open || close[1] != ' ' || !close[2] || close[3] != ' ')
		return -EINVAL;
	/* state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime */
	p = skip_fields(close + 3, 5);
	if (!p || next_u64(&p, &flags) < 0 || !(p = skip_fields(p, 4)) ||
	    next_u64(&p, &utime) < 0 || next_u64(&p, &stime) < 0)
		return -EINVAL;
	st->state = close[2];
	st->flags = (unsigned long)flags;
	st->utime = utime;
	st->stime = stime;
	procfs_sanitize_name(st->comm, sizeof(st->comm), open + 1, (size_t)(close - open - 1));
	return 0;
}

int procfs_read_stat(int fd, struct procfs_stat *st)
{
	char buf[1024];
	ssize_t r = pread_all(fd, buf, sizeof(buf));

	if (r < 0)
		return (int)r;
	if (r == 0)
		return -ESRCH;
	return parse_stat(buf, st);
}

int procfs_stat_pid(pid_t pid, struct procfs_stat *st)
{
	char path[64];
	int fd, ret;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	ret = procfs_read_stat(fd, st);
	close(fd);
	return ret;
}

int procfs_read_schedstat(int fd, uint64_t *run_ns)
{
	char buf[128];
	unsigned long long v;
	ssize_t r = pread_all(fd, buf, sizeof(buf));

	if (r < 0)
		return (int)r;
	if (sscanf(buf, "%llu", &v) != 1)
		return r == 0 ? -ESRCH : -EINVAL;
	*run_ns = v;
	return 0;
}

int procfs_read_sched(int fd, struct procfs_sched *sc)
{
	char buf[128];
	unsigned long long a, b, c;
	ssize_t r = pread_all(fd, buf, sizeof(buf));
	const char *p = buf;

	if (r < 0)
		return (int)r;
	if (next_u64(&p, &a) < 0 || next_u64(&p, &b) < 0 || next_u64(&p, &c) < 0)
		return r == 0 ? -ESRCH : -EINVAL;
	sc->run_ns = a;
	sc->wait_ns = b;
	sc->slices = c;
	return 0;
}

int procfs_read_syscall(int fd, struct procfs_syscall *sc)
{
	char buf[512];
	unsigned long long v[8];
	long nr;
	int n;
	ssize_t r = pread_all(fd, buf, sizeof(buf));

	if (r < 0)
		return (int)r;
	memset(sc, 0, sizeof(*sc));
	if (strncmp(buf, "running", 7) == 0) {
		sc->running = true;
		sc->nr = -1;
		return 0;
	}
	n = sscanf(buf, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &nr, &v[0], &v[1], &v[2],
		   &v[3], &v[4], &v[5], &v[6], &v[7]);
	sc->nr = nr;
	if (n == 3 && nr == -1) {
		sc->sp = v[0];
		sc->pc = v[1];
		return 0;
	}
	if (n != 9)
		return -EINVAL;
	memcpy(sc->args, v, sizeof(sc->args));
	sc->sp = v[6];
	sc->pc = v[7];
	return 0;
}

const char *procfs_syscall_name(long nr)
{
	if (nr < 0 || (size_t)nr >= sizeof(syscall_names) / sizeof(syscall_names[0]))
		return NULL;
	return syscall_names[nr];
}

static int push_pid(pid_t **v, size_t *n, size_t *cap, pid_t p)
{
	if (cprof_grow(v, cap, *n + 1, sizeof(**v), 16) < 0)
		return -ENOMEM;
	(*v)[(*n)++] = p;
	return 0;
}

/* The whole of a /proc file whose size stat does not tell, NUL-terminated,
 * into *out (malloc'd).  Returns 0 or -errno. */
static int read_all(const char *path, char **out)
{
	size_t len = 0, cap = 4096;
	char *buf = malloc(cap);
	ssize_t r;
	int fd, ret = 0;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	while ((r = read(fd, buf + len, cap - 1 - len)) > 0) {
		len += (size_t)r;
		if (len == cap - 1 && cprof_grow(&buf, &cap, cap + 1, 1, 4096) < 0) {
			ret = -ENOMEM;
			break;
		}
	}
	if (r < 0 && ret == 0)
		ret = -errno;
	close(fd);
	if (ret < 0) {
		free(buf);
		return ret;
	}
	buf[len] = '\0';
	*out = buf;
	return 0;
}

int procfs_list_children(pid_t pid, pid_t **pids, size_t *n)
{
	pid_t *tids, *v = NULL;
	size_t nt, i, cnt = 0, cap = 0;
	char path[96], *buf = NULL, *p, *end;
	int ret;

	ret = procfs_list_tasks(pid, &tids, &nt);
	if (ret < 0)
		return ret;
	for (i = 0; i < nt && ret == 0; i++) {
		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)tids[i]);
		/* A thread gone meanwhile: its children went to another. */
		if (read_all(path, &buf) < 0)
			continue;
		for (p = buf;; p = end) {
			long c = strtol(p, &end, 10);

			if (end == p)
				break;
			if (c > 0 && (ret = push_pid(&v, &cnt, &cap, (pid_t)c)) < 0)
				break;
		}
		free(buf);
	}
	free(tids);
	if (ret < 0) {
		free(v);
		return ret;
	}
	*pids = v;
	*n = cnt;
	return 0;
}

int procfs_list_tasks(pid_t pid, pid_t **tids, size_t *n)
{
	char path[64];
	struct dirent *de;
	pid_t *v = NULL;
	size_t cnt = 0, cap = 0;
	DIR *d;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while ((de = readdir(d))) {
		char *end;
		long tid = strtol(de->d_name, &end, 10);

		if (*end || tid <= 0)
			continue;
		if (cprof_grow(&v, &cap, cnt + 1, sizeof(*v), 64) < 0) {
			ret = -ENOMEM;
			goto out_free;
		}
		v[cnt++] = (pid_t)tid;
	}
	closedir(d);
	*tids = v;
	*n = cnt;
	return 0;

out_free:
	free(v);
	closedir(d);
	return ret;
}

int procfs_status_field(pid_t pid, const char *key, long *value)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	FILE *f;
	int ret = -ENOENT;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
			*value = strtol(line + klen + 1, NULL, 10);
			ret = 0;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* Files cprof opens besides the per-thread ones: modules' ELF files,
 * debuginfo, maps, the output.  Kept free of the cache's budget. */
#define FD_RESERVE_MIN 128

static const char *const task_file_names[PROCFS_NFILES] = {
	[PROCFS_STAT] = "stat",
	[PROCFS_SCHEDSTAT] = "schedstat",
	[PROCFS_SYSCALL] = "syscall",
	[PROCFS_COMM] = "comm",
};

static size_t budget_for(rlim_t soft)
{
	size_t reserve = (size_t)soft / 4;

	if (reserve < FD_RESERVE_MIN)
		reserve = FD_RESERVE_MIN;
	if (soft == RLIM_INFINITY || soft > (rlim_t)1 << 20)
		soft = (rlim_t)1 << 20;
	/* At least a few, even under an absurdly low limit: then reads
	 * degrade to open and close, they do not fail. */
	return (size_t)soft > reserve + 16 ? (size_t)soft - reserve : 16;
}

void procfs_fdcache_init(struct procfs_fdcache *c, pid_t pid)
{
	struct rlimit rl;

	memset(c, 0, sizeof(*c));
	c->pid = pid;
	c->lru.next = c->lru.prev = &c->lru;
	c->budget = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? budget_for(rl.rlim_cur) : 16;
}

size_t procfs_fdcache_budget(struct procfs_fdcache *c, size_t wanted)
{
	struct rlimit rl;

	if (wanted <= c->budget || c->raised)
		return c->budget;
	c->raised = true;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
		return c->budget;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
		c->budget = budget_for(rl.rlim_cur);
	return c->budget;
}

void procfs_task_init(struct procfs_task *t, pid_t tid)
{
	int k;

	t->tid = tid;
	t->pid = 0;
	for (k = 0; k < PROCFS_NFILES; k++) {
		t->f[k].fd = -1;
		t->f[k].prev = t->f[k].next = NULL;
	}
}

static void lru_unlink(struct procfs_fd *f)
{
	f->prev->next = f->next;
	f->next->prev = f->prev;
	f->prev = f->next = NULL;
}

static void lru_push(struct procfs_fdcache *c, struct procfs_fd *f)
{
	f->next = c->lru.next;
	f->prev = &c->lru;
	c->lru.next->prev = f;
	c->lru.next = f;
}

static void close_fd(struct procfs_fdcache *c, struct procfs_fd *f)
{
	if (f->fd < 0)
		return;
	lru_unlink(f);
	close(f->fd);
	f->fd = -1;
	c->open--;
}

/* Closes the least recently used file.  Returns false when none is open. */
static bool evict(struct procfs_fdcache *c)
{
	if (c->lru.prev == &c->lru)
		return false;
	close_fd(c, c->lru.prev);
	c->evictions++;
	return true;
}

void procfs_task_close(struct procfs_fdcache *c, struct procfs_task *t)
{
	int k;

	for (k = 0; k < PROCFS_NFILES; k++)
		close_fd(c, &t->f[k]);
}

int procfs_task_fd(struct procfs_fdcache *c, struct procfs_task *t, enum procfs_file k)
{
	struct procfs_fd *f = &t->f[k];
	int fd;

	if (f->fd >= 0) {
		if (c->lru.next != f) {
			lru_unlink(f);
			lru_push(c, f);
		}
		return f->fd;
	}
	while (c->open >= c->budget && evict(c))
		;
	for (;;) {
		fd = procfs_open_thread(t->tid, task_file_names[k]);
		/* Out of descriptors (the budget's reserve used by something
		 * else): make room from the cache rather than fail. */
		if ((fd == -EMFILE || fd == -ENFILE) && evict(c))
			continue;
		break;
	}
	if (fd < 0)
		return fd;
	c->opens++;
	f->fd = fd;
	lru_push(c, f);
	c->open++;
	return fd;
}

int procfs_task_stat(struct procfs_fdcache *c, struct procfs_task *t, struct procfs_stat *st)
{
	int fd = procfs_task_fd(c, t, PROCFS_STAT);

	return fd < 0 ? fd : procfs_read_stat(fd, st);
}

int procfs_task_sched(struct procfs_fdcache *c, struct procfs_task *t, struct procfs_sched *sc)
{
	int fd = procfs_task_fd(c, t, PROCFS_SCHEDSTAT);

	return fd < 0 ? fd : procfs_read_sched(fd, sc);
}

int procfs_task_syscall(struct procfs_fdcache *c, struct procfs_task *t,
			struct procfs_syscall *sc)
{
	int fd = procfs_task_fd(c, t, PROCFS_SYSCALL);

	return fd < 0 ? fd : procfs_read_syscall(fd, sc);
}

/* File k of t, read from its start into buf.  Returns its length (> 0)
 * or -errno (-ESRCH: the thread is gone, the file reads empty). */
static ssize_t read_task_file(struct procfs_fdcache *c, struct procfs_task *t,
			      enum procfs_file k, char *buf, size_t size)
{
	int fd = procfs_task_fd(c, t, k);
	ssize_t r;

	if (fd < 0)
		return fd;
	r = pread_all(fd, buf, size);
	return r == 0 ? -ESRCH : r;
}

int procfs_task_running(struct procfs_fdcache *c, struct procfs_task *t)
{
	char buf[16];
	ssize_t r = read_task_file(c, t, PROCFS_SYSCALL, buf, sizeof(buf));

	if (r < 0)
		return (int)r;
	return strncmp(buf, "running", 7) == 0;
}

int procfs_task_comm(struct procfs_fdcache *c, struct procfs_task *t, char *name, size_t size)
{
	char buf[64];
	ssize_t r = read_task_file(c, t, PROCFS_COMM, buf, sizeof(buf));

	if (r < 0)
		return (int)r;
	/* the kernel ends it with a newline that is not part of the name */
	if (buf[r - 1] == '\n')
		r--;
	procfs_sanitize_name(name, size, buf, (size_t)r);
	return 0;
}
