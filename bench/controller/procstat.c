/* procstat: CPU time and resident memory of a set of processes, summed, for
 * the controller benchmark (the four processes of our pipeline against the
 * one kube-controller-manager).
 *
 *   procstat [--interval MS] [--since-start] PID...
 *
 * Samples every MS milliseconds (default 100) until TERM or INT, or until
 * every PID has exited, then prints on stdout:
 *   cpu_s X        user + system CPU seconds the PIDs used while it ran
 *                  (a PID that exited counts with its last sample); with
 *                  --since-start, since each PID started, so that the
 *                  CPU of a start-up before the first sample counts too
 *   peak_rss_kb N  the largest sum of VmRSS over one sample
 *   hwm_kb N       the sum of each PID's VmHWM (its own peak since it
 *                  started) at its last sample
 *   peak_unique_kb N  the largest, over one sample, of the memory the PIDs
 *                  hold together: their anonymous pages (RssAnon, which
 *                  no two of them share) plus every file page resident in
 *                  any of them counted once (a shared library's pages are
 *                  one copy in memory, however many processes map it)
 *   samples N
 * preceded by one line per PID: "pid PID cpu_s X hwm_kb N".
 * /proc/PID/stat and /proc/PID/status are read directly: no process is
 * started per sample, so the sampler costs next to nothing. File pages are
 * found through /proc/PID/maps and /proc/PID/pagemap (present and
 * file-backed bits, which need no privilege), keyed by device, inode and
 * page offset. For one process the figure is its VmRSS. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "../procfs.h"

struct proc {
	int pid;
	int alive;
	unsigned long long ticks0, ticks;
	long rss_kb, hwm_kb, anon_kb;
};

/* A set of file pages: (device, inode, page offset), open addressing. */
struct fpage { uint64_t dev, ino, pgoff; };

static struct fpage *pages;
static size_t pages_cap, pages_len;

#define PRESENT (1ULL << 63)
#define FILE_PAGE (1ULL << 61)

static volatile sig_atomic_t stopping;

static void on_term(int sig) { (void)sig; stopping = 1; }

static void
pages_clear(void)
{
	if (pages != NULL)
		memset(pages, 0, pages_cap * sizeof *pages);
	pages_len = 0;
}

static size_t
pages_slot(const struct fpage *t, size_t cap, const struct fpage *k)
{
	uint64_t h = k->dev * 0x9e3779b97f4a7c15ULL ^ k->ino * 0xc2b2ae3d27d4eb4fULL ^
	    k->pgoff * 0x165667b19e3779f9ULL;
	size_t i = (size_t)(h ^ h >> 29) & (cap - 1);

	while (t[i].ino != 0 && (t[i].dev != k->dev || t[i].ino != k->ino ||
	    t[i].pgoff != k->pgoff))
		i = (i + 1) & (cap - 1);
	return i;
}

static void
pages_add(uint64_t dev, uint64_t ino, uint64_t pgoff)
{
	struct fpage k = { dev, ino, pgoff };
	size_t i;

	if (ino == 0)
		return;
	if (2 * (pages_len + 1) > pages_cap) {
		size_t cap = pages_cap ? 2 * pages_cap : 1 << 16;
		struct fpage *t = calloc(cap, sizeof *t);

		if (t == NULL)
			rs_fatal(111, "unable to allocate: %s", strerror(errno));
		for (size_t j = 0; j < pages_cap; j++)
			if (pages[j].ino != 0)
				t[pages_slot(t, cap, &pages[j])] = pages[j];
		free(pages);
		pages = t;
		pages_cap = cap;
	}
	i = pages_slot(pages, pages_cap, &k);
	if (pages[i].ino == 0) {
		pages[i] = k;
		pages_len++;
	}
}

/* Adds the resident file pages of one mapping. */
static void
map_pages(int pm, unsigned long start, unsigned long end,
    unsigned long long off, uint64_t dev, uint64_t ino, long psz)
{
	uint64_t buf[512];
	unsigned long va = start;

	while (va < end) {
		size_t n = (end - va) / (unsigned long)psz;
		ssize_t got;

		if (n > sizeof buf / sizeof buf[0])
			n = sizeof buf / sizeof buf[0];
		got = pread(pm, buf, n * sizeof buf[0],
		    (off_t)(va / (unsigned long)psz * sizeof buf[0]));
		if (got <= 0)
			return;
		n = (size_t)got / sizeof buf[0];
		for (size_t i = 0; i < n; i++)
			if ((buf[i] & (PRESENT | FILE_PAGE)) == (PRESENT | FILE_PAGE))
				pages_add(dev, ino, off / (unsigned long long)psz +
				    (va - start) / (unsigned long)psz + i);
		va += n * (unsigned long)psz;
	}
}

