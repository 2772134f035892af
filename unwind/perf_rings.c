/* SPDX-License-Identifier: MIT */
/*
 * The per-CPU rings of perf samples and the records in them; see
 * perf_rings.h.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/bsearch.h"
#include "lib/grow.h"
#include "unwind/perf_rings.h"
#include "unwind/perf_thread.h"

/* Where ptrace has each register a sample carries: x86-64's perf register
 * numbers (asm/perf_regs.h) in ascending order, those of perf_thread.c's
 * REGS_MASK (DS, ES, FS and GS left out). */
static const uint8_t sample_regs[] = {
	SNAP_REG(rax), SNAP_REG(rbx), SNAP_REG(rcx), SNAP_REG(rdx), SNAP_REG(rsi), SNAP_REG(rdi),
	SNAP_REG(rbp), SNAP_REG(rsp), SNAP_REG(rip), SNAP_REG(eflags), SNAP_REG(cs), SNAP_REG(ss),
	SNAP_REG(r8), SNAP_REG(r9), SNAP_REG(r10), SNAP_REG(r11), SNAP_REG(r12), SNAP_REG(r13),
	SNAP_REG(r14), SNAP_REG(r15),
};
#define N_REGS (sizeof(sample_regs) / sizeof(sample_regs[0]))

struct ring {
	int fd;			/* its owner, an event that never samples */
	int cpu;
	void *map;
	struct perf_event_mmap_page *meta;
	const uint8_t *data;
	uint64_t read;		/* the records before it are taken out */
	bool viewed;		/* ... and some of them are still viewed (snap_view) */
};

/* An event's id, and whose it is (pt NULL: closed). */
struct ring_id {
	uint64_t id;
	struct perf_thread *pt;
	unsigned slot;
};

struct perf_rings {
	struct ring *ring;
	unsigned n;
	size_t map_len;
	uint64_t data_size;	/* a power of two */
	bool callchain;		/* samples carry the kernel's call chain */
	struct ring_id *ids;	/* sorted by id */
	size_t n_ids, cap_ids, dead;
	uint64_t lost;
	uint64_t throttled;
	pid_t sample_pid;	/* the last sample's process */
	pid_t task_pid, task_tid;	/* the last birth, exit or exec */
	pid_t task_ptid;	/* ... the thread that started it (a birth's) */
	pid_t comm_tid;		/* the last PERF_RECORD_COMM: the thread renamed */
	char comm[16];		/* ... and its new name (TASK_COMM_LEN) */
	pid_t map_pid;		/* the last PERF_RECORD_MMAP2: the process */
	struct proc_map mapping;	/* ... and the mapping (path: map_path) */
	char map_path[PATH_MAX];
};

static void unmap_rings(struct perf_rings *r)
{
	unsigned i;

	for (i = 0; i < r->n; i++) {
		if (r->ring[i].map)
			munmap(r->ring[i].map, r->map_len);
		close(r->ring[i].fd);
	}
	r->n = 0;
}

/* Ring of cpu, of bytes, into r->ring[r->n].  Returns 1, 0 when cpu is
 * offline, or -errno. */
