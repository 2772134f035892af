/* SPDX-License-Identifier: MIT */
/*
 * The stack walk in the confined parser, as the wire carries it: modules
 * (their files as descriptors, what cprof knows of them), the address
 * space (maps and the modules' executable spans), and batches of
 * snapshots answered with their frames.  Plain bytes of fixed layout: both
 * ends are the same program.  remote_client.c is the privileged side,
 * remote_serve.c the parser's.  Not for other modules.
 */
#ifndef CPROF_UNWIND_REMOTE_WIRE_H
#define CPROF_UNWIND_REMOTE_WIRE_H

#include <stdint.h>
#include <sys/user.h>

/* Request types (symbolize/remote.h has 1..); one walker per process of
 * the privileged side, called ctx. */
enum remote_req {
	REMOTE_REQ_MODULE = 32,	/* remote_wire_module + path, build id, Go's build id;
				 * fds: file, debug file */
	REMOTE_REQ_SPACE,	/* remote_wire_space + maps (each with its path) + spans */
	REMOTE_REQ_WALK,	/* remote_wire_walk + snapshots -> remote_wire_walked + results */
	REMOTE_REQ_CLOSE,	/* remote_wire_space (ctx only): the walker is done */
	REMOTE_REQ_WARM,	/* remote_wire_space (ctx, and the module id in n_mods):
				 * read its tables now (remote_warm) */
};

/* Most bytes of a path on the wire. */
#define REMOTE_WIRE_PATH_MAX 4096u

enum {
	REMOTE_WIRE_HAS_FD = 1,
	REMOTE_WIRE_HAS_DEBUG = 2,
	REMOTE_WIRE_FD_EXACT = 4,
	REMOTE_WIRE_IS_VDSO = 8,
	REMOTE_WIRE_IS_MAIN = 16,
	REMOTE_WIRE_MAPPED = 32,
	REMOTE_WIRE_DELETED = 64,
};

struct remote_wire_module {
	uint32_t ctx, id;	/* ids come in order, 1.. */
	uint32_t flags;		/* REMOTE_WIRE_* */
	uint32_t dev_major, dev_minor;
	uint32_t pad;
	uint64_t inode;
	uint64_t base, bias, text_start, text_end, text_offset;
	uint64_t eh_frame_hdr, eh_frame_hdr_len, rw_start, rw_end;
};

struct remote_wire_space {
	uint32_t ctx;
	uint32_t n_maps, n_spans;
	uint32_t n_mods;	/* modules sent so far: the spans name only these */
	uint64_t gen;		/* the privileged side's: walks say which one they need */
};

struct remote_wire_map {
	uint64_t start, end, offset, inode;
	uint32_t dev_major, dev_minor, perms, deleted;
	uint32_t path_len;	/* then the path's bytes, padded to 8 */
	uint32_t pad;
};

struct remote_wire_walk {
	uint32_t ctx;
	uint32_t n;		/* snapshots that follow */
	uint32_t max_frames;
	uint32_t pad;
	uint64_t gen;		/* the space they are walked in */
};

enum {
	REMOTE_WIRE_REGS_PARTIAL = 1,
	REMOTE_WIRE_UNSTOPPED = 2,
};

/* One snapshot; then stack_len bytes, stack2_len bytes (each padded to
 * 8), n_user words, and n_live struct remote_wire_live each followed by
 * its bytes (padded to 8). */
struct remote_wire_snap {
	struct user_regs_struct regs;
	uint64_t stack_start, stack_len;
	uint64_t stack2_start, stack2_len;
	uint32_t flags;		/* REMOTE_WIRE_REGS_PARTIAL, _UNSTOPPED */
	uint32_t n_user;
	uint32_t n_live;	/* at most REMOTE_WIRE_LIVE_MAX */
	uint32_t pad;
};

/* The target's memory that the privileged side read for a walk that
 * needed it (remote_wire_result.needed): at most REMOTE_WIRE_LIVE_MAX
 * spans, REMOTE_WIRE_LIVE_BYTES in all, a snapshot. */
#define REMOTE_WIRE_LIVE_MAX 4u
#define REMOTE_WIRE_LIVE_BYTES (64u << 10)

struct remote_wire_live {
	uint64_t start, len;
};

struct remote_wire_walked {
	uint32_t n;
	uint32_t pad;
	uint64_t pages_file, pages_memory;	/* remote_take_pages' */
};

/* One walk's result; then n_frames struct prof_frame and, when logged,
 * n_reads struct remote_wire_read: what the walk read (remote_walk_log),
 * for the privileged side's memo. */
struct remote_wire_result {
	uint32_t n_frames, end;
	uint64_t stack_used;
	uint32_t ran_off, reused;
	uint32_t from_chain;	/* remote_from_chain */
	uint32_t logged;	/* the walk may be remembered: its reads follow */
	uint32_t n_reads;	/* at most WALK_MEMO_READS */
	uint32_t pad;
	uint64_t needed;	/* the walk would go on with the target's memory
				 * at this address (remote_needed); 0: no */
};

/* One struct walk_read. */
struct remote_wire_read {
	uint64_t addr, val;
	uint32_t len;
	uint32_t pad;
};

static inline uint64_t remote_wire_pad8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

#endif
