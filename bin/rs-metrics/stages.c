/* stages.c: the stats files of the stages, $RS_STATE_DIR/stats/<stage>.json
 * (libcommon/stagestats.c writes them). Files starting with a dot are the
 * writers' temporary files; anything not named <stage>.json is ignored. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "json.h"
#include "log.h"
#include "rsm.h"

#define FILE_MAX (4 << 20)

static int
stage_name(const char *file, char *name, size_t len)
{
	size_t n = strlen(file);

	if (file[0] == '.' || n <= 5 || n - 5 >= len ||
	    strcmp(file + n - 5, ".json") != 0)
		return 0;
	memcpy(name, file, n - 5);
	name[n - 5] = '\0';
	return 1;
}

static void
load_one(int dfd, const char *file, struct rsm_stage *s)
{
	struct stat sb;
	char *buf = NULL;
	ssize_t n;
	size_t where;
	const char *stage;
	int fd;

	fd = openat(dfd, file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &sb) < 0) {
		snprintf(s->err, sizeof s->err, "%s", strerror(errno));
		goto out;
	}
	s->age = rs_wall_now() - ((double)sb.st_mtim.tv_sec +
	    sb.st_mtim.tv_nsec / 1e9);
	if (!S_ISREG(sb.st_mode) || sb.st_size > FILE_MAX) {
		snprintf(s->err, sizeof s->err, "not a regular file of at most "
		    "%d bytes", FILE_MAX);
		goto out;
	}
	if ((buf = malloc((size_t)sb.st_size + 1)) == NULL) {
		snprintf(s->err, sizeof s->err, "out of memory");
		goto out;
	}
	/* the file is replaced, never rewritten in place: one read */
	n = read(fd, buf, (size_t)sb.st_size);
	if (n < 0) {
		snprintf(s->err, sizeof s->err, "%s", strerror(errno));
		goto out;
	}
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	if (rs_json_parse(buf, (size_t)n, &s->json, &where) != RS_OK) {
		snprintf(s->err, sizeof s->err, "not JSON (byte %zu)", where);
		goto out;
	}
	stage = rs_json_str(s->json, "stage", NULL);
	if (stage == NULL || strcmp(stage, s->name) != 0 ||
	    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(s->json,
	    "families"))) {
		snprintf(s->err, sizeof s->err, "not the stats of stage %s",
		    s->name);
		cJSON_Delete(s->json);
		s->json = NULL;
	}
out:
	free(buf);
	if (fd >= 0)
		close(fd);
}

static int
by_name(const void *a, const void *b)
{
	return strcmp(((const struct rsm_stage *)a)->name,
	    ((const struct rsm_stage *)b)->name);
}

void
rsm_stages_load(const char *dir, struct rsm_stages *out)
{
	struct rsm_stage *v, *nv;
	struct dirent *d;
	size_t n = 0, cap = 0;
	DIR *dp;

	out->v = NULL;
	out->n = 0;
	if ((dp = opendir(dir)) == NULL) {
		if (errno != ENOENT)
			rs_warn("unable to read %s: %s", dir, strerror(errno));
		return;
	}
	v = NULL;
	while ((d = readdir(dp)) != NULL) {
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			if ((nv = realloc(v, cap * sizeof *v)) == NULL)
				break;
			v = nv;
		}
		memset(&v[n], 0, sizeof v[n]);
		if (!stage_name(d->d_name, v[n].name, sizeof v[n].name))
			continue;
		load_one(dirfd(dp), d->d_name, &v[n]);
		n++;
	}
	closedir(dp);
	if (n > 1)
		qsort(v, n, sizeof *v, by_name);
	out->v = v;
	out->n = n;
}

void
rsm_stages_free(struct rsm_stages *s)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		cJSON_Delete(s->v[i].json);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

const struct rsm_stage *
rsm_stage_find(const struct rsm_stages *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->v[i].name, name) == 0)
			return &s->v[i];
	return NULL;
}
