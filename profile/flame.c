/* SPDX-License-Identifier: MIT */
/* Flame graphs: collapsed stacks and an interactive SVG, from a profile read back. */

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <protobuf-c/protobuf-c.h>

#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/htab.h"
#include "lib/utf8.h"
#include "profile/atomic.h"
#include "profile/flame.h"
#include "profile/profile.h"

#define NONE 0u		/* no child / no sibling: the root is nobody's child */

/* One frame of the merged call tree; node 0 is the root above every stack. */
struct flame_node {
	uint32_t name;		/* index into flame.names */
	uint32_t parent;
	uint32_t child;		/* first child in name order, NONE if a leaf */
	uint32_t sibling;	/* next sibling in name order, NONE if last */
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

/* A name being interned: len bytes, not NUL-terminated. */
struct name_key {
	const char *s;
	size_t len;
};

static bool name_eq(const struct flame *fl, uint32_t i, const struct name_key *k)
{
	return strncmp(fl->names[i], k->s, k->len) == 0 && fl->names[i][k->len] == '\0';
}

#define HTAB_NAME name_index
#define HTAB_CTX struct flame
#define HTAB_KEY struct name_key
#define HTAB_HASH(fl, k) cprof_hash_finish(cprof_hash_bytes(CPROF_HASH_SEED, (k)->s, (k)->len))
#define HTAB_COMPARE name_eq
#include "lib/htab-type.h"

/* A child being looked up: (parent node, name index). */
struct child_key {
	uint32_t parent, name;
};

static bool child_eq(const struct flame *fl, uint32_t i, const struct child_key *k)
{
	return fl->nodes[i].parent == k->parent && fl->nodes[i].name == k->name;
}

#define HTAB_NAME node_index
#define HTAB_CTX struct flame
#define HTAB_KEY struct child_key
#define HTAB_HASH(fl, k) cprof_hash_finish(cprof_hash_mix((k)->parent, (k)->name))
#define HTAB_COMPARE child_eq
#include "lib/htab-type.h"

/* ';' separates frames in collapsed stacks and control characters break
 * lines (and XML): neither may appear in a name. */
static bool bad_name_char(unsigned char c)
{
	return c == ';' || c < 0x20 || c == 0x7f;
}

/* A malloc'ed copy of the len bytes at name with the bad characters made '_'. */
static char *clean_name(const char *name, size_t len)
{
	char *copy = malloc(len + 1);
	size_t k;

	if (!copy)
		return NULL;
	for (k = 0; k < len; k++)
		copy[k] = bad_name_char((unsigned char)name[k]) ? '_' : name[k];
	copy[len] = '\0';
	return copy;
}

/* The index of name (len bytes, sanitized on the way in), added if new. */
static int intern(struct flame *fl, const char *name, size_t len, uint32_t *out)
{
	struct name_key key = { name, len };
	uint32_t hash, ref;
	char *copy = NULL;
	size_t k;

	for (k = 0; k < len && !copy; k++) {
		if (bad_name_char((unsigned char)name[k])) {
			copy = clean_name(name, len);
			if (!copy)
				return -ENOMEM;
			key.s = copy;
		}
	}
	ref = name_index_find(&fl->name_index, fl, &key, &hash);
	if (ref) {
		free(copy);
		*out = ref - 1;
		return 0;
	}
	if (!copy)
		copy = strndup(name, len);
	if (!copy || fl->n_names >= UINT32_MAX - 1 ||
	    cprof_grow(&fl->names, &fl->cap_names, fl->n_names + 1, sizeof(*fl->names), 256) < 0 ||
	    cprof_htab_reserve(&fl->name_index, 1) < 0) {
		free(copy);
		return -ENOMEM;
	}
	fl->names[fl->n_names] = copy;
	cprof_htab_add(&fl->name_index, hash, fl->n_names);
	*out = (uint32_t)fl->n_names++;
	return 0;
}

/* The child of parent called name, added if new. */
static int child_of(struct flame *fl, uint32_t parent, uint32_t name, uint32_t *out)
{
	struct child_key key = { parent, name };
	struct flame_node *n;
	uint32_t hash, ref;

	ref = node_index_find(&fl->node_index, fl, &key, &hash);
	if (ref) {
		*out = ref - 1;
		return 0;
	}
	if (fl->n_nodes >= UINT32_MAX - 1 ||
	    cprof_grow(&fl->nodes, &fl->cap_nodes, fl->n_nodes + 1, sizeof(*fl->nodes), 1024) < 0 ||
	    cprof_htab_reserve(&fl->node_index, 1) < 0)
		return -ENOMEM;
	n = &fl->nodes[fl->n_nodes];
	memset(n, 0, sizeof(*n));
	n->name = name;
	n->parent = parent;
	n->depth = fl->nodes[parent].depth + 1;
	if (n->depth > fl->max_depth)
		fl->max_depth = n->depth;
	cprof_htab_add(&fl->node_index, hash, fl->n_nodes);
	*out = (uint32_t)fl->n_nodes++;
	return 0;
}

static int push_name(struct flame *fl, uint32_t *cur, const char *name, size_t len)
{
	uint32_t id;
	int ret;

	ret = intern(fl, name, len, &id);
	if (ret < 0)
		return ret;
	return child_of(fl, *cur, id, cur);
}

/* A location without lines: MODULE+0xOFFSET (the file offset, stable across
 * runs), or the bare address when no mapping says where it belongs. */
static int push_address(struct flame *fl, uint32_t *cur, const struct prof_rd_location *loc)
{
	const struct prof_rd_mapping *m = loc->mapping;
	const char *base;
	char buf[320];
	int n;

	if (m && m->filename && *m->filename && loc->address >= m->start) {
		base = strrchr(m->filename, '/');
		base = base ? base + 1 : m->filename;
		n = snprintf(buf, sizeof(buf), "%.256s+0x%" PRIx64, base,
			     loc->address - m->start + m->offset);
	} else {
		n = snprintf(buf, sizeof(buf), "0x%" PRIx64, loc->address);
	}
	return push_name(fl, cur, buf, (size_t)n);
}

static const char *thread_name_of(const struct prof_rd_sample *s)
{
	size_t i;

	for (i = 0; i < s->n_labels; i++)
		if (s->labels[i].str && strcmp(s->labels[i].key, "thread_name") == 0)
			return s->labels[i].str;
	return NULL;
}

static int add_sample(struct flame *fl, const struct prof_rd_sample *s, int64_t v, unsigned flags)
{
	const struct prof_rd_location *loc;
	const struct prof_rd_function *fn;
	const char *name;
	uint32_t cur = 0;
	size_t i, j;
	int ret;

	if (flags & PROF_FLAME_THREADS) {
		name = thread_name_of(s);
		if (name && *name) {
			ret = push_name(fl, &cur, name, strlen(name));
			if (ret < 0)
				return ret;
		}
	}
	for (i = s->n_locations; i-- > 0;) {
		loc = s->locations[i];
		if (!loc->n_lines) {
			ret = push_address(fl, &cur, loc);
			if (ret < 0)
				return ret;
			continue;
		}
		/* lines are innermost first: the physical function is the last */
		for (j = loc->n_lines; j-- > 0;) {
			fn = loc->lines[j].function;
			name = fn->name && *fn->name ? fn->name :
			       fn->system_name && *fn->system_name ? fn->system_name : NULL;
			ret = name ? push_name(fl, &cur, name, strlen(name)) :
				     push_address(fl, &cur, loc);
			if (ret < 0)
				return ret;
		}
	}
	fl->nodes[cur].self += v;
	return 0;
}

struct sort_key {
	uint32_t parent;
	uint32_t node;
	const char *name;
};

static int cmp_key(const void *a, const void *b)
{
	const struct sort_key *x = a, *y = b;

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Totals and name-ordered child lists, once every sample is in. */
static int finish_tree(struct flame *fl)
{
	struct sort_key *keys;
	uint32_t i, n = (uint32_t)fl->n_nodes - 1;

	/* children always come after their parent in the array */
	for (i = 0; i < fl->n_nodes; i++)
		fl->nodes[i].total = fl->nodes[i].self;
	for (i = fl->n_nodes; i-- > 1;)
		fl->nodes[fl->nodes[i].parent].total += fl->nodes[i].total;
	if (!n)
		return 0;
	keys = malloc(n * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		keys[i] = (struct sort_key){ fl->nodes[i + 1].parent, i + 1,
					     fl->names[fl->nodes[i + 1].name] };
	qsort(keys, n, sizeof(*keys), cmp_key);
	/* pushing in reverse leaves each list in ascending order */
	for (i = n; i-- > 0;) {
		struct flame_node *c = &fl->nodes[keys[i].node];

		c->sibling = fl->nodes[c->parent].child;
		fl->nodes[c->parent].child = keys[i].node;
	}
	free(keys);
	return 0;
}

static void flame_free(struct flame *fl)
{
	uint32_t i;

	for (i = 0; i < fl->n_names; i++)
		free(fl->names[i]);
	free(fl->names);
	cprof_htab_free(&fl->name_index);
	free(fl->nodes);
	cprof_htab_free(&fl->node_index);
}

static int flame_build(struct flame *fl, const struct prof_rd_profile *p, size_t type,
		       unsigned flags)
{
	size_t i;
	int64_t v;
	int ret;

	memset(fl, 0, sizeof(*fl));
	if (type >= p->n_sample_types)
		return -EINVAL;
	if (cprof_grow(&fl->nodes, &fl->cap_nodes, 1, sizeof(*fl->nodes), 1024) < 0)
		return -ENOMEM;
	memset(&fl->nodes[0], 0, sizeof(fl->nodes[0]));
	fl->n_nodes = 1;	/* the root */
	for (i = 0; i < p->n_samples; i++) {
		v = p->samples[i].values[type];
		if (!v)
			continue;
		ret = add_sample(fl, &p->samples[i], v, flags);
		if (ret < 0)
			goto fail;
	}
	ret = finish_tree(fl);
	if (ret < 0)
		goto fail;
	return 0;
fail:
	flame_free(fl);
	return ret;
}

/* The next node of a depth-first walk in name order (NONE at the end);
 * descend false skips n's subtree. */
static uint32_t walk_next(const struct flame *fl, uint32_t n, bool descend)
{
	if (descend && fl->nodes[n].child)
		return fl->nodes[n].child;
	while (n && !fl->nodes[n].sibling)
		n = fl->nodes[n].parent;
	return n ? fl->nodes[n].sibling : NONE;
}

/* Ends a write to f: a full disk is an error, not a truncated file. */
static int stream_status(FILE *f)
{
	if (fflush(f) != 0 || ferror(f))
		return errno ? -errno : -EIO;
	return 0;
}

/* ---- collapsed stacks ------------------------------------------------- */

static int write_collapsed(const struct flame *fl, FILE *f)
{
	size_t *ends, cap = 256, len, nlen;
	char *path, *t;
	uint32_t n;
	int ret = 0;

	ends = calloc((size_t)fl->max_depth + 1, sizeof(*ends));
	path = malloc(cap);
	if (!ends || !path) {
		ret = -ENOMEM;
		goto free_bufs;
	}
	errno = 0;
	for (n = fl->nodes[0].child; n; n = walk_next(fl, n, true)) {
		const struct flame_node *d = &fl->nodes[n];

		/* ends[depth - 1] is where the parent's path ends */
		len = d->depth > 1 ? ends[d->depth - 1] : 0;
		nlen = strlen(fl->names[d->name]);
		if (len + nlen + 2 > cap) {
			while (len + nlen + 2 > cap)
				cap *= 2;
			t = realloc(path, cap);
			if (!t) {
				ret = -ENOMEM;
				goto free_bufs;
			}
			path = t;
		}
		if (d->depth > 1)
			path[len++] = ';';
		memcpy(path + len, fl->names[d->name], nlen);
		len += nlen;
		ends[d->depth] = len;
		if (d->self) {
			fwrite(path, 1, len, f);
			fprintf(f, " %" PRId64 "\n", d->self);
		}
	}
	ret = stream_status(f);
free_bufs:
	free(path);
	free(ends);
	return ret;
}

int prof_flame_collapsed(const struct prof_rd_profile *p, size_t type, unsigned flags, FILE *f)
{
	struct flame fl;
	int ret;

	ret = flame_build(&fl, p, type, flags);
	if (ret < 0)
		return ret;
	ret = write_collapsed(&fl, f);
	flame_free(&fl);
	return ret;
}

/* ---- SVG -------------------------------------------------------------- */

#define SVG_WIDTH 1200
#define SVG_PAD 10		/* left and right margins */
#define SVG_FRAME_H 16
#define SVG_TOP 60		/* title, subtitle, buttons */
#define SVG_BOTTOM 30		/* the details line */
#define SVG_FONT_SIZE 12
#define SVG_CHAR_W 7.2		/* advance of a 12px monospace glyph, about 0.6 em */
#define SVG_MIN_W 0.1		/* narrower frames (and their children) are not drawn */

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
static void xml_put(FILE *f, const char *s, size_t max)
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
		xml_put(f, name, len);
		return;
	}
	xml_put(f, name, fit - 2);
	fputs("..", f);
}

/* Warm colors (flame-like), stable for a name across graphs and runs. */
static void put_color(FILE *f, const char *name)
{
	uint64_t h = cprof_hash_bytes(CPROF_HASH_SEED, name, strlen(name));

	fprintf(f, "rgb(%u,%u,%u)", 205 + (unsigned)(h % 51), 60 + (unsigned)((h >> 16) % 161),
		(unsigned)((h >> 32) % 56));
}

/*
 * The script: zoom on click (the frame and its descendants fill the width,
 * its ancestors are dimmed, the rest hidden), search by regular expression
 * with the share of the total it matches, and reset.  It reads everything it
 * needs from the frames themselves: names from the <title>s, original
 * geometry from the <rect>s.
 */
static const char svg_script[] =
	"\"use strict\";\n"
	"var frames = [], details, matched, zoomed = null, pattern = null;\n"
	"function fit(f, w) {\n"
	"  var room = Math.floor((w - 6) / CHAR_W), s = f.name;\n"
	"  if (room < 3) s = \"\";\n"
	"  else if (s.length > room) s = s.substring(0, room - 2) + \"..\";\n"
	"  f.t.textContent = s;\n"
	"}\n"
	"function place(f, x, w) {\n"
	"  f.r.setAttribute(\"x\", x); f.r.setAttribute(\"width\", w);\n"
	"  f.t.setAttribute(\"x\", x + 3); fit(f, w);\n"
	"}\n"
	"function zoom(z) {\n"
	"  var scale = (W - 2 * PAD) / z.w, eps = 1e-6;\n"
	"  zoomed = z;\n"
	"  document.getElementById(\"unzoom\").style.display = \"\";\n"
	"  frames.forEach(function (f) {\n"
	"    var inside = f.x >= z.x - eps && f.x + f.w <= z.x + z.w + eps;\n"
	"    var around = f.x <= z.x + eps && f.x + f.w >= z.x + z.w - eps;\n"
	"    if (f.y <= z.y && inside) {\n"
	"      f.g.style.display = \"\"; f.g.style.opacity = \"\";\n"
	"      place(f, PAD + (f.x - z.x) * scale, f.w * scale);\n"
	"    } else if (f.y > z.y && around) {\n"
	"      f.g.style.display = \"\"; f.g.style.opacity = \"0.5\";\n"
	"      place(f, PAD, W - 2 * PAD);\n"
	"    } else {\n"
	"      f.g.style.display = \"none\";\n"
	"    }\n"
	"  });\n"
	"  if (pattern) search(pattern);\n"
	"}\n"
	"function unzoom() {\n"
	"  zoomed = null;\n"
	"  document.getElementById(\"unzoom\").style.display = \"none\";\n"
	"  frames.forEach(function (f) {\n"
	"    f.g.style.display = \"\"; f.g.style.opacity = \"\";\n"
	"    place(f, f.x, f.w);\n"
	"  });\n"
	"  if (pattern) search(pattern);\n"
	"}\n"
	"function search(re) {\n"
	"  var spans = [], sum = 0, end = -1;\n"
	"  pattern = re;\n"
	"  frames.forEach(function (f) {\n"
	"    var hit = re !== null && re.test(f.name);\n"
	"    f.r.setAttribute(\"fill\", hit ? \"rgb(200,60,230)\" : f.fill);\n"
	"    if (hit) spans.push([f.x, f.x + f.w]);\n"
	"  });\n"
	"  /* nested matches overlap: count each stretch of the width once */\n"
	"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
	"  spans.forEach(function (s) {\n"
	"    if (s[1] <= end) return;\n"
	"    sum += s[1] - Math.max(s[0], end);\n"
	"    end = s[1];\n"
	"  });\n"
	"  matched.textContent = re === null ? \"\" :\n"
	"    \"Matched: \" + (100 * sum / (W - 2 * PAD)).toFixed(2) + \"%\";\n"
	"  document.getElementById(\"unsearch\").style.display = re === null ? \"none\" : \"\";\n"
	"}\n"
	"function ask() {\n"
	"  var s = window.prompt(\"Search for (regular expression):\", \"\");\n"
	"  if (s === null || s === \"\") return;\n"
	"  try { search(new RegExp(s)); } catch (e) { window.alert(String(e)); }\n"
	"}\n"
	"function init() {\n"
	"  var gs = document.getElementsByTagName(\"g\");\n"
	"  details = document.getElementById(\"details\");\n"
	"  matched = document.getElementById(\"matched\");\n"
	"  for (var i = 0; i < gs.length; i++) {\n"
	"    var g = gs[i];\n"
	"    if (g.getAttribute(\"class\") !== \"f\") continue;\n"
	"    var title = g.getElementsByTagName(\"title\")[0].textContent;\n"
	"    var r = g.getElementsByTagName(\"rect\")[0];\n"
	"    var m = /^([\\s\\S]*) \\([^()]*\\)$/.exec(title);\n"
	"    var f = { g: g, r: r, t: g.getElementsByTagName(\"text\")[0],\n"
	"      name: m ? m[1] : title, title: title, fill: r.getAttribute(\"fill\"),\n"
	"      x: +r.getAttribute(\"x\"), w: +r.getAttribute(\"width\"), y: +r.getAttribute(\"y\") };\n"
	"    frames.push(f);\n"
	"    (function (f) {\n"
	"      g.addEventListener(\"click\", function () { zoom(f); });\n"
	"      g.addEventListener(\"mouseover\", function () { details.textContent = f.title; });\n"
	"      g.addEventListener(\"mouseout\", function () { details.textContent = \" \"; });\n"
	"    })(f);\n"
	"  }\n"
	"  document.getElementById(\"unzoom\").addEventListener(\"click\", unzoom);\n"
	"  document.getElementById(\"search\").addEventListener(\"click\", ask);\n"
	"  document.getElementById(\"unsearch\").addEventListener(\"click\", function () { search(null); });\n"
	"  window.addEventListener(\"keydown\", function (e) {\n"
	"    if ((e.ctrlKey || e.metaKey) && e.key === \"f\") { e.preventDefault(); ask(); }\n"
	"    else if (e.key === \"Escape\") { if (zoomed) unzoom(); else search(null); }\n"
	"  });\n"
	"}\n"
	"window.addEventListener(\"load\", init);\n";

static void put_frame(FILE *f, const struct flame *fl, uint32_t n, double x, double w,
		      double y, int64_t total)
{
	const char *name = fl->names[fl->nodes[n].name];
	double pct = 100.0 * (double)fl->nodes[n].total / (double)total;

	fputs("<g class=\"f\"><title>", f);
	xml_put(f, name, SIZE_MAX);
	fprintf(f, " (%" PRId64 ", %.2f%%)</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
		"height=\"%d\" rx=\"2\" fill=\"", fl->nodes[n].total, pct, x, y, w,
		SVG_FRAME_H - 1);
	put_color(f, name);
	fprintf(f, "\"/><text x=\"%.2f\" y=\"%.1f\">", x + 3, y + SVG_FRAME_H - 4.5);
	put_label(f, name, w);
	fputs("</text></g>\n", f);
}

static int write_svg(const struct flame *fl, const struct prof_rd_profile *p, size_t type,
		     const char *title, FILE *f)
{
	const struct prof_rd_value_type *vt = &p->sample_types[type];
	int64_t total = fl->nodes[0].total;
	double scale, *xs = NULL;
	int height = SVG_TOP + (int)fl->max_depth * SVG_FRAME_H + SVG_BOTTOM;
	uint32_t n;
	bool draw = false;

	errno = 0;
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
	xml_put(f, title ? title : "Flame Graph", SIZE_MAX);
	fprintf(f, "</text>\n<text x=\"%d\" y=\"44\" text-anchor=\"middle\">", SVG_WIDTH / 2);
	xml_put(f, vt->type ? vt->type : "", SIZE_MAX);
	fputs(" (", f);
	xml_put(f, vt->unit ? vt->unit : "", SIZE_MAX);
	fprintf(f, "), total %" PRId64 "</text>\n", total);
	fprintf(f, "<text id=\"unzoom\" class=\"button\" x=\"%d\" y=\"24\" style=\"display:none\">"
		"Reset zoom</text>\n", SVG_PAD);
	fprintf(f, "<text id=\"search\" class=\"button\" x=\"%d\" y=\"24\" text-anchor=\"end\">"
		"Search</text>\n", SVG_WIDTH - SVG_PAD);
	fprintf(f, "<text id=\"unsearch\" class=\"button\" x=\"%d\" y=\"44\" text-anchor=\"end\" "
		"style=\"display:none\">Clear search</text>\n", SVG_WIDTH - SVG_PAD);
	fprintf(f, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
		SVG_WIDTH - SVG_PAD, height - 10);
	fprintf(f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", SVG_PAD, height - 10);

	if (total <= 0) {
		fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">no samples</text>\n",
			SVG_WIDTH / 2, SVG_TOP + 20);
		goto end;
	}
	xs = calloc(fl->n_nodes, sizeof(*xs));
	if (!xs)
		return -ENOMEM;
	scale = (double)(SVG_WIDTH - 2 * SVG_PAD) / (double)total;
	xs[0] = SVG_PAD;
	for (n = fl->nodes[0].child; n; n = walk_next(fl, n, draw)) {
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
				  (double)(height - SVG_BOTTOM - (int)d->depth * SVG_FRAME_H), total);
	}
	free(xs);
end:
	fputs("</svg>\n", f);
	return stream_status(f);
}

