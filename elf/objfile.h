/* SPDX-License-Identifier: MIT */
/*
 * An ELF file opened once: the one libelf handle every reader of a module's
 * file shares (the module table's facts, the symbolizer, the local debuginfo
 * check, .debug_frame, .gopclntab and the thread roots), and the only place
 * cprof calls elf_begin.  The file is mapped read-only (ELF_C_READ_MMAP);
 * libelf loads what is asked for (section data, decompressed sections) into
 * the handle on first use and keeps it, so a second reader pays nothing.
 * libelf does not lock a handle for that, and two threads may read one
 * module (the session's thread unwinds while `cprof top` symbolizes): every
 * use of the handle goes between objfile_lock and objfile_unlock.
 */
#ifndef CPROF_ELF_OBJFILE_H
#define CPROF_ELF_OBJFILE_H

#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>

struct objfile;

/*
 * Opens the file behind fd, which the caller keeps open (and owns) for as
 * long as the handle lives.  The file need not be ELF: its handle then has
 * another kind, which each reader checks.  Returns 0 with *out set, or
 * -ENOMEM / -EINVAL (libelf refused the file) / -ENOSYS (libelf unusable).
 */
int objfile_from_fd(struct objfile **out, int fd);

/*
 * Opens the file at path read-only; the handle owns the descriptor.
 * Returns 0 with *out set, or -errno (-ENOENT: no such file).
 */
int objfile_open(struct objfile **out, const char *path);

/* Closes the handle (and the descriptor if it opened it).  NULL is fine. */
void objfile_close(struct objfile *f);

/*
 * Takes f for the calling thread and returns its libelf handle, to be used
 * (and whatever it returns, such as section data, copied out) before
 * objfile_unlock.  Never nested: a thread holds one handle at a time.
 */
Elf *objfile_lock(struct objfile *f);
void objfile_unlock(struct objfile *f);

/* Whether the file is an ELF object libelf can read headers of (NULL: no).
 * Needs no lock: the kind is fixed when the file is opened. */
bool objfile_is_elf(const struct objfile *f);

/*
 * The first section of elf (a locked handle) called name whose type is
 * type (SHT_PROGBITS, ...), its header in *sh (when sh is not NULL), or
 * NULL.  A linear scan of the section headers: readers call it once per
 * file and keep what they read.
 */
Elf_Scn *objfile_section(Elf *elf, const char *name, unsigned type, GElf_Shdr *sh);

/*
 * Opens the separate debug file of build_id (lowercase hex) under
 * /usr/lib/debug/.build-id, where distributions install it.  Returns 0 with
 * *out set, or -errno (-ENOENT: none here).
 */
int objfile_open_debug(struct objfile **out, const char *build_id);

/* The descriptor of that debug file, open read-only, or -errno. */
int objfile_open_debug_fd(const char *build_id);

/*
 * Where objfile_open_debug finds debug files in a process that may open
 * none (the confined parser): fn returns a descriptor of build_id's debug
 * file for the handle to own, or -1.  NULL: under /usr/lib/debug.  Set it
 * before any reader runs (not synchronized).
 */
typedef int (*objfile_debug_fd_fn)(void *arg, const char *build_id);
void objfile_use_debug_fds(objfile_debug_fd_fn fn, void *arg);

#endif
