/* SPDX-License-Identifier: MIT */
/* Symbolizes aggregated raw stacks into a pprof builder. */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/htab.h"
#include "profile/export.h"

/* (module, lookup address) -> location id, in lookup order.  A Python
 * frame's key is (PY_MODULE, its location id). */
#define PY_MODULE UINT32_MAX
struct loc_entry {
	uint64_t addr;
	uint32_t module;
	uint64_t id;
};

struct exporter {
	const struct proc_modules *mods;
	struct sym_ctx *sym;
	const struct prof_export_opts *o;
	struct prof_builder *b;
	uint64_t *mapping_ids;		/* by module id */
	bool *module_used;
	bool *module_cut;		/* by module id: left to the reader (the deadline) */
	size_t n_cut;
	unsigned lookups;		/* since the clock was last read */
	bool late;			/* o->sym_deadline_ns has passed */
	size_t n_modules;
	uint64_t kernel_start, kernel_end;	/* the kernel frames' range; end 0: none */
	uint64_t kernel_mapping;		/* its mapping's id */
	struct loc_entry *locs;
	size_t n_locs, cap_locs;
	struct cprof_htab loc_index;
	uint64_t *loc_ids;		/* scratch, one per frame */
	size_t cap_loc_ids;
	struct prof_line *lines;	/* scratch */
	size_t cap_lines;
};

static uint32_t loc_hash(const struct loc_entry *k)
{
	return cprof_hash_finish(cprof_hash_mix(k->addr, k->module));
}

static bool loc_eq(const struct exporter *x, uint32_t index, const struct loc_entry *k)
{
	return x->locs[index].addr == k->addr && x->locs[index].module == k->module;
}

#define HTAB_NAME loc_index
#define HTAB_CTX struct exporter
#define HTAB_KEY struct loc_entry
#define HTAB_HASH(x, k) loc_hash(k)
#define HTAB_COMPARE loc_eq
#include "lib/htab-type.h"

/* Whether the symbolizing deadline has passed; the clock is read once
 * every 64 lookups (a vDSO call each, millions of frames). */
static bool past_deadline(struct exporter *x)
{
	if (x->late || !x->o->sym_deadline_ns || (x->lookups++ & 63))
		return x->late;
	x->late = cprof_now_ns() >= x->o->sym_deadline_ns;
	return x->late;
}

/* Module id's frames stay unsymbolized: its mapping tells a reader to
 * symbolize them (has_functions false), from the build id. */
static void cut_module(struct exporter *x, uint32_t id)
{
	if (x->module_cut[id])
		return;
	x->module_cut[id] = true;
	x->n_cut++;
}

/*
 * Marks the modules the stack's frames are in, and symbolizes those frames
 * (the symbolizer caches them for the samples), so that each mapping says
 * truthfully what its locations carry.  Past the deadline, a module met
 * again is cut: none of its frames is named, so that each mapping is named
 * whole by cprof or left whole to the reader.  Only out of memory fails.
 */
static int mark_modules(uint32_t thread, const struct prof_frame *f, size_t n,
			const int64_t *values, void *arg)
{
	struct exporter *x = arg;
	const struct sym_frame *sf;
	size_t i, nf;

	for (i = 0; i < n; i++) {
		if (f[i].flags & PROF_FRAME_KERNEL) {
			if (!x->kernel_end || f[i].addr < x->kernel_start)
				x->kernel_start = f[i].addr;
			if (f[i].addr >= x->kernel_end)
				x->kernel_end = f[i].addr + 1;
			continue;
		}
		if (!f[i].module || f[i].module >= x->n_modules)
			continue;
		x->module_used[f[i].module] = true;
		if (!x->sym || !f[i].addr || (f[i].flags & PROF_FRAME_TRUNCATED) ||
		    x->module_cut[f[i].module])
			continue;
		if (past_deadline(x)) {
			cut_module(x, f[i].module);
			continue;
		}
		if (sym_lookup(x->sym, proc_modules_get(x->mods, f[i].module), f[i].addr,
			       !(f[i].flags & PROF_FRAME_EXACT), &sf, &nf) == -ENOMEM)
			return -ENOMEM;
	}
	return 0;
}

