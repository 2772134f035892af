/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness: hostile ELF/DWARF bytes through sym_lookup.
 *
 * The input is written to a memfd that stands as the ELF file of a fake
 * module (struct proc_module built by hand, as proc_modules_update would for a
 * mapped library: fd, load bias, text span), and sym_lookup is called at a few
 * addresses taken from the input (its entry point, words of its tail, the
 * start of its file), as leaf and as return address, with and without source
 * lines.  What libdw reads goes through the module's fd, and what cprof reads
 * itself through the module's one ELF handle, as in cprof.
 * libdw and libelf themselves are not instrumented: ASan sees their crashes
 * (SEGV) but not their stray reads; the coverage guiding the search is that
 * of symbolize/.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "elf/objfile.h"
#include "fuzz/fuzz.h"
#include "symbolize/symbolize.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAKE_BIAS 0x7f0000000000ull

static volatile size_t sink;

/* Reads every string of every frame, so ASan checks what sym_lookup returned. */
static void touch(const struct sym_frame *f, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (f[i].function != NULL)
			sink += strlen(f[i].function);
		if (f[i].system_name != NULL)
			sink += strlen(f[i].system_name);
		if (f[i].file != NULL)
			sink += strlen(f[i].file);
		sink += (size_t)f[i].line + (size_t)f[i].start_line + f[i].inlined;
	}
}

static uint64_t word_at(const uint8_t *data, size_t size, size_t off)
{
	uint64_t v = 0;

	if (off + sizeof(v) <= size)
		memcpy(&v, data + off, sizeof(v));
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct proc_modules *tab;
	struct proc_module mod;
	struct sym_ctx *ctx;
	uint64_t addrs[8];
	size_t naddrs = 0;
	int fd;

	if (tab == NULL && proc_modules_create(&tab, getpid()) < 0)
		abort();
	fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	if (fuzz_write_all(fd, data, size) < 0)
		abort();

	memset(&mod, 0, sizeof(mod));
	mod.id = 1;
	mod.path = (char *)"/fuzz/libfuzz.so";
	mod.open_path = (char *)"/proc/self/fd/fuzz";
	mod.build_id = NULL;	/* keyed by module id: no cache across inputs */
	mod.base = FAKE_BIAS;
	mod.bias = FAKE_BIAS;
	mod.text_start = FAKE_BIAS;
	mod.text_end = FAKE_BIAS + (size > 0 ? size : 1);
	mod.fd = fd;
	/* The handle every reader shares, as proc_modules_update opens it. */
	if (objfile_from_fd(&mod.file, fd) < 0)
		mod.file = NULL;
	mod.mapped = true;

	/* e_entry of a 64-bit header, two words of the tail, fixed spots. */
	addrs[naddrs++] = word_at(data, size, 24);
	addrs[naddrs++] = size >= 16 ? word_at(data, size, size - 16) : 0;
	addrs[naddrs++] = size >= 8 ? word_at(data, size, size - 8) & 0xffffff : 0;
	addrs[naddrs++] = 0x1000;
	addrs[naddrs++] = 0x1139;
	addrs[naddrs++] = size / 2;

	for (unsigned flags = 0; flags < 2; flags++) {
		if (sym_create(&ctx, tab, flags ? SYM_NO_SOURCE : 0) < 0)
			abort();
		for (size_t i = 0; i < naddrs; i++) {
			const struct sym_frame *f;
			size_t n;

			for (int ret_addr = 0; ret_addr < 2; ret_addr++) {
				if (sym_lookup(ctx, &mod, FAKE_BIAS + addrs[i], ret_addr, &f, &n) == 0)
					touch(f, n);
			}
		}
		sink += sym_module_has_lines(ctx, &mod);
		sym_destroy(ctx);
	}
	objfile_close(mod.file);
	close(fd);
	return 0;
}
