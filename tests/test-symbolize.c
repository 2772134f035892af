/* SPDX-License-Identifier: MIT */
/* Tests symbolize/: maps parsing, the module table and libdw symbolization on a live child. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "confine/confine.h"
#include "process/maps.h"
#include "process/modules.h"
#include "symbolize/demangle.h"
#include "symbolize/kallsyms.h"
#include "symbolize/perfmap.h"
#include "symbolize/remote.h"
#include "symbolize/symbolize.h"
#include "tests/tap.h"

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif


/* ---- code the symbolizer must find, in the parent and the forked child ---- */

static volatile int sink;
static uintptr_t recorded_return;
static int caller_line, inl_leaf_line, inl_outer_line;

static const int known_fn_line = __LINE__ + 1;
__attribute__((noinline)) static void known_fn(void) { asm volatile(""); sink = sink + 1; }

/* Records its own return address: a call site in the function that called it. */
__attribute__((noinline)) static void record_return(void)
{
	asm volatile("");
	recorded_return = (uintptr_t)__builtin_return_address(0);
}

__attribute__((noinline)) static void caller_fn(void)
{
	asm volatile("");
	record_return(); caller_line = __LINE__;
	sink = sink + 1;
}

static inline __attribute__((always_inline)) void inl_leaf(void)
{
	asm volatile("");
	record_return(); inl_leaf_line = __LINE__;
	sink = sink + 1;
}

__attribute__((noinline)) static void inl_outer(void)
{
	asm volatile("");
	inl_leaf(); inl_outer_line = __LINE__;
	sink = sink + 1;
}

__attribute__((noinline)) static void child_block(int fd)
{
	char c;

	asm volatile("");
	/* Blocks until the parent kills us: nothing is ever written. */
	while (read(fd, &c, 1) < 0 && errno == EINTR)
		;
	sink = sink + 1;
}

__attribute__((noinline)) static void child_chain(int fd)
{
	asm volatile("");
	child_block(fd);
	sink = sink + 1;
}

/* ---- expectations read from our own memory, independently of symbolize/ ---- */

struct expect {
	const char *want;	/* "" for the main program, else a name substring */
	bool found;
	uint64_t bias;
	uint64_t eh_frame_hdr, eh_frame_hdr_len;
	char build_id[129];
};

static void note_build_id(const unsigned char *p, size_t len, char *out)
{
	size_t off = 0;

	while (off + 12 <= len) {
		uint32_t namesz, descsz, type;

		memcpy(&namesz, p + off, 4);
		memcpy(&descsz, p + off + 4, 4);
		memcpy(&type, p + off + 8, 4);
		size_t name_off = off + 12;
		size_t desc_off = name_off + ((namesz + 3) & ~3u);

		if (desc_off + descsz > len)
			return;
		if (type == NT_GNU_BUILD_ID && namesz == 4 &&
		    memcmp(p + name_off, "GNU", 4) == 0 && descsz <= 64) {
			for (uint32_t i = 0; i < descsz; i++)
				sprintf(out + 2 * i, "%02x", p[desc_off + i]);
			return;
		}
		off = desc_off + ((descsz + 3) & ~3u);
	}
}

static int phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct expect *e = arg;
	bool main_prog = e->want[0] == '\0';

	if (e->found)
		return 0;
	if (main_prog ? info->dlpi_name[0] != '\0' : strstr(info->dlpi_name, e->want) == NULL)
		return 0;
	e->found = true;
	e->bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_GNU_EH_FRAME) {
			e->eh_frame_hdr = info->dlpi_addr + ph->p_vaddr;
			e->eh_frame_hdr_len = ph->p_memsz;
		}
		if (ph->p_type == PT_NOTE && e->build_id[0] == '\0')
			note_build_id((const unsigned char *)(info->dlpi_addr + ph->p_vaddr),
				      ph->p_filesz, e->build_id);
	}
	return 1;
}

static void expect_object(struct expect *e, const char *want)
{
	memset(e, 0, sizeof(*e));
	e->want = want;
	dl_iterate_phdr(phdr_cb, e);
}

/* ---- hostile files ---- */

static int copy_file(const char *from, const char *to, off_t max)
{
	char buf[65536];
	int in, out, ret = -1;
	off_t done = 0;
	ssize_t r;

	in = open(from, O_RDONLY);
	if (in < 0)
		return -1;
	out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (out < 0)
		goto close_in;
	while ((max < 0 || done < max) && (r = read(in, buf, sizeof(buf))) > 0) {
		if (max >= 0 && done + r > max)
			r = max - done;
		if (write(out, buf, (size_t)r) != r)
			goto close_out;
		done += r;
	}
	ret = 0;
close_out:
	close(out);
close_in:
	close(in);
	return ret;
}

/* Overwrites the DWARF sections with noise and changes the build-id. */
static int corrupt_file(const char *path)
{
	uint32_t seed = 12345;
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	int fd, ret = -1;
	Elf *elf;

	fd = open(path, O_RDWR);
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf == NULL || elf_getshdrstrndx(elf, &shstrndx) != 0)
		goto end_elf;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;

		if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name == NULL)
			continue;
		if (strncmp(name, ".debug_", 7) == 0) {
			for (uint64_t i = 0; i < sh.sh_size; i++) {
				unsigned char b;

				seed = seed * 1103515245u + 12345u;
				b = (unsigned char)(seed >> 16);
				if (pwrite(fd, &b, 1, (off_t)(sh.sh_offset + i)) != 1)
					goto end_elf;
			}
		} else if (strcmp(name, ".note.gnu.build-id") == 0 && sh.sh_size > 16) {
			unsigned char b;

			/* A different build-id, so no cache entry of the real
			 * binary matches: its first byte inverted.  A fixed 0xee
			 * left it the same in a build whose id began with ee
			 * (1 in 256; a fresh-clone CI run drew it). */
			if (pread(fd, &b, 1, (off_t)(sh.sh_offset + 16)) != 1)
				goto end_elf;
			b ^= 0xff;
			if (pwrite(fd, &b, 1, (off_t)(sh.sh_offset + 16)) != 1)
				goto end_elf;
		}
	}
	ret = 0;
