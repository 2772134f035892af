/* SPDX-License-Identifier: MIT */
/* A parsed copy of /proc/PID/maps, sorted by address. */
#ifndef CPROF_PROCESS_MAPS_H
#define CPROF_PROCESS_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum {
	PROC_MAP_R = 1 << 0,
	PROC_MAP_W = 1 << 1,
	PROC_MAP_X = 1 << 2,
	PROC_MAP_P = 1 << 3,	/* private (copy-on-write) */
};

struct proc_map {
	uint64_t start, end;	/* [start, end) */
	uint64_t offset;	/* file offset of start */
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	unsigned perms;		/* PROC_MAP_* */
	bool deleted;		/* path had " (deleted)"; it is stripped from path */
	char *path;		/* "" when anonymous; "[stack]", "[vdso]", ... kept */
};

struct proc_maps {
	struct proc_map *v;	/* sorted by start, non-overlapping */
	size_t n;
};

/*
 * Reads /proc/PID/maps into *out, replacing what it held (freed first).
 * Returns 0, or -errno (-ESRCH when the process is gone).
 */
int proc_maps_read(pid_t pid, struct proc_maps *out);

/* Parses the text of a maps file (for tests); same contract as proc_maps_read. */
int proc_maps_parse(const char *text, size_t len, struct proc_maps *out);

void proc_maps_free(struct proc_maps *m);

/* The mapping that contains addr, or NULL.  Binary search. */
const struct proc_map *proc_maps_find(const struct proc_maps *m, uint64_t addr);

/*
 * Adds to newer every mapping of older that overlaps none of newer's: the
 * address space as two reads saw it, the newer one winning where they
 * differ.  Returns 0 or -ENOMEM (newer unchanged).
 */
int proc_maps_merge_older(struct proc_maps *newer, const struct proc_maps *older);

/*
 * Adds a copy of e (its path copied) to m, dropping the mappings of m that
 * overlap it: what is known of that range now.  Returns 0 or -ENOMEM (m
 * unchanged).
 */
int proc_maps_add(struct proc_maps *m, const struct proc_map *e);

/*
 * The mapping that holds addr, asked of the kernel with PROCMAP_QUERY (Linux
 * 6.11+) on an open /proc/PID/maps: one ioctl instead of reading the whole
 * file, cheap enough to make while a thread is stopped.  Fills start, end,
 * offset, inode, dev_major, dev_minor and perms (PROC_MAP_X only); path is
 * NULL.  Returns 0, -ENOENT (no mapping there) or -ENOTTY (the kernel is
 * older: the caller falls back to reading maps).
 */
int proc_maps_query(int maps_fd, uint64_t addr, struct proc_map *vma);

#endif
