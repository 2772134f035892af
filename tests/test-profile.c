/* SPDX-License-Identifier: MIT */
/* Unit test of profile/: builder, stacks and writer, read back with go tool pprof. */

#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zlib.h>

#include "profile/export.h"
#include "profile/profile.h"
#include "profile/profile.pb-c.h"
#include "profile/reader.h"
#include "profile/report.h"
#include "profile/stacks.h"
#include "tests/tap.h"

#define BUILD_ID_MAIN "0123456789abcdef0123456789abcdef01234567"
#define BUILD_ID_LIBC "fedcba9876543210fedcba9876543210fedcba98"
#define PERIOD_NS 10000000	/* 100 Hz */

static char tmpdir[] = "/tmp/cprof-test-profile.XXXXXX";
static const char *go;		/* NULL: go tool pprof checks are skipped */

/* Prints text as diagnostics, after a failed check. */
static void diag(const char *text)
{
	const char *p = text, *nl;

	while (p && *p) {
		nl = strchr(p, '\n');
		printf("# %.*s\n", nl ? (int)(nl - p) : (int)strlen(p), p);
		p = nl ? nl + 1 : NULL;
	}
}

static char *path_in_tmp(const char *name)
{
	static char buf[8][512];
	static int next;
	char *p = buf[next++ % 8];

	snprintf(p, sizeof(buf[0]), "%s/%s", tmpdir, name);
	return p;
}

/* ---- go ------------------------------------------------------------- */

static const char *find_go(void)
{
	static char buf[4096];
	const char *env = getenv("GO"), *path = getenv("PATH");

	if (env && *env)
		return access(env, X_OK) == 0 ? env : NULL;
	while (path && *path) {
		const char *colon = strchr(path, ':');
		size_t len = colon ? (size_t)(colon - path) : strlen(path);

		if (len && len < sizeof(buf) - 4) {
			snprintf(buf, sizeof(buf), "%.*s/go", (int)len, path);
			if (access(buf, X_OK) == 0)
				return buf;
		}
		path = colon ? colon + 1 : NULL;
	}
	return NULL;
}

/* Appends s to cmd single-quoted for sh. */
static void append_quoted(char *cmd, size_t size, const char *s)
{
	size_t n = strlen(cmd);

	if (n + 1 < size)
		cmd[n++] = '\'';
	for (; *s && n + 5 < size; s++) {
		if (*s == '\'') {
			memcpy(cmd + n, "'\\''", 4);
			n += 4;
		} else {
			cmd[n++] = *s;
		}
	}
	if (n + 1 < size)
		cmd[n++] = '\'';
	cmd[n] = '\0';
}

/* Runs `go tool pprof ARGS FILE`, returns its output (stdout + stderr), *status its exit. */
static char *run_pprof(const char *args, const char *file, int *status)
{
	char cmd[8192] = "";
	char *out = NULL;
	size_t len = 0, cap = 0;
	FILE *p;

	append_quoted(cmd, sizeof(cmd), go);
	snprintf(cmd + strlen(cmd), sizeof(cmd) - strlen(cmd), " tool pprof %s ", args);
	append_quoted(cmd, sizeof(cmd), file);
	strncat(cmd, " 2>&1", sizeof(cmd) - strlen(cmd) - 1);

	fflush(stdout);
	p = popen(cmd, "r");
	if (!p) {
		*status = -1;
		return strdup("");
	}
	for (;;) {
		size_t n;

		if (cap - len < 4096) {
			char *q = realloc(out, cap + 65536);

			if (!q)
				break;
			out = q;
			cap += 65536;
		}
		n = fread(out + len, 1, cap - len - 1, p);
		if (!n)
			break;
		len += n;
	}
	if (out)
		out[len] = '\0';
	*status = pclose(p);
	return out ? out : strdup("");
}

/* The line of text that contains needle, as a new string; NULL if none. */
static char *line_with(const char *text, const char *needle)
{
	const char *hit = strstr(text, needle), *start, *end;

	if (!hit)
		return NULL;
	for (start = hit; start > text && start[-1] != '\n'; start--)
		;
	end = strchr(hit, '\n');
	return strndup(start, end ? (size_t)(end - start) : strlen(start));
}

/* True when the line containing needle also contains every following word. */
static bool line_has(const char *text, const char *needle, const char *const *words)
{
	char *line = line_with(text, needle);
	bool ok = line != NULL;

	for (; ok && *words; words++)
		ok = strstr(line, *words) != NULL;
	free(line);
	return ok;
}

/* ---- files ---------------------------------------------------------- */

static int count_entries(const char *dir, int *hidden)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	*hidden = 0;
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		n++;
		if (de->d_name[0] == '.')
			(*hidden)++;
	}
	closedir(d);
	return n;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	chmod(path, 0700);
	return remove(path);
}

/* Reads and gunzips file; NULL on any failure. */
static unsigned char *gunzip_file(const char *file, size_t *out_len)
{
	unsigned char in[65536], *out = NULL;
	size_t cap = 0, len = 0;
	z_stream zs = { 0 };
	int fd, ret = Z_OK;
	ssize_t n;

	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		goto close_fd;
	while (ret != Z_STREAM_END && (n = read(fd, in, sizeof(in))) > 0) {
		zs.next_in = in;
		zs.avail_in = (uInt)n;
		do {
			if (cap - len < 65536) {
				unsigned char *q = realloc(out, cap + 262144);

				if (!q)
					goto fail;
				out = q;
				cap += 262144;
			}
			zs.next_out = out + len;
			zs.avail_out = (uInt)(cap - len);
			ret = inflate(&zs, Z_NO_FLUSH);
			if (ret != Z_OK && ret != Z_STREAM_END)
				goto fail;
			len = cap - zs.avail_out;
		} while (zs.avail_in && ret != Z_STREAM_END);
	}
	if (ret != Z_STREAM_END)
		goto fail;
	inflateEnd(&zs);
	close(fd);
	*out_len = len;
	return out;

fail:
	inflateEnd(&zs);
	free(out);
	out = NULL;
close_fd:
	close(fd);
	return out;
}