end_elf:
	elf_end(elf);
	close(fd);
	return ret;
}

/*
 * Makes DIR/NAME, a stripped copy of this program whose .gnu_debuglink names
 * NAME.debug, kept in DIR/SUBDIR ("" for beside it).  Needs objcopy.
 */
static int make_debuglink_copy(const char *dir, const char *name, const char *subdir)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "set -e; mkdir -p '%s/%s'; "
		 "objcopy --only-keep-debug /proc/%d/exe '%s/%s/%s.debug'; "
		 "objcopy --strip-all --add-gnu-debuglink='%s/%s/%s.debug' /proc/%d/exe '%s/%s'",
		 dir, subdir, (int)getpid(), dir, subdir, name, dir, subdir, name,
		 (int)getpid(), dir, name);
	return system(cmd) == 0 ? 0 : -1;
}

/* Appends one byte to dir/name: its CRC no longer matches a debuglink. */
static int append_byte(const char *dir, const char *name)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "a");
	if (!f)
		return -1;
	fputc(0, f);
	return fclose(f) == 0 ? 0 : -1;
}

/* Maps path whole and executable; returns the runtime address of known_fn in it. */
static uint64_t map_copy(const char *path, uint64_t my_bias)
{
	struct stat st;
	uint64_t addr = 0;
	void *p;
	int fd;

	fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) == 0) {
		p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		if (p != MAP_FAILED)
			addr = (uintptr_t)p + ((uintptr_t)known_fn - my_bias);
	}
	close(fd);
	return addr;
}

/* ---- tests ---- */

static void test_parse(void)
{
	static const char text[] =
		"7f0000002000-7f0000003000 rw-p 00000000 00:00 0 \n"
		"00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n"
		"7f0000000000-7f0000001000 r-xs 00001000 fd:01 42   /tmp/my dir/lib with  spaces.so (deleted)\n"
		"7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]\n";
	struct proc_maps m = { NULL, 0 };
	const struct proc_map *f;
	int ret;

	ret = proc_maps_parse(text, sizeof(text) - 1, &m);
	check(ret == 0 && m.n == 4, "proc_maps_parse reads 4 mappings (ret %d, n %zu)", ret, m.n);
	if (ret != 0 || m.n != 4)
		goto free_maps;
	check(m.v[0].start == 0x400000 && m.v[1].start == 0x7f0000000000 &&
	      m.v[2].start == 0x7f0000002000 && m.v[3].start == 0x7ffd00000000,
	      "parsed mappings are sorted by address");
	check(strcmp(m.v[0].path, "/usr/bin/dbus-daemon") == 0 && !m.v[0].deleted &&
	      m.v[0].perms == (PROC_MAP_R | PROC_MAP_X | PROC_MAP_P) &&
	      m.v[0].dev_major == 8 && m.v[0].dev_minor == 2 && m.v[0].inode == 173521,
	      "plain file mapping: path, perms, dev, inode");
	check(strcmp(m.v[1].path, "/tmp/my dir/lib with  spaces.so") == 0 && m.v[1].deleted &&
	      m.v[1].offset == 0x1000 && m.v[1].dev_major == 0xfd && m.v[1].dev_minor == 1 &&
	      !(m.v[1].perms & PROC_MAP_P),
	      "path with spaces kept, \" (deleted)\" stripped, deleted set ('%s')", m.v[1].path);
	check(m.v[2].path[0] == '\0' && m.v[2].inode == 0, "anonymous mapping has path \"\"");
	check(strcmp(m.v[3].path, "[stack]") == 0, "pseudo path [stack] kept");
	f = proc_maps_find(&m, 0x7f0000000fff);
	check(f == &m.v[1], "proc_maps_find inside a mapping");
	check(proc_maps_find(&m, 0x7f0000001000) == NULL && proc_maps_find(&m, 0x3fffff) == NULL &&
	      proc_maps_find(&m, 0xffffffffffffffffULL) == NULL,
	      "proc_maps_find misses gaps, below and above");

	ret = proc_maps_parse("zzzz-1000 r-xp 0 0:0 0\n", 23, &m);
	check(ret == -EINVAL && m.n == 0, "malformed maps text gives -EINVAL (ret %d)", ret);
free_maps:
	proc_maps_free(&m);
}

/* proc_maps_merge_older: a library gone from the newer read is kept from
 * the older one; where both have something, the newer wins. */
