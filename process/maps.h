/* SPDX-License-Identifier: MIT */
/* A parsed copy of /proc/PID/maps, sorted by address. */
#ifndef CPROF_PROCESS_MAPS_H
#define CPROF_PROCESS_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum {
	SYM_MAP_R = 1 << 0,
	SYM_MAP_W = 1 << 1,
	SYM_MAP_X = 1 << 2,
	SYM_MAP_P = 1 << 3,	/* private (copy-on-write) */
};

struct sym_map {
	uint64_t start, end;	/* [start, end) */
	uint64_t offset;	/* file offset of start */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	unsigned perms;		/* SYM_MAP_* */
	bool deleted;		/* path had " (deleted)"; it is stripped from path */
	char *path;		/* "" when anonymous; "[stack]", "[vdso]", ... kept */
};

struct sym_maps {
	struct sym_map *v;	/* sorted by start, non-overlapping */
	size_t n;
};

/*
 * Reads /proc/PID/maps into *out, replacing what it held (freed first).
 * Returns 0, or -errno (-ESRCH when the process is gone).
 */
int sym_maps_read(pid_t pid, struct sym_maps *out);

/* Parses the text of a maps file (for tests); same contract as sym_maps_read. */
int sym_maps_parse(const char *text, size_t len, struct sym_maps *out);

void sym_maps_free(struct sym_maps *m);

/* The mapping that contains addr, or NULL.  Binary search. */
const struct sym_map *sym_maps_find(const struct sym_maps *m, uint64_t addr);

#endif
