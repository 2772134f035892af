/* SPDX-License-Identifier: MIT */
/* A pprof profile's bytes: read from a file with a size cap, gunzipped with a bomb guard. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "lib/grow.h"
#include "profile/reader-impl.h"
#include "profile/reader.h"

/* Sets *why and returns -EBADMSG. */
static int bad(const char **why, const char *reason)
{
	*why = reason;
	return -EBADMSG;
}

/*
 * What inflate's return zr means: 1 the input is all inflated, 0 go on (a
 * next gzip member starts, as gzip(1) and Go accept), or an error.
 */
static int inflate_status(z_stream *zs, int zr, const char **why)
{
	if (zr == Z_STREAM_END) {
		if (zs->avail_in == 0)
			return 1;
		if (zs->avail_in < 2 || zs->next_in[0] != 0x1f || zs->next_in[1] != 0x8b)
			return bad(why, "data after the end of the gzip stream");
		if (inflateReset(zs) != Z_OK)
			return bad(why, "bad gzip data");
		return 0;
	}
	if (zr == Z_MEM_ERROR)
		return -ENOMEM;
	if (zr == Z_BUF_ERROR && zs->avail_in == 0)
		return bad(why, "truncated gzip data");
	if (zr != Z_OK && zr != Z_BUF_ERROR)
		return bad(why, "bad gzip data");
	return 0;
}

/*
 * Inflates the len bytes of gzip at in, members one after another, into
 * out (cap bytes); out NULL: into a scratch buffer, only to count.  More
 * than cap bytes of output is -EFBIG.  *produced receives the count.
 */
static int inflate_into(const unsigned char *in, size_t len, unsigned char *out, size_t cap,
			size_t *produced, const char **why)
{
	unsigned char scratch[64 * 1024];
	z_stream zs;
	int ret = 0;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return -ENOMEM;
	zs.next_in = (unsigned char *)in;
	zs.avail_in = (uInt)len;
	*produced = 0;
	while (!ret) {
		/* past out's end, the scratch buffer lets inflate reach the end */
		bool to_out = out && *produced < cap;
		size_t room = to_out ? cap - *produced : sizeof(scratch);

		zs.next_out = to_out ? out + *produced : scratch;
		zs.avail_out = (uInt)room;
		ret = inflate_status(&zs, inflate(&zs, Z_NO_FLUSH), why);
		*produced += room - zs.avail_out;
		if (ret >= 0 && *produced > cap) {
			*why = "it decompresses to more than 256 MiB, the most cprof reads";
			ret = -EFBIG;
		}
	}
	inflateEnd(&zs);
	return ret < 0 ? ret : 0;
}

/* Counts first (nothing allocated, so that a bomb costs time, not
 * memory), then fills. */
int prof_rd_gunzip(const unsigned char *in, size_t len, unsigned char **out, size_t *out_len,
		   const char **why)
{
	unsigned char *buf;
	size_t size, filled;
	int ret;

	if (len > UINT32_MAX)
		return bad(why, "compressed file over 4 GiB");
	ret = inflate_into(in, len, NULL, RD_MAX_PLAIN, &size, why);
	if (ret < 0)
		return ret;
	buf = malloc(size ? size : 1);
	if (!buf)
		return -ENOMEM;
	ret = inflate_into(in, len, buf, size, &filled, why);
	if (!ret && filled != size)
		ret = bad(why, "bad gzip data");
	if (ret < 0) {
		free(buf);
		return ret;
	}
	*out = buf;
	*out_len = size;
	return 0;
}

/*
 * Reads all of fd into a malloc'ed buffer.  0 or -errno (-EFBIG past
 * RD_MAX_FILE, with *why saying so).
 */
static int read_all(int fd, unsigned char **out, size_t *out_len, const char **why)
{
	const size_t limit = RD_MAX_FILE + 1;
	unsigned char *buf = NULL;
	size_t first = 64 * 1024, cap = 0, used = 0;
	struct stat st;
	ssize_t n;
	int ret = 0;

	if (fstat(fd, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return -EISDIR;
		/* One read and no copying for a regular file. */
		if (S_ISREG(st.st_mode) && st.st_size > 0)
			first = (uint64_t)st.st_size < RD_MAX_FILE ? (size_t)st.st_size + 1 : limit;
	}
	for (;;) {
		if (used == limit) {
			*why = "the file is over 257 MiB, the most cprof reads";
			ret = -EFBIG;
			goto out;
		}
		if (cprof_grow(&buf, &cap, used + 1, 1, first) < 0) {
			ret = -ENOMEM;
			goto out;
		}
		n = read(fd, buf + used, (cap < limit ? cap : limit) - used);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			goto out;
		}
		if (n == 0)
			break;
		used += (size_t)n;
	}
	*out = buf;
	*out_len = used;
	buf = NULL;
out:
	free(buf);
	return ret;
}

int prof_rd_file_why(const char *path, struct prof_rd_profile **out, const char **why)
{
	unsigned char *data = NULL;
	bool is_stdin = strcmp(path, "-") == 0;
	const char *ignored;
	size_t len = 0;
	int fd = STDIN_FILENO, ret;

	*out = NULL;
	if (!why)
		why = &ignored;
	*why = NULL;
	if (!is_stdin) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
	}
	ret = read_all(fd, &data, &len, why);
	if (!is_stdin)
		close(fd);
	if (ret < 0)
		goto out_free;
	ret = prof_rd_buffer_why(data, len, out, why);
out_free:
	free(data);
	return ret;
}

int prof_rd_file(const char *path, struct prof_rd_profile **out)
{
	return prof_rd_file_why(path, out, NULL);
}