static void test_merge_older(void)
{
	static const char older_text[] =
		"00400000-00452000 r-xp 00000000 08:02 11 /bin/prog\n"
		"7f0000000000-7f0000001000 r-xp 00000000 08:02 22 /tmp/churn.so\n"
		"7f0000004000-7f0000005000 r-xp 00000000 08:02 33 /tmp/old.so\n";
	static const char newer_text[] =
		"00400000-00452000 r-xp 00000000 08:02 11 /bin/prog\n"
		"7f0000004800-7f0000006000 rw-p 00000000 00:00 0 \n"
		"7f0000008000-7f0000009000 r-xp 00000000 08:02 44 /tmp/new.so\n";
	struct proc_maps older = { NULL, 0 }, newer = { NULL, 0 };
	const struct proc_map *f;
	int ret;

	if (proc_maps_parse(older_text, sizeof(older_text) - 1, &older) < 0 ||
	    proc_maps_parse(newer_text, sizeof(newer_text) - 1, &newer) < 0) {
		check(false, "parse the maps for the merge");
		goto out;
	}
	ret = proc_maps_merge_older(&newer, &older);
	check(ret == 0 && newer.n == 4, "merge: the gone library added, the overlapped one not (n %zu)",
	      newer.n);
	f = proc_maps_find(&newer, 0x7f0000000800);
	check(f && strcmp(f->path, "/tmp/churn.so") == 0 && f->inode == 22,
	      "merge: a pc in the library only the older read saw is found in it");
	f = proc_maps_find(&newer, 0x7f0000004900);
	check(f && f->path[0] == '\0', "merge: where both reads have a mapping, the newer's");
	check(proc_maps_find(&newer, 0x7f0000004100) == NULL,
	      "merge: an older mapping that overlaps a newer one is left out whole");
	check(newer.v[0].start < newer.v[1].start && newer.v[1].start < newer.v[2].start &&
	      newer.v[2].start < newer.v[3].start, "merge: still sorted");
out:
	proc_maps_free(&older);
	proc_maps_free(&newer);
}

/* proc_maps_add: a mapping announced by a perf record (MMAP2) replaces
 * what overlaps it and keeps the set sorted. */
static void test_maps_add(void)
{
	static const char text[] =
		"00400000-00452000 r-xp 00000000 08:02 11 /bin/prog\n"
		"7f0000000000-7f0000002000 r-xp 00001000 08:02 22 /tmp/churn.so\n"
		"7f0000008000-7f0000009000 r-xp 00000000 08:02 44 /tmp/new.so\n";
	struct proc_map e = { .start = 0x7f0000001000, .end = 0x7f0000003000, .offset = 0x1000,
			      .inode = 55, .perms = PROC_MAP_R | PROC_MAP_X | PROC_MAP_P,
			      .path = (char *)"/tmp/other.so" };
	struct proc_map first = { .start = 0x1000, .end = 0x2000, .inode = 66,
				  .perms = PROC_MAP_X, .path = (char *)"/tmp/low.so" };
	struct proc_maps m = { NULL, 0 };
	const struct proc_map *f;

	if (proc_maps_parse(text, sizeof(text) - 1, &m) < 0) {
		check(false, "parse the maps for proc_maps_add");
		return;
	}
	check(proc_maps_add(&m, &e) == 0 && m.n == 3,
	      "add: the overlapped mapping dropped, the new one in (n %zu)", m.n);
	f = proc_maps_find(&m, 0x7f0000000800);
	check(f == NULL, "add: no part of the overlapped mapping is left");
	f = proc_maps_find(&m, 0x7f0000002800);
	check(f && f->inode == 55 && strcmp(f->path, "/tmp/other.so") == 0 && f->path != e.path,
	      "add: a pc in the added mapping is found in it, its path copied");
	check(proc_maps_add(&m, &first) == 0 && m.n == 4 && m.v[0].inode == 66,
	      "add: a mapping below all others goes first");
	check(m.v[0].start < m.v[1].start && m.v[1].start < m.v[2].start && m.v[2].start < m.v[3].start,
	      "add: still sorted");
	proc_maps_free(&m);
}

