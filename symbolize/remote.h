/* SPDX-License-Identifier: MIT */
/*
 * Symbolization in the confined helper (confine/confine.h): the privileged
 * side sends each module's open file (and its separate debug file, which it
 * finds and opens) once, then addresses; the helper parses the ELF and
 * DWARF with its own symbolizer and sends the frames back as plain bytes.
 * A helper that dies on a module leaves that module's frames unnamed (they
 * keep their addresses and build ids) and the death is the helper's to
 * report.  Perf maps go the same way (perfmap.c): the file's descriptor
 * handed over when it changed, names asked.  Not for other modules but
 * symbolize.c, perfmap.c and the command that starts the helper with
 * sym_remote_serve.
 */
#ifndef CPROF_SYMBOLIZE_REMOTE_H
#define CPROF_SYMBOLIZE_REMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "confine/confine.h"

/* Request types. */
enum {
	SYM_REQ_MODULE = 1,	/* sym_wire_module + strings; fds: the file, its debug file */
	SYM_REQ_LOOKUP,		/* sym_wire_lookup -> sym_wire_frames + frames */
	SYM_REQ_CLOSE,		/* sym_wire_lookup (ctx only): the context is done */
	SYM_REQ_PERFMAP,	/* sym_wire_perfmap; fd: the perf map -> sym_wire_perfmap_read */
	SYM_REQ_JIT_NAME,	/* sym_wire_perfmap -> the name's bytes (none: not named) */
	SYM_REQ_PERFMAP_CLOSE,	/* sym_wire_perfmap (id only): the perf map is done */
};

/* Longest string sent back (a longer one is cut). */
#define SYM_WIRE_STR_MAX 4096

struct sym_wire_module {
	uint32_t ctx;		/* the privileged side's symbolizer */
	uint32_t flags;		/* its sym_create flags */
	uint32_t mod_id;
	uint32_t has_debug;	/* a second descriptor: its debug file */
	uint64_t bias;
	/* then path, open_path, build_id, debug file name: each a uint32_t
	 * length (UINT32_MAX: NULL) and its bytes */
};

struct sym_wire_lookup {
	uint32_t ctx;
	uint32_t mod_id;
	uint64_t addr;		/* runtime address, already - 1 for a return address */
};

struct sym_wire_frames {
	uint32_t n;
	uint32_t has_lines;
	/* then n frames: sym_wire_frame and function, system_name, file as
	 * in sym_wire_module */
};

struct sym_wire_frame {
	int32_t line;
	int32_t start_line;
	uint32_t inlined;
};

struct sym_wire_perfmap {
	uint32_t id;		/* the privileged side's perf map */
	uint32_t reset;		/* SYM_REQ_PERFMAP: forget what was read, read from the start */
	uint64_t addr;		/* SYM_REQ_JIT_NAME: the address to name */
};

struct sym_wire_perfmap_read {
	uint64_t entries;	/* the entries read so far */
};

/* The helper's handler (conf_opts.serve). */
int sym_remote_serve(void **state, uint32_t type, const void *req, size_t len, int *fds,
		     size_t nfds, void *resp, size_t cap, size_t *resp_len);

/* The wire's strings: appended at *off in buf (cap bytes), or read from
 * in (len bytes) at *off.  Return 0 or -EMSGSIZE / -EPROTO. */
int sym_wire_put_str(void *buf, size_t cap, size_t *off, const char *s, size_t max);
int sym_wire_get_str(const void *in, size_t len, size_t *off, const char **s, size_t *slen);

#endif
