/* procfs.h: what the benchmarks read of a process in /proc, read directly
 * (no process started per sample). Header-only: each bench tool is one
 * source file (the Makefile builds bench/NAME/TOOL.c into build/bench/TOOL). */
#ifndef RS_BENCH_PROCFS_H
#define RS_BENCH_PROCFS_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* /proc/PID/NAME into buf, NUL-terminated: its length, or -1. */
static inline ssize_t
proc_read(int pid, const char *name, char *buf, size_t len)
{
	char path[64];
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/%s", pid, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* utime + stime in clock ticks, fields 14 and 15 of /proc/PID/stat; the
 * command name (field 2) may hold spaces and parentheses, so fields are
 * counted from its last ')'. 0, or -1. */
static inline int
proc_ticks(int pid, unsigned long long *out)
{
	char buf[2048], *p;
	unsigned long long ut, st;

	if (proc_read(pid, "stat", buf, sizeof buf) <= 0 ||
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

/* A "Field:  N kB" line of /proc/PID/status text (field with its leading
 * newline, as "\nVmRSS:"): N, or -1. */
static inline long
proc_status_kb(const char *status, const char *field)
{
	const char *p = strstr(status, field);

	return p ? strtol(p + strlen(field), NULL, 10) : -1;
}

#endif