static const struct proc_module *find_module(const struct proc_modules *t, const char *path_part)
{
	for (uint32_t id = 1; id <= proc_modules_count(t); id++) {
		const struct proc_module *m = proc_modules_get(t, id);

		if (m != NULL && m->mapped && strstr(m->path, path_part) != NULL)
			return m;
	}
	return NULL;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a, b;

	if (s == NULL)
		return false;
	a = strlen(s);
	b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void print_frames(const struct sym_frame *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		printf("#   [%zu] %s (%s) %s:%d decl %d%s\n", i,
		       f[i].function ? f[i].function : "??",
		       f[i].system_name ? f[i].system_name : "??",
		       f[i].file ? f[i].file : "??", f[i].line, f[i].start_line,
		       f[i].inlined ? " inlined" : "");
}

static void test_live(pid_t child, const char *corrupt_path, const char *trunc_path,
		      uint64_t corrupt_addr, uint64_t trunc_addr)
{
	struct proc_maps maps = { NULL, 0 };
	struct proc_modules *t = NULL;
	struct sym_ctx *ctx = NULL;
	const struct proc_module *main_mod, *libc, *vdso, *m;
	const struct sym_frame *fr, *fr2;
	struct expect e_main, e_libc, e_vdso;
	char exe[4096];
	size_t n, n2;
	ssize_t r;
	int ret, stack_var = 0;

	expect_object(&e_main, "");
	expect_object(&e_libc, "libc.so");
	expect_object(&e_vdso, "linux-vdso");

	ret = proc_maps_read(child, &maps);
	check(ret == 0 && maps.n > 5, "proc_maps_read(child) (ret %d, %zu mappings)", ret, maps.n);
	const struct proc_map *km = proc_maps_find(&maps, (uintptr_t)known_fn);
	check(km != NULL && (km->perms & PROC_MAP_X), "maps: known_fn is in an executable mapping");

	ret = proc_modules_create(&t, child);
	check(ret == 0, "proc_modules_create");
	if (ret != 0)
		goto free_maps;
	ret = proc_modules_update(t, &maps);
	check(ret >= 3, "proc_modules_update adds modules (%d)", ret);

	main_mod = proc_modules_lookup(t, (uintptr_t)known_fn);
	r = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[r > 0 ? r : 0] = '\0';
	check(main_mod != NULL && main_mod->is_main && strcmp(main_mod->path, exe) == 0,
	      "proc_modules_lookup(&known_fn) is the main module %s", main_mod ? main_mod->path : "(none)");
	if (main_mod == NULL)
		goto destroy_t;
	check(main_mod->build_id != NULL && strcmp(main_mod->build_id, e_main.build_id) == 0,
	      "main build-id %s == %s (from memory)", main_mod->build_id ? main_mod->build_id : "(null)",
	      e_main.build_id);
	check(main_mod->bias == e_main.bias && main_mod->fd >= 0 && main_mod->open_path != NULL,
	      "main bias %#" PRIx64 " == dlpi_addr %#" PRIx64 ", fd open via %s", main_mod->bias,
	      e_main.bias, main_mod->open_path ? main_mod->open_path : "(null)");
	check(main_mod->eh_frame_hdr == e_main.eh_frame_hdr &&
	      main_mod->eh_frame_hdr_len == e_main.eh_frame_hdr_len &&
	      main_mod->text_start <= (uintptr_t)known_fn && (uintptr_t)known_fn < main_mod->text_end,
	      "main eh_frame_hdr %#" PRIx64 "+%" PRIu64 ", text [%#" PRIx64 ", %#" PRIx64 ") offset %#" PRIx64,
	      main_mod->eh_frame_hdr, main_mod->eh_frame_hdr_len, main_mod->text_start,
	      main_mod->text_end, main_mod->text_offset);

	libc = proc_modules_lookup(t, (uintptr_t)nanosleep);
	check(libc != NULL && strstr(libc->path, "libc.so") != NULL && !libc->is_main,
	      "proc_modules_lookup(&nanosleep) is libc %s", libc ? libc->path : "(none)");
	if (libc != NULL) {
		check(libc->build_id != NULL && strcmp(libc->build_id, e_libc.build_id) == 0 &&
		      libc->bias == e_libc.bias,
		      "libc build-id %s, bias %#" PRIx64 " match memory",
		      libc->build_id ? libc->build_id : "(null)", libc->bias);
		check(libc->eh_frame_hdr != 0 && libc->eh_frame_hdr == e_libc.eh_frame_hdr &&
		      libc->eh_frame_hdr_len == e_libc.eh_frame_hdr_len,
		      "libc eh_frame_hdr %#" PRIx64 "+%" PRIu64, libc->eh_frame_hdr,
		      libc->eh_frame_hdr_len);
	}

	vdso = find_module(t, "[vdso]");
	check(vdso != NULL && vdso->is_vdso && vdso->fd >= 0 && vdso->build_id != NULL &&
	      (!e_vdso.found || strcmp(vdso->build_id, e_vdso.build_id) == 0) &&
	      (!e_vdso.found || vdso->bias == e_vdso.bias),
	      "[vdso] copied to a memfd, build-id %s", vdso && vdso->build_id ? vdso->build_id : "(null)");
	check(find_module(t, "[vsyscall]") == NULL, "no module for [vsyscall]");

	check(proc_modules_lookup(t, 16) == NULL && proc_modules_lookup(t, (uintptr_t)&stack_var) == NULL,
	      "proc_modules_lookup of a low address and of a stack address: no module");

	ret = proc_modules_update(t, &maps);
	check(ret == 0 && proc_modules_lookup(t, (uintptr_t)known_fn) == main_mod,
	      "second update adds nothing, same module (ret %d)", ret);
	proc_modules_unmap_all(t);
	check(proc_modules_lookup(t, (uintptr_t)known_fn) == NULL && !main_mod->mapped,
	      "after proc_modules_unmap_all nothing is found");
	ret = proc_modules_update(t, &maps);
	check(ret == 0 && proc_modules_lookup(t, (uintptr_t)known_fn) == main_mod && main_mod->mapped,
	      "update after unmap_all maps the same modules again (ret %d)", ret);

	ret = sym_create(&ctx, t, 0);
	check(ret == 0, "sym_create");
	if (ret != 0)
		goto destroy_t;

	/* An exact address: the entry of known_fn, all on one line. */
	ret = sym_lookup(ctx, main_mod, (uintptr_t)known_fn, false, &fr, &n);
	check(ret == 0 && n == 1 && fr[0].function && strcmp(fr[0].function, "known_fn") == 0 &&
	      strcmp(fr[0].system_name, "known_fn") == 0 && ends_with(fr[0].file, "test-symbolize.c") &&
	      fr[0].line == known_fn_line && fr[0].start_line == known_fn_line && !fr[0].inlined,
	      "known_fn symbolizes to known_fn at test-symbolize.c:%d", known_fn_line);
	print_frames(fr, n);
	ret = sym_lookup(ctx, main_mod, (uintptr_t)known_fn, false, &fr2, &n2);
	check(ret == 0 && fr2 == fr && n2 == n, "second lookup is served from the cache");

	/* A return address: the call site is at addr - 1. */
	caller_fn();
	ret = sym_lookup(ctx, main_mod, recorded_return, true, &fr, &n);
	check(ret == 0 && n == 1 && fr[0].function && strcmp(fr[0].function, "caller_fn") == 0 &&
	      ends_with(fr[0].file, "test-symbolize.c") && fr[0].line == caller_line,
	      "return address in caller_fn gives the call line %d", caller_line);
	print_frames(fr, n);

	/* An inlined call site: two frames, the inlined function first. */
	inl_outer();
	ret = sym_lookup(ctx, main_mod, recorded_return, true, &fr, &n);
	check(ret == 0 && n == 2 && fr[0].function && strcmp(fr[0].function, "inl_leaf") == 0 &&
	      fr[0].inlined && fr[0].line == inl_leaf_line && ends_with(fr[0].file, "test-symbolize.c") &&
	      fr[1].function && strcmp(fr[1].function, "inl_outer") == 0 && !fr[1].inlined &&
	      fr[1].line == inl_outer_line && ends_with(fr[1].file, "test-symbolize.c"),
	      "inlined call site: inl_leaf:%d (inlined) then inl_outer:%d", inl_leaf_line,
	      inl_outer_line);
	print_frames(fr, n);
	check(sym_module_has_lines(ctx, main_mod), "main module has line info");

	if (libc != NULL) {
		ret = sym_lookup(ctx, libc, (uintptr_t)nanosleep, false, &fr, &n);
		check(ret == 0 && n >= 1 && fr[n - 1].function && strstr(fr[n - 1].function, "nanosleep"),
		      "libc &nanosleep resolves to %s", n ? fr[n - 1].function : "(nothing)");
		print_frames(fr, n);
		ret = sym_lookup(ctx, libc, (uintptr_t)getpid, false, &fr, &n);
		check(ret == 0 && n >= 1 && fr[n - 1].function && strstr(fr[n - 1].function, "getpid"),
		      "libc &getpid resolves to %s", n ? fr[n - 1].function : "(nothing)");
		print_frames(fr, n);
		check(sym_module_has_lines(ctx, libc) && n >= 1 && fr[0].file && fr[0].line > 0,
		      "libc has file:line (libc6-dbg found by build-id)");
	}

	/* Where the blocked child really is: the PC of its read() system call. */
	{
		char path[64], buf[512];
		unsigned long long pc = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/syscall", (int)child);
		f = fopen(path, "r");
		if (f != NULL && fgets(buf, sizeof(buf), f) != NULL) {
			char *last = strrchr(buf, ' ');

			if (last != NULL)
				pc = strtoull(last + 1, NULL, 16);
		}
		if (f != NULL)
			fclose(f);
		m = proc_modules_lookup(t, pc);
		if (pc != 0 && m != NULL) {
			ret = sym_lookup(ctx, m, pc, false, &fr, &n);
			check(ret == 0 && n >= 1 && fr[n - 1].function && strstr(fr[n - 1].function, "read"),
			      "child's syscall pc %#llx is in %s: %s", pc, m->path,
			      n ? fr[n - 1].function : "(nothing)");
			print_frames(fr, n);
		} else {
			printf("# /proc/%d/syscall not readable: child pc check skipped\n", (int)child);
		}
	}

	/* Hostile files: garbage DWARF (file deleted meanwhile), truncated ELF. */
	m = proc_modules_lookup(t, corrupt_addr);
	check(m != NULL && m->deleted && strcmp(m->path, corrupt_path) == 0 && m->build_id != NULL &&
	      strcmp(m->build_id, main_mod->build_id) != 0,
	      "deleted corrupt copy is a module (fd %d via %s; deleted %d, path %s, build id %s, "
	      "the test's %s)", m ? m->fd : -2, m && m->open_path ? m->open_path : "(null)",
	      m ? m->deleted : -1, m ? m->path : "(no module)",
	      m && m->build_id ? m->build_id : "(none)",
	      main_mod && main_mod->build_id ? main_mod->build_id : "(none)");
	if (m != NULL) {
		ret = sym_lookup(ctx, m, corrupt_addr, false, &fr, &n);
		check(ret == 0, "lookup in a file with garbage DWARF survives (%zu frames: %s)", n,
		      n && fr[n - 1].function ? fr[n - 1].function : "-");
		ret = sym_lookup(ctx, m, corrupt_addr + 0x123, true, &fr, &n);
		check(ret == 0, "second lookup there survives too");
	}
	m = proc_modules_lookup(t, trunc_addr);
	check(m != NULL && strcmp(m->path, trunc_path) == 0 && m->build_id == NULL,
	      "truncated ELF is a module without build-id");
	if (m != NULL) {
		ret = sym_lookup(ctx, m, trunc_addr, false, &fr, &n);
		check(ret == 0 && n == 0, "lookup in a truncated ELF finds nothing (ret %d, n %zu)", ret, n);
	}
	ret = sym_lookup(ctx, NULL, 0x1234, false, &fr, &n);
	check(ret == 0 && n == 0, "lookup without a module finds nothing");

	sym_destroy(ctx);
destroy_t:
	proc_modules_destroy(t);
free_maps:
	proc_maps_free(&maps);
}

/*
 * Separate debuginfo through .gnu_debuglink, in a fresh table and context (the
 * copies share this program's build-id, which must not answer from a cache).
 */
static void test_debuglink(pid_t child, const char *dir, const uint64_t *addrs)
{
	static const char *const names[3] = { "dl-subdir", "dl-beside", "dl-wrong" };
	static const char *const where[3] = { ".debug/ subdir", "beside it",
					      "a debug file whose CRC does not match" };
	struct proc_maps maps = { NULL, 0 };
	struct proc_modules *t = NULL;
	const struct proc_module *m;
	const struct sym_frame *fr;
	struct sym_ctx *ctx;
	bool named;
	size_t n;
	int i, ret;

	if (proc_maps_read(child, &maps) < 0 || proc_modules_create(&t, child) < 0 ||
	    proc_modules_update(t, &maps) < 0) {
		check(false, "debuglink: read the maps and modules of the child");
		goto destroy_t;
	}
	/* The copies share one build id: a context each, or the second
	 * would be answered from the first one's cache. */
	for (i = 0; i < 3; i++) {
		fr = NULL;
		n = 0;
		ret = -1;
		ctx = NULL;
		m = proc_modules_lookup(t, addrs[i]);
		if (m && sym_create(&ctx, t, 0) == 0)
			ret = sym_lookup(ctx, m, addrs[i], false, &fr, &n);
		named = m && ret == 0 && n == 1 && fr[0].function &&
			strcmp(fr[0].function, "known_fn") == 0 &&
			ends_with(fr[0].file, "test-symbolize.c") && fr[0].line == known_fn_line &&
			sym_module_has_lines(ctx, m);
		if (i < 2)
			check(named, "stripped copy %s/%s finds its debug file by .gnu_debuglink (%s)",
			      dir, names[i], where[i]);
		else
			check(m && ret == 0 && !named, "stripped copy %s/%s ignores %s", dir,
			      names[i], where[i]);
		print_frames(fr, n);
		sym_destroy(ctx);
	}
destroy_t:
	proc_modules_destroy(t);
	proc_maps_free(&maps);
}

static bool same_name(const char *got, const char *want);

/* Names as perf prints them: C++ with parameters, Rust without its hash. */
static void test_demangle(void)
{
	static const struct {
		const char *mangled, *want;	/* want NULL: left as it is */
	} cases[] = {
		{ "_ZN3foo3barEv", "foo::bar()" },
		{ "_ZNSt6vectorIiSaIiEE9push_backERKi", "std::vector<int, std::allocator<int> >::push_back(int const&)" },
		{ "_ZN4prog14Table$LT$K$GT$5churn17h3122caacd46cd72cE", "prog::Table<K>::churn" },
		{ "_ZN9hashbrown11rustc_entry62_$LT$impl$u20$hashbrown..map..HashMap$LT$K$C$V$C$S$C$A$GT$$GT$11rustc_entry17h3065edb5f16cc312E",
		  "hashbrown::rustc_entry::<impl hashbrown::map::HashMap<K,V,S,A>>::rustc_entry" },
		{ "_RNvMCsjbghrimrkzp_4progINtB2_5TablemE5churnB2_", "<prog::Table<u32>>::churn" },
		{ "_RNvNtCs1234_3std2rt19lang_start_internal", "std::rt::lang_start_internal" },
		{ "main", NULL },
		{ "_Z", NULL },
		{ "_Zjunk", NULL },
		{ "_R", NULL },
	};
	char *got, *huge;
	size_t i;
	int ret;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		got = NULL;
		ret = sym_demangle(cases[i].mangled, &got);
		check(ret == 0 && same_name(got, cases[i].want), "demangle %s: '%s'", cases[i].mangled,
		      got ? got : "(left as it is)");
		free(got);
	}
	/* Over 8 KiB: left mangled, not demangled on the stack. */
	huge = malloc(9000);
	if (!huge)
		return;
	memset(huge, 'a', 8999);
	huge[8999] = '\0';
	memcpy(huge, "_ZN9000", 7);
	got = NULL;
	ret = sym_demangle(huge, &got);
	check(ret == 0 && !got, "a 9000-byte name is left mangled");
	free(got);
	free(huge);
}