static int map_ring(struct perf_rings *r, int cpu, size_t bytes, long page, bool *callchain)
{
	struct ring *g = &r->ring[r->n];
	/* Readable once half the ring was written since the last time: the
	 * reader, woken then, takes the records out while the other half
	 * still has room (perf_rings_fd). */
	int fd = perf_thread_event(0, cpu, 1000000, 8, true, bytes / 2, callchain);

	if (fd == -ENODEV || fd == -EINVAL)
		return 0;
	if (fd < 0)
		return fd;
	memset(g, 0, sizeof(*g));
	g->fd = fd;
	g->cpu = cpu;
	r->map_len = (size_t)page + bytes;
	g->map = mmap(NULL, r->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (g->map == MAP_FAILED) {
		int e = -errno;

		close(fd);
		return e;
	}
	g->meta = g->map;
	/* The data pages start at data_offset on kernels that say so. */
	g->data = (const uint8_t *)g->map +
		  (g->meta->data_offset ? g->meta->data_offset : (uint64_t)page);
	r->data_size = g->meta->data_size ? g->meta->data_size : bytes;
	r->n++;
	return 1;
}

/* A ring of bytes on every CPU.  Returns 0 or -errno. */
static int map_rings(struct perf_rings *r, size_t bytes, long ncpu, long page, unsigned flags)
{
	bool callchain;
	long cpu;
	int e;

	r->callchain = flags & PERF_RINGS_KERNEL;
	for (cpu = 0; cpu < ncpu; cpu++) {
		callchain = r->callchain;
		e = map_ring(r, (int)cpu, bytes, page, &callchain);
		if (e < 0) {
			unmap_rings(r);
			return e;
		}
		r->callchain = callchain;
	}
	return r->n ? 0 : -ENODEV;
}

int perf_rings_open(struct perf_rings **out, size_t ring_bytes, size_t min_bytes, unsigned flags)
{
	long page = sysconf(_SC_PAGESIZE), ncpu = sysconf(_SC_NPROCESSORS_CONF);
	struct perf_rings *r;
	size_t bytes;
	int e = -EPERM;

	if (page <= 0 || ncpu <= 0 || min_bytes < (size_t)page || ring_bytes < min_bytes ||
	    (ring_bytes & (ring_bytes - 1)))
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r || !(r->ring = calloc((size_t)ncpu, sizeof(r->ring[0])))) {
		free(r);
		return -ENOMEM;
	}
	/* Beyond the kernel's budget, mmap says EPERM: smaller rings. */
	for (bytes = ring_bytes; bytes >= min_bytes && e == -EPERM; bytes /= 2)
		e = map_rings(r, bytes, ncpu, page, flags);
	if (e < 0) {
		free(r->ring);
		free(r);
		return e;
	}
	*out = r;
	return 0;
}

void perf_rings_close(struct perf_rings *r)
{
	if (!r)
		return;
	unmap_rings(r);
	free(r->ring);
	free(r->ids);
	free(r);
}

unsigned perf_rings_count(const struct perf_rings *r)
{
	return r->n;
}

int perf_rings_cpu(const struct perf_rings *r, unsigned i)
{
	return r->ring[i].cpu;
}

int perf_rings_fd(const struct perf_rings *r, unsigned i)
{
	return r->ring[i].fd;
}

size_t perf_rings_size(const struct perf_rings *r)
{
	return (size_t)r->data_size;
}

bool perf_rings_callchain(const struct perf_rings *r)
{
	return r->callchain;
}

/* The closed events' ids out of the table. */
static void compact_ids(struct perf_rings *r)
{
	size_t i, n = 0;

	for (i = 0; i < r->n_ids; i++) {
		if (r->ids[i].pt)
			r->ids[n++] = r->ids[i];
	}
	r->n_ids = n;
	r->dead = 0;
}

int perf_rings_add(struct perf_rings *r, uint64_t id, struct perf_thread *pt, unsigned slot)
{
	size_t at;

	if (r->dead > 64 && r->dead * 2 > r->n_ids)
		compact_ids(r);
	if (cprof_grow(&r->ids, &r->cap_ids, r->n_ids + 1, sizeof(r->ids[0]), 256) < 0)
		return -ENOMEM;
	/* The kernel numbers events in the order they are opened: at the
	 * end, but for an event opened elsewhere meanwhile. */
	at = cprof_count_le(r->ids, r->n_ids, sizeof(r->ids[0]), offsetof(struct ring_id, id), id);
	memmove(&r->ids[at + 1], &r->ids[at], (r->n_ids - at) * sizeof(r->ids[0]));
	r->ids[at] = (struct ring_id){ id, pt, slot };
	r->n_ids++;
	return 0;
}

void perf_rings_forget(struct perf_rings *r, const struct perf_thread *pt)
{
	size_t i;

	for (i = 0; i < r->n_ids; i++) {
		if (r->ids[i].pt == pt) {
			r->ids[i].pt = NULL;
			r->dead++;
		}
	}
}

static const struct ring_id *find_id(const struct perf_rings *r, uint64_t id)
{
	size_t at = cprof_count_le(r->ids, r->n_ids, sizeof(r->ids[0]),
				   offsetof(struct ring_id, id), id);

	return at && r->ids[at - 1].id == id && r->ids[at - 1].pt ? &r->ids[at - 1] : NULL;
}

/* Copies len bytes of ring g from position pos (a running offset,
 * wrapped here). */
static void ring_copy(const struct perf_rings *r, const struct ring *g, uint64_t pos, void *dst,
		      size_t len)
{
	uint64_t off = pos & (r->data_size - 1);
	size_t first = len;

	if (off + len > r->data_size)
		first = (size_t)(r->data_size - off);
	memcpy(dst, g->data + off, first);
	if (first < len)
		memcpy((uint8_t *)dst + first, g->data, len - first);
}