static bool has_gzip_magic(const char *file)
{
	unsigned char m[3] = { 0 };
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	bool ok;

	if (fd < 0)
		return false;
	ok = read(fd, m, 3) == 3 && m[0] == 0x1f && m[1] == 0x8b && m[2] == 8;
	close(fd);
	return ok;
}

/* ---- the main profile ------------------------------------------------ */

struct fixture {
	uint64_t main_map, libc_map;
	uint64_t loc_inline, loc_step, loc_main, loc_start, loc_bad;
};

static int add_sample(struct prof_builder *b, const uint64_t *locs, size_t n, int64_t count,
		      const char *tid, const char *tname, bool reversed)
{
	int64_t values[2] = { count, count * PERIOD_NS };
	struct prof_label labels[2] = {
		{ .key = "thread_id", .str = tid },
		{ .key = "thread_name", .str = tname },
	};

	if (reversed) {
		struct prof_label t = labels[0];

		labels[0] = labels[1];
		labels[1] = t;
	}
	return prof_add_sample(b, locs, n, values, labels, 2);
}

static struct prof_builder *build_profile(struct fixture *fx)
{
	static const struct prof_value_type types[] = {
		{ "samples", "count" },
		{ "cpu", "nanoseconds" },
	};
	const struct prof_value_type period_type = { "cpu", "nanoseconds" };
	const struct prof_mapping main_map = {
		.start = 0x400000, .limit = 0x500000, .offset = 0,
		.filename = "/usr/bin/cprof-test-target", .build_id = BUILD_ID_MAIN,
		.has_functions = true, .has_filenames = true,
		.has_line_numbers = true, .has_inline_frames = true,
	};
	const struct prof_mapping libc_map = {
		.start = 0x7f0000000000, .limit = 0x7f0000100000, .offset = 0x28000,
		.filename = "/lib/x86_64-linux-gnu/libc.so.6", .build_id = BUILD_ID_LIBC,
		.has_functions = true, .has_filenames = true,
		.has_line_numbers = true, .has_inline_frames = true,
	};
	/* innermost inlined callee first, the physical function last */
	const struct prof_line inline_chain[] = {
		{ "inner_helper", NULL, "src/work.c", 10, 12 },
		{ "work_loop", NULL, "src/work.c", 35, 40 },
	};
	const struct prof_line step[] = { { "compute_step", NULL, "src/work.c", 55, 60 } };
	const struct prof_line main_fn[] = { { "main", NULL, "src/main.c", 5, 8 } };
	const struct prof_line start[] = {
		{ "__libc_start_call_main", NULL, "../sysdeps/nptl/libc_start_call_main.h", 29, 58 },
	};
	const struct prof_line bad[] = { { "bad\xff\xfename", "bad\xc0\xafsys", "src/\xe0\x80.c", 1, 3 } };
	const struct prof_line none[] = { { NULL, NULL, "x.c", 0, 0 } };
	struct prof_builder *b;
	uint64_t id = 0, chain[4], bad_chain[3], bogus[2];
	int err;

	err = prof_builder_create(&b, types, 2, period_type, PERIOD_NS);
	check(err == 0, "prof_builder_create");
	if (err)
		return NULL;
	prof_set_time(b, INT64_C(1700000000000000000), INT64_C(2000000000));
	check(prof_add_comment(b, "cprof test profile") == 0, "prof_add_comment");

	check(prof_add_mapping(b, &main_map, &fx->main_map) == 0 && fx->main_map == 1,
	      "main mapping gets id 1");
	check(prof_add_mapping(b, &libc_map, &fx->libc_map) == 0 && fx->libc_map == 2,
	      "second mapping gets id 2");

	err = prof_add_location(b, 0, 0, NULL, 0, &id);
	check(err == -EINVAL, "location with address 0 and no lines is refused (%d)", err);
	err = prof_add_location(b, 0, 0, none, 1, &id);
	check(err == -EINVAL, "location with address 0 and only function-less lines is refused");
	err = prof_add_location(b, 7, 0x401000, step, 1, &id);
	check(err == -EINVAL, "location with an unknown mapping id is refused");

	check(prof_add_location(b, fx->main_map, 0x401010, inline_chain, 2, &fx->loc_inline) == 0 &&
	      fx->loc_inline == 1, "inline location gets id 1 (refusals consume no id)");
	check(prof_add_location(b, fx->main_map, 0x401100, step, 1, &fx->loc_step) == 0 &&
	      fx->loc_step == 2, "location id 2");
	check(prof_add_location(b, fx->main_map, 0x401200, main_fn, 1, &fx->loc_main) == 0,
	      "location main");
	check(prof_add_location(b, fx->libc_map, 0x7f0000001234, start, 1, &fx->loc_start) == 0,
	      "location in libc");
	check(prof_add_location(b, fx->main_map, 0x401300, bad, 1, &fx->loc_bad) == 0,
	      "location with invalid UTF-8 names is accepted");
	/* a second location of an already known function: interned, not duplicated */
	check(prof_add_location(b, fx->main_map, 0x401104, step, 1, &id) == 0 && id == 6,
	      "location id 6");