/* Appends text to path (truncating first when trunc); true on success. */
static bool write_text(const char *path, const char *text, bool trunc)
{
	FILE *f = fopen(path, trunc ? "w" : "a");
	bool ok;

	if (!f)
		return false;
	ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok;
}

static bool same_name(const char *got, const char *want)
{
	return got && want ? strcmp(got, want) == 0 : got == want;
}

/*
 * The perf map of this very process: an anonymous executable mapping named
 * by its lines, file-backed code never; appended lines, a line still being
 * written, overlapping entries, a rewritten file, exec (reset).  With h,
 * all of it parsed by the confined parser h, and a parser killed between
 * requests replaced by one the file is handed to again.
 */
static void test_perfmap(struct conf_helper *h, const char *how)
{
	struct proc_maps maps = { NULL, 0 };
	struct sym_perfmap *pm = NULL;
	char path[64], text[512];
	uint64_t a;
	void *code;
	struct conf_death death;
	pid_t parser, next;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	code = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) {
		skip("perf map", "cannot map anonymous executable memory");
		return;
	}
	a = (uintptr_t)code;
	snprintf(text, sizeof(text),
		 "%" PRIx64 " 10 first\n%" PRIx64 " 10 in_a_file\nzz 10 bad\n%" PRIx64 " 0 empty\n", a,
		 (uint64_t)(uintptr_t)known_fn, a + 0x40);
	check(write_text(path, text, true), "%s: perf map written to %s", how, path);
	check(proc_maps_read(getpid(), &maps) == 0 && sym_perfmap_create(&pm, getpid(), h) == 0 &&
	      sym_perfmap_refresh(pm, &maps) == 0, "%s: perf map read", how);
	if (!pm)
		goto out;
	check(same_name(sym_perfmap_lookup(pm, a + 4), "first"), "%s: an entry names anonymous code",
	      how);
	check(!sym_perfmap_lookup(pm, (uintptr_t)known_fn),
	      "%s: an entry over file-backed code names nothing", how);
	check(!sym_perfmap_lookup(pm, a + 0x40) && !sym_perfmap_lookup(pm, a + 0x10),
	      "%s: malformed and empty lines, and addresses past an entry, name nothing", how);

	snprintf(text, sizeof(text), "%" PRIx64 " 8 second\n%" PRIx64 " 10 partial", a, a + 0x100);
	check(write_text(path, text, false) && sym_perfmap_refresh(pm, &maps) == 0,
	      "%s: appended lines read", how);
	check(same_name(sym_perfmap_lookup(pm, a + 4), "second") &&
	      same_name(sym_perfmap_lookup(pm, a + 0xc), "first"),
	      "%s: of overlapping entries the later wins where it reaches", how);
	check(!sym_perfmap_lookup(pm, a + 0x104), "%s: a line without its newline waits", how);
	check(write_text(path, "\n", false) && sym_perfmap_refresh(pm, &maps) == 0 &&
	      same_name(sym_perfmap_lookup(pm, a + 0x104), "partial"),
	      "%s: the line counts once finished", how);
	check(sym_perfmap_entries(pm) == 4, "%s: 4 entries read (%zu)", how,
	      sym_perfmap_entries(pm));

	if (h && (parser = conf_status(h).pid) > 0 && kill(parser, SIGKILL) == 0) {
		waitid(P_PID, (id_t)parser, NULL, WEXITED | WNOWAIT);
		/* a request would have found it dead and recorded the death */
		check(sym_perfmap_refresh(pm, &maps) == 0 && !conf_death(h, 0, &death),
		      "%s: a file that did not change is not handed over again", how);
		check(same_name(sym_perfmap_lookup(pm, a + 0x104), "partial") &&
		      same_name(sym_perfmap_lookup(pm, a + 4), "second") &&
		      (next = conf_status(h).pid) > 0 && next != parser,
		      "%s: a parser killed between requests: the next one reads the file again", how);
	}

	snprintf(text, sizeof(text), "%" PRIx64 " 10 new\n", a + 0x200);
	check(write_text(path, text, true) && sym_perfmap_refresh(pm, &maps) == 0 &&
	      !sym_perfmap_lookup(pm, a + 4) && same_name(sym_perfmap_lookup(pm, a + 0x204), "new"),
	      "%s: a rewritten (shorter) file replaces the old entries", how);
	sym_perfmap_reset(pm);
	check(!sym_perfmap_lookup(pm, a + 0x204), "%s: after reset (exec) nothing is named", how);
