/* SPDX-License-Identifier: MIT */
/*
 * A thread sampled by a task-clock perf event; see perf_thread.h.  The
 * ring follows perf_event_open(2): a metadata page, then 2^n data pages
 * the kernel writes records into at data_head while the reader frees
 * them by moving data_tail.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "unwind/perf_thread.h"

/* x86-64's perf register numbers (asm/perf_regs.h), in the order the
 * kernel writes them: a sample carries the registers of the mask by
 * ascending number.  DS, ES, FS and GS (12..15) are refused on x86-64. */
enum {
	REG_AX, REG_BX, REG_CX, REG_DX, REG_SI, REG_DI, REG_BP, REG_SP, REG_IP, REG_FLAGS,
	REG_CS, REG_SS, REG_R8 = 16, REG_R15 = 23,
};
#define REGS_MASK (((1ull << (REG_SS + 1)) - 1) | (((1ull << (REG_R15 + 1)) - 1) & ~((1ull << REG_R8) - 1)))
#define N_REGS 20

struct perf_thread {
	int fd;
	pid_t tid;
	void *map;
	size_t map_len;
	struct perf_event_mmap_page *meta;
	const uint8_t *data;
	uint64_t data_size;	/* a power of two */
	size_t stack_size;
	bool callchain;		/* samples carry the kernel's call chain */
	uint64_t read;		/* the records before it are taken out */
	bool viewed;		/* ... and some of them are still viewed (snap_view) */
	uint64_t last_count;	/* the task clock at the last sample taken out */
	uint64_t lost;
	uint64_t throttled;
	pid_t comm_tid;		/* the last PERF_RECORD_COMM: the thread renamed */
	char comm[16];		/* ... and its new name (TASK_COMM_LEN) */
	pid_t map_pid;		/* the last PERF_RECORD_MMAP2: the process */
	struct proc_map mapping;	/* ... and the mapping (path: map_path) */
	char map_path[PATH_MAX];
};

/* -1: not known yet; 0: samples in the kernel are refused
 * (perf_event_paranoid), so kernel samples are excluded; 1: allowed. */
static int kernel_allowed = -1;