	chain[0] = fx->loc_inline;
	chain[1] = fx->loc_step;
	chain[2] = fx->loc_main;
	chain[3] = fx->loc_start;
	bad_chain[0] = fx->loc_bad;
	bad_chain[1] = fx->loc_main;
	bad_chain[2] = fx->loc_start;

	/* 1 + 2 must merge into one sample 3 / 30ms, the labels given in another order */
	check(add_sample(b, chain, 4, 1, "101", "worker", false) == 0, "sample 1");
	check(add_sample(b, chain, 4, 2, "101", "worker", true) == 0, "sample 1 again");
	check(prof_sample_count(b) == 1, "identical stack and labels merge (count %zu)",
	      prof_sample_count(b));
	/* same stack, another thread: a sample of its own */
	check(add_sample(b, chain, 4, 5, "102", "main", false) == 0, "sample on another thread");
	check(add_sample(b, chain + 1, 3, 1, "102", "main", false) == 0, "shorter stack");
	check(add_sample(b, bad_chain, 3, 7, "101", "worker", false) == 0, "invalid UTF-8 stack");
	check(prof_sample_count(b) == 4, "4 distinct samples (%zu)", prof_sample_count(b));

	bogus[0] = fx->loc_main;
	bogus[1] = 99;
	err = prof_add_sample(b, bogus, 2, (const int64_t[]){ 1, 1 }, NULL, 0);
	check(err == -EINVAL, "sample with an unknown location id is refused");
	bogus[1] = 0;
	err = prof_add_sample(b, bogus, 2, (const int64_t[]){ 1, 1 }, NULL, 0);
	check(err == -EINVAL, "sample with location id 0 is refused");
	check(prof_sample_count(b) == 4, "refused samples are not added");
	return b;
}

