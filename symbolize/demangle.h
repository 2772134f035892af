/* SPDX-License-Identifier: MIT */
/*
 * Mangled symbol names -> the names people read, through libiberty (the
 * demangler of binutils and perf): Itanium C++, Rust legacy (its hash suffix
 * dropped, $LT$-style escapes decoded) and Rust v0.
 */
#ifndef CPROF_SYMBOLIZE_DEMANGLE_H
#define CPROF_SYMBOLIZE_DEMANGLE_H

/*
 * Demangles name.  On success *out is a malloc'd string the caller frees,
 * or NULL when name is not a mangled name this knows (plain C, not valid,
 * or longer than 8 KiB).  Returns 0 or -ENOMEM.  Thread-safe; never exits on a hostile
 * name (libiberty's callback interface, which allocates nothing itself).
 */
int sym_demangle(const char *name, char **out);

#endif