static int add_mapping(struct exporter *x, const struct proc_module *m)
{
	struct prof_mapping pm = {
		.start = m->text_start,
		.limit = m->text_end,
		.offset = m->text_offset,
		.filename = m->path,
		/* Pure Go binaries often have only Go's own build id. */
		.build_id = m->build_id ? m->build_id : m->go_build_id,
	};
	bool named = x->sym && !x->module_cut[m->id];
	bool lines = named && sym_module_has_lines(x->sym, m);

	/* The locations of a module carry what symbolize/ found, so pprof
	 * must not re-symbolize them from the (possibly absent) file; unless
	 * nothing was found (no symbols here, debuginfo not downloaded in
	 * time, the deadline): then a reader may, from the build id. */
	pm.has_functions = named && sym_module_has_functions(x->sym, m);
	pm.has_filenames = lines;
	pm.has_line_numbers = lines;
	pm.has_inline_frames = lines;
	return prof_add_mapping(x->b, &pm, &x->mapping_ids[m->id]);
}

/*
 * The address a frame is looked up and placed at: a caller frame holds a
 * return address, and its call is at addr - 1.  0 for a frame that has no
 * address (a garbage return address of 1 included).
 */
static uint64_t frame_pc(const struct prof_frame *f)
{
	return (f->flags & (PROF_FRAME_EXACT | PROF_FRAME_PYTHON)) || !f->addr ? f->addr : f->addr - 1;
}

/* The mapping of the kernel frames, as perf names it: its range is the
 * one the frames span. */
static int add_kernel_mapping(struct exporter *x)
{
	struct prof_mapping pm = {
		.start = x->kernel_start,
		.limit = x->kernel_end,
		.filename = "[kernel.kallsyms]",
		.has_functions = x->o->kernel != NULL,
	};

	return prof_add_mapping(x->b, &pm, &x->kernel_mapping);
}

/* A kernel frame's function from the kernel's symbols, if known. */
static const struct sym_frame *kernel_symbol(struct exporter *x, const struct prof_frame *f,
					     struct sym_frame *buf)
{
	const char *name;

	if (!x->o->kernel)
		return NULL;
	name = sym_kallsyms_lookup(x->o->kernel, frame_pc(f), NULL);
	if (!name)
		return NULL;
	*buf = (struct sym_frame){ .function = name, .system_name = name };
	return buf;
}

/*
 * The lines of f's symbols into x->lines, *n of them (0: nothing known).
 * Out of memory is an error; any other failure of the symbolizer (a module
 * it cannot read) leaves this one frame unsymbolized rather than losing the
 * profile.
 */
static int lines_for(struct exporter *x, const struct proc_module *m, const struct prof_frame *f,
		     size_t *n)
{
	const struct sym_frame *sf = NULL;
	struct sym_frame kernel;
	size_t i;
	int ret;

	*n = 0;
	if (f->flags & PROF_FRAME_PYTHON) {
		if (cprof_grow(&x->lines, &x->cap_lines, 1, sizeof(*x->lines), 16) < 0)
			return -ENOMEM;
		memset(x->lines, 0, sizeof(*x->lines));
		ret = x->o->python_line ? x->o->python_line(f->addr, x->lines, x->o->arg) : -ENOENT;
		if (ret < 0 && ret != -ENOENT)
			return ret;
		*n = ret == 0;
		return 0;
	}
	if (f->flags & PROF_FRAME_KERNEL) {
		sf = kernel_symbol(x, f, &kernel);
		*n = sf != NULL;
	} else if (f->flags & PROF_FRAME_TRUNCATED) {
		/* Where a walk stopped short of a thread root. */
		static const struct sym_frame truncated = { .function = "[truncated]" };

		sf = &truncated;
		*n = 1;
	} else {
		/* m NULL: code outside any file (JIT), which a perf map may name */
		if (!x->sym || (m && x->module_cut[m->id]))
			return 0;
		ret = sym_lookup(x->sym, m, f->addr, !(f->flags & PROF_FRAME_EXACT), &sf, n);
		if (ret == -ENOMEM)
			return ret;
		if (ret < 0)
			*n = 0;
	}
	if (cprof_grow(&x->lines, &x->cap_lines, *n, sizeof(*x->lines), 16) < 0)
		return -ENOMEM;
	for (i = 0; i < *n; i++) {
		x->lines[i] = (struct prof_line){
			.function = sf[i].function ? sf[i].function : sf[i].system_name,
			.system_name = sf[i].system_name,
			.filename = sf[i].file,
			.start_line = sf[i].start_line,
			.line = sf[i].line,
		};
	}
	return 0;
}