static uint64_t ring_u64(const struct perf_rings *r, const struct ring *g, uint64_t pos)
{
	uint64_t v;

	ring_copy(r, g, pos, &v, sizeof(v));
	return v;
}

bool perf_rings_pending(const struct perf_rings *r, unsigned i)
{
	return __atomic_load_n(&r->ring[i].meta->data_head, __ATOMIC_ACQUIRE) != r->ring[i].read;
}

/* Gives the kernel back ring g up to g->read. */
static void give_back(struct ring *g)
{
	__atomic_store_n(&g->meta->data_tail, g->read, __ATOMIC_RELEASE);
	g->viewed = false;
}

void perf_rings_release(struct perf_rings *r)
{
	unsigned i;

	for (i = 0; i < r->n; i++) {
		if (r->ring[i].viewed)
			give_back(&r->ring[i]);
	}
}

bool perf_rings_holds(const struct perf_rings *r, const void *p)
{
	const uint8_t *b = p;
	unsigned i;

	for (i = 0; i < r->n; i++) {
		if (b >= r->ring[i].data && b < r->ring[i].data + r->data_size)
			return true;
	}
	return false;
}

/* The call chain of the sample at pos (its u64 count first) into sn: the
 * kernel's part into sn->kernel, the user part (user: asked for) into
 * sn->user, without the context markers (PERF_CONTEXT_KERNEL,
 * PERF_CONTEXT_USER) that start each.  Returns the position after it, or
 * 0 when it overruns end. */
static uint64_t parse_callchain(const struct perf_rings *r, const struct ring *g, uint64_t pos,
				uint64_t end, struct snap *sn, bool user)
{
	uint64_t nr = ring_u64(r, g, pos), i, ip, ctx = PERF_CONTEXT_KERNEL;

	pos += 8;
	if (nr > (end - pos) / 8)
		return 0;
	for (i = 0; i < nr; i++) {
		ip = ring_u64(r, g, pos + 8 * i);
		if (ip >= PERF_CONTEXT_MAX)
			ctx = ip;
		else if (ctx == PERF_CONTEXT_KERNEL && r->callchain && sn->n_kernel < SNAP_KERNEL_MAX)
			sn->kernel[sn->n_kernel++] = ip;
		else if (ctx == PERF_CONTEXT_USER && user && sn->n_user < SNAP_USER_MAX)
			sn->user[sn->n_user++] = ip;
	}
	return pos + 8 * nr;
}

/* The stack copy of a sample at pos (its size first) into sn, for a
 * thread asking for stack bytes.  Returns 0 or -EIO. */
static int parse_stack(const struct perf_rings *r, struct ring *g, uint64_t pos, uint64_t end,
		       size_t stack, struct snap *sn, bool view)
{
	uint64_t len = ring_u64(r, g, pos), dyn;

	pos += 8;
	if (len > stack || len > sn->stack_cap || pos + len + (len ? 8 : 0) > end)
		return -EIO;
	dyn = len ? ring_u64(r, g, pos + len) : 0;
	if (dyn > len)
		return -EIO;
	sn->stack_start = sn->regs.rsp;
	/* Most of a copy is never read (a walk reads a few hundred bytes):
	 * viewed where it lies, unless it wraps round the ring's end. */
	snap_unview(sn);
	if (view && (pos & (r->data_size - 1)) + dyn <= r->data_size) {
		snap_view(sn, g->data + (pos & (r->data_size - 1)));
		g->viewed = true;
	} else {
		ring_copy(r, g, pos, sn->stack, (size_t)dyn);
	}
	sn->stack_len = (size_t)dyn;
	/* A copy that filled its record (the size asked for, less what a
	 * record's u16 size leaves) may have stopped short of the stack's
	 * end; one that ended earlier met unmapped memory. */
	sn->stack_limited = dyn == len;
	sn->stack_short = sn->stack_limited;
	return 0;
}

/* Fills sn from the sample record at pos, size bytes, of id's event.
 * Returns 1 (a sample with registers), 0 (one without: a moment the
 * thread had no user context, or of an event closed) or -EIO
 * (malformed). */
static int parse_sample(struct perf_rings *r, struct ring *g, uint64_t pos, uint64_t size,
			struct snap *sn, bool view, const struct ring_id **idp)
{
	uint64_t end = pos + size, count, abi, regs[N_REGS];
	const struct ring_id *id;
	uint32_t ids[2];

