/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: arbitrary bytes as the confined parser's answer to a
 * lookup (what a parser taken over could send the privileged side), through
 * sym_remote_read_answer.  Checks its contract: it fails or gives at most
 * MAX_FRAMES frames whose strings are strings and whose lines are not
 * negative.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/symbolize-impl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_frame *f = NULL;
	struct sym_ctx *ctx;
	bool has_lines = false;
	size_t n = 0, i;
	char *in;

	if (sym_create(&ctx, NULL, 0) < 0)
		abort();
	/* An exact-size copy: a read past the end is an ASan report. */
	in = malloc(size ? size : 1);
	if (!in)
		abort();
	memcpy(in, data, size);
	if (sym_remote_read_answer(ctx, in, size, &f, &n, &has_lines) == 0) {
		if (n > MAX_FRAMES || (n && !f))
			abort();
		for (i = 0; i < n; i++) {
			if (f[i].line < 0 || f[i].start_line < 0)
				abort();
			sink += f[i].function ? strlen(f[i].function) : 0;
			sink += f[i].system_name ? strlen(f[i].system_name) : 0;
			sink += f[i].file ? strlen(f[i].file) : 0;
		}
	}
	free(in);
	sym_destroy(ctx);
	return 0;
}
