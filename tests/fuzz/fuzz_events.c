/* fuzz_events: rs-sync's event decoder and handlers on a fresh cache.
 * The input is an event stream (NDJSON, as rs-watch writes it): every line
 * goes through handle_event, then every controller left in the cache is
 * reconciled, so the decoders, the handlers, the indexes, the ranking and
 * the status code all see what the fuzzer makes. Intents go to /dev/null;
 * the expectations file is one per process, reset before every input.
 * Oracle: no crash, no sanitizer report, no leak (cache_free frees all). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "handlers.h"
#include "log.h"
#include "reconcile.h"
#include "sync.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* main.c's two helpers, which the fuzz target replaces: a fixed clock and
 * a queue that counts. */
static unsigned long enqueued;

double
sync_now(const struct sync *s)
{
	return s->fixed_now;
}

void
sync_enqueue(struct sync *s, const char *key, double after)
{
	(void)s;
	(void)key;
	(void)after;
	enqueued++;
}

static struct rs_exp *exp_file;
static struct rs_line_writer out;

static void
setup(void)
{
	char path[] = "/tmp/rs-fuzz-events.XXXXXX";
	char file[64];

	rs_log_init("fuzz_events");
	rs_log_set_verbosity(getenv("FUZZ_VERBOSE") ? 10 : 0);
	if (mkdtemp(path) == NULL)
		abort();
	snprintf(file, sizeof file, "%s/expectations", path);
	if (rs_exp_open(file, &(struct rs_exp_opts){ .map_size = 4 << 20 },
	    &exp_file) != RS_OK)
		abort();
	/* the files stay open and mapped; their names can go now */
	unlink(file);
	snprintf(file, sizeof file, "%s/expectations-lock", path);
	unlink(file);
	rmdir(path);
	if (rs_line_writer_init(&out, open("/dev/null", O_WRONLY | O_CLOEXEC),
	    1 << 16) != RS_OK)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	struct sync s;
	char *buf, *line, *nl, *end;
	size_t i = 0;
	const char *key;

	if (!ready) {
		setup();
		ready = 1;
	}
	if ((buf = malloc(size + 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	memset(&s, 0, sizeof s);
	cache_init(&s.cache, (size > 0 && data[0] == 'R') ?
	    &kind_replicationcontroller : &kind_replicaset);
	s.kind = s.cache.kind;
	s.exp = exp_file;
	s.out = &out;
	s.burst_replicas = 500;
	s.terminating = 1;
	s.fixed_now = 1767225600.0;   /* 2026-01-01T00:00:00Z */
	rs_exp_reset(exp_file);
	end = buf + size;
	for (line = buf; line < end; line = nl + 1) {
		nl = memchr(line, '\n', end - line);
		if (nl == NULL)
			nl = end;
		if (nl > line)
			handle_event(&s, line, nl - line);
	}
	while (rs_strmap_next(&s.cache.ctrls, &i, &key, NULL))
		reconcile(&s, key);
	out.len = 0;   /* intents are thrown away */
	cache_free(&s.cache);
	pending_free(&s.pending);
	free(buf);
	return 0;
}
