/* SPDX-License-Identifier: MIT */
/* Symbolizes aggregated raw stacks into a pprof builder. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/export.h"

/* (module, lookup address) -> location id, open addressing. */
struct loc_slot {
	uint64_t addr;
	uint32_t module;
	bool used;
	uint64_t id;
};

struct exporter {
	const struct sym_modtab *mods;
	struct sym_ctx *sym;
	const struct prof_export_opts *o;
	struct prof_builder *b;
	uint64_t *mapping_ids;		/* by module id */
	bool *module_used;
	size_t n_modules;
	struct loc_slot *slots;
	size_t n_slots, used_slots;
	uint64_t *loc_ids;		/* scratch, one per frame */
	size_t cap_loc_ids;
	struct prof_line *lines;	/* scratch */
	size_t cap_lines;
};

static uint64_t loc_hash(uint64_t addr, uint32_t module)
{
	return (addr ^ ((uint64_t)module << 48)) * 0x9e3779b97f4a7c15ull;
}

static int grow_slots(struct exporter *x)
{
	size_t n = x->n_slots ? x->n_slots * 2 : 4096, i;
	struct loc_slot *nv = calloc(n, sizeof(*nv));

	if (!nv)
		return -ENOMEM;
	for (i = 0; i < x->n_slots; i++) {
		struct loc_slot *o = &x->slots[i];
		size_t j;

		if (!o->used)
			continue;
		j = (size_t)(loc_hash(o->addr, o->module) & (n - 1));
		while (nv[j].used)
			j = (j + 1) & (n - 1);
		nv[j] = *o;
	}
	free(x->slots);
	x->slots = nv;
	x->n_slots = n;
	return 0;
}

static int mark_modules(uint32_t thread, const struct prof_frame *f, size_t n,
			const int64_t *values, void *arg)
{
	struct exporter *x = arg;
	size_t i;

	for (i = 0; i < n; i++)
		if (f[i].module && f[i].module < x->n_modules)
			x->module_used[f[i].module] = true;
	return 0;
}

static int add_mapping(struct exporter *x, const struct sym_module *m)
{
	struct prof_mapping pm = {
		.start = m->text_start,
		.limit = m->text_end,
		.offset = m->text_offset,
		.filename = m->path,
		.build_id = m->build_id,
	};
	bool lines = x->sym && sym_module_has_lines(x->sym, m);

	/* Every location of a module carries what symbolize/ found, so pprof
	 * must not try to re-symbolize it from the (possibly absent) file. */
	pm.has_functions = true;
	pm.has_filenames = lines;
	pm.has_line_numbers = lines;
	pm.has_inline_frames = lines;
	return prof_add_mapping(x->b, &pm, &x->mapping_ids[m->id]);
}

