/* SPDX-License-Identifier: MIT */
/* Flame graphs as one self-contained, interactive SVG file. */

#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"
#include "lib/utf8.h"
#include "profile/flame-tree.h"
#include "profile/flame.h"

#define SVG_WIDTH 1200
#define SVG_PAD 10		/* left and right margins */
#define SVG_FRAME_H 16
#define SVG_TOP 60		/* title, subtitle, buttons */
#define SVG_BOTTOM 30		/* the details line */
#define SVG_FONT_SIZE 12
#define SVG_CHAR_W 7.2		/* advance of a 12px monospace glyph, about 0.6 em */
#define SVG_MIN_W 0.1		/* narrower frames (and their children) are not drawn */
#define SVG_NOTE_H 20		/* the optional note under the subtitle */

/*
 * Length of the UTF-8 sequence at s (at most n bytes) when it is an XML
 * character, 0 if not: ill-formed UTF-8, and U+FFFE/U+FFFF (EF BF BE/BF),
 * which are well-formed but not allowed in XML.
 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len = cprof_utf8_seq_len(s, n);

	if (len == 3 && s[0] == 0xef && s[1] == 0xbf && s[2] >= 0xbe)
		return 0;
	return len;
}

/* Characters (not bytes) in s, an invalid byte counting as one. */
static size_t char_count(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), count = 0, k;

	while (n) {
		k = utf8_len(u, n);
		if (!k)
			k = 1;
		u += k;
		n -= k;
		count++;
	}
	return count;
}

/*
 * Writes at most max characters of s as XML character data or attribute
 * text: markup characters escaped, control characters and bytes that are
 * not valid UTF-8 replaced by '?', so that any name gives well-formed XML.
 */
void prof_flame_xml_put(FILE *f, const char *s, size_t max)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), k;

	for (; n && max; max--) {
		k = utf8_len(u, n);
		if (!k) {
			fputc('?', f);
			k = 1;
		} else if (k > 1) {
			fwrite(u, 1, k, f);
		} else if (*u == '&') {
			fputs("&amp;", f);
		} else if (*u == '<') {
			fputs("&lt;", f);
		} else if (*u == '>') {
			fputs("&gt;", f);
		} else if (*u == '"') {
			fputs("&quot;", f);
		} else if (*u == '\'') {
			fputs("&apos;", f);
		} else if (*u < 0x20 || *u == 0x7f) {
			fputc('?', f);
		} else {
			fputc(*u, f);
		}
		u += k;
		n -= k;
	}
}

/* The label that fits in a frame w pixels wide: the name, cut with "..", or nothing. */
static void put_label(FILE *f, const char *name, double w)
{
	double room = (w - 6) / SVG_CHAR_W;
	size_t fit = room > 0 ? (size_t)room : 0, len = char_count(name);

	if (fit < 3)
		return;
	if (len <= fit) {
		prof_flame_xml_put(f, name, len);
		return;
	}
	prof_flame_xml_put(f, name, fit - 2);
	fputs("..", f);
}

/* Warm colors (flame-like), stable for a name across graphs and runs;
 * kernel functions (perf's " [k]" mark) in cool ones, apart. */
static void put_color(FILE *f, const char *name)
{
	size_t len = strlen(name), mark = sizeof(PROF_RD_KERNEL_MARK) - 1;
	uint64_t h = cprof_hash_bytes(CPROF_HASH_SEED, name, len);

	if (len > mark && strcmp(name + len - mark, PROF_RD_KERNEL_MARK) == 0) {
		fprintf(f, "rgb(%u,%u,%u)", 60 + (unsigned)(h % 51),
			140 + (unsigned)((h >> 16) % 61), 200 + (unsigned)((h >> 32) % 56));
		return;
	}

	fprintf(f, "rgb(%u,%u,%u)", 205 + (unsigned)(h % 51), 60 + (unsigned)((h >> 16) % 161),
		(unsigned)((h >> 32) % 56));
}

/*
 * The script (flame.js, embedded at build time): zoom on click (the frame
 * and its descendants fill the width, its ancestors are dimmed, the rest
 * hidden), search by regular expression with the share of the total it
 * matches, and reset.  It reads everything it needs from the frames
 * themselves: names from the <title>s, original geometry from the <rect>s.
 */
static const char svg_script[] =
#include "profile/flame-js.h"
	;

static void put_frame(FILE *f, const struct flame *fl, uint32_t n, double x, double w,
		      double y, int64_t total, const struct flame_paint *paint)
{
	const char *name = fl->names.strs[fl->nodes[n].name];
	double pct = 100.0 * (double)fl->nodes[n].total / (double)total;

	fputs("<g class=\"f\"><title>", f);
	prof_flame_xml_put(f, name, SIZE_MAX);
	if (paint)
		paint->tip(f, fl, n, total, paint->arg);
	else
		fprintf(f, " (%" PRId64 ", %.2f%%)", fl->nodes[n].total, pct);
	fprintf(f, "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
		"height=\"%d\" rx=\"2\" fill=\"", x, y, w, SVG_FRAME_H - 1);
	if (paint)
		paint->fill(f, fl, n, paint->arg);
	else
		put_color(f, name);
	fprintf(f, "\"/><text x=\"%.2f\" y=\"%.1f\">", x + 3, y + SVG_FRAME_H - 4.5);
	put_label(f, name, w);
	fputs("</text></g>\n", f);
}

