/* SPDX-License-Identifier: MIT */
/* Unit test of profile/flame.c: collapsed stacks and SVG of a hand-built profile with hostile names. */

#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "profile/flame.h"
#include "profile/profile.h"
#include "profile/reader.h"
#include "profile/report.h"
#include "tests/tap.h"

static char tmpdir[] = "/tmp/cprof-test-flame.XXXXXX";

/* ---- the profile ---------------------------------------------------------- */

#define NASTY "a&b<c>\"d'e;f\ng"
#define NASTY_COLLAPSED "a&b<c>\"d'e_f_g"
#define NASTY_XML "a&amp;b&lt;c&gt;&quot;d&apos;e_f_g"
#define BADUTF "bad\xff\xfe"

enum { F_MAIN, F_WORKER, F_DO_WORK, F_LEAF_A, F_LEAF_B, F_NASTY, F_BAD, F_INL, F_N };

static const struct prof_rd_function funcs[F_N] = {
	[F_MAIN] = { .name = "main", .system_name = "main", .filename = "t.c" },
	[F_WORKER] = { .name = "worker_main", .system_name = "", .filename = "t.c" },
	[F_DO_WORK] = { .name = "do_work", .system_name = "", .filename = "t.c" },
	[F_LEAF_A] = { .name = "leaf_a", .system_name = "", .filename = "t.c" },
	[F_LEAF_B] = { .name = "", .system_name = "leaf_b", .filename = "t.c" },
	[F_NASTY] = { .name = NASTY, .system_name = "", .filename = "t.c" },
	[F_BAD] = { .name = BADUTF, .system_name = "", .filename = "t.c" },
	[F_INL] = { .name = "inl_callee", .system_name = "", .filename = "t.c" },
};

static const struct prof_rd_line lines[] = {
	{ &funcs[F_MAIN], 1 },		/* 0 */
	{ &funcs[F_WORKER], 2 },	/* 1 */
	{ &funcs[F_DO_WORK], 3 },	/* 2 */
	{ &funcs[F_LEAF_A], 4 },	/* 3 */
	{ &funcs[F_LEAF_B], 5 },	/* 4 */
	{ &funcs[F_NASTY], 6 },		/* 5 */
	{ &funcs[F_BAD], 7 },		/* 6 */
	{ &funcs[F_INL], 8 },		/* 7: inlined into do_work, innermost first */
	{ &funcs[F_DO_WORK], 9 },	/* 8 */
};

static const struct prof_rd_mapping libfoo = {
	.start = 0x1000, .limit = 0x2000, .offset = 0, .filename = "/usr/lib/libfoo.so",
};

enum { L_MAIN, L_WORKER, L_DO_WORK, L_LEAF_A, L_LEAF_B, L_NASTY, L_BAD, L_INL, L_ADDR, L_N };

static const struct prof_rd_location locs[L_N] = {
	[L_MAIN] = { 0x10, NULL, &lines[0], 1 },
	[L_WORKER] = { 0x20, NULL, &lines[1], 1 },
	[L_DO_WORK] = { 0x30, NULL, &lines[2], 1 },
	[L_LEAF_A] = { 0x40, NULL, &lines[3], 1 },
	[L_LEAF_B] = { 0x50, NULL, &lines[4], 1 },
	[L_NASTY] = { 0x60, NULL, &lines[5], 1 },
	[L_BAD] = { 0x70, NULL, &lines[6], 1 },
	[L_INL] = { 0x80, NULL, &lines[7], 2 },
	[L_ADDR] = { 0x1234, &libfoo, NULL, 0 },
};

/* leaf first, as pprof stores them */
static const struct prof_rd_location *const st_a[] = { &locs[L_LEAF_A], &locs[L_DO_WORK], &locs[L_WORKER] };
static const struct prof_rd_location *const st_b[] = { &locs[L_LEAF_B], &locs[L_DO_WORK], &locs[L_WORKER] };
static const struct prof_rd_location *const st_dw[] = { &locs[L_DO_WORK], &locs[L_WORKER] };
static const struct prof_rd_location *const st_nasty[] = { &locs[L_NASTY], &locs[L_MAIN] };
static const struct prof_rd_location *const st_bad[] = { &locs[L_BAD], &locs[L_MAIN] };
static const struct prof_rd_location *const st_inl[] = { &locs[L_INL], &locs[L_MAIN] };
static const struct prof_rd_location *const st_addr[] = { &locs[L_ADDR], &locs[L_MAIN] };

