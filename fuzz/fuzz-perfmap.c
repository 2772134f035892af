/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: arbitrary bytes as a perf map (a file the target
 * writes) through sym_perfmap_parse, in two pieces as when the file grows,
 * then lookups; and the same bytes as the confined parser reads them, from
 * a descriptor in two reads (sym_perfmap_read_fd), looked up as it answers
 * (sym_perfmap_lookup_entry).  Checks the contract of perfmap.h: a name is
 * returned only inside the anonymous code recorded, is a string, and the
 * parser's reads name each address as the whole parse does.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "symbolize/perfmap.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

/* One anonymous executable mapping over [lo, hi). */
#define CODE_LO 0x10000ull
#define CODE_HI 0x7fffffff0000ull

/* The bytes as the parser reads them: a file that grows, read twice. */
static struct sym_perfmap *as_parser(const uint8_t *data, size_t size)
{
	struct sym_perfmap *pm = NULL;
	size_t half = size / 2;
	int fd;

	fd = memfd_create("fuzz-perfmap", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (sym_perfmap_create(&pm, 0, NULL) < 0 ||
	    (half && write(fd, data, half) != (ssize_t)half) || sym_perfmap_read_fd(pm, fd) < 0 ||
	    (size > half && write(fd, data + half, size - half) != (ssize_t)(size - half)) ||
	    sym_perfmap_read_fd(pm, fd) < 0) {
		sym_perfmap_destroy(pm);
		pm = NULL;
	}
	close(fd);
	return pm;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char empty[] = "";
	struct proc_map code = { .start = CODE_LO, .end = CODE_HI, .perms = PROC_MAP_R | PROC_MAP_X,
				 .path = empty };
	struct proc_maps maps = { &code, 1 };
	static const uint64_t probes[] = { 0, 0xfff, CODE_LO, CODE_LO + 1, 0x400000, 0x41414141,
					   CODE_HI - 1, CODE_HI, UINT64_MAX };
	struct sym_perfmap *pm = NULL, *parser;
	size_t half = size / 2, k;
	const char *name, *pname;
	ssize_t used;
	char *text;

	if (sym_perfmap_create(&pm, getpid(), NULL) < 0)
		return 0;
	/* An exact-size copy: a read past the end is an ASan report. */
	text = malloc(size ? size : 1);
	if (!text)
		goto destroy;
	memcpy(text, data, size);
	if (sym_perfmap_note_code(pm, &maps) < 0)
		goto free_text;
	used = sym_perfmap_parse(pm, text, half);
	if (used < 0 || (size_t)used > half)
		goto free_text;
	/* the rest arrives later, from where the whole lines ended */
	if (sym_perfmap_parse(pm, text + used, size - (size_t)used) < 0)
		goto free_text;
	parser = as_parser(data, size);
	for (k = 0; k < sizeof(probes) / sizeof(probes[0]); k++) {
		name = sym_perfmap_lookup(pm, probes[k]);
		if (name && (probes[k] < CODE_LO || probes[k] >= CODE_HI))
			abort();	/* named outside the anonymous code */
		if (name)
			sink += strlen(name);
		if (!parser || probes[k] < CODE_LO || probes[k] >= CODE_HI)
			continue;
		pname = sym_perfmap_lookup_entry(parser, probes[k]);
		/* its reads skip a line longer than their 64 KiB buffer */
		if (size < 65535 && (!name != !pname || (name && strcmp(name, pname) != 0)))
			abort();	/* the parser names it otherwise */
	}
	sym_perfmap_destroy(parser);
free_text:
	free(text);
destroy:
	sym_perfmap_destroy(pm);
	return 0;
}