	pos += 8;	/* the header */
	if (pos + 8 + 8 + 8 + 8 > end)
		return -EIO;
	id = find_id(r, ring_u64(r, g, pos));
	if (!id)
		return 0;
	pos += 8;	/* id */
	ring_copy(r, g, pos, ids, sizeof(ids));
	pos += 8;	/* pid, tid: an inherited event's thread, not its owner's */
	count = ring_u64(r, g, pos);
	pos += 8;
	sn->n_kernel = 0;
	sn->n_user = 0;
	if (r->callchain || perf_thread_user_chain(id->pt)) {
		pos = parse_callchain(r, g, pos, end, sn, perf_thread_user_chain(id->pt));
		if (!pos || pos + 8 > end)
			return -EIO;
	}
	abi = ring_u64(r, g, pos);
	pos += 8;
	if (abi == PERF_SAMPLE_REGS_ABI_NONE)
		return 0;
	if (abi != PERF_SAMPLE_REGS_ABI_64 || pos + sizeof(regs) + 8 > end)
		return -EIO;
	ring_copy(r, g, pos, regs, sizeof(regs));
	pos += sizeof(regs);
	snap_regs_from(&sn->regs, regs, sample_regs, N_REGS);
	sn->regs.orig_rax = (unsigned long long)-1;	/* not in a system call */
	if (parse_stack(r, g, pos, end, perf_thread_stack_size(id->pt), sn, view) < 0)
		return -EIO;
	sn->tid = (pid_t)ids[1];
	r->sample_pid = (pid_t)ids[0];
	sn->sp_unmapped = false;
	sn->regs_partial = false;
	sn->stack2_len = 0;
	sn->cpu_ns = count;	/* (made a difference by the caller: perf_thread_sampled) */
	sn->own_maps = false;
	sn->unstopped = true;
	*idp = id;
	return 1;
}

/* A PERF_RECORD_MMAP2 into r->mapping.  Returns 3 for a file mapping, 0
 * for another (anonymous code: JIT, named by its runtime's perf map). */
static int parse_mmap2(struct perf_rings *r, const struct ring *g, uint64_t pos, uint64_t size)
{
	/* after the header: pid, tid, addr, len, pgoff, maj, min, ino,
	 * ino_generation, prot, flags, then the file name */
	struct {
		uint32_t pid, tid;
		uint64_t addr, len, pgoff;
		uint32_t maj, min;
		uint64_t ino, ino_generation;
		uint32_t prot, flags;
	} m;
	const size_t suffix = sizeof(" (deleted)") - 1;
	size_t name_len, n;

	if (size < 8 + sizeof(m) + 8)
		return 0;
	ring_copy(r, g, pos + 8, &m, sizeof(m));
	name_len = (size_t)size - 8 - sizeof(m);
	n = name_len < sizeof(r->map_path) ? name_len : sizeof(r->map_path) - 1;
	ring_copy(r, g, pos + 8 + sizeof(m), r->map_path, n);
	r->map_path[n] = '\0';
	/* The kernel names anonymous memory "//anon": JIT code, not a file
	 * (taken for one, node's hot code was "//anon", never its perf map's
	 * name, in a third of a recorded run's samples). */
	if (r->map_path[0] != '/' || strcmp(r->map_path, "//anon") == 0 || !m.len)
		return 0;
	memset(&r->mapping, 0, sizeof(r->mapping));
	n = strlen(r->map_path);
	if (n > suffix && strcmp(r->map_path + n - suffix, " (deleted)") == 0) {
		r->map_path[n - suffix] = '\0';
		r->mapping.deleted = true;
	}
	r->map_pid = (pid_t)m.pid;
	r->mapping.start = m.addr;
	r->mapping.end = m.addr + m.len;
	r->mapping.offset = m.pgoff;
	r->mapping.inode = m.ino;
	r->mapping.dev_major = m.maj;
	r->mapping.dev_minor = m.min;
	r->mapping.perms = ((m.prot & PROT_READ) ? PROC_MAP_R : 0) |
			   ((m.prot & PROT_WRITE) ? PROC_MAP_W : 0) |
			   ((m.prot & PROT_EXEC) ? PROC_MAP_X : 0) |
			   ((m.flags & MAP_PRIVATE) ? PROC_MAP_P : 0);
	r->mapping.path = r->map_path;
	return 3;
}

