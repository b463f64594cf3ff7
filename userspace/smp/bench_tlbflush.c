// SPDX-License-Identifier: GPL-2.0
/*
 * tlbflush: a main thread on CPU A and one thread on each of --remote
 * other CPUs.  One record: the main thread maps --pages anonymous pages
 * and writes each, every remote thread reads each (so its CPU caches the
 * translations), then the main thread's munmap() is timed: span munmap.
 * While it runs the remote threads spin, the mm loaded on their CPUs, so
 * the kernel must interrupt each of them (an IPI) to flush its TLB; a CPU
 * that slept would only hold the mm lazily and could be skipped.
 *
 * The pages lie between two PROT_NONE guard mappings that stay for the
 * whole run: munmap() then never frees a page table (unless --pages spans
 * whole 2 MB page-table ranges), which would make x86 flush CPUs that only
 * hold the mm lazily too.  Transparent huge pages are off for the process.
 * The kernel's own count of shoot-downs received (the TLB line of
 * /proc/interrupts, summed over CPUs) is read before the first and after
 * the last timed record.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "smp.h"

static const char *const spans[] = { "munmap" };

static struct {
	char *base;		/* guard page, the pages, guard page */
	char *region;
	size_t page, len;
	atomic_ulong gen;	/* the record whose pages are mapped, + 1 */
	atomic_ulong acks;	/* remote threads that touched them */
	atomic_int finished;
	int have_count;
	unsigned long long before, after;
	struct smp_thread *threads;
} tl;

static void remote(struct smp *s, void *arg)
{
	unsigned long seen = 0, g;
	size_t off;

	(void)s;
	(void)arg;
	while (!atomic_load_explicit(&tl.finished, memory_order_acquire) && !smp_stopping()) {
		g = atomic_load_explicit(&tl.gen, memory_order_acquire);
		if (g == seen) {
			smp_relax();
			continue;
		}
		for (off = 0; off < tl.len; off += tl.page)
			(void)*(volatile char *)(tl.region + off);
		seen = g;
		atomic_fetch_add_explicit(&tl.acks, 1, memory_order_release);
	}
}

static void unmapper(struct smp *s, void *arg)
{
	unsigned long i, want = (unsigned long)s->remote;
	uint64_t t0, t1;
	size_t off;
	void *p;

	(void)arg;
	/*
	 * The hole each record maps into, made only now that every thread's
	 * stack is mapped: nothing else maps memory during the run, and
	 * MAP_FIXED_NOREPLACE would refuse to map over it if it did.
	 */
	if (munmap(tl.region, tl.len)) {
		smp_fail("tlbflush: munmap: %s", strerror(errno));
		return;
	}
	for (i = 0; i < smp_records(s) && !smp_stopping(); i++) {
		if (i == s->warmup)
			tl.have_count = smp_tlb_shootdowns(&tl.before) == 0;
		p = mmap(tl.region, tl.len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (p != tl.region) {
			smp_fail("tlbflush: mmap of %zu bytes at %p: %s", tl.len, tl.region,
				 p == MAP_FAILED ? strerror(errno) : "placed elsewhere");
			if (p != MAP_FAILED)
				munmap(p, tl.len);
			return;
		}
		for (off = 0; off < tl.len; off += tl.page)
			*(volatile char *)(tl.region + off) = 1;
		atomic_store_explicit(&tl.acks, 0, memory_order_relaxed);
		atomic_store_explicit(&tl.gen, i + 1, memory_order_release);
		while (atomic_load_explicit(&tl.acks, memory_order_acquire) < want && !smp_stopping())
			smp_relax();
		t0 = smp_tsc();
		if (munmap(tl.region, tl.len)) {
			smp_fail("tlbflush: munmap: %s", strerror(errno));
			return;
		}
		t1 = smp_tsc();
		smp_put(s, 0, i, (int64_t)(t1 - t0));
	}
	if (tl.have_count && !smp_stopping())
		tl.have_count = smp_tlb_shootdowns(&tl.after) == 0;
	atomic_store_explicit(&tl.finished, 1, memory_order_release);
}

static int prepare(struct smp *s)
{
	tl.page = (size_t)sysconf(_SC_PAGESIZE);
	tl.len = s->pages * tl.page;
	/* No huge page: every record maps and unmaps small pages alike. */
	prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0);
	tl.base = mmap(NULL, tl.len + 2 * tl.page, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (tl.base == MAP_FAILED) {
		tl.base = NULL;
		fprintf(stderr, PROG ": tlbflush: cannot reserve %lu pages: %s\n", s->pages,
			strerror(errno));
		return -1;
	}
	tl.region = tl.base + tl.page;
	tl.threads = calloc((size_t)s->remote + 1, sizeof(*tl.threads));
	if (!tl.threads) {
		fprintf(stderr, PROG ": tlbflush: no memory\n");
		return -1;
	}
	return 0;
}

static int run(struct smp *s)
{
	static char names[SMP_MAX_THREADS][16];
	int k;

	if (s->remote >= SMP_MAX_THREADS) {
		smp_fail("tlbflush: at most %d remote threads", SMP_MAX_THREADS - 1);
		return -1;
	}
	for (k = 0; k < s->remote; k++) {
		snprintf(names[k], sizeof(names[k]), "smp-tlb-cpu%d", s->remote_cpus[k]);
		tl.threads[k] = (struct smp_thread){ .name = names[k], .fn = remote,
						     .cpu = s->remote_cpus[k],
						     .policy = SCHED_OTHER };
	}
	tl.threads[k] = (struct smp_thread){ .name = "smp-tlb-main", .fn = unmapper,
					     .cpu = s->cpu_a, .policy = SCHED_OTHER };
	return smp_run_threads(s, tl.threads, s->remote + 1, NULL);
}

static void settings(struct smp *s, struct lab_json *j)
{
	lab_json_uint(j, "pages", s->pages);
	lab_json_uint(j, "page_size", tl.page);
	lab_json_int(j, "remote", s->remote);
	smp_json_ints(j, "remote_cpus", s->remote_cpus, s->remote);
	if (tl.have_count && tl.after >= tl.before) {
		lab_json_uint(j, "tlb_shootdowns_total", tl.after - tl.before);
		lab_json_double(j, "tlb_shootdowns_per_record",
				(double)(tl.after - tl.before) / (double)s->n, 4);
		lab_json_str(j, "tlb_count", "the TLB line of /proc/interrupts (shoot-downs "
			     "received), summed over CPUs, from before the first to after the last "
			     "timed record");
	} else {
		lab_json_null(j, "tlb_shootdowns_total");
		lab_json_null(j, "tlb_shootdowns_per_record");
		lab_json_str(j, "tlb_count", "not counted: /proc/interrupts has no TLB line");
	}
}

static void cleanup(struct smp *s)
{
	if (tl.base)
		munmap(tl.base, s->pages * tl.page + 2 * tl.page);
	free(tl.threads);
}

const struct smp_bench smp_bench_tlbflush = {
	.name = "tlbflush",
	.desc = "main thread on A, one on each --remote CPU touching --pages pages: munmap",
	.spans = spans,
	.nspans = 1,
	.flags = SMP_REMOTE | SMP_NO_LOCK_FUTURE,
	.prepare = prepare,
	.run = run,
	.settings = settings,
	.cleanup = cleanup,
};
