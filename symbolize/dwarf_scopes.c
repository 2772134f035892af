/* SPDX-License-Identifier: MIT */
/* From DWARF: an address's line row and its chain of inlined calls. */
#include "config.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize/cu_index.h"
#include "symbolize/symbolize-impl.h"

static const char *die_linkage_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *s;

	s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!s)
		s = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	return s;
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;

	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

static int die_decl_line(Dwarf_Die *die)
{
	int line = 0;

	if (dwarf_decl_line(die, &line) != 0 || line < 0)
		return 0;
	return line;
}

static bool is_function_tag(int tag)
{
	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine ||
	       tag == DW_TAG_entry_point;
}

/* DIEs that hold no code themselves but may hold functions that do. */
static bool may_hold_scopes(int tag)
{
	return tag == DW_TAG_namespace || tag == DW_TAG_module || tag == DW_TAG_class_type ||
	       tag == DW_TAG_structure_type || tag == DW_TAG_union_type;
}

/*
 * The innermost DIE below parent whose ranges hold da (a function, an
 * inlined call or a lexical block) into *out.  Returns true if there is
 * one.  Not dwarf_getscopes: once its innermost scope is an inlined call, it
 * looks for the call's abstract origin in the same CU only; Go's origins
 * live in other CUs, and libdw 0.188 then fails and leaks the scopes it had
 * found.  The concrete DIE is all the caller needs.
 */
static bool innermost_scope(Dwarf_Die *parent, Dwarf_Addr da, Dwarf_Die *out, int depth)
{
	Dwarf_Die child;
	int r, has;

	if (depth > 64)
		return false;
	for (r = dwarf_child(parent, &child); r == 0; r = dwarf_siblingof(&child, &child)) {
		has = dwarf_haspc(&child, da);
		if (has > 0) {
			*out = child;
			innermost_scope(&child, da, out, depth + 1);
			return true;
		}
		if (has == 0 && may_hold_scopes(dwarf_tag(&child)) &&
		    innermost_scope(&child, da, out, depth + 1))
			return true;
	}
	return false;
}

/*
 * The chain of function DIEs at dwarf address da, innermost first, ending at
 * the physical subprogram: the scopes around the concrete innermost one
 * (dwarf_getscopes_die, as addr2line and eu-stack walk them).
 */
static int inline_chain(Dwarf_Die *cudie, Dwarf_Addr da, Dwarf_Die *fns, int max)
{
	Dwarf_Die *scopes = NULL, innermost;
	int nscopes, n = 0, i, tag;

	if (!innermost_scope(cudie, da, &innermost, 0))
		return 0;
	nscopes = dwarf_getscopes_die(&innermost, &scopes);
	for (i = 0; i < nscopes && n < max; i++) {
		tag = dwarf_tag(&scopes[i]);
		if (!is_function_tag(tag))
			continue;
		fns[n++] = scopes[i];
		if (tag != DW_TAG_inlined_subroutine)
			break;
	}
	free(scopes);
	return n;
}

/*
 * The CU DIE holding da (*bias: libdwfl's DWARF bias): libdw's answer
 * through .debug_aranges, else the module's index of the CUs' own ranges,
 * built on first need (Go writes no aranges; in a cgo binary only the C
 * CUs have them).
 */
static Dwarf_Die *addr_cu(struct mod_state *st, Dwarf_Addr da, Dwarf_Die *mem, Dwarf_Addr *bias)
{
	Dwarf_Die *cu = dwfl_module_addrdie(st->dm, da, bias);
	Dwarf *dbg;

	if (cu && dwarf_haspc(cu, da - *bias) > 0)
		return cu;
	if (!st->cus_built) {
		st->cus_built = true;
		dbg = dwfl_module_getdwarf(st->dm, &st->cus_bias);
		if (dbg && cu_index_build(&st->cus, dbg) < 0)
			st->cus = NULL;
	}
	*bias = st->cus_bias;
	return cu_index_find(st->cus, da - st->cus_bias, mem);
}

/* The line row for da from the CU index, when libdwfl found no CU. */
static void resolve_line_indexed(struct mod_state *st, Dwarf_Addr da, struct resolved *r)
{
	Dwarf_Die mem, *cu;
	Dwarf_Addr bias = 0;
	Dwarf_Line *line;

	cu = addr_cu(st, da, &mem, &bias);
	if (!cu || !(line = dwarf_getsrc_die(cu, da - bias)))
		return;
	r->src = dwarf_linesrc(line, NULL, NULL);
	if (!r->src || dwarf_lineno(line, &r->line) != 0)
		r->line = 0;
}

