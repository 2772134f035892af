/* SPDX-License-Identifier: MIT */
/* Writing a profile: protobuf streamed through gzip to an fd, or atomically to a file. */

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <protobuf-c/protobuf-c.h>
#include <zlib.h>

#include "profile/atomic.h"
#include "profile/profile.h"

/*
 * protobuf-c hands the encoding over field by field, often a few bytes at a
 * time; staging them keeps deflate calls few, and streaming means the
 * uncompressed profile never exists in memory as a whole.
 */
struct gz_sink {
	ProtobufCBuffer base;	/* first: protobuf-c calls back with &base */
	z_stream zs;
	int fd;
	int err;		/* first error; later appends are ignored */
	size_t n_in;
	unsigned char in[64 * 1024];
	unsigned char out[64 * 1024];
};

/* Writes all of buf, resuming after short writes and EINTR.  0 or -errno. */
static int write_all(int fd, const unsigned char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* write(2) returns 0 only for len 0; do not spin if it ever does */
		if (n == 0)
			return -EIO;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Compresses the staged input and writes what deflate produces. */
static int sink_deflate(struct gz_sink *k, int flush)
{
	int ret, err;

	k->zs.next_in = k->in;
	k->zs.avail_in = (uInt)k->n_in;
	for (;;) {
		k->zs.next_out = k->out;
		k->zs.avail_out = sizeof(k->out);
		ret = deflate(&k->zs, flush);
		if (ret == Z_STREAM_ERROR || (flush == Z_FINISH && ret == Z_BUF_ERROR))
			return -EIO;
		err = write_all(k->fd, k->out, sizeof(k->out) - k->zs.avail_out);
		if (err)
			return err;
		if (flush == Z_FINISH ? ret == Z_STREAM_END : k->zs.avail_out != 0)
			break;
	}
	k->n_in = 0;
	return 0;
}

static void sink_append(ProtobufCBuffer *buffer, size_t len, const uint8_t *data)
{
	struct gz_sink *k = (struct gz_sink *)buffer;

	while (len && !k->err) {
		size_t n = sizeof(k->in) - k->n_in;

		if (n > len)
			n = len;
		memcpy(k->in + k->n_in, data, n);
		k->n_in += n;
		data += n;
		len -= n;
		if (k->n_in == sizeof(k->in))
			k->err = sink_deflate(k, Z_NO_FLUSH);
	}
}

int prof_write_fd(struct prof_builder *b, int fd)
{
	struct gz_sink *k;
	int ret, err;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	k->base.append = sink_append;
	k->fd = fd;
	/* windowBits 15 + 16: gzip framing; pprof rejects zlib framing (0x78...) */
	ret = deflateInit2(&k->zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			   Z_DEFAULT_STRATEGY);
	if (ret != Z_OK) {
		err = ret == Z_MEM_ERROR ? -ENOMEM : -EIO;
		goto free_sink;
	}

	err = prof_builder_pack(b, &k->base);
	if (!err)
		err = k->err;
	if (!err)
		err = sink_deflate(k, Z_FINISH);

	deflateEnd(&k->zs);
free_sink:
	free(k);
	return err;
}

static int fill_profile(int fd, void *arg)
{
	return prof_write_fd(arg, fd);
}

int prof_write_file(struct prof_builder *b, const char *path)
{
	/* A temporary name in the same directory, then its place: a reader
	 * never sees half a profile, and an error leaves nothing behind. */
	return prof_atomic_write(path, fill_profile, b);
}
