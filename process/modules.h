/* SPDX-License-Identifier: MIT */
/*
 * The ELF objects (executable, shared libraries, vdso) mapped in a target,
 * discovered from its maps.  A module keeps its id for the whole session,
 * even after it is unmapped, so samples taken while it was mapped can still be
 * symbolized at the end (its ELF file stays open).
 */
#ifndef CPROF_PROCESS_MODULES_H
#define CPROF_PROCESS_MODULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "process/maps.h"

struct objfile;

struct proc_module {
	uint32_t id;		/* 1..N in discovery order, never reused */
	char *path;		/* as the target sees it ("/usr/lib/.../libc.so.6", "[vdso]") */
	char *build_id;		/* lowercase hex of NT_GNU_BUILD_ID, or NULL */
	char *go_build_id;	/* Go's build id string (.note.go.buildid), or NULL */
	uint64_t base;		/* runtime address of the mapping at file offset 0 */
	uint64_t bias;		/* runtime address - ELF virtual address */
	uint64_t text_start;	/* span of the executable mappings: [text_start, text_end) */
	uint64_t text_end;
	uint64_t text_offset;	/* file offset of the first executable mapping */
	uint64_t eh_frame_hdr;	/* runtime address of .eh_frame_hdr (PT_GNU_EH_FRAME), 0 if none */
	uint64_t eh_frame_hdr_len;
	int fd;			/* the ELF file, open read-only; -1 if it could not be opened */
	struct objfile *file;	/* fd's ELF handle (elf/objfile.h), opened once and shared by
				 * every reader of the file; NULL when fd is -1 or libelf
				 * refused the file */
	char *open_path;	/* the path fd was opened by (e.g. /proc/PID/root/...), for debuglink lookup */
	bool fd_exact;		/* fd is the very file the target maps (same inode), or the
				 * vdso's copy: its bytes are the mapping's, outside rw_* */
	uint64_t rw_start;	/* ELF virtual pages [rw_start, rw_end) of the writable
				 * PT_LOAD segments: the target's memory there differs */
	uint64_t rw_end;	/* from the file (relocations, RELRO); [0, UINT64_MAX)
				 * when unknown */
	bool is_main;		/* the main executable (of the current program image) */
	bool is_vdso;		/* fd is a memfd holding a copy of the target's vdso */
	bool mapped;		/* currently mapped (false after dlclose or exec) */
	bool deleted;		/* the file was deleted */
};

struct proc_modules;

/* Creates an empty table for process pid.  Returns 0 or -errno. */
int proc_modules_create(struct proc_modules **out, pid_t pid);
/*
 * A table for process pid whose modules live in store (another table made
 * by proc_modules_create, which must outlive this one and be destroyed
 * after it): the processes of one tree share one numbering, so a frame's
 * module id means the same in each, and a file mapped at the same place in
 * two processes (a fork) is one module.  Lookups see pid's mappings only;
 * proc_modules_get and _count, on any of the tables, see every module.
 * `mapped` then says whether a module was in the address space updated
 * last.  Returns 0 or -errno.
 */
int proc_modules_create_shared(struct proc_modules **out, pid_t pid, struct proc_modules *store);
void proc_modules_destroy(struct proc_modules *t);

/*
 * Brings the table in line with maps: a module is created for each ELF file
 * with an executable mapping that is not known yet (its ELF file opened via
 * /proc/PID/root/PATH, falling back to /proc/PID/map_files/; build-id and
 * PT_GNU_EH_FRAME read from it; [vdso] copied out of the target's memory),
 * modules no longer mapped get mapped=false.  The executable is the module of
 * /proc/PID/exe.  Never fails for one unreadable file: such a module has
 * fd == -1.  Returns the number of modules added, or -errno.
 */
int proc_modules_update(struct proc_modules *t, const struct proc_maps *maps);

/* Marks every module unmapped and not main (after exec); they stay for
 * symbolization. */
void proc_modules_unmap_all(struct proc_modules *t);

/* The mapped module whose executable span contains addr, or NULL.  Fast: a
 * sorted index over mapped modules, no syscalls. */
const struct proc_module *proc_modules_lookup(const struct proc_modules *t, uint64_t addr);

/* Module by id (1..count), or NULL. */
const struct proc_module *proc_modules_get(const struct proc_modules *t, uint32_t id);
size_t proc_modules_count(const struct proc_modules *t);

/* The mapped module whose file mapping m maps (any of its mappings, not
 * only the executable one; [vdso] too), or NULL.  No syscalls. */
const struct proc_module *proc_modules_of_map(const struct proc_modules *t,
					      const struct proc_map *m);

/*
 * Reads len bytes at address addr of mapping m (a mapping of mod's file)
 * from mod's open file, at the file offset the mapping gives: what the
 * target reads there, without reading the target.  Bytes past the end of
 * the file read as zeros, as they do in the mapping.  Returns 0, -ENODATA
 * (the file may not hold what is mapped there: a writable segment, a file
 * not known to be the mapped one; read the target instead), -EFAULT (past
 * the file's end) or another -errno.
 */
int proc_module_read_mapped(const struct proc_module *mod, const struct proc_map *m,
			    uint64_t addr, void *dst, size_t len);

/*
 * A module table rebuilt elsewhere (the confined parser's, which opens no
 * file): what identifies a module's file in the maps, the spans the
 * lookup index holds, and both given back to a table.
 */
struct proc_module_ident {
	uint64_t inode;
	uint32_t dev_major, dev_minor;
};

/* An executable mapping of a module, as proc_modules_lookup finds it. */
struct proc_module_span {
	uint64_t start, end;
	uint32_t mod;		/* module id */
};

/* The file identity of m, a module of a table made by proc_modules_update. */
void proc_module_ident(const struct proc_module *m, struct proc_module_ident *out);

/*
 * Adds m (its id must be proc_modules_count + 1) to t (made by
 * proc_modules_create, never updated), taking its strings, fd and file,
 * which m must not keep.  Returns 0 or -errno (then m still owns them).
 */
int proc_modules_add_copy(struct proc_modules *t, const struct proc_module *m,
			  const struct proc_module_ident *ident);

/* t's lookup index, copied into a malloc'd array (*n spans, sorted).
 * Returns 0 or -ENOMEM. */
int proc_modules_spans(const struct proc_modules *t, struct proc_module_span **out, size_t *n);

/* Replaces t's lookup index with v (sorted by start, modules of t).
 * Returns 0, -EINVAL (a span names no module of t) or -ENOMEM. */
int proc_modules_set_spans(struct proc_modules *t, const struct proc_module_span *v, size_t n);

#endif