out:
	unlink(path);
	sym_perfmap_destroy(pm);
	proc_maps_free(&maps);
	munmap(code, 8192);
}

/* The same perf map parsed by a confined parser, this test forked. */
static void test_perfmap_parser(void)
{
	struct conf_opts o = {
		.serve = sym_remote_serve,
		.uid = getuid(),
		.gid = getgid(),
		.max_restarts = 2,
		.call_timeout_ns = 30 * 1000000000ull,
	};
	struct conf_helper *h = NULL;
	int r;

	if (geteuid() == 0 && conf_user_lookup("nobody", &o.uid, &o.gid) < 0) {
		skip("perf map in the parser", "no user nobody to run it as");
		return;
	}
	r = conf_start(&h, &o);
	check(r == 0, "a confined parser starts (%s)", r < 0 ? strerror(-r) : "yes");
	if (r < 0)
		return;
	test_perfmap(h, "parser");
	conf_stop(h);
}

/* A table in /proc/kallsyms's format read from memory. */
static int kallsyms_of(const char *text, struct sym_kallsyms **k)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int r;

	if (!f)
		return -errno;
	r = sym_kallsyms_read(f, k);
	fclose(f);
	return r;
}

/* The kernel's symbols: text symbols only, in address order whatever the
 * file's, modules named, addresses hidden by kptr_restrict refused. */
