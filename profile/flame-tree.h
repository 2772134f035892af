/* SPDX-License-Identifier: MIT */
/*
 * The merged call tree behind every flame graph (internal to profile/):
 * built by flame.c from a profile, drawn by flame.c (collapsed stacks) and
 * flame-svg.c (SVG).
 */
#ifndef CPROF_PROFILE_FLAME_TREE_H
#define CPROF_PROFILE_FLAME_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/htab.h"
#include "profile/reader.h"

#define FLAME_NONE 0u	/* no child / no sibling: the root is nobody's child */

/* One frame of the merged call tree; node 0 is the root above every stack. */
struct flame_node {
	uint32_t name;		/* index into flame.names */
	uint32_t parent;
	uint32_t child;		/* first child in name order, FLAME_NONE if a leaf */
	uint32_t sibling;	/* next sibling in name order, FLAME_NONE if last */
	uint32_t depth;		/* root 0 */
	int64_t self;		/* value of the samples that end here */
	int64_t total;		/* self plus the children's totals */
};

struct flame {
	char **names;		/* sanitized, owned */
	size_t n_names, cap_names;
	struct cprof_htab name_index;
	struct flame_node *nodes;
	size_t n_nodes, cap_nodes;
	struct cprof_htab node_index;	/* (parent, name) -> node */
	uint32_t max_depth;
};

/*
 * Builds the tree of p's samples of sample type type (< p->n_sample_types,
 * else -EINVAL), as flame.h describes.  Returns 0 or -ENOMEM; on success
 * free fl with prof_flame_tree_free.
 */
int prof_flame_tree_build(struct flame *fl, const struct prof_rd_profile *p, size_t type,
			  unsigned flags);
void prof_flame_tree_free(struct flame *fl);

/* The next node of a depth-first walk in name order (FLAME_NONE at the
 * end); descend false skips n's subtree. */
uint32_t prof_flame_walk_next(const struct flame *fl, uint32_t n, bool descend);

/* Ends a write to f: a full disk is an error, not a truncated file.
 * Returns 0 or -errno (-EIO when errno says nothing). */
int prof_flame_stream_status(FILE *f);

#endif