/* Adds every resident file page of pid to the set. */
static void
file_pages(int pid)
{
	char path[64], line[4096];
	long psz = sysconf(_SC_PAGESIZE);
	FILE *maps;
	int pm;

	snprintf(path, sizeof path, "/proc/%d/maps", pid);
	if ((maps = fopen(path, "re")) == NULL)
		return;
	snprintf(path, sizeof path, "/proc/%d/pagemap", pid);
	if ((pm = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		fclose(maps);
		return;
	}
	while (fgets(line, sizeof line, maps) != NULL) {
		unsigned long start, end, ino;
		unsigned long long off;
		unsigned int maj, min;

		if (sscanf(line, "%lx-%lx %*s %llx %x:%x %lu", &start, &end, &off,
		    &maj, &min, &ino) != 6 || ino == 0)
			continue;
		map_pages(pm, start, end, off, (uint64_t)maj << 32 | min, ino, psz);
	}
	close(pm);
	fclose(maps);
}

static int
sample(struct proc *p)
{
	char buf[4096];
	unsigned long long t;
	long rss, hwm;

	if (!p->alive)
		return 0;
	if (proc_ticks(p->pid, &t) < 0 ||
	    proc_read(p->pid, "status", buf, sizeof buf) <= 0 ||
	    (rss = proc_status_kb(buf, "\nVmRSS:")) < 0 ||
	    (hwm = proc_status_kb(buf, "\nVmHWM:")) < 0) {
		p->alive = 0;    /* exited, or a zombie without memory */
		p->rss_kb = 0;
		p->anon_kb = 0;
		return 0;
	}
	p->anon_kb = proc_status_kb(buf, "\nRssAnon:");
	p->ticks = t;
	p->rss_kb = rss;
	p->hwm_kb = hwm;
	return 1;
}

int
main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_term };
	struct timespec ts;
	struct proc *v;
	long interval = 100, peak = 0, samples = 0, hwm = 0, peak_unique = 0;
	long kb_per_page = sysconf(_SC_PAGESIZE) / 1024;
	unsigned long long ticks = 0;
	int i = 1, n, since_start = 0;

	rs_log_init(argv[0]);
	for (;;) {
		if (argc > i + 1 && strcmp(argv[i], "--interval") == 0) {
			interval = atol(argv[i + 1]);
			i += 2;
		} else if (argc > i && strcmp(argv[i], "--since-start") == 0) {
			since_start = 1;
			i++;
		} else
			break;
	}
	n = argc - i;
	if (n < 1 || interval < 1) {
		fputs("usage: procstat [--interval MS] [--since-start] PID...\n",
		    stderr);
		return 100;
	}
	v = calloc((size_t)n, sizeof *v);
	if (v == NULL)
		rs_fatal(111, "unable to allocate: %s", strerror(errno));
	for (int j = 0; j < n; j++) {
		v[j].pid = atoi(argv[i + j]);
		v[j].alive = 1;
		if (!sample(&v[j]))
			rs_fatal(111, "unable to read /proc/%d", v[j].pid);
		v[j].ticks0 = since_start ? 0 : v[j].ticks;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	ts.tv_sec = interval / 1000;
	ts.tv_nsec = (interval % 1000) * 1000000L;
	for (;;) {
		long rss = 0, unique = 0;
		int alive = 0;

		pages_clear();
		for (int j = 0; j < n; j++) {
			alive += sample(&v[j]);
			rss += v[j].rss_kb;
			if (v[j].alive) {
				unique += v[j].anon_kb > 0 ? v[j].anon_kb : 0;
				file_pages(v[j].pid);
			}
		}
		unique += (long)pages_len * kb_per_page;
		samples++;
		if (rss > peak)
			peak = rss;
		if (unique > peak_unique)
			peak_unique = unique;
		if (stopping || alive == 0)
			break;
		nanosleep(&ts, NULL);
	}
	for (int j = 0; j < n; j++) {
		ticks += v[j].ticks - v[j].ticks0;
		hwm += v[j].hwm_kb;
		printf("pid %d cpu_s %.2f hwm_kb %ld\n", v[j].pid,
		    (double)(v[j].ticks - v[j].ticks0) /
		    (double)sysconf(_SC_CLK_TCK), v[j].hwm_kb);
	}
	printf("cpu_s %.2f\npeak_rss_kb %ld\nhwm_kb %ld\npeak_unique_kb %ld\n"
	    "samples %ld\n", (double)ticks / (double)sysconf(_SC_CLK_TCK), peak,
	    hwm, peak_unique, samples);
	free(v);
	free(pages);
	return 0;
}