int prof_flame_svg(const struct prof_rd_profile *p, size_t type, const char *title,
		   unsigned flags, FILE *f)
{
	struct flame fl;
	int ret;

	ret = flame_build(&fl, p, type, flags);
	if (ret < 0)
		return ret;
	ret = write_svg(&fl, p, type, title, f);
	flame_free(&fl);
	return ret;
}

/* ---- fds and files ---------------------------------------------------- */

struct flame_job {
	const struct prof_rd_profile *p;
	size_t type;
	const char *title;
	unsigned flags;
	bool svg;
};

/* Runs job on a stream of its own over a duplicate of fd, so that closing
 * the stream reports its last write errors and leaves fd open. */
static int run_job(int fd, void *arg)
{
	const struct flame_job *j = arg;
	FILE *f;
	int dfd, ret;

	dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dfd < 0)
		return -errno;
	f = fdopen(dfd, "w");
	if (!f) {
		ret = -errno;
		close(dfd);
		return ret;
	}
	ret = j->svg ? prof_flame_svg(j->p, j->type, j->title, j->flags, f) :
		       prof_flame_collapsed(j->p, j->type, j->flags, f);
	errno = 0;
	if (fclose(f) != 0 && !ret)
		ret = errno ? -errno : -EIO;
	return ret;
}

