/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: hostile ELF bytes as the file of a module, through what
 * the unwinder reads from module files: the .debug_frame index (or the CFI
 * made from .gopclntab) and lookups in it through libunwind, the Go pc-line
 * table's functions, names and lines, and the thread roots.
 *
 * The input is written to a memfd that stands as the module's file (a fake
 * struct proc_module, as in fuzz-symbolize.c).  libunwind and libelf are not
 * instrumented; the coverage guiding the search is that of unwind/.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <libunwind.h>

#include "elf/gopclntab.h"
#include "elf/objfile.h"
#include "fuzz/fuzz.h"
#include "process/modules.h"
#include "unwind/debug_frame.h"
#include "unwind/roots.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

static int no_mem(unw_addr_space_t as, unw_word_t addr, unw_word_t *val, int write, void *arg)
{
	return -UNW_EINVAL;
}

static int no_reg(unw_addr_space_t as, unw_regnum_t reg, unw_word_t *val, int write, void *arg)
{
	return -UNW_EBADREG;
}

static unw_accessors_t accessors = {
	.access_mem = no_mem,
	.access_reg = no_reg,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unw_addr_space_t as;
	struct proc_module mod;
	struct dframe *df;
	struct gopcln *go;
	struct roots *roots;
	int fd, ret;

	if (!as && !(as = unw_create_addr_space(&accessors, 0)))
		abort();
	fd = memfd_create("fuzz-unwind", MFD_CLOEXEC);
	if (fd < 0 || fuzz_write_all(fd, data, size) < 0)
		abort();
	memset(&mod, 0, sizeof(mod));
	mod.id = 1;
	mod.path = (char *)"/fuzz/unwind";
	mod.bias = 0;
	mod.text_start = 0x1000;
	mod.text_end = 0x80000000ull;
	mod.fd = fd;
	/* One ELF handle for every reader, as proc_modules_update opens it. */
	if (objfile_from_fd(&mod.file, fd) < 0)
		mod.file = NULL;
	mod.mapped = true;

	if (dframe_load(&df, &mod) == 0) {
		/* Every indexed FDE's start and a few other pcs. */
		static const unw_word_t pcs[] = { 0x1000, 0x1139, 0x401000, 0x45f000, 0x7fffffff };

		for (size_t i = 0; i < sizeof(pcs) / sizeof(pcs[0]); i++) {
			unw_proc_info_t pi;

			memset(&pi, 0, sizeof(pi));
			if (dframe_find_proc_info(df, as, pcs[i], &pi, 1, NULL) == 0)
				sink += pi.end_ip - pi.start_ip;
		}
		sink += dframe_count(df);
		dframe_free(df);
	}
	ret = gopcln_open(&go, mod.file ? objfile_lock(mod.file) : NULL);
	if (mod.file)
		objfile_unlock(mod.file);
	if (ret == 0) {
		size_t n = gopcln_count(go), i;
		char *cfi;
		size_t len;

		for (i = 0; i < n && i < 64; i++) {
			struct gopcln_func f, g;
			const char *file;
			int line;

			if (gopcln_func_at(go, i, &f) < 0)
				continue;
			sink += f.name ? strlen(f.name) : 0;
			if (gopcln_find(go, f.entry, &g) == 0 &&
			    gopcln_line(go, &g, f.entry, &file, &line) == 0)
				sink += strlen(file) + (size_t)line;
		}
		if (gopcln_make_cfi(go, &cfi, &len) == 0) {
			sink += len;
			free(cfi);
		}
		gopcln_close(go);
	}
	if (roots_load(&roots, &mod) == 0) {
		sink += roots_at(roots, 0x401000);
		roots_free(roots);
	}
	objfile_close(mod.file);
	close(fd);
	return 0;
}
