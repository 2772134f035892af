/* SPDX-License-Identifier: MIT */
/* A sampling session to a file: symbolize, export, write. */
#include "config.h"

#include <errno.h>
#include <stddef.h>

#include "profile/flame.h"
#include "profile/output.h"
#include "profile/profile.h"
#include "profile/reader.h"
#include "symbolize/symbolize.h"

/* Draws the flame graph from the profile as built for pprof, so that it
 * shows exactly what the pprof file would hold. */
static int write_flame(const struct prof_builder *b, const struct prof_session *s)
{
	struct prof_rd_profile *view = NULL;
	int ret;

	ret = prof_builder_view(b, &view);
	if (ret < 0)
		return ret;
	if (s->format == PROF_FORMAT_SVG)
		ret = prof_flame_svg_file(view, view->default_type, s->path, s->title);
	else
		ret = prof_flame_collapsed_file(view, view->default_type, s->path, 0);
	prof_rd_free(view);
	return ret;
}

int prof_session_build(const struct prof_session *s, struct sym_ctx *sym,
		       struct prof_builder **out)
{
	size_t i;
	int ret;

	ret = prof_export(s->stacks, s->mods, sym, &s->export, out);
	for (i = 0; !ret && i < s->n_comments; i++)
		ret = prof_add_comment(*out, s->comments[i]);
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
	res->sym_err = sym_create(&sym, s->mods, 0);
	if (res->sym_err < 0)
		sym = NULL;
	else if (s->setup_sym)
		s->setup_sym(sym, s->setup_arg);
	res->failed = PROF_STAGE_BUILD;
	ret = prof_session_build(s, sym, &b);
	if (ret < 0)
		goto out;
	if (sym && s->after_sym)
		s->after_sym(sym, s->setup_arg);
	res->failed = PROF_STAGE_WRITE;
	if (s->format == PROF_FORMAT_PPROF)
		ret = prof_write_file(b, s->path);
	else
		ret = write_flame(b, s);
	if (!ret)
		res->failed = PROF_STAGE_NONE;
out:
	prof_builder_destroy(b);
	if (sym)
		sym_destroy(sym);
	return ret;
}
