/* SPDX-License-Identifier: MIT */
/*
 * Unit test of profile/reader.c's limits: gzip bombs, messages whose decoded
 * structs would take gigabytes, and oversized files are refused with -EFBIG
 * and a reason, without allocating what they claim.
 */

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <zlib.h>

#include "profile/flame.h"
#include "profile/reader.h"
#include "profile/report.h"
#include "tests/tap.h"


/* One gzip member holding in (len bytes) into a malloc'ed buffer; NULL on failure. */
static unsigned char *gzip_member(const void *in, size_t len, size_t *out_len)
{
	z_stream zs;
	unsigned char *out;
	size_t cap = len / 100 + 4096;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	cap = deflateBound(&zs, len);
	out = malloc(cap);
	zs.next_in = (unsigned char *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	if (!out || deflate(&zs, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&zs);
		free(out);
		return NULL;
	}
	*out_len = cap - zs.avail_out;
	deflateEnd(&zs);
	return out;
}

/* n copies of the gzip of in: a valid multi-member gzip stream. */
static unsigned char *gzip_repeated(const void *in, size_t len, size_t n, size_t *out_len)
{
	size_t one, i;
	unsigned char *m = gzip_member(in, len, &one), *out;

	if (!m)
		return NULL;
	out = malloc(one * n);
	for (i = 0; out && i < n; i++)
		memcpy(out + i * one, m, one);
	free(m);
	*out_len = one * n;
	return out;
}

static long max_rss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* About 1 GiB of zeros in about 1 MiB of gzip, as a hostile CI input would be. */
static void test_gzip_bomb(void)
{
	size_t chunk = (size_t)16 << 20, len = 0;
	char *zeros = calloc(1, chunk);
	unsigned char *bomb = zeros ? gzip_repeated(zeros, chunk, 64, &len) : NULL;
	struct prof_rd_profile *p = NULL;
	const char *why = NULL;
	long before;
	int ret;

	free(zeros);
	check(bomb != NULL, "bomb: 64 gzip members of 16 MiB of zeros (%zu bytes)", len);
	if (!bomb)
		return;
	before = max_rss_kib();
	ret = prof_rd_buffer_why(bomb, len, &p, &why);
	check(ret == -EFBIG && !p, "bomb: refused with -EFBIG (%d)", ret);
	check(why && strstr(why, "256 MiB"), "bomb: the reason names the limit (%s)",
	      why ? why : "none");
	/* the output is counted before anything is allocated for it */
	check(max_rss_kib() - before < 128 * 1024,
	      "bomb: the peak RSS grew by %ld MiB, under 128 MiB", (max_rss_kib() - before) / 1024);
	free(bomb);
}

/*
 * 24 MiB of empty Sample messages (field 2, length 0): each two bytes of
 * protobuf become a struct of about 100 bytes, over 1 GiB in all.
 */
static void test_struct_bomb(void)
{
	size_t n = (size_t)12 << 20, len = 0, i;
	unsigned char *msg = malloc(2 * n), *gz;
	struct prof_rd_profile *p = NULL;
	const char *why = NULL;
	int ret;

	for (i = 0; msg && i < n; i++) {
		msg[2 * i] = 0x12;
		msg[2 * i + 1] = 0;
	}
	gz = msg ? gzip_member(msg, 2 * n, &len) : NULL;
	free(msg);
	check(gz != NULL, "struct bomb: built (%zu bytes of gzip)", len);
	if (!gz)
		return;
	ret = prof_rd_buffer_why(gz, len, &p, &why);
	check(ret == -EFBIG && !p, "struct bomb: refused with -EFBIG (%d)", ret);
	check(why && strstr(why, "1 GiB"), "struct bomb: the reason names the limit (%s)",
	      why ? why : "none");
	free(gz);
}

/* A sparse file over the size limit is refused without being read whole. */
static void test_big_file(void)
{
	char path[] = "/tmp/cprof-test-reader.XXXXXX";
	struct prof_rd_profile *p = NULL;
	const char *why = NULL;
	int fd = mkstemp(path), ret;

	check(fd >= 0, "big file: created");
	if (fd < 0)
		return;
	ret = ftruncate(fd, (off_t)300 << 20);
	close(fd);
	check(ret == 0, "big file: 300 MiB, sparse");
	ret = prof_rd_file_why(path, &p, &why);
	check(ret == -EFBIG && !p, "big file: refused with -EFBIG (%d)", ret);
	check(why && strstr(why, "257 MiB"), "big file: the reason names the limit (%s)",
	      why ? why : "none");
	unlink(path);
}

/* Under the limits the same kind of input is read: the limits are not too tight. */
static void test_under_limits(void)
{
	struct prof_rd_profile *p = NULL;
	const char *why = NULL;
	char zeros[4096] = { 0 };
	size_t len = 0;
	unsigned char *gz = gzip_repeated(zeros, sizeof(zeros), 3, &len);
	int ret;

	if (!gz) {
		check(false, "small gzip: built");
		return;
	}
	ret = prof_rd_buffer_why(gz, len, &p, &why);
	/* all zeros is field 0, which protobuf refuses: a decode error, not a size one */
	check(ret == -EBADMSG && why && strstr(why, "protobuf"),
	      "12 KiB of zeros in 3 members: a protobuf error, not -EFBIG (%d, %s)", ret,
	      why ? why : "none");
	free(gz);
}

/*
 * Two samples of INT64_MAX each (fuzz/crashes/reader-sum-overflow.pb): sums
 * wrap as Go's int64 does rather than overflow, which the sanitizer build
 * reports as undefined behaviour.
 */
static void test_sum_wraps(void)
{
	static const unsigned char msg[] = {
		0x0a, 0x04, 0x08, 0x01, 0x10, 0x02,
		0x12, 0x0a, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
		0x12, 0x0a, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f,
		0x32, 0x00, 0x32, 0x01, 'a', 0x32, 0x01, 'b',
	};
	struct prof_rd_profile *p = NULL;
	struct prof_rpt *r = NULL;
	FILE *devnull = fopen("/dev/null", "w");
	int ret;

	ret = prof_rd_buffer(msg, sizeof(msg), &p);
	check(ret == 0 && p && p->n_samples == 2, "wrap: two INT64_MAX samples read (%d)", ret);
	if (ret)
		goto out;
	ret = prof_rpt_build(p, 0, PROF_RPT_FUNCTION, &r);
	check(ret == 0 && r->total == -2, "wrap: the report's total wraps to -2 as in Go (%lld)",
	      ret ? 0LL : (long long)r->total);
	ret = devnull ? prof_flame_svg(p, 0, NULL, 0, devnull) : -EIO;
	check(ret == 0, "wrap: a flame graph of it is drawn (%d)", ret);
out:
	if (devnull)
		fclose(devnull);
	prof_rpt_free(r);
	prof_rd_free(p);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	test_under_limits();
	test_sum_wraps();
	test_gzip_bomb();
	test_struct_bomb();
	test_big_file();
	return tap_done();
}