int prof_flame_collapsed_fd(const struct prof_rd_profile *p, size_t type, unsigned flags, int fd)
{
	struct flame_job j = { .p = p, .type = type, .flags = flags };

	return run_job(fd, &j);
}

int prof_flame_svg_fd(const struct prof_rd_profile *p, size_t type, const char *title,
		      unsigned flags, int fd)
{
	struct flame_job j = { .p = p, .type = type, .title = title, .flags = flags, .svg = true };

	return run_job(fd, &j);
}

int prof_flame_collapsed_file(const struct prof_rd_profile *p, size_t type, const char *path,
			      unsigned flags)
{
	struct flame_job j = { .p = p, .type = type, .flags = flags };

	/* checked first: an atomic write would otherwise create and remove a file for nothing */
	if (type >= p->n_sample_types)
		return -EINVAL;
	return prof_atomic_write(path, run_job, &j);
}

int prof_flame_svg_file(const struct prof_rd_profile *p, size_t type, const char *path,
			const char *title)
{
	struct flame_job j = { .p = p, .type = type, .title = title, .svg = true };

	if (type >= p->n_sample_types)
		return -EINVAL;
	return prof_atomic_write(path, run_job, &j);
}

/* ---- from a builder ---------------------------------------------------- */

/* The encoded profile, grown as protobuf-c appends to it. */
struct mem_sink {
	ProtobufCBuffer base;	/* first: protobuf-c calls back with &base */
	uint8_t *data;
	size_t len, cap;
	bool nomem;
};

static void mem_append(ProtobufCBuffer *buffer, size_t len, const uint8_t *data)
{
	struct mem_sink *k = (struct mem_sink *)buffer;
	size_t cap;
	uint8_t *t;

	if (k->nomem)
		return;
	if (k->len + len > k->cap) {
		for (cap = k->cap ? k->cap : 64 * 1024; cap < k->len + len; cap *= 2)
			;
		t = realloc(k->data, cap);
		if (!t) {
			k->nomem = true;
			return;
		}
		k->data = t;
		k->cap = cap;
	}
	memcpy(k->data + k->len, data, len);
	k->len += len;
}

int prof_builder_to_rd(struct prof_builder *b, struct prof_rd_profile **out)
{
	struct mem_sink k = { .base.append = mem_append };
	int ret;

	/* uncompressed: prof_rd_buffer reads plain protobuf as well, and
	 * gzip would only cost time on both sides */
	ret = prof_builder_pack(b, &k.base);
	if (!ret && k.nomem)
		ret = -ENOMEM;
	if (!ret)
		ret = prof_rd_buffer(k.data, k.len, out);
	free(k.data);
	return ret;
}