/* The location of frame f into *id: 0, 1 when f has none (a Python frame
 * its reader cannot name: left out), or -errno. */
static int location_for(struct exporter *x, const struct prof_frame *f, uint64_t *id)
{
	bool py = f->flags & PROF_FRAME_PYTHON;
	struct loc_entry key = {
		.addr = frame_pc(f),
		.module = py ? PY_MODULE : f->module,
	};
	const struct proc_module *m = f->module && !py && !(f->flags & PROF_FRAME_KERNEL) ?
				      proc_modules_get(x->mods, f->module) : NULL;
	uint32_t hash, ref;
	size_t n;
	int ret;

	ref = loc_index_find(&x->loc_index, x, &key, &hash);
	if (ref) {
		*id = x->locs[ref - 1].id;
		return 0;
	}
	ret = lines_for(x, m, f, &n);
	if (!ret && py && !n)
		return 1;
	if (!ret)
		ret = cprof_grow(&x->locs, &x->cap_locs, x->n_locs + 1, sizeof(*x->locs), 1024);
	if (!ret)
		ret = cprof_htab_reserve(&x->loc_index, 1);
	if (ret < 0)
		return ret;
	/* An address 0 with nothing known cannot be a location; callers
	 * drop such frames before getting here. */
	/* A Python frame is no machine address: its location has lines only. */
	ret = prof_add_location(x->b,
				(f->flags & PROF_FRAME_KERNEL) ? x->kernel_mapping :
				m ? x->mapping_ids[m->id] : 0, py ? 0 : key.addr, x->lines, n, id);
	if (ret < 0)
		return ret;
	key.id = *id;
	x->locs[x->n_locs] = key;
	cprof_htab_add(&x->loc_index, hash, x->n_locs++);
	return 0;
}

/*
 * The thread's and the process's labels are one shape: an id, and a name
 * when there is one, from a callback that may be absent or say -ENOENT
 * (no label).  Appends to labels[*nl]; the id's text is kept in id_str.
 * Returns 0 or the callback's error.
 */
static int add_id_labels(int (*fn)(uint32_t, pid_t *, const char **, void *), void *arg,
			 uint32_t thread, const char *id_key, const char *name_key,
			 char *id_str, size_t size, struct prof_label *labels, size_t *nl)
{
	const char *name = NULL;
	pid_t id;
	int ret;

	ret = fn ? fn(thread, &id, &name, arg) : -ENOENT;
	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	/* A string, not a numeric label: pprof drops numeric labels whose
	 * value is 0, and the labels already in use are strings. */
	snprintf(id_str, size, "%d", (int)id);
	labels[(*nl)++] = (struct prof_label){ .key = id_key, .str = id_str };
	if (name && *name)
		labels[(*nl)++] = (struct prof_label){ .key = name_key, .str = name };
	return 0;
}

static int add_sample(uint32_t thread, const struct prof_frame *f, size_t n,
		      const int64_t *values, void *arg)
{
	struct exporter *x = arg;
	struct prof_label labels[4];
	char tid_str[24], pid_str[24];
	size_t i, k = 0, nl = 0;
	int ret;

	if (cprof_grow(&x->loc_ids, &x->cap_loc_ids, n, sizeof(*x->loc_ids), 64) < 0)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		/* No address and nothing known is no location: the frame
		 * goes, the sample stays. */
		if (!frame_pc(&f[i]) && !(f[i].flags & PROF_FRAME_TRUNCATED))
			continue;
		ret = location_for(x, &f[i], &x->loc_ids[k]);
		if (ret < 0)
			return ret;
		k += ret == 0;
	}
	if (!k)
		return 0;
	ret = add_id_labels(x->o->thread_label, x->o->arg, thread, "thread_id", "thread_name",
			    tid_str, sizeof(tid_str), labels, &nl);
	if (ret < 0)
		return ret;
	ret = add_id_labels(x->o->process_label, x->o->arg, thread, "pid", "process_name",
			    pid_str, sizeof(pid_str), labels, &nl);
	if (ret < 0)
		return ret;
	return prof_add_sample(x->b, x->loc_ids, k, values, labels, nl);
}

