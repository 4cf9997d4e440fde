#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "clock.h"

int64_t
rs_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
rs_boot_id(char *out, size_t len)
{
	ssize_t n = -1;
	int fd;

	memset(out, 0, len);
	if ((fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY |
	    O_CLOEXEC)) >= 0) {
		n = read(fd, out, len - 1);
		close(fd);
	}
	if (n <= 0)
		memset(out, 0, len);
	else if (out[n - 1] == '\n')
		out[n - 1] = '\0';
}

double
rs_wall_now(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec + tv.tv_usec / 1e6;
}

int
rs_parse_rfc3339(const char *s, double *t)
{
	struct tm tm;
	double frac = 0;
	const char *p;
	int off = 0;

	memset(&tm, 0, sizeof tm);
	p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	if (p == NULL)
		return -1;
	if (*p == '.') {
		char *end;

		frac = strtod(p, &end);
		p = end;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int hh, mm;

		if (sscanf(p + 1, "%2d:%2d", &hh, &mm) != 2)
			return -1;
		off = (hh * 3600 + mm * 60) * (*p == '+' ? 1 : -1);
		p += 6;
	} else {
		return -1;
	}
	if (*p != '\0')
		return -1;
	*t = (double)timegm(&tm) - off + frac;
	return 0;
}

void
rs_format_rfc3339(double t, char *buf)
{
	time_t s = (time_t)t;
	struct tm tm;

	gmtime_r(&s, &tm);
	strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void
rs_format_rfc3339_micro(double t, char *buf)
{
	time_t s = (time_t)t;
	struct tm tm;
	char base[32];

	gmtime_r(&s, &tm);
	strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, 40, "%s.%06ldZ", base, (long)((t - (double)s) * 1e6));
}