static const int64_t v_a1[] = { 7, 70 }, v_a2[] = { 1, 10 }, v_b[] = { 3, 30 }, v_dw[] = { 1, 6 },
	v_nasty[] = { 2, 20 }, v_bad[] = { 1, 5 }, v_inl[] = { 2, 15 }, v_addr[] = { 1, 4 },
	v_zero[] = { 1, 0 };

static const struct prof_rd_label lab_w0[] = { { "thread_id", "11", 0, NULL },
						 { "thread_name", "worker-0", 0, NULL } };
static const struct prof_rd_label lab_w1[] = { { "thread_name", "w;1", 0, NULL } };

#define STACK(s) s, sizeof(s) / sizeof(s[0])

static const struct prof_rd_sample samples[] = {
	{ STACK(st_a), v_a1, lab_w0, 2 },
	{ STACK(st_b), v_b, lab_w1, 1 },
	{ STACK(st_a), v_a2, lab_w0, 2 },
	{ STACK(st_dw), v_dw, NULL, 0 },
	{ STACK(st_nasty), v_nasty, NULL, 0 },
	{ STACK(st_bad), v_bad, NULL, 0 },
	{ STACK(st_inl), v_inl, NULL, 0 },
	{ STACK(st_addr), v_addr, NULL, 0 },
	{ STACK(st_nasty), v_zero, NULL, 0 },	/* value 0: left out */
};

static const struct prof_rd_value_type types[] = { { "samples", "count" },
						   { "cpu", "nanoseconds" } };

static const struct prof_rd_profile profile = {
	.sample_types = types,
	.n_sample_types = 2,
	.default_type = 1,
	.period_type = { "cpu", "nanoseconds" },
	.period = 10000000,
	.samples = samples,
	.n_samples = sizeof(samples) / sizeof(samples[0]),
};

static const struct prof_rd_profile empty = {
	.sample_types = types,
	.n_sample_types = 2,
	.default_type = 1,
};

static const char want_collapsed[] =
	"main;" NASTY_COLLAPSED " 20\n"
	"main;" BADUTF " 5\n"
	"main;do_work;inl_callee 15\n"
	"main;libfoo.so+0x234 4\n"
	"worker_main;do_work 6\n"
	"worker_main;do_work;leaf_a 80\n"
	"worker_main;do_work;leaf_b 30\n";

static const char want_threads[] =
	"main;" NASTY_COLLAPSED " 20\n"
	"main;" BADUTF " 5\n"
	"main;do_work;inl_callee 15\n"
	"main;libfoo.so+0x234 4\n"
	"w_1;worker_main;do_work;leaf_b 30\n"
	"worker-0;worker_main;do_work;leaf_a 80\n"
	"worker_main;do_work 6\n";

/* the sample left out of cpu (value 0) counts here */
static const char want_counts[] =
	"main;" NASTY_COLLAPSED " 3\n"
	"main;" BADUTF " 1\n"
	"main;do_work;inl_callee 2\n"
	"main;libfoo.so+0x234 1\n"
	"worker_main;do_work 1\n"
	"worker_main;do_work;leaf_a 8\n"
	"worker_main;do_work;leaf_b 3\n";

/* ---- helpers ------------------------------------------------------------- */

/* What writer puts in a memory stream, or NULL; *ret gets its return. */
static char *capture(int (*writer)(const struct prof_rd_profile *, size_t, unsigned, FILE *),
		     const struct prof_rd_profile *p, size_t type, unsigned flags, int *ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f) {
		*ret = -errno;
		return NULL;
	}
	*ret = writer(p, type, flags, f);
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int svg_writer(const struct prof_rd_profile *p, size_t type, unsigned flags, FILE *f)
{
	return prof_flame_svg(p, type, "a <title> & \"more\"", flags, f);
}

