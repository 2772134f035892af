/* SPDX-License-Identifier: MIT */
/*
 * Names of JIT-compiled code from the perf map a runtime writes
 * (/tmp/perf-PID.map: one "START SIZE name" line per function, hex without
 * 0x; node --perf-basic-prof, the JVM's Compiler.perfmap, python -X perf).
 * The file is the target's own: its /tmp through /proc/PID/root, named by
 * its pid in its own pid namespace.  Entries name addresses only inside the
 * anonymous executable mappings seen in the target, never code of a file.
 */
#ifndef CPROF_SYMBOLIZE_PERFMAP_H
#define CPROF_SYMBOLIZE_PERFMAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "process/maps.h"

struct sym_perfmap;

struct conf_helper;

/*
 * An empty perf map for process pid.  h (NULL: none) is the confined
 * parser (confine/confine.h, started with sym_remote_serve) that parses
 * it, and must outlive pm: a refresh then opens the file here and hands
 * it over only when it changed since it was last handed over (grown,
 * rewritten, replaced) or the parser is a new one, and the parser reads
 * what it has not read; lookups ask it.  A parser that fails on the file
 * (its death, recorded by h, names the file) leaves pm naming nothing from
 * then on.  Returns 0 or -errno (-ENOMEM).
 */
int sym_perfmap_create(struct sym_perfmap **out, pid_t pid, struct conf_helper *h);
void sym_perfmap_destroy(struct sym_perfmap *pm);

/*
 * Reads what the runtime appended to the file since the last call (all of
 * it when the file shrank: it was rewritten), and records the anonymous
 * executable mappings of maps (NULL: none new).  A missing file is not an
 * error (the runtime writes none, or not yet).  Returns 0 or -ENOMEM.
 */
int sym_perfmap_refresh(struct sym_perfmap *pm, const struct proc_maps *maps);

/* Whether the target has a perf map file at all (cheap: one access(2)). */
bool sym_perfmap_exists(struct sym_perfmap *pm);

/*
 * For tests and fuzzing, the two halves of a refresh: parses the whole
 * lines of text (len bytes, modified in place) as lines of the file, and
 * records the anonymous executable mappings of maps.  Return the bytes
 * consumed / 0, or -ENOMEM.
 */
ssize_t sym_perfmap_parse(struct sym_perfmap *pm, char *text, size_t len);
int sym_perfmap_note_code(struct sym_perfmap *pm, const struct proc_maps *maps);

/*
 * In the parser: reads what was appended to the perf map open on fd since
 * the last call (all of it when the file shrank).  Opens nothing.  Returns
 * 0 or -ENOMEM.
 */
int sym_perfmap_read_fd(struct sym_perfmap *pm, int fd);

/* How many entries were read (none since the last reset: 0). */
size_t sym_perfmap_entries(const struct sym_perfmap *pm);

/* Forgets entries and mappings: the target exec'd, its code is gone. */
void sym_perfmap_reset(struct sym_perfmap *pm);

/*
 * The name of the function at addr, or NULL: an entry covers addr and addr
 * lies in an anonymous executable mapping.  Of overlapping entries the one
 * read last wins (a JIT reuses addresses).  The string belongs to pm.
 * Not to be called while another thread refreshes pm.
 */
const char *sym_perfmap_lookup(struct sym_perfmap *pm, uint64_t addr);

/* In the parser: the same without the check of the anonymous mappings,
 * which the privileged side makes before it asks. */
const char *sym_perfmap_lookup_entry(struct sym_perfmap *pm, uint64_t addr);

/* The same, copied into buf (len bytes, cut if longer): false when none.
 * In the form sym_use_jit_names takes, pm a struct sym_perfmap. */
bool sym_perfmap_name(void *pm, uint64_t addr, char *buf, size_t len);

#endif
