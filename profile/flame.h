/* SPDX-License-Identifier: MIT */
/*
 * Flame graphs of a profile read back (reader.h) or of one under
 * construction (prof_builder_view): the collapsed ("folded")
 * stacks text that flamegraph.pl and speedscope read, and a self-contained
 * interactive SVG.
 *
 * Stacks run root first; each location contributes its inlined frames as
 * frames of their own (the physical function first, then the inlined
 * callees).  A location without lines is named MODULE+0xOFFSET, or 0xADDR
 * without a mapping.  Frame names never contain ';', newlines or other
 * control characters (each becomes '_').  A frame's value is the sum of
 * values[type] over the samples whose stack passes through it; samples with
 * value 0 are left out.  Output is deterministic: siblings sorted by name.
 */
#ifndef CPROF_PROFILE_FLAME_H
#define CPROF_PROFILE_FLAME_H

#include <stddef.h>
#include <stdio.h>

#include "profile/reader.h"

enum {
	/* The sample's thread_name label, when it has one, as the root frame. */
	PROF_FLAME_THREADS = 1 << 0,
};

/*
 * Collapsed stacks: one line "root;caller;...;leaf VALUE" per distinct
 * stack, to f (not closed; write errors are checked with fflush/ferror).
 * type indexes p->sample_types.  Returns 0, -EINVAL (type out of range),
 * -ENOMEM or -EIO/-errno from writing.
 */
int prof_flame_collapsed(const struct prof_rd_profile *p, size_t type, unsigned flags, FILE *f);

/* The same to fd, which stays open and owned by the caller. */
int prof_flame_collapsed_fd(const struct prof_rd_profile *p, size_t type, unsigned flags, int fd);

/* The same to path ("-": stdout), atomically (see atomic.h). */
int prof_flame_collapsed_file(const struct prof_rd_profile *p, size_t type, const char *path,
			      unsigned flags);

/*
 * An SVG flame graph (root at the bottom, widths proportional to values)
 * with an inline script: click a frame to zoom, "Search" highlights the
 * frames matching a regular expression, "Reset zoom" undoes.  title NULL:
 * "Flame Graph".  Every name is escaped and made valid UTF-8, so the result
 * is well-formed XML whatever the profile holds.  Same returns as above.
 */
int prof_flame_svg(const struct prof_rd_profile *p, size_t type, const char *title,
		   unsigned flags, FILE *f);
int prof_flame_svg_fd(const struct prof_rd_profile *p, size_t type, const char *title,
		      unsigned flags, int fd);
int prof_flame_svg_file(const struct prof_rd_profile *p, size_t type, const char *path,
			const char *title);

/*
 * A differential flame graph: cur's flame graph (type cur_type), each frame
 * coloured by how its share of the total changed against the frame at the
 * same path in base (type base_type): red grew, blue shrank, saturated at
 * the largest change; its tooltip holds both values and shares.  A note
 * names the largest frames only base has.  title NULL: "Differential Flame
 * Graph".  Same returns as above.
 */
int prof_flame_diff_svg(const struct prof_rd_profile *base, size_t base_type,
			const struct prof_rd_profile *cur, size_t cur_type, const char *title,
			unsigned flags, FILE *f);
int prof_flame_diff_svg_file(const struct prof_rd_profile *base, size_t base_type,
			     const struct prof_rd_profile *cur, size_t cur_type, const char *path,
			     const char *title);

#endif