/* Everything before the frames: the document, style, script, title, buttons. */
static void put_head(FILE *f, const struct prof_rd_value_type *vt, const char *title,
		     const char *note, int height, int64_t total)
{
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\">\n",
		SVG_WIDTH, height, SVG_WIDTH, height);
	fputs("<style type=\"text/css\">\n"
	      "text { font-family: monospace; font-size: 12px; fill: rgb(0,0,0); }\n"
	      "g.f { cursor: pointer; }\n"
	      "g.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
	      ".button { cursor: pointer; text-decoration: underline; }\n"
	      "#title { font-size: 17px; }\n"
	      "</style>\n<script type=\"text/ecmascript\"><![CDATA[\n", f);
	fprintf(f, "var W = %d, PAD = %d, CHAR_W = %.1f;\n", SVG_WIDTH, SVG_PAD, SVG_CHAR_W);
	fputs(svg_script, f);
	fputs("]]></script>\n", f);
	fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"rgb(248,248,240)\"/>\n",
		SVG_WIDTH, height);
	fprintf(f, "<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">", SVG_WIDTH / 2);
	prof_flame_xml_put(f, title ? title : "Flame Graph", SIZE_MAX);
	fprintf(f, "</text>\n<text x=\"%d\" y=\"44\" text-anchor=\"middle\">", SVG_WIDTH / 2);
	prof_flame_xml_put(f, vt->type ? vt->type : "", SIZE_MAX);
	fputs(" (", f);
	prof_flame_xml_put(f, vt->unit ? vt->unit : "", SIZE_MAX);
	fprintf(f, "), total %" PRId64 "</text>\n", total);
	if (note) {
		fprintf(f, "<text id=\"note\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
			SVG_WIDTH / 2, SVG_TOP + SVG_NOTE_H - 6);
		prof_flame_xml_put(f, note, SIZE_MAX);
		fputs("</text>\n", f);
	}
	fprintf(f, "<text id=\"unzoom\" class=\"button\" x=\"%d\" y=\"24\" style=\"display:none\">"
		"Reset zoom</text>\n", SVG_PAD);
	fprintf(f, "<text id=\"search\" class=\"button\" x=\"%d\" y=\"24\" text-anchor=\"end\">"
		"Search</text>\n", SVG_WIDTH - SVG_PAD);
	fprintf(f, "<text id=\"unsearch\" class=\"button\" x=\"%d\" y=\"44\" text-anchor=\"end\" "
		"style=\"display:none\">Clear search</text>\n", SVG_WIDTH - SVG_PAD);
	fprintf(f, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
		SVG_WIDTH - SVG_PAD, height - 10);
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", SVG_PAD, height - 10);
}

/* The frames, depth first in name order, each after its left sibling. */
static int put_frames(FILE *f, const struct flame *fl, int height, int64_t total,
		      const struct flame_paint *paint)
{
	double scale, *xs;
	uint32_t n;
	bool draw = false;

	xs = calloc(fl->n_nodes, sizeof(*xs));
	if (!xs)
		return -ENOMEM;
	scale = (double)(SVG_WIDTH - 2 * SVG_PAD) / (double)total;
	xs[0] = SVG_PAD;
	for (n = fl->nodes[0].child; n; n = prof_flame_walk_next(fl, n, draw)) {
		const struct flame_node *d = &fl->nodes[n];
		double w = (double)d->total * scale;

		/* a first child starts where its parent does; a sibling after the previous one */
		if (fl->nodes[d->parent].child == n)
			xs[n] = xs[d->parent];
		if (d->sibling)
			xs[d->sibling] = xs[n] + w;
		/* negative values (a diff) have no width to draw */
		draw = d->total > 0 && w >= SVG_MIN_W;
		if (draw)
			put_frame(f, fl, n, xs[n], w,
				  (double)(height - SVG_BOTTOM - (int)d->depth * SVG_FRAME_H), total,
				  paint);
	}
	free(xs);
	return 0;
}

int prof_flame_svg_write(const struct flame *fl, const struct prof_rd_value_type *vt,
			 const char *title, const char *note, const struct flame_paint *paint,
			 FILE *f)
{
	int64_t total = fl->nodes[0].total;
	int height = SVG_TOP + (note ? SVG_NOTE_H : 0) + (int)fl->max_depth * SVG_FRAME_H +
		     SVG_BOTTOM;
	int ret;

	errno = 0;
	put_head(f, vt, title, note, height, total);
	if (total <= 0) {
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no samples</text>\n",
			SVG_WIDTH / 2, SVG_TOP + 20);
	} else {
		ret = put_frames(f, fl, height, total, paint);
		if (ret < 0)
			return ret;
	}
	fputs("</svg>\n", f);
	return prof_flame_stream_status(f);
}

int prof_flame_svg(const struct prof_rd_profile *p, size_t type, const char *title,
		   unsigned flags, FILE *f)
{
	struct flame fl;
	int ret;

	ret = prof_flame_tree_build(&fl, p, type, flags);
	if (ret < 0)
		return ret;
	ret = prof_flame_svg_write(&fl, &p->sample_types[type], title, NULL, NULL, f);
	prof_flame_tree_free(&fl);
	return ret;
}
