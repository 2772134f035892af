/* SPDX-License-Identifier: MIT */
/* A sampling session to a file: symbolize, export, write. */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>

#include "profile/atomic.h"
#include "profile/flame.h"
#include "profile/output.h"
#include "profile/profile.h"
#include "profile/reader.h"
#include "symbolize/symbolize.h"

/* What goes into the file, in the session's format. */
struct fill_job {
	const struct prof_session *s;
	struct prof_builder *b;
	struct prof_rd_profile *view;	/* the flame formats: b as a profile */
};

static int fill(int fd, void *arg)
{
	struct fill_job *j = arg;

	if (j->s->format == PROF_FORMAT_PPROF)
		return prof_write_fd(j->b, fd);
	if (j->s->format == PROF_FORMAT_SVG)
		return prof_flame_svg_fd(j->view, j->view->default_type, j->s->title, 0, fd);
	return prof_flame_collapsed_fd(j->view, j->view->default_type, 0, fd);
}

/* Writes b to s->path atomically, fsynced with s->fsync.  The flame
 * graph is drawn from the profile as built for pprof, so that it shows
 * exactly what the pprof file would hold. */
static int write_out(struct prof_builder *b, const struct prof_session *s, uint64_t *sync_ns)
{
	struct fill_job j = { .s = s, .b = b };
	struct prof_sync sync = { .fsync = s->fsync };
	int ret;

	if (s->format != PROF_FORMAT_PPROF) {
		ret = prof_builder_view(b, &j.view);
		if (ret < 0)
			return ret;
	}
	ret = prof_atomic_write_sync(s->path, fill, &j, &sync);
	*sync_ns = sync.ns;
	prof_rd_free(j.view);
	return ret;
}

int prof_note_cut(struct prof_builder *b, size_t modules_cut)
{
	char text[200];

	if (!modules_cut)
		return 0;
	snprintf(text, sizeof(text),
		 "symbolizing ran out of time (--write-timeout): %zu module%s keep%s addresses "
		 "and build ids, their mappings marked without functions", modules_cut,
		 modules_cut == 1 ? "" : "s", modules_cut == 1 ? "s" : "");
	return prof_add_comment(b, text);
}

int prof_session_build(const struct prof_session *s, struct sym_ctx *sym,
		       struct prof_builder **out, size_t *modules_cut)
{
	size_t i, cut = 0;
	int ret;

	ret = prof_export_cut(s->stacks, s->mods, sym, &s->export, out, &cut);
	for (i = 0; !ret && i < s->n_comments; i++)
		ret = prof_add_comment(*out, s->comments[i]);
	if (!ret)
		ret = prof_note_cut(*out, cut);
	if (modules_cut)
		*modules_cut = cut;
	if (ret < 0) {
		prof_builder_destroy(*out);
		*out = NULL;
	}
	return ret;
}

int prof_write_session(const struct prof_session *s, struct prof_session_result *res)
{
	struct prof_session_result ignored;
	struct prof_builder *b = NULL;
	struct sym_ctx *sym = NULL;
	int ret;

	if (!res)
		res = &ignored;
	res->modules_cut = 0;
	res->sync_ns = 0;
	res->sym_err = sym_create(&sym, s->mods, 0);
	if (res->sym_err < 0)
		sym = NULL;
	else if (s->setup_sym)
		s->setup_sym(sym, s->setup_arg);
	res->failed = PROF_STAGE_BUILD;
	ret = prof_session_build(s, sym, &b, &res->modules_cut);
	if (ret < 0)
		goto out;
	if (sym && s->after_sym)
		s->after_sym(sym, s->setup_arg);
	res->failed = PROF_STAGE_WRITE;
	ret = write_out(b, s, &res->sync_ns);
	if (!ret)
		res->failed = PROF_STAGE_NONE;
out:
	prof_builder_destroy(b);
	if (sym)
		sym_destroy(sym);
	return ret;
}
