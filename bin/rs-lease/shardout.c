/* shardout.c: the two files prog reads. The shard file says which
 * buckets the pipeline owns (read once, at its start); the fence file says
 * until when it may write for each (read before every write), so that a
 * partitioned instance stops writing before anyone may take its buckets. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fence.h"
#include "log.h"
#include "shardmode.h"
#include "shard.h"

/* Every slot 0 at the start (rs_fence_create): whatever an earlier run
 * left may not be trusted, its Leases are not ours any more. */
rs_code
shard_out_open(struct shard_out *o, const struct shard_opts *so)
{
	rs_code rc;

	memset(o, 0, sizeof *o);
	o->nbuckets = so->nbuckets;
	o->path = so->shard_file;
	if (so->fence == NULL)
		return RS_OK;
	if ((rc = rs_fence_create(so->fence, so->nbuckets, &o->fence)) != RS_OK)
		rs_error("unable to create the fence file %s: %s", so->fence,
		    rs_strerror(rc));
	return rc;
}

void
shard_out_fence(struct shard_out *o, unsigned i, int64_t until)
{
	if (o->fence != NULL && i < o->nbuckets)
		rs_fence_set(o->fence, i, until);
}

static rs_code
write_all(int fd, const char *s, size_t n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = write(fd, s, n)) < 0) {
			if (errno == EINTR)
				continue;
			return RS_EIO;
		}
		s += w;
		n -= (size_t)w;
	}
	return RS_OK;
}

static char *
file_text(const uint64_t *held, unsigned nb, unsigned long gen)
{
	size_t cap, len;
	char *sel, *t;
	unsigned i;
	int first = 1;

	/* No bucket has no selector: prog is not started then. */
	if (set_count(held) == 0)
		sel = strdup("");
	else if (rs_shard_selector(held, nb, &sel) != RS_OK)
		return NULL;
	if (sel == NULL)
		return NULL;
	cap = strlen(sel) + (size_t)nb * 5 + 128;
	if ((t = malloc(cap)) == NULL) {
		free(sel);
		return NULL;
	}
	len = (size_t)snprintf(t, cap, "{\"shards\":%u,\"held\":[", nb);
	for (i = 0; i < nb; i++)
		if (set_has(held, i)) {
			len += (size_t)snprintf(t + len, cap - len, "%s%u",
			    first ? "" : ",", i);
			first = 0;
		}
	/* The selector's only quotes are single ones: no escaping. */
	snprintf(t + len, cap - len,
	    "],\"selector\":\"%s\",\"generation\":%lu}\n", sel, gen);
	free(sel);
	return t;
}

rs_code
shard_out_file(const struct shard_out *o, const uint64_t *held,
    unsigned long generation)
{
	char tmp[4096], *t;
	rs_code rc;
	int fd;

	if (o->path == NULL)
		return RS_OK;
	if ((t = file_text(held, o->nbuckets, generation)) == NULL)
		return RS_ENOMEM;
	snprintf(tmp, sizeof tmp, "%s.tmp", o->path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	rc = fd < 0 ? RS_EIO : write_all(fd, t, strlen(t));
	free(t);
	if (fd >= 0 && (fchmod(fd, 0600) != 0 || fsync(fd) != 0))
		rc = RS_EIO;
	if (fd >= 0 && close(fd) != 0)
		rc = RS_EIO;
	if (rc == RS_OK && rename(tmp, o->path) != 0)
		rc = RS_EIO;
	if (rc != RS_OK)
		rs_error("unable to write the shard file %s: %s", o->path,
		    strerror(errno));
	return rc;
}
