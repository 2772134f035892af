/* SPDX-License-Identifier: MIT */
/* Reporting the modules' open files to libdwfl, and where it finds their debug files. */
#include "config.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elf/objfile.h"
#include "symbolize/debuginfo.h"
#include "symbolize/symbolize-impl.h"

static int find_debuginfo(Dwfl_Module *dm, void **userdata, const char *modname,
			  GElf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name);

/* Modules are reported with their open file, so find_elf is never asked. */
static const Dwfl_Callbacks offline_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = NULL,
};

/* First vaddr of the first PT_LOAD, aligned as libdwfl aligns it. */
static bool first_load_vaddr(struct objfile *f, GElf_Half *type, GElf_Addr *vaddr)
{
	bool ok = false;
	GElf_Ehdr ehdr;
	GElf_Phdr ph;
	size_t phnum, i;
	Elf *elf;

	if (!f)
		return false;
	elf = objfile_lock(f);
	if (!gelf_getehdr(elf, &ehdr) || elf_getphdrnum(elf, &phnum) != 0)
		goto unlock;
	*type = ehdr.e_type;
	for (i = 0; i < phnum; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph))
			break;
		if (ph.p_type == PT_LOAD) {
			*vaddr = ph.p_vaddr & -ph.p_align;
			ok = true;
			break;
		}
	}
unlock:
	objfile_unlock(f);
	return ok;
}

/* The module's build ID as lowercase hex, into buf (2 * 64 + 1 bytes). */
static bool build_id_hex(Dwfl_Module *dm, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *bits;
	GElf_Addr vaddr;
	int len, i;

	len = dwfl_module_build_id(dm, &bits, &vaddr);
	if (len <= 0 || len > 64)
		return false;
	for (i = 0; i < len; i++) {
		buf[2 * i] = hex[bits[i] >> 4];
		buf[2 * i + 1] = hex[bits[i] & 15];
	}
	buf[2 * len] = '\0';
	return true;
}

/*
 * libdwfl's find_debuginfo: by build ID under /usr/lib/debug, then a file
 * the session downloaded, then .gnu_debuglink; never the network.  A dwz
 * alternate file (asked with a zero CRC) is looked up by its build ID.
 */
static int find_debuginfo(Dwfl_Module *dm, void **userdata, const char *modname,
			  GElf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	struct sym_ctx *ctx = *userdata;
	char id[2 * 64 + 1];
	const char *path;
	int fd;

	/* in the helper: the file the privileged side opened, nothing else */
	if (ctx && ctx->debuginfo_fd) {
		if ((debuglink_file && !debuglink_crc) || !build_id_hex(dm, id))
			return -1;
		return ctx->debuginfo_fd(ctx->debuginfo_fd_arg, id, debuginfo_file_name);
	}
	fd = dwfl_build_id_find_debuginfo(dm, userdata, modname, base, file_name, debuglink_file,
					  debuglink_crc, debuginfo_file_name);
	if (fd >= 0 || (debuglink_file && !debuglink_crc))
		return fd;
	if (ctx && ctx->debuginfo && build_id_hex(dm, id) &&
	    (path = ctx->debuginfo(ctx->debuginfo_arg, id))) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			*debuginfo_file_name = strdup(path);
			return fd;
		}
	}
	fd = sym_debuglink_open(debuglink_file, debuglink_crc, file_name, debuginfo_file_name);
	return fd < 0 ? -1 : fd;
}

/*
 * Reports mod to libdwfl on first use.  dwfl_report_elf with add_p_vaddr
 * false places an ET_DYN so that libdwfl's bias = base - (first PT_LOAD
 * vaddr & -p_align): giving base = our bias + that vaddr makes libdwfl's bias
 * equal the real load bias.  For ET_EXEC libdwfl ignores base (bias 0).
 * Either way lookups go through ELF addresses (runtime - mod->bias) plus
 * libdwfl's bias, so its choice can never shift an address.
 * Returns 0 (st->dm NULL when the module cannot be read) or -ENOMEM.
 */
int sym_report_module(struct sym_ctx *ctx, const struct proc_module *mod, struct mod_state *st)
{
	GElf_Half type = ET_NONE;
	GElf_Addr vaddr = 0;
	char *name = NULL;
	void **userdata;
	int fd;

	if (st->tried)
		return 0;
	st->tried = true;
	if (mod->fd < 0 || !first_load_vaddr(mod->file, &type, &vaddr))
		return 0;

	/*
	 * libdwfl reuses a module reported with the same name and range, and
	 * ours may repeat (a rebuilt binary at the same address after exec):
	 * make the name unique.
	 */
	if (asprintf(&name, "%s#%" PRIu32, mod->path, mod->id) < 0) {
		st->tried = false;
		return -ENOMEM;
	}
	fd = dup(mod->fd);
	if (fd < 0)
		goto free_name;

	dwfl_report_begin_add(ctx->dwfl);
	st->dm = dwfl_report_elf(ctx->dwfl, name, mod->open_path ? mod->open_path : mod->path,
				 fd, type == ET_EXEC ? 0 : mod->bias + vaddr, false);
	dwfl_report_end(ctx->dwfl, NULL, NULL);
	if (!st->dm) {
		/* On failure libdwfl does not take the descriptor. */
		close(fd);
		goto free_name;
	}
	/* find_debuginfo needs the context */
	dwfl_module_info(st->dm, &userdata, NULL, NULL, NULL, NULL, NULL, NULL);
	*userdata = ctx;
	if (!dwfl_module_getelf(st->dm, &st->dm_bias))
		st->dm = NULL;

free_name:
	free(name);
	return 0;
}

Dwfl *sym_dwfl_begin(void)
{
	return dwfl_begin(&offline_callbacks);
}
