/* procstat: CPU time and resident memory of a set of processes, summed, for
 * the controller benchmark (the four processes of our pipeline against the
 * one kube-controller-manager).
 *
 *   procstat [--interval MS] PID...
 *
 * Samples every MS milliseconds (default 100) until TERM or INT, or until
 * every PID has exited, then prints on stdout:
 *   cpu_s X        user + system CPU seconds the PIDs used while it ran
 *                  (a PID that exited counts with its last sample)
 *   peak_rss_kb N  the largest sum of VmRSS over one sample
 *   hwm_kb N       the sum of each PID's VmHWM (its own peak since it
 *                  started) at its last sample
 *   samples N
 * preceded by one line per PID: "pid PID cpu_s X hwm_kb N".
 * /proc/PID/stat and /proc/PID/status are read directly: no process is
 * started per sample, so the sampler costs next to nothing. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

struct proc {
	int pid;
	int alive;
	unsigned long long ticks0, ticks;
	long rss_kb, hwm_kb;
};

static volatile sig_atomic_t stopping;

static void on_term(int sig) { (void)sig; stopping = 1; }

static ssize_t
read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* utime + stime, fields 14 and 15; the command name (field 2) may hold
 * spaces and parentheses, so fields are counted from its last ')'. */
static int
read_ticks(int pid, unsigned long long *out)
{
	char path[64], buf[2048], *p;
	unsigned long long ut, st;

	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	if (read_file(path, buf, sizeof buf) <= 0 ||
	    (p = strrchr(buf, ')')) == NULL)
		return -1;
	/* after ") ": state(3) ppid pgrp session tty tpgid flags minflt
	 * cminflt majflt cmajflt utime(14) stime(15) */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
	    &ut, &st) != 2)
		return -1;
	*out = ut + st;
	return 0;
}

static long
status_kb(const char *buf, const char *field)
{
	const char *p = strstr(buf, field);

	return p ? strtol(p + strlen(field), NULL, 10) : -1;
}

static int
sample(struct proc *p)
{
	char path[64], buf[4096];
	unsigned long long t;
	long rss, hwm;

	if (!p->alive)
		return 0;
	snprintf(path, sizeof path, "/proc/%d/status", p->pid);
	if (read_ticks(p->pid, &t) < 0 || read_file(path, buf, sizeof buf) <= 0 ||
	    (rss = status_kb(buf, "\nVmRSS:")) < 0 ||
	    (hwm = status_kb(buf, "\nVmHWM:")) < 0) {
		p->alive = 0;    /* exited, or a zombie without memory */
		p->rss_kb = 0;
		return 0;
	}
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
	long interval = 100, peak = 0, samples = 0, hwm = 0;
	unsigned long long ticks = 0;
	int i = 1, n;

	rs_log_init(argv[0]);
	if (argc > 2 && strcmp(argv[1], "--interval") == 0) {
		interval = atol(argv[2]);
		i = 3;
	}
	n = argc - i;
	if (n < 1 || interval < 1) {
		fputs("usage: procstat [--interval MS] PID...\n", stderr);
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
		v[j].ticks0 = v[j].ticks;
	}
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	ts.tv_sec = interval / 1000;
	ts.tv_nsec = (interval % 1000) * 1000000L;
	for (;;) {
		long rss = 0;
		int alive = 0;

		for (int j = 0; j < n; j++) {
			alive += sample(&v[j]);
			rss += v[j].rss_kb;
		}
		samples++;
		if (rss > peak)
			peak = rss;
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
	printf("cpu_s %.2f\npeak_rss_kb %ld\nhwm_kb %ld\nsamples %ld\n",
	    (double)ticks / (double)sysconf(_SC_CLK_TCK), peak, hwm, samples);
	free(v);
	return 0;
}