static bool valid_utf8(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	/* a deliberately different check from builder.c: decode and range-check */
	while (*p) {
		uint32_t cp;
		int n, i;

		if (*p < 0x80) {
			p++;
			continue;
		} else if ((*p & 0xe0) == 0xc0) {
			cp = *p & 0x1f;
			n = 1;
		} else if ((*p & 0xf0) == 0xe0) {
			cp = *p & 0x0f;
			n = 2;
		} else if ((*p & 0xf8) == 0xf0) {
			cp = *p & 0x07;
			n = 3;
		} else {
			return false;
		}
		for (i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		p += n + 1;
	}
	return true;
}

/* Decodes the file with protobuf-c and checks the invariants of NOTES.md section 4. */
static void check_decoded(const char *file)
{
	Perftools__Profiles__Profile *p;
	unsigned char *raw;
	size_t len = 0, i, j;
	bool ok;

	raw = gunzip_file(file, &len);
	check(raw != NULL, "file gunzips");
	if (!raw)
		return;
	p = perftools__profiles__profile__unpack(NULL, len, raw);
	free(raw);
	check(p != NULL, "file decodes as perftools.profiles.Profile");
	if (!p)
		return;

	check(p->n_string_table > 0 && p->string_table[0][0] == '\0', "string_table[0] is \"\"");
	ok = true;
	for (i = 0; i < p->n_string_table && ok; i++)
		for (j = i + 1; j < p->n_string_table && ok; j++)
			ok = strcmp(p->string_table[i], p->string_table[j]) != 0;
	check(ok, "every string is in string_table once (%zu strings)", p->n_string_table);
	ok = true;
	for (i = 0; i < p->n_string_table; i++)
		ok = ok && valid_utf8(p->string_table[i]);
	check(ok, "every string is valid UTF-8");
	ok = false;
	for (i = 0; i < p->n_string_table; i++)
		ok = ok || !strcmp(p->string_table[i], "bad\xef\xbf\xbd\xef\xbf\xbdname");
	check(ok, "invalid bytes became U+FFFD");

	ok = p->n_mapping == 2 && p->n_location == 6 && p->n_function == 6;
	for (i = 0; ok && i < p->n_mapping; i++)
		ok = p->mapping[i]->id == i + 1;
	for (i = 0; ok && i < p->n_location; i++)
		ok = p->location[i]->id == i + 1;
	for (i = 0; ok && i < p->n_function; i++)
		ok = p->function[i]->id == i + 1;
	check(ok, "ids are 1..N in array order, functions interned (%zu mappings, %zu locations, "
	      "%zu functions)", p->n_mapping, p->n_location, p->n_function);
	ok = p->n_location > 0 && p->location[0]->n_line == 2 &&
	     p->location[0]->line[0]->line == 12 && p->location[0]->line[1]->line == 40;
	check(ok, "inline location keeps its 2 lines, innermost first");
	check(p->n_sample == 4 && p->n_sample_type == 2 && p->period == PERIOD_NS &&
	      p->time_nanos == INT64_C(1700000000000000000) &&
	      p->duration_nanos == INT64_C(2000000000) && p->n_comment == 1,
	      "samples, sample types, period, time, duration and comment");
	ok = p->n_sample > 0 && p->sample[0]->n_value == 2 && p->sample[0]->value[0] == 3 &&
	     p->sample[0]->value[1] == 3 * PERIOD_NS && p->sample[0]->n_label == 2;
	check(ok, "merged sample holds the summed values 3, 30000000");
	perftools__profiles__profile__free_unpacked(p, NULL);
}

static void check_with_pprof(const char *file)
{
	const char *want_raw[] = {
		"inner_helper", "work_loop", "compute_step", "main", "__libc_start_call_main",
		BUILD_ID_MAIN, BUILD_ID_LIBC, "/usr/bin/cprof-test-target",
		"thread_id:[101]", "thread_id:[102]", "thread_name:[worker]", "thread_name:[main]",
		"cprof test profile", "bad\xef\xbf\xbd\xef\xbf\xbdname",
	};
	char *out, *next;
	const char *inl;
	int status;
	size_t i;
	bool ok;

	out = run_pprof("-raw", file, &status);
	check(status == 0, "go tool pprof -raw accepts the profile (status %d)", status);
	ok = true;
	for (i = 0; i < sizeof(want_raw) / sizeof(want_raw[0]); i++) {
		bool found = strstr(out, want_raw[i]) != NULL;

		check(found, "pprof -raw shows %s", want_raw[i]);
		ok = ok && found;
	}
	check(strstr(out, "PeriodType: cpu nanoseconds") != NULL, "pprof -raw: period type");
	check(strstr(out, "samples/count cpu/nanoseconds") != NULL, "pprof -raw: sample types");
	/* merged: 1 + 2 samples, 10ms + 20ms; stack = locations 1 2 3 4 */
	check(strstr(out, "          3   30000000: 1 2 3 4 \n"
			  "                thread_id:[101] thread_name:[worker]\n") != NULL,
	      "pprof -raw: the merged sample shows 3 30000000 on locations 1 2 3 4, worker labels");
	check(line_has(out, " 5   50000000: 1 2 3 4", (const char *const[]){ NULL }),
	      "pprof -raw: same stack on another thread stays separate (5 50000000)");
	/* the inline chain: one location, inner_helper on its first line, work_loop on the next */
	inl = strstr(out, "     1: 0x401010 M=1 inner_helper src/work.c:12 s=10\n");
	next = inl ? line_with(strchr(inl, '\n') + 1, "") : NULL;
	check(next && strstr(next, "work_loop src/work.c:40 s=35") &&
	      strncmp(next, "     2:", 7) != 0,
	      "pprof -raw: location 1 holds inner_helper then work_loop (inline chain)");
	free(next);
	check(line_has(out, "1: 0x400000/0x500000/0x0 /usr/bin/cprof-test-target",
		       (const char *const[]){ BUILD_ID_MAIN, "[FN][FL][LN][IN]", NULL }),
	      "pprof -raw: main mapping with build id and has_* flags");
	if (tap_failures())
		diag(out);
	free(out);

	out = run_pprof("-top -nodecount=50", file, &status);
	check(status == 0, "go tool pprof -top accepts the profile (status %d)", status);
	/* 30 + 50 + 10 + 70 ms */
	check(strstr(out, "Total samples = 160ms") != NULL, "pprof -top: total 160ms");
	check(line_has(out, "inner_helper", (const char *const[]){ "80ms", "(inline)", NULL }),
	      "pprof -top: inner_helper flat 80ms, marked inline");
	check(line_has(out, " work_loop", (const char *const[]){ "80ms", NULL }),
	      "pprof -top: work_loop cum 80ms");
	check(line_has(out, " compute_step", (const char *const[]){ "10ms", "90ms", NULL }),
	      "pprof -top: compute_step flat 10ms cum 90ms");
	check(line_has(out, " main", (const char *const[]){ "160ms", NULL }),
	      "pprof -top: main cum 160ms");
	check(line_has(out, "name", (const char *const[]){ "70ms", "bad", NULL }),
	      "pprof -top: the sanitized function flat 70ms");
	if (tap_failures())
		diag(out);
	free(out);

	out = run_pprof("-traces -tagfocus=thread_name=worker", file, &status);
	check(status == 0 && strstr(out, "thread_name:  worker") && strstr(out, "thread_id:  101") &&
	      !strstr(out, "thread_id:  102") && !strstr(out, "thread_name:  main"),
	      "pprof -traces -tagfocus: string labels select the worker thread only");
	check(strstr(out, "      30ms   inner_helper (inline)\n             work_loop\n") != NULL,
	      "pprof -traces: the merged worker stack is 30ms, inline frame above its caller");
	if (tap_failures())
		diag(out);
	free(out);
}

/* ---- write paths ----------------------------------------------------- */

static void check_write_paths(struct prof_builder *b)
{
	const char *missing = path_in_tmp("no-such-dir/p.pb.gz");
	const char *ro_dir = path_in_tmp("ro");
	const char *as_dir = path_in_tmp("is-a-dir");
	char ro_file[600];
	struct stat st;
	int err, n, hidden, fd, saved;

	err = prof_write_file(b, missing);
	check(err == -ENOENT, "write into a missing directory fails with -ENOENT (%d)", err);
	check(stat(path_in_tmp("no-such-dir"), &st) < 0, "and creates nothing");

	/* rename onto a directory fails after the temp file is written: cleanup path */
	mkdir(as_dir, 0755);
	err = prof_write_file(b, as_dir);
	check(err == -EISDIR, "write onto a directory fails with -EISDIR (%d)", err);
	n = count_entries(tmpdir, &hidden);
	check(hidden == 0, "and leaves no temporary file behind (%d entries, %d hidden)", n, hidden);
	check(count_entries(as_dir, &hidden) == 0, "the directory is untouched");

	mkdir(ro_dir, 0555);
	chmod(ro_dir, 0555);
	snprintf(ro_file, sizeof(ro_file), "%s/p.pb.gz", ro_dir);
	if (geteuid() == 0) {
		skip("write into a read-only directory fails", "root bypasses permissions");
	} else {
		err = prof_write_file(b, ro_file);
		check(err == -EACCES, "write into a read-only directory fails with -EACCES (%d)",
		      err);
		check(count_entries(ro_dir, &hidden) == 0, "and leaves nothing");
	}

	fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		skip("write to a full device", "/dev/full missing");
	} else {
		err = prof_write_fd(b, fd);
		check(err == -ENOSPC, "a full disk is an error, -ENOSPC (%d)", err);
		close(fd);
	}

	/* "-" is stdout: redirect fd 1 into a file for the duration */
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	fd = open(path_in_tmp("stdout.pb.gz"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (saved < 0 || fd < 0 || dup2(fd, STDOUT_FILENO) < 0) {
		check(false, "redirect stdout");
		return;
	}
	err = prof_write_file(b, "-");
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(fd);
	check(err == 0 && has_gzip_magic(path_in_tmp("stdout.pb.gz")),
	      "path \"-\" writes the gzipped profile to stdout");
}

/* ---- scale ----------------------------------------------------------- */

static void check_scale(void)
{
	static const struct prof_value_type types[] = { { "samples", "count" } };
	const struct prof_value_type pt = { "samples", "count" };
	struct prof_builder *b;
	uint64_t locs[1000], stack[3];
	char name[32], tid[16];
	size_t i;
	int err = 0, round;

	if (prof_builder_create(&b, types, 1, pt, 1)) {
		check(false, "scale: create");
		return;
	}
	for (i = 0; i < 1000 && !err; i++) {
		struct prof_line l = { name, NULL, "gen.c", 1, (int64_t)i };

		snprintf(name, sizeof(name), "fn_%zu", i % 500);
		err = prof_add_location(b, 0, 0x1000 + i, &l, 1, &locs[i]);
	}
	/* 100k distinct (stack, thread) pairs, each added twice */
	for (round = 0; round < 2 && !err; round++) {
		for (i = 0; i < 100000 && !err; i++) {
			struct prof_label lab = { .key = "thread_id", .str = tid };
			int64_t one = 1;

			stack[0] = locs[i % 1000];
			stack[1] = locs[(i / 1000) % 1000];
			stack[2] = locs[999];
			snprintf(tid, sizeof(tid), "%zu", i / 50000);
			err = prof_add_sample(b, stack, 3, &one, &lab, 1);
		}
	}
	check(err == 0 && prof_sample_count(b) == 100000,
	      "scale: 200k additions of 100k distinct samples merge to 100000 (%zu)",
	      prof_sample_count(b));
	err = prof_write_file(b, path_in_tmp("big.pb.gz"));
	check(err == 0 && has_gzip_magic(path_in_tmp("big.pb.gz")), "scale: written (%d)", err);
	prof_builder_destroy(b);
}

/* ---- stacks ---------------------------------------------------------- */

struct seen {
	uint32_t thread[8];
	size_t n_frames[8];
	int64_t v0[8], v1[8];
	int n, stop_at;
};

static int collect(uint32_t thread, const struct prof_frame *frames, size_t n_frames,
		   const int64_t *values, void *arg)
{
	struct seen *s = arg;

	(void)frames;
	if (s->n < 8) {
		s->thread[s->n] = thread;
		s->n_frames[s->n] = n_frames;
		s->v0[s->n] = values[0];
		s->v1[s->n] = values[1];
	}
	s->n++;
	return s->n == s->stop_at ? 42 : 0;
}

/* prof_stacks_add_ref: the remembered entry takes the values, and a stale
 * one (another thread's, another depth) is not trusted. */
static void test_stacks_ref(void)
{
	const struct prof_frame f[3] = {
		{ 0x401010, 1, 0 }, { 0x401105, 1, 0 }, { 0x7f0000001234, 2, 0 },
	};
	const int64_t v[2] = { 1, PERIOD_NS };
	struct prof_stacks *s;
	struct seen seen = { .stop_at = -1 };
	uint32_t e7 = 0, e8 = 0, stale;
	int i, err = 0;

	if (prof_stacks_create(&s, 2)) {
		check(false, "prof_stacks_create");
		return;
	}
	for (i = 0; i < 3 && !err; i++)
		err = prof_stacks_add_ref(s, &e7, 7, f, 3, v);
	check(err == 0 && e7 == 1 && prof_stacks_count(s) == 1,
	      "stacks ref: three adds through one entry are one entry (entry %u)", (unsigned)e7);
	err = prof_stacks_add_ref(s, &e8, 8, f, 3, v);
	check(err == 0 && e8 == 2 && prof_stacks_count(s) == 2,
	      "stacks ref: another thread gets its own entry");
	stale = e7;
	err = prof_stacks_add_ref(s, &stale, 8, f, 3, v);
	check(err == 0 && stale == e8 && prof_stacks_count(s) == 2,
	      "stacks ref: an entry of another thread is not trusted");
	stale = e7;
	err = prof_stacks_add_ref(s, &stale, 7, f + 1, 2, v);
	check(err == 0 && stale == 3 && prof_stacks_count(s) == 3,
	      "stacks ref: an entry of another depth is not trusted");
	stale = 99;
	err = prof_stacks_add_ref(s, &stale, 7, f, 3, v);
	check(err == 0 && stale == e7 && prof_stacks_count(s) == 3,
	      "stacks ref: an entry out of range is looked up");
	prof_stacks_foreach(s, collect, &seen);
	check(seen.n == 3 && seen.v0[0] == 4 && seen.v1[0] == 4 * PERIOD_NS && seen.v0[1] == 2 &&
	      seen.v0[2] == 1, "stacks ref: values summed where they belong (%lld %lld %lld)",
	      (long long)seen.v0[0], (long long)seen.v0[1], (long long)seen.v0[2]);
	prof_stacks_destroy(s);
}

static void check_stacks(void)
{
	const struct prof_frame f[3] = {
		{ 0x401010, 1, PROF_FRAME_EXACT }, { 0x401105, 1, 0 }, { 0x7f0000001234, 2, 0 },
	};
	struct prof_frame g[3];
	const int64_t v[2] = { 1, PERIOD_NS };
	struct prof_stacks *s;
	struct seen seen = { .stop_at = -1 };
	bool ok;
	int err, i;

	if (prof_stacks_create(&s, 2)) {
		check(false, "prof_stacks_create");
		return;
	}
	check(prof_stacks_add(s, 7, f, 3, v) == 0 && prof_stacks_add(s, 7, f, 3, v) == 0 &&
	      prof_stacks_count(s) == 1, "stacks: the same stack twice is one entry");
	check(prof_stacks_add(s, 8, f, 3, v) == 0 && prof_stacks_count(s) == 2,
	      "stacks: another thread is another entry");
	check(prof_stacks_add(s, 7, f + 1, 2, v) == 0 && prof_stacks_count(s) == 3,
	      "stacks: a shorter stack is another entry");
	memcpy(g, f, sizeof(g));
	g[0].flags = 0;
	check(prof_stacks_add(s, 7, g, 3, v) == 0 && prof_stacks_count(s) == 4,
	      "stacks: frame flags are part of the key");
	check(prof_stacks_add(s, 7, f, 3, v) == 0 && prof_stacks_count(s) == 4,
	      "stacks: a known stack after others is still found");

	err = prof_stacks_foreach(s, collect, &seen);
	ok = err == 0 && seen.n == 4 &&
	     seen.thread[0] == 7 && seen.n_frames[0] == 3 && seen.v0[0] == 3 &&
	     seen.v1[0] == 3 * PERIOD_NS &&
	     seen.thread[1] == 8 && seen.n_frames[1] == 3 && seen.v0[1] == 1 &&
	     seen.thread[2] == 7 && seen.n_frames[2] == 2 &&
	     seen.thread[3] == 7 && seen.n_frames[3] == 3;
	check(ok, "stacks: foreach visits in insertion order with summed values");
	memset(&seen, 0, sizeof(seen));
	seen.stop_at = 2;
	err = prof_stacks_foreach(s, collect, &seen);
	check(err == 42 && seen.n == 2, "stacks: foreach stops at and returns a non-zero result");

	/* growth: many distinct stacks, then every one again */
	err = 0;
	for (i = 0; i < 2 * 20000 && !err; i++) {
		memcpy(g, f, sizeof(g));
		g[1].addr = 0x500000 + (uint64_t)(i % 20000);
		err = prof_stacks_add(s, 9, g, 3, v);
	}
	check(err == 0 && prof_stacks_count(s) == 4 + 20000,
	      "stacks: 20000 new stacks added twice give 20000 entries (%zu)",
	      prof_stacks_count(s));
	memset(&seen, 0, sizeof(seen));
	seen.stop_at = -1;
	prof_stacks_foreach(s, collect, &seen);
	check(seen.thread[0] == 7 && seen.v0[0] == 3 && seen.thread[1] == 8,
	      "stacks: earlier entries survive growth");
	prof_stacks_destroy(s);
	test_stacks_ref();
}

/* ---- one name, several functions -------------------------------------- */

/* Lines of the locations of check_names: one line each but the inline one. */
static const struct prof_line name_lines[] = {
	{ "work", "work", "a.c", 10, 11 },	/* L1 */
	{ "work", "work", "a.c", 0, 12 },	/* L2: start unknown, same function as L1 */
	{ "work", "work", "b.c", 30, 31 },	/* L3: another file */
	{ "work", "work", "a.c", 40, 41 },	/* L4: another known start line */
	{ "other", "other", "a.c", 50, 51 },	/* L5 */
	{ "main", "main", "c.c", 1, 2 },	/* L6 */
	{ "work", "work", "a.c", 0, 13 },	/* L7: inlined into main */
	{ "main", "main", "c.c", 1, 3 },
};

/* Row name of pprof -top's table line, with its flat%; false if not a row. */
static bool top_row(const char *line, char *name, size_t size, double *flat_pct)
{
	char flat[64], sum[64], cum[64], cum_pct[64], rest[512];

	if (sscanf(line, " %63s %lf%% %63s %63s %63s %511[^\n]", flat, flat_pct, sum, cum, cum_pct,
		   rest) != 6)
		return false;
	/* "work (inline)": the name is what comes before pprof's marks */
	snprintf(name, size, "%.*s", (int)strcspn(rest, " "), rest);
	return true;
}

/*
 * Rows of pprof -top with a flat value agree with cprof's report: same names
 * in the same order, flat shares within 0.5 point.
 */
static void check_top_agrees(const char *file, const struct prof_rpt *r)
{
	char *out, *line, *save = NULL, name[256];
	size_t i = 0, n_rows = 0;
	double pct, worst = 0;
	bool same = true;
	int status;

	out = run_pprof("-top -nodecount=20", file, &status);
	check(status == 0, "names: go tool pprof -top reads the profile (status %d)", status);
	for (line = strtok_r(out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!top_row(line, name, sizeof(name), &pct) || pct == 0)
			continue;
		n_rows++;
		if (i >= r->n_rows || strcmp(r->rows[i].name, name) != 0) {
			same = false;
			diag(line);
			continue;
		}
		pct -= 100.0 * (double)r->rows[i].flat / (double)r->total;
		if (pct < 0)
			pct = -pct;
		if (pct > worst)
			worst = pct;
		i++;
	}
	check(same && n_rows == 2 && r->rows[2].flat == 0,
	      "names: pprof -top and the report list the same %zu names with flat time", n_rows);
	check(worst <= 0.5, "names: flat shares agree within 0.5 point (worst %.2f)", worst);
	free(out);
}

/*
 * One name with several function records (other files, unknown start
 * lines, inlined copies): the builder keeps one record per function, the
 * report one row per name, as pprof -top does.
 */
static void check_names(void)
{
	static const struct prof_value_type types[] = { { "samples", "count" },
							 { "cpu", "nanoseconds" } };
	const struct prof_mapping m = { .start = 0x1000, .limit = 0x9000, .filename = "/bin/t",
					.has_functions = true, .has_filenames = true,
					.has_line_numbers = true, .has_inline_frames = true };
	static const int64_t weight[] = { 40, 10, 25, 5, 20 };
	const size_t n_loc[] = { 1, 1, 1, 1, 1, 1, 2 };
	struct prof_builder *b = NULL;
	struct prof_rd_profile *v = NULL;
	struct prof_rpt *r = NULL;
	uint64_t mid, loc[7], stack[2];
	size_t i, off = 0;
	const char *file = path_in_tmp("names.pb.gz");
	int err;

	err = prof_builder_create(&b, types, 2, types[1], 10000000);
	if (!err)
		err = prof_add_mapping(b, &m, &mid);
	for (i = 0; !err && i < 7; off += n_loc[i], i++)
		err = prof_add_location(b, mid, 0x1000 + 16 * i, &name_lines[off], n_loc[i], &loc[i]);
	for (i = 0; !err && i < 5; i++) {
		const int64_t values[] = { weight[i], weight[i] * 1000000 };

		stack[0] = loc[i];
		stack[1] = loc[5];
		err = prof_add_sample(b, stack, 2, values, NULL, 0);
	}
	if (!err) {
		const int64_t values[] = { 1, 1000000 };

		err = prof_add_sample(b, &loc[6], 1, values, NULL, 0);
	}
	check(err == 0, "names: the profile builds (%d)", err);
	if (err)
		goto out;
	err = prof_builder_view(b, &v);
	check(err == 0, "names: viewed");
	if (err)
		goto out;
	/* L1 and L2 and the inlined L7: one function; L3, L4: one each */
	{
		const struct prof_rd_location *l[7];

		for (i = 0; i < 5; i++)
			l[i] = v->samples[i].locations[0];
		l[5] = v->samples[0].locations[1];
		l[6] = v->samples[5].locations[0];
		check(l[0]->lines[0].function == l[1]->lines[0].function &&
		      l[0]->lines[0].function == l[6]->lines[0].function &&
		      l[0]->lines[0].function->start_line == 10,
		      "names: one record for work in a.c met with start lines 10 and 0");
		check(l[2]->lines[0].function != l[0]->lines[0].function &&
		      l[3]->lines[0].function != l[0]->lines[0].function &&
		      l[3]->lines[0].function->start_line == 40,
		      "names: another file, another known start line: records of their own");
		check(l[6]->lines[1].function == l[5]->lines[0].function,
		      "names: main inlining work is the same main");
	}
	err = prof_rpt_build(v, 1, PROF_RPT_FUNCTION, &r);
	check(err == 0 && r->n_rows == 3 && strcmp(r->rows[0].name, "work") == 0 &&
	      r->rows[0].flat == 81000000 && strcmp(r->rows[1].name, "other") == 0,
	      "names: by function, work is one row with all its flat time (%lld)",
	      err ? 0LL : (long long)r->rows[0].flat);
	if (err)
		goto out;
	err = prof_write_file(b, file);
	check(err == 0, "names: written");
	if (go && !err)
		check_top_agrees(file, r);
	else
		skip("names: pprof -top agrees with the report", "go not found");
out:
	prof_rpt_free(r);
	prof_rd_free(v);
	prof_builder_destroy(b);
}

/* ---- export's errors ------------------------------------------------------ */

static int label_fails(uint32_t key, pid_t *tid, const char **name, void *arg)
{
	(void)key, (void)tid, (void)name;
	return *(int *)arg;
}

/*
 * prof_export of one raw stack: a thread label that is unknown (-ENOENT)
 * leaves the sample without labels; any other failure of the label, such
 * as -ENOMEM, fails the export instead of passing for "no label".  A caller
 * frame whose return address is 1 (garbage from a broken walk: its call
 * would be at address 0) is left out; the sample and the profile stay.
 */
static void check_export_errors(void)
{
	const struct prof_frame f[] = { { 0x1234, 0, PROF_FRAME_EXACT }, { 1, 0, 0 } };
	const int64_t v[] = { 1, 10000000 };
	struct prof_stacks *st = NULL;
	struct proc_modules *mods = NULL;
	struct prof_builder *b = NULL;
	struct prof_export_opts o = { .value = PROF_VALUE_WALL, .hz = 100,
				      .thread_label = label_fails };
	int err, fail;

	err = prof_stacks_create(&st, 2);
	if (!err)
		err = prof_stacks_add(st, 1, f, 2, v);
	if (!err)
		err = proc_modules_create(&mods, getpid());
	check(err == 0, "export: a raw stack and a module table (%d)", err);
	if (err)
		goto out;
	o.arg = &fail;
	fail = -ENOENT;
	err = prof_export(st, mods, NULL, &o, &b);
	check(err == 0 && b && prof_sample_count(b) == 1,
	      "export: an unknown thread (-ENOENT) is a sample without labels (%d)", err);
	check(err == 0 && b && prof_location_count(b) == 1,
	      "export: a caller frame at return address 1 is left out, not a failed export");
	prof_builder_destroy(b);
	b = NULL;
	fail = -ENOMEM;
	err = prof_export(st, mods, NULL, &o, &b);
	check(err == -ENOMEM && !b, "export: -ENOMEM from the thread label fails the export (%d)",
	      err);
	o.value = 0;
	err = prof_export(st, mods, NULL, &o, &b);
	check(err == -EINVAL && !b, "export: no value kind given is -EINVAL (%d)", err);
out:
	proc_modules_destroy(mods);
	prof_stacks_destroy(st);
}

/* ---- Python frames -------------------------------------------------------- */

/* Names location ids 1 and 2; 3 is unknown (-ENOENT). */
static int python_line(uint64_t id, struct prof_line *out, void *arg)
{
	(void)arg;
	if (id == 1)
		*out = (struct prof_line){ .function = "Worker.run", .filename = "/srv/app.py",
					   .line = 12 };
	else if (id == 2)
		*out = (struct prof_line){ .function = "main", .filename = "/srv/app.py", .line = 40 };
	else
		return -ENOENT;
	return 0;
}

/*
 * prof_export of stacks with Python frames: each becomes a location of no
 * mapping and address 0 whose line has the function, the .py file and the
 * line; one id is one location however many samples have it; a frame its
 * reader cannot name is left out (the sample stays), and without a reader
 * every Python frame is.
 */
static void check_export_python(void)
{
	const struct prof_frame f[] = {
		{ 0x1234, 0, PROF_FRAME_EXACT }, { 1, 0, PROF_FRAME_PYTHON },
		{ 3, 0, PROF_FRAME_PYTHON }, { 2, 0, PROF_FRAME_PYTHON }, { 0x5678, 0, 0 },
	};
	const int64_t v[] = { 1, 10000000 };
	struct prof_stacks *st = NULL;
	struct proc_modules *mods = NULL;
	struct prof_builder *b = NULL;
	struct prof_rd_profile *p = NULL;
	struct prof_export_opts o = { .value = PROF_VALUE_CPU, .hz = 100, .python_line = python_line };
	const struct prof_rd_sample *sm;
	int err;

	err = prof_stacks_create(&st, 2);
	if (!err)
		err = prof_stacks_add(st, 1, f, 5, v);
	if (!err)
		err = prof_stacks_add(st, 2, f + 1, 4, v);
	if (!err)
		err = proc_modules_create(&mods, getpid());
	if (!err)
		err = prof_export(st, mods, NULL, &o, &b);
	if (!err)
		err = prof_builder_view(b, &p);
	check(err == 0, "export python: stacks exported and viewed (%d)", err);
	if (err)
		goto out;
	check(p->n_samples == 2 && prof_location_count(b) == 4,
	      "export python: 2 samples, 4 locations: two native, two Python (%zu, %zu)",
	      p->n_samples, prof_location_count(b));
	sm = &p->samples[0];
	check(sm->n_locations == 4 && sm->locations[1]->n_lines == 1 &&
	      !strcmp(sm->locations[1]->lines[0].function->name, "Worker.run") &&
	      !strcmp(sm->locations[1]->lines[0].function->filename, "/srv/app.py") &&
	      sm->locations[1]->lines[0].line == 12 && !strcmp(sm->locations[2]->lines[0].function->name, "main") &&
	      sm->locations[2]->lines[0].line == 40,
	      "export python: the frames keep their order, name, file and line; id 3 is left out");
	check(sm->n_locations == 4 && sm->locations[1]->address == 0 && !sm->locations[1]->mapping,
	      "export python: a Python location has address 0 and no mapping");
	check(p->samples[1].n_locations == 3 && p->samples[1].locations[0] == sm->locations[1],
	      "export python: one location id is one location in every sample");
	prof_rd_free(p);
	p = NULL;
	prof_builder_destroy(b);
	b = NULL;
	o.python_line = NULL;
	err = prof_export(st, mods, NULL, &o, &b);
	check(err == 0 && b && prof_location_count(b) == 2,
	      "export python: without a reader the Python frames are left out (%d)", err);
out:
	prof_rd_free(p);
	prof_builder_destroy(b);
	proc_modules_destroy(mods);
	prof_stacks_destroy(st);
}

int main(void)
{
	struct prof_builder *b;
	struct fixture fx;
	const char *file;
	struct stat st;
	int hidden;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!mkdtemp(tmpdir)) {
		check(false, "mkdtemp: %s", strerror(errno));
		return tap_done();
	}
	go = find_go();

	check_stacks();

	b = build_profile(&fx);
	if (!b)
		goto out;
	file = path_in_tmp("cpu.pb.gz");
	check(prof_write_file(b, file) == 0, "prof_write_file");
	check(has_gzip_magic(file), "file starts with the gzip magic 1f 8b 08");
	check(stat(file, &st) == 0 && (st.st_mode & 07777) == 0644, "file mode is 0644");
	check(count_entries(tmpdir, &hidden) == 1 && hidden == 0,
	      "only the final file is left in the directory");
	check_decoded(file);
	if (go)
		check_with_pprof(file);
	else
		skip("go tool pprof checks", "go not found (set GO or PATH)");
	check_write_paths(b);
	prof_builder_destroy(b);

	check_scale();
	check_names();
	check_export_errors();
	check_export_python();

out:
	nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return tap_done();
}