static int open_event(pid_t tid, uint64_t period_ns, size_t stack_size, size_t ring_bytes,
		      bool exclude_kernel, bool callchain)
{
	struct perf_event_attr a;
	long fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.sample_period = period_ns;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_READ | PERF_SAMPLE_REGS_USER |
			PERF_SAMPLE_STACK_USER;
	a.read_format = 0;
	a.sample_regs_user = REGS_MASK;
	a.sample_stack_user = (uint32_t)stack_size;
	if (callchain) {
		/* The kernel part alone: the user part is the stack copy's to
		 * unwind (the kernel's walks frame pointers only). */
		a.sample_type |= PERF_SAMPLE_CALLCHAIN;
		a.exclude_callchain_user = 1;
		a.sample_max_stack = SNAP_KERNEL_MAX;
	}
	a.exclude_kernel = exclude_kernel;
	a.exclude_hv = 1;
	/* A rename comes in the ring, in order with the samples: a thread
	 * that names itself and exits before the ring is read keeps it. */
	a.comm = 1;
	/* So are the executable mappings the thread makes (dlopen), with
	 * what identifies their file: a library mapped and unmapped between
	 * two reads of the ring is still known for the samples taken in it. */
	a.mmap = 1;
	a.mmap2 = 1;
	/* Nobody polls the ring: the reader comes on its own schedule, so the
	 * kernel never needs to wake anyone. */
	a.watermark = 1;
	a.wakeup_watermark = (uint32_t)(ring_bytes ? ring_bytes : 4096);
	fd = syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

/* Opens with samples in the kernel when permitted, without them otherwise
 * (the answer is remembered for the next threads); *callchain (in: asked
 * for) says whether the samples carry the kernel's call chain. */
static int open_any(pid_t tid, uint64_t period_ns, size_t stack_size, size_t ring_bytes,
		    bool *callchain)
{
	int allowed = __atomic_load_n(&kernel_allowed, __ATOMIC_RELAXED);
	int fd;

	if (allowed != 0) {
		fd = open_event(tid, period_ns, stack_size, ring_bytes, false, *callchain);
		if (fd != -EACCES && fd != -EPERM) {
			if (fd >= 0)
				__atomic_store_n(&kernel_allowed, 1, __ATOMIC_RELAXED);
			return fd;
		}
	}
	*callchain = false;
	fd = open_event(tid, period_ns, stack_size, ring_bytes, true, false);
	if (fd >= 0)
		__atomic_store_n(&kernel_allowed, 0, __ATOMIC_RELAXED);
	return fd;
}

int perf_thread_probe(void)
{
	bool callchain = false;
	int fd = open_any(0, 10000000, 64, 0, &callchain);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

bool perf_thread_kernel_allowed(void)
{
	return perf_thread_probe() == 0 &&
	       __atomic_load_n(&kernel_allowed, __ATOMIC_RELAXED) == 1;
}

size_t perf_thread_record_size(size_t stack_size)
{
	/* header, pid/tid, read value, call chain (its length, a context
	 * marker, the frames), abi, registers, size, stack, dyn_size */
	return 8 + 8 + 8 + 8 * (2 + SNAP_KERNEL_MAX) + 8 + 8 * N_REGS + 8 + stack_size + 8;
}

int perf_thread_open(struct perf_thread **out, pid_t tid, uint64_t period_ns, size_t stack_size,
		     size_t ring_bytes, unsigned flags)
{
	long page = sysconf(_SC_PAGESIZE);
	struct perf_thread *pt;
	int ret;

	if (!stack_size || stack_size > PERF_THREAD_STACK_MAX || stack_size % 8 || page <= 0 ||
	    ring_bytes < (size_t)page || (ring_bytes & (ring_bytes - 1)))
		return -EINVAL;
	pt = calloc(1, sizeof(*pt));
	if (!pt)
		return -ENOMEM;
	pt->tid = tid;
	pt->stack_size = stack_size;
	pt->callchain = flags & PERF_THREAD_KERNEL;
	pt->fd = open_any(tid, period_ns, stack_size, ring_bytes, &pt->callchain);
	if (pt->fd < 0) {
		ret = pt->fd;
		goto err_free;
	}
	pt->map_len = (size_t)page + ring_bytes;
	pt->map = mmap(NULL, pt->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, pt->fd, 0);
	if (pt->map == MAP_FAILED) {
		ret = -errno;
		goto err_close;
	}
	pt->meta = pt->map;
	/* The data pages start at data_offset on kernels that say so. */
	pt->data = (const uint8_t *)pt->map +
		   (pt->meta->data_offset ? pt->meta->data_offset : (uint64_t)page);
	pt->data_size = pt->meta->data_size ? pt->meta->data_size : ring_bytes;
	*out = pt;
	return 0;
err_close:
	close(pt->fd);
err_free:
	free(pt);
	return ret;
}

void perf_thread_close(struct perf_thread *pt)
{
	if (!pt)
		return;
	munmap(pt->map, pt->map_len);
	close(pt->fd);
	free(pt);
}

/* Copies len bytes of the ring from position pos (a running offset,
 * wrapped here). */
static void ring_copy(const struct perf_thread *pt, uint64_t pos, void *dst, size_t len)
{
	uint64_t off = pos & (pt->data_size - 1);
	size_t first = len;

	if (off + len > pt->data_size)
		first = (size_t)(pt->data_size - off);
	memcpy(dst, pt->data + off, first);
	if (first < len)
		memcpy((uint8_t *)dst + first, pt->data, len - first);
}

static uint64_t ring_u64(const struct perf_thread *pt, uint64_t pos)
{
	uint64_t v;

	ring_copy(pt, pos, &v, sizeof(v));
	return v;
}

bool perf_thread_pending(const struct perf_thread *pt)
{
	return __atomic_load_n(&pt->meta->data_head, __ATOMIC_ACQUIRE) != pt->read;
}

/* Gives the kernel back the ring up to pt->read. */
static void give_back(struct perf_thread *pt)
{
	__atomic_store_n(&pt->meta->data_tail, pt->read, __ATOMIC_RELEASE);
	pt->viewed = false;
}

void perf_thread_release(struct perf_thread *pt)
{
	if (pt->viewed)
		give_back(pt);
}

bool perf_thread_holds(const struct perf_thread *pt, const void *p)
{
	const uint8_t *b = p;

	return b >= pt->data && b < pt->data + pt->data_size;
}

/* The kernel's call chain of the sample at pos (its u64 count first) into
 * sn, without the context markers (PERF_CONTEXT_KERNEL...).  Returns the
 * position after it, or 0 when it overruns end. */
static uint64_t parse_callchain(const struct perf_thread *pt, uint64_t pos, uint64_t end,
				struct snap *sn)
{
	uint64_t nr = ring_u64(pt, pos), i, ip;

	sn->n_kernel = 0;
	pos += 8;
	if (nr > (end - pos) / 8)
		return 0;
	for (i = 0; i < nr && sn->n_kernel < SNAP_KERNEL_MAX; i++) {
		ip = ring_u64(pt, pos + 8 * i);
		if (ip < PERF_CONTEXT_MAX)
			sn->kernel[sn->n_kernel++] = ip;
	}
	return pos + 8 * nr;
}

/* The registers of a sample (PERF_SAMPLE_REGS_USER, REGS_MASK by ascending
 * number) as ptrace gives them; orig_rax -1: not in a system call. */
static void regs_of_sample(struct user_regs_struct *r, const uint64_t regs[N_REGS])
{
	memset(r, 0, sizeof(*r));
	r->rax = regs[REG_AX];
	r->rbx = regs[REG_BX];
	r->rcx = regs[REG_CX];
	r->rdx = regs[REG_DX];
	r->rsi = regs[REG_SI];
	r->rdi = regs[REG_DI];
	r->rbp = regs[REG_BP];
	r->rsp = regs[REG_SP];
	r->rip = regs[REG_IP];
	r->eflags = regs[REG_FLAGS];
	r->cs = regs[REG_CS];
	r->ss = regs[REG_SS];
	/* R8..R15 follow SS in the sample: numbers 16..23, indexes 12..19 */
	r->r8 = regs[12];
	r->r9 = regs[13];
	r->r10 = regs[14];
	r->r11 = regs[15];
	r->r12 = regs[16];
	r->r13 = regs[17];
	r->r14 = regs[18];
	r->r15 = regs[19];
	r->orig_rax = (unsigned long long)-1;
}

/* Fills sn from the sample record at pos, size bytes.  Returns 1 (a sample
 * with registers), 0 (one without: a moment the thread had no user
 * context) or -EIO (malformed). */
static int parse_sample(struct perf_thread *pt, uint64_t pos, uint64_t size, struct snap *sn,
			bool view)
{
	uint64_t end = pos + size, count, abi, regs[N_REGS], len, dyn;
	struct user_regs_struct *r = &sn->regs;

	pos += 8;	/* the header */
	if (pos + 8 + 8 + 8 > end)
		return -EIO;
	pos += 8;	/* pid, tid: the event's own thread */
	count = ring_u64(pt, pos);
	pos += 8;
	sn->n_kernel = 0;
	if (pt->callchain) {
		pos = parse_callchain(pt, pos, end, sn);
		if (!pos || pos + 8 > end)
			return -EIO;
	}
	abi = ring_u64(pt, pos);
	pos += 8;
	if (abi == PERF_SAMPLE_REGS_ABI_NONE)
		return 0;
	if (abi != PERF_SAMPLE_REGS_ABI_64 || pos + sizeof(regs) + 8 > end)
		return -EIO;
	ring_copy(pt, pos, regs, sizeof(regs));
	pos += sizeof(regs);
	len = ring_u64(pt, pos);
	pos += 8;
	if (len > pt->stack_size || len > sn->stack_cap || pos + len + (len ? 8 : 0) > end)
		return -EIO;
	dyn = len ? ring_u64(pt, pos + len) : 0;
	if (dyn > len)
		return -EIO;

	regs_of_sample(r, regs);
	sn->tid = pt->tid;
	sn->stack_start = r->rsp;
	/* Most of a copy is never read (a walk reads a few hundred bytes):
	 * viewed where it lies, unless it wraps round the ring's end. */
	snap_unview(sn);
	if (view && (pos & (pt->data_size - 1)) + dyn <= pt->data_size) {
		snap_view(sn, pt->data + (pos & (pt->data_size - 1)));
		pt->viewed = true;
	} else {
		ring_copy(pt, pos, sn->stack, (size_t)dyn);
	}
	sn->stack_len = (size_t)dyn;
	/* A copy that filled its record (the size asked for, less what a
	 * record's u16 size leaves) may have stopped short of the stack's
	 * end; one that ended earlier met unmapped memory. */
	sn->stack_limited = dyn == len;
	sn->stack_short = sn->stack_limited;
	sn->sp_unmapped = false;
	sn->regs_partial = false;
	sn->stack2_len = 0;
	sn->cpu_ns = count - pt->last_count;
	sn->own_maps = false;
	sn->unstopped = true;
	pt->last_count = count;
	return 1;
}

/* A PERF_RECORD_MMAP2 into pt->mapping.  Returns 3 for a file mapping, 0 for
 * another (anonymous code: JIT, named by its runtime's perf map). */
static int parse_mmap2(struct perf_thread *pt, uint64_t pos, uint64_t size)
{
	/* after the header: pid, tid, addr, len, pgoff, maj, min, ino,
	 * ino_generation, prot, flags, then the file name */
	struct {
		uint32_t pid, tid;
		uint64_t addr, len, pgoff;
		uint32_t maj, min;
		uint64_t ino, ino_generation;
		uint32_t prot, flags;
	} r;
	const size_t suffix = sizeof(" (deleted)") - 1;
	size_t name_len, n;

	if (size < 8 + sizeof(r) + 8)
		return 0;
	ring_copy(pt, pos + 8, &r, sizeof(r));
	name_len = (size_t)size - 8 - sizeof(r);
	n = name_len < sizeof(pt->map_path) ? name_len : sizeof(pt->map_path) - 1;
	ring_copy(pt, pos + 8 + sizeof(r), pt->map_path, n);
	pt->map_path[n] = '\0';
	if (pt->map_path[0] != '/' || !r.len)
		return 0;
	memset(&pt->mapping, 0, sizeof(pt->mapping));
	n = strlen(pt->map_path);
	if (n > suffix && strcmp(pt->map_path + n - suffix, " (deleted)") == 0) {
		pt->map_path[n - suffix] = '\0';
		pt->mapping.deleted = true;
	}
	pt->map_pid = (pid_t)r.pid;
	pt->mapping.start = r.addr;
	pt->mapping.end = r.addr + r.len;
	pt->mapping.offset = r.pgoff;
	pt->mapping.inode = r.ino;
	pt->mapping.dev_major = r.maj;
	pt->mapping.dev_minor = r.min;
	pt->mapping.perms = ((r.prot & PROT_READ) ? PROC_MAP_R : 0) |
			((r.prot & PROT_WRITE) ? PROC_MAP_W : 0) |
			((r.prot & PROT_EXEC) ? PROC_MAP_X : 0) |
			((r.flags & MAP_PRIVATE) ? PROC_MAP_P : 0);
	pt->mapping.path = pt->map_path;
	return 3;
}

int perf_thread_next(struct perf_thread *pt, struct snap *sn, bool view)
{
	uint64_t head = __atomic_load_n(&pt->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pt->read;
	int ret = 0;

	while (tail < head && !ret) {
		struct perf_event_header h;

		ring_copy(pt, tail, &h, sizeof(h));
		if (h.size < sizeof(h) || h.size % 8 || tail + h.size > head) {
			tail = head;
			ret = -EIO;
			break;
		}
		switch (h.type) {
		case PERF_RECORD_SAMPLE:
			ret = parse_sample(pt, tail, h.size, sn, view);
			break;
		case PERF_RECORD_COMM:
			if (h.size >= 16 + 8) {
				uint32_t ids[2];
				size_t len = (size_t)h.size - 16 < sizeof(pt->comm) ?
					     (size_t)h.size - 16 : sizeof(pt->comm);

				ring_copy(pt, tail + 8, ids, sizeof(ids));
				ring_copy(pt, tail + 16, pt->comm, len);
				pt->comm[sizeof(pt->comm) - 1] = '\0';
				pt->comm_tid = (pid_t)ids[1];
				ret = 2;
			}
			break;
		case PERF_RECORD_MMAP2:
			ret = parse_mmap2(pt, tail, h.size);
			break;
		case PERF_RECORD_LOST:
			if (h.size >= 24)
				pt->lost += ring_u64(pt, tail + 16);
			break;
		case PERF_RECORD_THROTTLE:
			pt->throttled++;
			break;
		default:
			break;
		}
		tail += h.size;
	}
	/* Copied out, the records are the kernel's again; viewed, they stay
	 * ours until perf_thread_release. */
	pt->read = tail;
	if (!pt->viewed)
		give_back(pt);
	return ret;
}

size_t perf_thread_stack_size(const struct perf_thread *pt)
{
	return pt->stack_size;
}

void perf_thread_carry(struct perf_thread *pt, uint64_t ns)
{
	/* Unsigned: the first sample's count less this is count + ns. */
	pt->last_count -= ns;
}

const struct proc_map *perf_thread_mapping(const struct perf_thread *pt, pid_t *pid)
{
	*pid = pt->map_pid;
	return &pt->mapping;
}

const char *perf_thread_comm(const struct perf_thread *pt, pid_t *tid)
{
	*tid = pt->comm_tid;
	return pt->comm;
}

uint64_t perf_thread_lost(const struct perf_thread *pt)
{
	return pt->lost;
}

uint64_t perf_thread_throttled(const struct perf_thread *pt)
{
	return pt->throttled;
}

int perf_thread_unsampled(struct perf_thread *pt, uint64_t *ns)
{
	uint64_t count;
	ssize_t r = read(pt->fd, &count, sizeof(count));

	if (r < 0)
		return -errno;
	if (r != (ssize_t)sizeof(count))
		return -EIO;
	*ns = count > pt->last_count ? count - pt->last_count : 0;
	return 0;
}

int perf_thread_set_period(struct perf_thread *pt, uint64_t period_ns)
{
	return ioctl(pt->fd, PERF_EVENT_IOC_PERIOD, &period_ns) < 0 ? -errno : 0;
}
