/* SPDX-License-Identifier: MIT */
/*
 * Unit test of profile/atomic.c: the content goes to a hidden temporary file
 * in the target's directory and is renamed into place, mode 0644; a fill
 * that fails leaves no file and an old file untouched; "-" is stdout.
 */

#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/atomic.h"
#include "tests/tap.h"

static char dir[] = "/tmp/cprof-test-atomic.XXXXXX";

/* What a fill saw and does. */
struct job {
	const char *text;	/* written to the fd */
	int fail;		/* returned after writing, 0: success */
	const char *final;	/* the target's name, to look for in the directory */
	int fd;			/* the fd it was given */
	bool temp_seen;		/* a ".FINAL.XXXXXX" file is the fd's file */
	bool final_absent;	/* the final name did not exist yet */
};

/* Whether the directory holds a hidden ".NAME.XXXXXX" that is the file of fd. */
static bool temp_of(const char *name, int fd)
{
	struct stat fst, st;
	struct dirent *e;
	char path[512];
	bool found = false;
	DIR *d = opendir(dir);

	if (!d || fstat(fd, &fst) < 0) {
		if (d)
			closedir(d);
		return false;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] != '.' || strncmp(e->d_name + 1, name, strlen(name)) != 0 ||
		    strlen(e->d_name) != strlen(name) + 8)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) == 0 && st.st_ino == fst.st_ino && st.st_dev == fst.st_dev)
			found = true;
	}
	closedir(d);
	return found;
}

static int fill(int fd, void *arg)
{
	struct job *j = arg;
	char path[512];

	j->fd = fd;
	if (j->final) {
		snprintf(path, sizeof(path), "%s/%s", dir, j->final);
		j->temp_seen = temp_of(j->final, fd);
		j->final_absent = access(path, F_OK) != 0;
	}
	if (j->text && write(fd, j->text, strlen(j->text)) != (ssize_t)strlen(j->text))
		return -errno;
	return j->fail;
}

/* Entries of the directory but . and ..; *hidden counts those starting with '.'. */
static int entries(int *hidden)
{
	struct dirent *e;
	int n = 0;
	DIR *d = opendir(dir);

	*hidden = 0;
	while (d && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		n++;
		*hidden += e->d_name[0] == '.';
	}
	if (d)
		closedir(d);
	return n;
}

static bool file_is(const char *path, const char *text)
{
	char buf[256];
	ssize_t n;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return false;
	buf[n] = '\0';
	return strcmp(buf, text) == 0;
}

static void test_success(void)
{
	struct job j = { .text = "whole\n", .final = "out" };
	char path[512];
	struct stat st;
	int ret, hidden = 0;

	snprintf(path, sizeof(path), "%s/out", dir);
	ret = prof_atomic_write(path, fill, &j);
	check(ret == 0, "write: returns 0 (%d)", ret);
	check(j.temp_seen, "write: fill writes to a hidden .out.XXXXXX in the same directory");
	check(j.final_absent, "write: the final name does not exist while fill runs");
	check(file_is(path, "whole\n"), "write: the file holds what fill wrote");
	check(stat(path, &st) == 0 && (st.st_mode & 07777) == 0644, "write: mode 0644");
	check(entries(&hidden) == 1 && hidden == 0, "write: only the final file is left");
	check(fcntl(j.fd, F_GETFD) < 0, "write: the temporary file's fd is closed");
}

static void test_failure(void)
{
	struct job j = { .text = "half", .fail = -EIO, .final = "new" };
	char path[512], old[512];
	int ret, hidden = 0;

	snprintf(path, sizeof(path), "%s/new", dir);
	ret = prof_atomic_write(path, fill, &j);
	check(ret == -EIO, "failing fill: its error is returned (%d)", ret);
	check(j.temp_seen, "failing fill: it did write to a temporary file");
	check(access(path, F_OK) != 0, "failing fill: no file under the final name");
	check(entries(&hidden) == 1 && hidden == 0,
	      "failing fill: the temporary file is removed (%d hidden left)", hidden);

	/* over an existing file: it stays as it was */
	snprintf(old, sizeof(old), "%s/out", dir);
	j.final = "out";
	ret = prof_atomic_write(old, fill, &j);
	check(ret == -EIO && file_is(old, "whole\n"),
	      "failing fill over an existing file: the old content stays");
	check(entries(&hidden) == 1 && hidden == 0, "failing fill over it: nothing else is left");
}

static void test_paths(void)
{
	struct job j = { .text = "x" };
	char path[512], cwd[4096];
	int ret, hidden = 0;

	check(prof_atomic_write("", fill, &j) == -EINVAL, "path \"\": -EINVAL");
	snprintf(path, sizeof(path), "%s/", dir);
	check(prof_atomic_write(path, fill, &j) == -EISDIR, "a path ending in '/': -EISDIR");
	snprintf(path, sizeof(path), "%s/missing/out", dir);
	ret = prof_atomic_write(path, fill, &j);
	check(ret == -ENOENT && entries(&hidden) == 1,
	      "into a missing directory: -ENOENT, nothing created (%d)", ret);

	j.text = NULL;
	ret = prof_atomic_write("-", fill, &j);
	check(ret == 0 && j.fd == STDOUT_FILENO, "path \"-\": fill gets standard output");

	/* a bare name: the current directory */
	j.text = "rel\n";
	if (getcwd(cwd, sizeof(cwd)) && chdir(dir) == 0) {
		ret = prof_atomic_write("rel", fill, &j);
		check(ret == 0 && file_is("rel", "rel\n"), "a bare name is written in the current directory");
		check(entries(&hidden) == 2 && hidden == 0, "and leaves nothing else there");
		unlink("rel");
		if (chdir(cwd) != 0)
			check(false, "chdir back");
	} else {
		check(false, "chdir to the test directory");
	}
}

int main(void)
{
	char path[512];

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!mkdtemp(dir)) {
		check(false, "mkdtemp: %s", strerror(errno));
		return tap_done();
	}
	test_success();
	test_failure();
	test_paths();
	snprintf(path, sizeof(path), "%s/out", dir);
	unlink(path);
	rmdir(dir);
	return tap_done();
}