/* One mapping per module that has samples, the main binary's first as pprof wants. */
static int add_mappings(struct exporter *x, const struct prof_stacks *st)
{
	size_t i;
	int pass, ret;

	x->n_modules = proc_modules_count(x->mods) + 1;
	x->mapping_ids = calloc(x->n_modules, sizeof(*x->mapping_ids));
	x->module_used = calloc(x->n_modules, sizeof(*x->module_used));
	x->module_cut = calloc(x->n_modules, sizeof(*x->module_cut));
	if (!x->mapping_ids || !x->module_used || !x->module_cut)
		return -ENOMEM;
	ret = prof_stacks_foreach(st, mark_modules, x);
	if (ret < 0)
		return ret;
	for (pass = 0; pass < 2; pass++) {
		for (i = 1; i < x->n_modules; i++) {
			const struct proc_module *m = proc_modules_get(x->mods, (uint32_t)i);

			if (!m || !x->module_used[i] || m->is_main != (pass == 0))
				continue;
			ret = add_mapping(x, m);
			if (ret < 0)
				return ret;
		}
	}
	return x->kernel_end ? add_kernel_mapping(x) : 0;
}

/* prof_export_add, saying in *modules_cut (may be NULL) how many modules
 * the deadline left unsymbolized. */
static int export_into(struct prof_builder *b, const struct prof_stacks *st,
		       const struct proc_modules *mods, struct sym_ctx *sym,
		       const struct prof_export_opts *o, size_t *modules_cut)
{
	struct exporter x = { .mods = mods, .sym = sym, .o = o, .b = b };
	int ret;

	ret = add_mappings(&x, st);
	if (!ret)
		ret = prof_stacks_foreach(st, add_sample, &x);
	if (modules_cut)
		*modules_cut = x.n_cut;
	free(x.mapping_ids);
	free(x.module_used);
	free(x.module_cut);
	free(x.locs);
	cprof_htab_free(&x.loc_index);
	free(x.loc_ids);
	free(x.lines);
	return ret;
}

int prof_export_add(struct prof_builder *b, const struct prof_stacks *st,
		    const struct proc_modules *mods, struct sym_ctx *sym,
		    const struct prof_export_opts *o, size_t *modules_cut)
{
	return export_into(b, st, mods, sym, o, modules_cut);
}

int prof_export(const struct prof_stacks *st, const struct proc_modules *mods,
		struct sym_ctx *sym, const struct prof_export_opts *o, struct prof_builder **out)
{
	return prof_export_cut(st, mods, sym, o, out, NULL);
}

int prof_export_cut(const struct prof_stacks *st, const struct proc_modules *mods,
		    struct sym_ctx *sym, const struct prof_export_opts *o,
		    struct prof_builder **out, size_t *modules_cut)
{
	const char *vt = o->value == PROF_VALUE_WALL ? "wall" : "cpu";
	const struct prof_value_type types[] = {
		{ "samples", "count" },
		{ vt, "nanoseconds" },
	};
	const struct prof_value_type period_type = { vt, "nanoseconds" };
	struct prof_builder *b;
	int ret;

	*out = NULL;
	if ((o->value != PROF_VALUE_CPU && o->value != PROF_VALUE_WALL) || !o->hz)
		return -EINVAL;
	ret = prof_builder_create(&b, types, 2, period_type, 1000000000 / (int64_t)o->hz);
	if (ret < 0)
		return ret;
	prof_set_time(b, o->time_nanos, o->duration_nanos);
	ret = export_into(b, st, mods, sym, o, modules_cut);
	if (ret < 0) {
		prof_builder_destroy(b);
		return ret;
	}
	*out = b;
	return 0;
}