/* The line table row for da, kept only when its CU covers da. */
void sym_resolve_line(struct mod_state *st, Dwarf_Addr da, struct resolved *r)
{
	Dwfl_Module *dm = st->dm;
	Dwfl_Line *line = dwfl_module_getsrc(dm, da);
	Dwarf_Addr lbias = 0, laddr;
	Dwarf_Die *lcu;

	if (!line) {
		resolve_line_indexed(st, da, r);
		return;
	}
	/* libdw answers with the nearest line even past the end of its CU's
	 * code (crt1's _start got the last line of main's file). */
	lcu = dwfl_linecu(line);
	if (lcu && dwfl_module_getdwarf(dm, &lbias) && dwarf_haspc(lcu, da - lbias) == 0) {
		/* .debug_aranges may cover only part of the CUs (a cgo
		 * binary: the C ones): ask the CUs' own ranges. */
		resolve_line_indexed(st, da, r);
		return;
	}
	r->src = dwfl_lineinfo(line, &laddr, &r->line, NULL, NULL, NULL);
	if (!r->src)
		r->line = 0;
}
/*
 * The system name of function DIE fn.  The physical function is named by its
 * symbol, where libdwfl prefers the global alias (__nanosleep over glibc's
 * asm-renamed __GI___nanosleep linkage name), as perf and eu-stack do.  An
 * inlined one has no symbol: its mangled name, else its source name.
 */
static const char *frame_system_name(Dwarf_Die *fn, bool physical, const char *symname)
{
	const char *sys = die_linkage_name(fn);

	if (physical && symname)
		return symname;
	if (sys && !(sys[0] == '_' && (sys[1] == 'Z' || sys[1] == 'R')) && die_name(fn))
		return die_name(fn);
	return sys ? sys : die_name(fn);
}

/* Sets f's file:line to where the inlined callee was called from. */
static int call_site(struct sym_ctx *ctx, Dwarf_Files *files, Dwarf_Die *callee,
		     struct sym_frame *f)
{
	Dwarf_Attribute attr;
	Dwarf_Word val;
	int ret;

	if (files && dwarf_formudata(dwarf_attr(callee, DW_AT_call_file, &attr), &val) == 0) {
		ret = sym_intern(ctx, dwarf_filesrc(files, val, NULL, NULL), &f->file);
		if (ret < 0)
			return ret;
	}
	if (dwarf_formudata(dwarf_attr(callee, DW_AT_call_line, &attr), &val) == 0 &&
	    val <= INT32_MAX)
		f->line = (int)val;
	return 0;
}

/* The inline chain at da as frames (innermost first); none without a CU. */
int sym_resolve_inline(struct sym_ctx *ctx, struct mod_state *st, Dwarf_Addr da,
		       struct resolved *r)
{
	Dwarf_Die fns[MAX_FRAMES], *cudie, cumem;
	Dwarf_Files *files = NULL;
	Dwarf_Addr bias = 0;
	struct sym_frame *f;
	int nfns, j, ret;

	cudie = addr_cu(st, da, &cumem, &bias);
	if (!cudie)
		return 0;
	nfns = inline_chain(cudie, da - bias, fns, MAX_FRAMES);
	if (nfns > 1 && dwarf_getsrcfiles(cudie, &files, NULL) != 0)
		files = NULL;
	for (j = 0; j < nfns; j++) {
		f = &r->frames[j];
		memset(f, 0, sizeof(*f));
		ret = sym_name_frame(ctx, frame_system_name(&fns[j], j == nfns - 1, r->symname), f);
		if (ret < 0)
			return ret;
		f->start_line = die_decl_line(&fns[j]);
		f->inlined = j != nfns - 1;
		if (j > 0) {
			ret = call_site(ctx, files, &fns[j - 1], f);
		} else {
			f->line = r->src ? r->line : 0;
			ret = sym_intern(ctx, r->src, &f->file);
		}
		if (ret < 0)
			return ret;
	}
	r->n = (size_t)nfns;
	return 0;
}