static int location_for(struct exporter *x, const struct prof_frame *f, uint64_t *id)
{
	/* A caller frame holds a return address: its call is at addr - 1. */
	uint64_t addr = (f->flags & PROF_FRAME_EXACT) || !f->addr ? f->addr : f->addr - 1;
	const struct sym_module *m = f->module ? sym_modtab_get(x->mods, f->module) : NULL;
	const struct sym_frame *sf = NULL;
	size_t j, i, n = 0;
	int ret;

	if (x->used_slots * 2 >= x->n_slots && (ret = grow_slots(x)) < 0)
		return ret;
	j = (size_t)(loc_hash(addr, f->module) & (x->n_slots - 1));
	while (x->slots[j].used) {
		if (x->slots[j].addr == addr && x->slots[j].module == f->module) {
			*id = x->slots[j].id;
			return 0;
		}
		j = (j + 1) & (x->n_slots - 1);
	}
	if (m && x->sym) {
		ret = sym_lookup(x->sym, m, f->addr, !(f->flags & PROF_FRAME_EXACT), &sf, &n);
		if (ret < 0)
			n = 0;
	}
	if (n > x->cap_lines) {
		struct prof_line *nv = realloc(x->lines, n * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		x->lines = nv;
		x->cap_lines = n;
	}
	for (i = 0; i < n; i++) {
		x->lines[i] = (struct prof_line){
			.function = sf[i].function ? sf[i].function : sf[i].system_name,
			.system_name = sf[i].system_name,
			.filename = sf[i].file,
			.start_line = sf[i].start_line,
			.line = sf[i].line,
		};
	}
	/* An address 0 with nothing known cannot be a location; callers
	 * drop such frames before getting here. */
	ret = prof_add_location(x->b, m ? x->mapping_ids[m->id] : 0, addr, x->lines, n, id);
	if (ret < 0)
		return ret;
	x->slots[j] = (struct loc_slot){ .addr = addr, .module = f->module, .used = true, .id = *id };
	x->used_slots++;
	return 0;
}

static int add_sample(uint32_t thread, const struct prof_frame *f, size_t n,
		      const int64_t *values, void *arg)
{
	struct exporter *x = arg;
	struct prof_label labels[2];
	char tid_str[24];
	const char *name = NULL;
	size_t i, k = 0, nl = 0;
	pid_t tid;
	int ret;

	if (n > x->cap_loc_ids) {
		uint64_t *nv = realloc(x->loc_ids, n * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		x->loc_ids = nv;
		x->cap_loc_ids = n;
	}
	for (i = 0; i < n; i++) {
		if (!f[i].addr)
			continue;
		ret = location_for(x, &f[i], &x->loc_ids[k]);
		if (ret < 0)
			return ret;
		k++;
	}
	if (!k)
		return 0;
	if (x->o->thread_label && x->o->thread_label(thread, &tid, &name, x->o->arg) == 0) {
		snprintf(tid_str, sizeof(tid_str), "%d", (int)tid);
		labels[nl++] = (struct prof_label){ .key = "thread_id", .str = tid_str };
		if (name && *name)
			labels[nl++] = (struct prof_label){ .key = "thread_name", .str = name };
	}
	return prof_add_sample(x->b, x->loc_ids, k, values, labels, nl);
}

int prof_export_cpu(const struct prof_stacks *st, const struct sym_modtab *mods,
		    struct sym_ctx *sym, const struct prof_export_opts *o,
		    struct prof_builder **out)
{
	const char *vt = o->value_type ? o->value_type : "cpu";
	const struct prof_value_type types[] = {
		{ "samples", "count" },
		{ vt, "nanoseconds" },
	};
	const struct prof_value_type period_type = { vt, "nanoseconds" };
	struct exporter x = { .mods = mods, .sym = sym, .o = o };
	size_t i;
	int ret;

	ret = prof_builder_create(&x.b, types, 2, period_type, 1000000000 / (int64_t)o->hz);
	if (ret < 0)
		return ret;
	prof_set_time(x.b, o->time_nanos, o->duration_nanos);

	x.n_modules = sym_modtab_count(mods) + 1;
	x.mapping_ids = calloc(x.n_modules, sizeof(*x.mapping_ids));
	x.module_used = calloc(x.n_modules, sizeof(*x.module_used));
	if (!x.mapping_ids || !x.module_used) {
		ret = -ENOMEM;
		goto err;
	}
	ret = prof_stacks_foreach(st, mark_modules, &x);
	if (ret < 0)
		goto err;
	/* pprof wants the main binary's mapping first. */
	for (i = 1; i < x.n_modules; i++) {
		const struct sym_module *m = sym_modtab_get(mods, (uint32_t)i);

		if (m && m->is_main && x.module_used[i] && (ret = add_mapping(&x, m)) < 0)
			goto err;
	}
	for (i = 1; i < x.n_modules; i++) {
		const struct sym_module *m = sym_modtab_get(mods, (uint32_t)i);

		if (m && !m->is_main && x.module_used[i] && (ret = add_mapping(&x, m)) < 0)
			goto err;
	}
	ret = prof_stacks_foreach(st, add_sample, &x);
	if (ret < 0)
		goto err;
	*out = x.b;
	x.b = NULL;
err:
	if (x.b)
		prof_builder_destroy(x.b);
	free(x.mapping_ids);
	free(x.module_used);
	free(x.slots);
	free(x.loc_ids);
	free(x.lines);
	return ret;
}
