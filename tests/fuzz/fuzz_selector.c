/* fuzz_selector: libcommon/selector.c. The first byte picks the entry:
 *   'J' the rest is a metav1.LabelSelector as JSON (from_label_selector),
 *   'M' the rest is a JSON map (from_map), anything else: the string form.
 * Oracle: no crash, sanitizer report or leak; a selector that parses
 * renders a string that parses again into a selector rendering the same
 * string (Selector.String() is canonical), and the two agree on matching a
 * label set made from the input. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "labels.h"
#include "selector.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A label set from the input's printable words, "k=v" pairs. */
static struct rs_labels *
some_labels(const char *s)
{
	cJSON *o = cJSON_CreateObject();
	struct rs_labels *l = NULL;
	char k[64], v[64];
	int n = 0;

	while (o && *s && n < 8) {
		size_t kl = strcspn(s, "=, ()!\t\n"), vl;

		if (s[kl] != '=' || kl == 0 || kl >= sizeof k) {
			s += kl + (s[kl] != '\0');
			continue;
		}
		memcpy(k, s, kl);
		k[kl] = '\0';
		s += kl + 1;
		vl = strcspn(s, ", ()!\t\n");
		if (vl >= sizeof v)
			vl = sizeof v - 1;
		memcpy(v, s, vl);
		v[vl] = '\0';
		s += vl;
		cJSON_AddStringToObject(o, k, v);
		n++;
	}
	if (o)
		rs_labels_from_json(o, &l, NULL, 0);
	cJSON_Delete(o);
	return l;
}

static void
roundtrip(struct rs_selector *sel, const char *input)
{
	struct rs_selector *again = NULL;
	struct rs_labels *l;
	char *s1 = NULL, *s2 = NULL, why[256];

	if (rs_selector_string(sel, &s1) != RS_OK)
		return;   /* out of memory */
	if (rs_selector_is_nothing(sel)) {
		if (*s1 != '\0')
			abort();
		free(s1);
		return;
	}
	if (rs_selector_parse(s1, &again, why, sizeof why) != RS_OK)
		abort();   /* the canonical form must parse */
	if (rs_selector_string(again, &s2) != RS_OK)
		abort();
	if (strcmp(s1, s2) != 0)
		abort();
	l = some_labels(input);
	if (rs_selector_matches(sel, l) != rs_selector_matches(again, l))
		abort();
	rs_labels_free(l);
	rs_selector_free(again);
	free(s1);
	free(s2);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rs_selector *sel = NULL;
	char *buf, why[256];
	cJSON *j = NULL;
	rs_code rc;

	if ((buf = malloc(size + 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (size > 0 && (buf[0] == 'J' || buf[0] == 'M')) {
		if (rs_json_parse(buf + 1, size - 1, &j, NULL) == RS_OK) {
			rc = buf[0] == 'J' ?
			    rs_selector_from_label_selector(j, &sel, why,
			    sizeof why) :
			    rs_selector_from_map(j, &sel, why, sizeof why);
			if (rc == RS_OK)
				roundtrip(sel, buf);
			else if (rc == RS_EPARSE && why[0] == '\0')
				abort();   /* an error needs a reason */
		}
	} else if (strlen(buf) == size) {
		rc = rs_selector_parse(buf, &sel, why, sizeof why);
		if (rc == RS_OK)
			roundtrip(sel, buf);
		else if (rc == RS_EPARSE && why[0] == '\0')
			abort();
	}
	rs_selector_free(sel);
	cJSON_Delete(j);
	free(buf);
	return 0;
}