static char *read_all(const char *path)
{
	char *buf = NULL;
	size_t len = 0, n;
	FILE *f = fopen(path, "r"), *m;
	char chunk[4096];

	if (!f)
		return NULL;
	m = open_memstream(&buf, &len);
	if (!m) {
		fclose(f);
		return NULL;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	fclose(m);
	return buf;
}

/* The width of the frame whose title starts with "NAME (". */
static double frame_width(const char *svg, const char *name)
{
	char key[128];
	const char *t;
	double w;

	snprintf(key, sizeof(key), "<title>%s (", name);
	t = strstr(svg, key);
	if (!t)
		return -1;
	t = strstr(t, "width=\"");
	if (!t || sscanf(t, "width=\"%lf\"", &w) != 1)
		return -1;
	return w;
}

/* python3's XML parser on path: 1 well-formed, 0 not, -1 no python3. */
static int xml_well_formed(const char *path)
{
	pid_t pid;
	int st;

	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execlp("python3", "python3", "-c",
		       "import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])", path,
		       (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return 0;
	if (WEXITSTATUS(st) == 127)
		return -1;
	return WEXITSTATUS(st) == 0;
}

static void check_xml(const char *path, const char *what)
{
	int wf = xml_well_formed(path);

	if (wf < 0)
		skip(what, "python3 not found: XML well-formedness not checked");
	else
		check(wf == 1, "%s is well-formed XML (python3 xml.dom.minidom)", what);
}

static int entries_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* ---- tests --------------------------------------------------------------- */

static void test_collapsed(void)
{
	char *out;
	int ret;

	out = capture(prof_flame_collapsed, &profile, 1, 0, &ret);
	check(ret == 0 && out && strcmp(out, want_collapsed) == 0,
	      "collapsed (cpu): merged, root first, inline frames, sanitized, sorted");
	if (out && strcmp(out, want_collapsed))
		printf("# got:\n%s# want:\n%s", out, want_collapsed);
	free(out);

	out = capture(prof_flame_collapsed, &profile, 1, PROF_FLAME_THREADS, &ret);
	check(ret == 0 && out && strcmp(out, want_threads) == 0,
	      "collapsed with PROF_FLAME_THREADS: thread_name as the root frame");
	if (out && strcmp(out, want_threads))
		printf("# got:\n%s# want:\n%s", out, want_threads);
	free(out);

	out = capture(prof_flame_collapsed, &profile, 0, 0, &ret);
	check(ret == 0 && out && strcmp(out, want_counts) == 0, "collapsed of sample type 0 (count)");
	free(out);

	out = capture(prof_flame_collapsed, &profile, 2, 0, &ret);
	check(ret == -EINVAL, "collapsed: a type out of range is -EINVAL (got %d)", ret);
	free(out);

	out = capture(prof_flame_collapsed, &empty, 0, 0, &ret);
	check(ret == 0 && out && !*out, "collapsed of a profile without samples is empty");
	free(out);
}

static void test_svg(void)
{
	char path[sizeof(tmpdir) + 32];
	double wa, wb;
	char *out;
	FILE *f;
	int ret;

	out = capture(svg_writer, &profile, 1, 0, &ret);
	check(ret == 0 && out, "svg: written (%d)", ret);
	if (!out)
		return;
	snprintf(path, sizeof(path), "%s/mem.svg", tmpdir);
	f = fopen(path, "w");
	if (f) {
		fputs(out, f);
		fclose(f);
	}
	check_xml(path, "svg with hostile names");
	check(strstr(out, "<title>" NASTY_XML " (20, 12.50%)</title>") != NULL,
	      "svg: & < > \" ' escaped in a title, ';' and newline replaced");
	check(strstr(out, "a &lt;title&gt; &amp; &quot;more&quot;") != NULL, "svg: the title is escaped");
	check(strstr(out, "<title>bad?? (5, 3.12%)</title>") != NULL,
	      "svg: bytes that are not UTF-8 become '?'");
	check(strstr(out, "<title>inl_callee (15, 9.38%)</title>") != NULL, "svg: inline frame drawn");
	check(strstr(out, "<title>libfoo.so+0x234 (4, 2.50%)</title>") != NULL,
	      "svg: a location without lines is MODULE+0xOFFSET");
	check(strstr(out, "<title>worker_main (116, 72.50%)</title>") != NULL,
	      "svg: a frame's value includes its callees");
	wa = frame_width(out, "leaf_a");
	wb = frame_width(out, "leaf_b");
	check(wa > 589.9 && wa < 590.1 && wb > 221.2 && wb < 221.3,
	      "svg: widths proportional to values (leaf_a %.2f of 590, leaf_b %.2f of 221.25)", wa,
	      wb);
	check(strstr(out, "http") == NULL || strstr(out, "xmlns=\"http://www.w3.org/2000/svg\"") != NULL,
	      "svg: nothing external beyond the SVG namespace");
	check(strstr(out, "<script") && !strstr(out, "src="), "svg: the script is inline");
	free(out);

	out = capture(svg_writer, &empty, 0, 0, &ret);
	check(ret == 0 && out && strstr(out, "no samples"), "svg of a profile without samples");
	if (out) {
		snprintf(path, sizeof(path), "%s/empty.svg", tmpdir);
		f = fopen(path, "w");
		if (f) {
			fputs(out, f);
			fclose(f);
		}
		check_xml(path, "svg without samples");
	}
	free(out);
}

static void test_files(void)
{
	char path[sizeof(tmpdir) + 64], *out;
	int ret, fd;

	snprintf(path, sizeof(path), "%s/files", tmpdir);
	if (mkdir(path, 0755) < 0) {
		check(false, "mkdir %s: %s", path, strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/files/p.collapsed", tmpdir);
	ret = prof_flame_collapsed_file(&profile, 1, path, 0);
	out = read_all(path);
	check(ret == 0 && out && strcmp(out, want_collapsed) == 0,
	      "prof_flame_collapsed_file writes the collapsed stacks");
	free(out);

	snprintf(path, sizeof(path), "%s/files/p.svg", tmpdir);
	ret = prof_flame_svg_file(&profile, 1, path, "t");
	check(ret == 0, "prof_flame_svg_file returns 0 (%d)", ret);
	check_xml(path, "prof_flame_svg_file's output");

	ret = prof_flame_svg_file(&profile, 5, path, "t");
	check(ret == -EINVAL, "prof_flame_svg_file: type out of range is -EINVAL");
	snprintf(path, sizeof(path), "%s/files/nodir/p.svg", tmpdir);
	ret = prof_flame_svg_file(&profile, 1, path, "t");
	check(ret == -ENOENT, "prof_flame_svg_file into a missing directory is -ENOENT (%d)", ret);
	snprintf(path, sizeof(path), "%s/files", tmpdir);
	check(entries_in(path) == 2, "no temporary file is left behind (%d entries)",
	      entries_in(path));

	fd = open("/dev/full", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		ret = prof_flame_svg_fd(&profile, 1, NULL, 0, fd);
		check(ret == -ENOSPC, "svg to /dev/full is -ENOSPC (%d)", ret);
		ret = prof_flame_collapsed_fd(&profile, 1, 0, fd);
		check(ret == -ENOSPC, "collapsed to /dev/full is -ENOSPC (%d)", ret);
		close(fd);
	}
}

/* ---- a live profile: the builder's view against the same profile read back -- */

/* A small profile with inlining, an address-only frame, labels, a bad name. */
static struct prof_builder *build_live(void)
{
	static const struct prof_value_type vtypes[] = { { "samples", "count" },
							{ "cpu", "nanoseconds" } };
	const struct prof_mapping m = { .start = 0x1000, .limit = 0x9000, .filename = "/bin/t" };
	const struct prof_line l_main = { "main", NULL, "t.c", 1, 10 };
	const struct prof_line l_inl[] = { { "inl", NULL, "t.c", 20, 21 },
					   { "work", NULL, "t.c", 30, 33 } };
	const struct prof_line l_bad = { "b\xff" "d;x", NULL, "t.c", 40, 41 };
	const struct prof_label lab[] = { { .key = "thread_name", .str = "w1" },
					  { .key = "n", .num = 3, .num_unit = "bytes" } };
	struct prof_builder *b = NULL;
	uint64_t mid, loc[4], stack[3];
	const int64_t v1[] = { 1, 100 }, v2[] = { 2, 250 }, v3[] = { 1, 0 };
	int err;

	err = prof_builder_create(&b, vtypes, 2, vtypes[1], 10000000);
	if (!err)
		err = prof_add_mapping(b, &m, &mid);
	if (!err)
		err = prof_add_location(b, mid, 0x1100, &l_main, 1, &loc[0]);
	if (!err)
		err = prof_add_location(b, mid, 0x1200, l_inl, 2, &loc[1]);
	if (!err)
		err = prof_add_location(b, mid, 0x1300, &l_bad, 1, &loc[2]);
	if (!err)
		err = prof_add_location(b, mid, 0x1400, NULL, 0, &loc[3]);
	stack[0] = loc[1], stack[1] = loc[0];
	if (!err)
		err = prof_add_sample(b, stack, 2, v1, lab, 2);
	if (!err)
		err = prof_add_sample(b, stack, 2, v2, NULL, 0);
	stack[0] = loc[2], stack[1] = loc[3], stack[2] = loc[0];
	if (!err)
		err = prof_add_sample(b, stack, 3, v2, lab, 1);
	if (!err)
		err = prof_add_sample(b, stack, 1, v3, NULL, 0);
	if (!err)
		err = prof_add_comment(b, "a comment");
	if (err) {
		prof_builder_destroy(b);
		return NULL;
	}
	return b;
}

/* The report of p as text, one row a line, for comparing two reports. */
static char *report_text(const struct prof_rd_profile *p, size_t type)
{
	struct prof_rpt *r = NULL;
	char *buf = NULL;
	size_t len = 0, i;
	FILE *f;

	if (prof_rpt_build(p, type, PROF_RPT_FUNCTION, &r) < 0)
		return NULL;
	f = open_memstream(&buf, &len);
	if (f) {
		fprintf(f, "total %lld\n", (long long)r->total);
		for (i = 0; i < r->n_rows; i++)
			fprintf(f, "%s %s %lld %lld %d %d\n", r->rows[i].name, r->rows[i].file,
				(long long)r->rows[i].flat, (long long)r->rows[i].cum,
				r->rows[i].inlined, r->rows[i].partly_inlined);
		fclose(f);
	}
	prof_rpt_free(r);
	return buf;
}

static bool same_text(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static void test_view(void)
{
	struct prof_builder *b = build_live();
	struct prof_rd_profile *view = NULL, *back = NULL;
	char path[sizeof(tmpdir) + 16], *x, *y;
	size_t t;
	int ret;

	check(b != NULL, "view: the live profile builds");
	if (!b)
		return;
	ret = prof_builder_view(b, &view);
	check(ret == 0 && view, "view: prof_builder_view returns 0 (%d)", ret);
	snprintf(path, sizeof(path), "%s/live.pb.gz", tmpdir);
	ret = prof_write_file(b, path);
	if (!ret)
		ret = prof_rd_file(path, &back);
	check(ret == 0 && back, "view: the same profile written and read back (%d)", ret);
	if (!view || !back)
		goto out;
	check(view->n_samples == back->n_samples && view->n_sample_types == back->n_sample_types &&
	      view->default_type == back->default_type && view->period == back->period &&
	      view->n_comments == 1 && strcmp(view->comments[0], back->comments[0]) == 0,
	      "view: samples, types, period and comments as read back");
	for (t = 0; t < 2; t++) {
		x = capture(prof_flame_collapsed, view, t, PROF_FLAME_THREADS, &ret);
		y = capture(prof_flame_collapsed, back, t, PROF_FLAME_THREADS, &ret);
		check(same_text(x, y) && strlen(x) > 0,
		      "view: collapsed stacks of type %zu equal those read back", t);
		free(x);
		free(y);
		x = report_text(view, t);
		y = report_text(back, t);
		check(same_text(x, y), "view: the report of type %zu equals the one read back", t);
		free(x);
		free(y);
	}
	x = capture(svg_writer, view, 1, 0, &ret);
	y = capture(svg_writer, back, 1, 0, &ret);
	check(same_text(x, y), "view: the SVG equals the one read back");
	free(x);
	free(y);
out:
	prof_rd_free(view);
	prof_rd_free(back);
	prof_builder_destroy(b);
}

static int remove_tree(const char *dir)
{
	char cmd[sizeof(tmpdir) + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

int main(void)
{
	if (!mkdtemp(tmpdir)) {
		fprintf(stderr, "test-flame: cannot create a temporary directory: %s\n",
			strerror(errno));
		return 99;
	}
	test_collapsed();
	test_svg();
	test_files();
	test_view();
	if (tap_failures())
		printf("# files kept in %s\n", tmpdir);
	else
		remove_tree(tmpdir);
	return tap_done();
}