static void test_kallsyms(void)
{
	static const char table[] =
		"ffffffff81200000 T vfs_read\n"
		"ffffffff81100000 T _stext\n"
		"ffffffff81300000 D some_data\n"
		"ffffffff81180000 t read_zero\n"
		"ffffffffc0001000 t ext4_read\t[ext4]\n"
		"ffffffffc0002000 T ext4_write\t[ext4]\n";
	static const char hidden[] =
		"0000000000000000 T _stext\n"
		"0000000000000000 T vfs_read\n";
	struct sym_kallsyms *k = NULL;
	const char *mod = "x", *name;

	check(kallsyms_of(table, &k) == 0 && k, "kallsyms: a table is read");
	if (!k)
		return;
	name = sym_kallsyms_lookup(k, 0xffffffff81180010, &mod);
	check(name && strcmp(name, "read_zero") == 0 && !mod,
	      "kallsyms: an address in a core kernel function (%s)", name ? name : "NULL");
	name = sym_kallsyms_lookup(k, 0xffffffff81200000, NULL);
	check(name && strcmp(name, "vfs_read") == 0, "kallsyms: a function's first byte");
	name = sym_kallsyms_lookup(k, 0xffffffff81300008, NULL);
	check(name && strcmp(name, "vfs_read") == 0, "kallsyms: data symbols are no functions");
	name = sym_kallsyms_lookup(k, 0xffffffffc0002040, &mod);
	check(name && strcmp(name, "ext4_write") == 0 && mod && strcmp(mod, "ext4") == 0,
	      "kallsyms: a module's function, with its module");
	check(!sym_kallsyms_lookup(k, 0xffffffff80000000, NULL),
	      "kallsyms: below the first symbol, no name");
	check(!sym_kallsyms_lookup(k, 0xffffffffc8000000, NULL),
	      "kallsyms: far past the last symbol, no name");
	sym_kallsyms_free(k);
	k = NULL;
	check(kallsyms_of(hidden, &k) == -EPERM && !k, "kallsyms: hidden addresses refused");
}

