/* SPDX-License-Identifier: MIT */
/*
 * Separate debug files on this machine: by build ID under /usr/lib/debug,
 * and by the name and CRC in .gnu_debuglink beside the file, in its .debug/
 * and under /usr/lib/debug, as gdb and libdwfl search them.  Never over the
 * network: libdwfl's own search (dwfl_standard_find_debuginfo) also asks the
 * debuginfod servers of DEBUGINFOD_URLS, with no bound cprof controls, so the
 * symbolizer uses this and leaves downloads to the session's thread (live.h).
 */
#ifndef CPROF_SYMBOLIZE_DEBUGINFO_H
#define CPROF_SYMBOLIZE_DEBUGINFO_H

#include <libelf.h>
#include <stdbool.h>
#include <stdint.h>

/*
 * Opens the debug file a .gnu_debuglink names (link, crc: NULL when the
 * file has none), looked up relative to file_name (the path of the file
 * that holds the link), when its CRC-32 matches.  Returns the descriptor
 * (*found: its path, malloc'd) or -errno (-ENOENT: none).
 */
int sym_debuglink_open(const char *link, uint32_t crc, const char *file_name, char **found);

struct objfile;

/*
 * Whether the ELF file f (opened as file_name, build_id lowercase hex or
 * NULL; f NULL: a file libelf refused) has DWARF here: in itself, by build
 * ID or by .gnu_debuglink.
 */
bool sym_debuginfo_local(struct objfile *f, const char *file_name, const char *build_id);

/*
 * The separate debug file of build_id (lowercase hex) under /usr/lib/debug,
 * opened.  Returns the descriptor (*found: its path, malloc'd) or -errno.
 */
int sym_debuginfo_open_build_id(const char *build_id, char **found);

/* The debug file f's .gnu_debuglink names (f opened as file_name), as
 * sym_debuglink_open opens it.  Returns the descriptor or -errno. */
int sym_debuginfo_open_link(struct objfile *f, const char *file_name, char **found);

#endif
