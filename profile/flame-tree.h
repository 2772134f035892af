/* SPDX-License-Identifier: MIT */
/*
 * The merged call tree behind every flame graph (internal to profile/):
 * built by flame-tree.c from a profile, drawn by flame.c (collapsed
 * stacks), flame-svg.c (SVG) and flame-diff.c (differential SVG), which
 * write through flame-stream.c.  Each depends only on the files below it:
 * flame-tree.c and flame-stream.c on none, flame-svg.c on those two,
 * flame.c and flame-diff.c on flame-svg.c.
 */
#ifndef CPROF_PROFILE_FLAME_TREE_H
#define CPROF_PROFILE_FLAME_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/htab.h"
#include "profile/strtab.h"
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
	struct prof_strtab names;	/* frame names, sanitized: names.strs[i] */
	struct flame_node *nodes;
	size_t n_nodes, cap_nodes;
	struct cprof_htab node_index;	/* (parent, name) -> node */
	uint32_t max_depth;
};

/* ---- flame-tree.c ---- */

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

/* ---- flame-svg.c ---- */

/*
 * How frames are painted, when not as an ordinary flame graph (NULL): fill
 * writes the fill colour of node n, tip the tooltip's text after the name,
 * "(...)" included (no parentheses inside, the script takes the name from
 * before them).  total is the root's.
 */
struct flame_paint {
	void (*fill)(FILE *f, const struct flame *fl, uint32_t n, void *arg);
	void (*tip)(FILE *f, const struct flame *fl, uint32_t n, int64_t total, void *arg);
	void *arg;
};

/*
 * Draws fl as the SVG of flame.h, titled title (NULL: "Flame Graph") and
 * subtitled with vt and the total, plus note (NULL: none) on a line of its
 * own.  Returns 0, -ENOMEM, or -errno from writing (prof_flame_stream_status).
 */
int prof_flame_svg_write(const struct flame *fl, const struct prof_rd_value_type *vt,
			 const char *title, const char *note, const struct flame_paint *paint,
			 FILE *f);

/* The characters of s escaped for XML text or attributes, at most max of
 * them, ill-formed UTF-8 and control characters as '?'. */
void prof_flame_xml_put(FILE *f, const char *s, size_t max);

/* ---- flame-stream.c ---- */

/*
 * Runs draw on a stream of its own over a duplicate of fd, so that closing
 * the stream reports its last write errors and leaves fd open.  Returns
 * draw's result, or -errno.
 */
int prof_flame_to_fd(int fd, int (*draw)(FILE *f, void *arg), void *arg);

/* Ends a write to f: a full disk is an error, not a truncated file.
 * Returns 0 or -errno (-EIO when errno says nothing). */
int prof_flame_stream_status(FILE *f);

#endif