/* A PERF_RECORD_FORK or _EXIT (ret 4 or 5): its pid and tid into r.
 * Returns ret, or 0 when too short. */
static int parse_task(struct perf_rings *r, const struct ring *g, uint64_t pos, uint64_t size,
		      int ret)
{
	uint32_t ids[4];	/* pid, ppid, tid, ptid */

	if (size < 8 + sizeof(ids))
		return 0;
	ring_copy(r, g, pos + 8, ids, sizeof(ids));
	r->task_pid = (pid_t)ids[0];
	r->task_tid = (pid_t)ids[2];
	r->task_ptid = (pid_t)ids[3];
	return ret;
}

/* A PERF_RECORD_COMM into r->comm.  Returns 2, 6 for an exec's, or 0 when
 * too short. */
static int parse_comm(struct perf_rings *r, const struct ring *g, uint64_t pos, uint64_t size,
		      uint16_t misc)
{
	uint32_t ids[2];
	size_t len;

	if (size < 16 + 8)
		return 0;
	len = (size_t)size - 16 < sizeof(r->comm) ? (size_t)size - 16 : sizeof(r->comm);
	ring_copy(r, g, pos + 8, ids, sizeof(ids));
	ring_copy(r, g, pos + 16, r->comm, len);
	r->comm[sizeof(r->comm) - 1] = '\0';
	r->comm_tid = (pid_t)ids[1];
	r->task_pid = (pid_t)ids[0];
	r->task_tid = (pid_t)ids[1];
	return misc & PERF_RECORD_MISC_COMM_EXEC ? 6 : 2;
}

/* The record of type at pos, size bytes: what perf_rings_next returns. */
static int parse_record(struct perf_rings *r, struct ring *g, const struct perf_event_header *h,
			uint64_t pos, struct snap *sn, bool view, const struct ring_id **id)
{
	uint64_t size = h->size;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		return parse_sample(r, g, pos, size, sn, view, id);
	case PERF_RECORD_COMM:
		return parse_comm(r, g, pos, size, h->misc);
	case PERF_RECORD_FORK:
		return parse_task(r, g, pos, size, 4);
	case PERF_RECORD_EXIT:
		return parse_task(r, g, pos, size, 5);
	case PERF_RECORD_MMAP2:
		return parse_mmap2(r, g, pos, size);
	case PERF_RECORD_LOST:
		if (size >= 24)
			r->lost += ring_u64(r, g, pos + 16);
		return 0;
	case PERF_RECORD_THROTTLE:
		r->throttled++;
		return 0;
	default:
		return 0;
	}
}

int perf_rings_next(struct perf_rings *r, unsigned i, struct snap *sn, bool view,
		    struct perf_thread **owner, unsigned *slot)
{
	struct ring *g = &r->ring[i];
	uint64_t head = __atomic_load_n(&g->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = g->read;
	const struct ring_id *id = NULL;
	int ret = 0;

	while (tail < head && !ret) {
		struct perf_event_header h;

		ring_copy(r, g, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size % 8 || tail + h.size > head) {
			tail = head;
			ret = -EIO;
			break;
		}
		ret = parse_record(r, g, &h, tail, sn, view, &id);
		tail += h.size;
	}
	if (ret == 1) {
		*owner = id->pt;
		*slot = id->slot;
	}
	/* Copied out, the records are the kernel's again; viewed, they stay
	 * ours until perf_rings_release. */
	g->read = tail;
	if (!g->viewed)
		give_back(g);
	return ret;
}

pid_t perf_rings_sample_pid(const struct perf_rings *r)
{
	return r->sample_pid;
}

void perf_rings_task(const struct perf_rings *r, pid_t *pid, pid_t *tid)
{
	*pid = r->task_pid;
	*tid = r->task_tid;
}

pid_t perf_rings_task_parent(const struct perf_rings *r)
{
	return r->task_ptid;
}

const char *perf_rings_comm(const struct perf_rings *r, pid_t *tid)
{
	*tid = r->comm_tid;
	return r->comm;
}

const struct proc_map *perf_rings_mapping(const struct perf_rings *r, pid_t *pid)
{
	*pid = r->map_pid;
	return &r->mapping;
}

uint64_t perf_rings_lost(const struct perf_rings *r)
{
	return r->lost;
}

uint64_t perf_rings_throttled(const struct perf_rings *r)
{
	return r->throttled;
}