int main(int argc, char **argv)
{
	char corrupt_path[] = "/tmp/cprof-test-symbolize-corrupt-XXXXXX";
	char trunc_path[] = "/tmp/cprof-test-symbolize-trunc-XXXXXX";
	char dl_dir[] = "/tmp/cprof-test-symbolize-dl-XXXXXX";
	uint64_t addrs[5] = { 0, 0, 0, 0, 0 };
	bool have_debuglink = false;
	struct expect e_main;
	int ready[2], block[2], fd;
	struct stat st;
	pid_t child;

	setvbuf(stdout, NULL, _IOLBF, 0);
	test_parse();
	test_merge_older();
	test_maps_add();
	test_demangle();
	test_perfmap(NULL, "here");
	test_perfmap_parser();
	test_kallsyms();

	if (access("/proc/self/maps", R_OK) != 0) {
		skip("symbolization of live processes", "/proc is not mounted");
		return tap_done();
	}

	fd = mkstemp(corrupt_path);
	if (fd >= 0)
		close(fd);
	fd = mkstemp(trunc_path);
	if (fd >= 0)
		close(fd);
	if (copy_file("/proc/self/exe", corrupt_path, -1) < 0 || corrupt_file(corrupt_path) < 0 ||
	    copy_file("/proc/self/exe", trunc_path, 200) < 0) {
		check(false, "prepare test files in /tmp");
		return tap_done();
	}
	expect_object(&e_main, "");
	if (system("objcopy --version >/dev/null 2>&1") == 0) {
		/* objcopy is there: failing to make the copies is a failure. */
		have_debuglink = mkdtemp(dl_dir) &&
				 make_debuglink_copy(dl_dir, "dl-subdir", ".debug") == 0 &&
				 make_debuglink_copy(dl_dir, "dl-beside", ".") == 0 &&
				 make_debuglink_copy(dl_dir, "dl-wrong", ".") == 0 &&
				 append_byte(dl_dir, "dl-wrong.debug") == 0;
		check(have_debuglink, "stripped copies with .gnu_debuglink made in %s", dl_dir);
	} else {
		skip(".gnu_debuglink lookups", "objcopy not found");
	}

	if (pipe(ready) < 0 || pipe(block) < 0) {
		perror("pipe");
		return 1;
	}
	child = fork();
	if (child < 0) {
		skip("symbolization of a live child", strerror(errno));
		return tap_done();
	}
	if (child == 0) {
		void *p;

		close(ready[0]);
		close(block[1]);
		/* Map the hostile files executable, as a loader would map code. */
		fd = open(corrupt_path, O_RDONLY);
		if (fd >= 0 && fstat(fd, &st) == 0) {
			p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
			if (p != MAP_FAILED)
				addrs[0] = (uintptr_t)p + ((uintptr_t)known_fn - e_main.bias);
			close(fd);
		}
		fd = open(trunc_path, O_RDONLY);
		if (fd >= 0) {
			p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
			if (p != MAP_FAILED)
				addrs[1] = (uintptr_t)p + 16;
			close(fd);
		}
		if (have_debuglink) {
			char path[256];

			snprintf(path, sizeof(path), "%s/dl-subdir", dl_dir);
			addrs[2] = map_copy(path, e_main.bias);
			snprintf(path, sizeof(path), "%s/dl-beside", dl_dir);
			addrs[3] = map_copy(path, e_main.bias);
			snprintf(path, sizeof(path), "%s/dl-wrong", dl_dir);
			addrs[4] = map_copy(path, e_main.bias);
		}
		if (write(ready[1], addrs, sizeof(addrs)) != (ssize_t)sizeof(addrs))
			_exit(1);
		child_chain(block[0]);
		_exit(0);
	}
	close(ready[1]);
	close(block[0]);
	if (read(ready[0], addrs, sizeof(addrs)) != (ssize_t)sizeof(addrs)) {
		check(false, "the child starts");
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		return tap_done();
	}
	/* The child keeps its mapping of the corrupt copy: now a deleted file. */
	unlink(corrupt_path);

	{
		char path[64];

		snprintf(path, sizeof(path), "/proc/%d/maps", (int)child);
		if (access(path, R_OK) != 0) {
			skip("symbolization of a live child", "its /proc/PID/maps is not readable");
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			unlink(trunc_path);
			return tap_done();
		}
	}

	test_live(child, corrupt_path, trunc_path, addrs[0], addrs[1]);
	if (have_debuglink)
		test_debuglink(child, dl_dir, addrs + 2);

	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	unlink(trunc_path);
	if (have_debuglink) {
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dl_dir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", dl_dir);
	}
	(void)argc;
	(void)argv;
	return tap_done();
}
