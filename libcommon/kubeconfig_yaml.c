#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "kubeconfig_yaml.h"

/* Aliases may point at any earlier node, so "a: &a [*a]"-style loops and
 * exponential "billion laughs" expansions are cut off by these bounds: the
 * bytes bound too, since one alias of a long scalar copies it again. */
#define YAML_MAX_DEPTH 64
#define YAML_MAX_NODES 1000000
#define YAML_MAX_BYTES (64L << 20)

/* libyaml's scanner takes time quadratic in the depth of flow collections
 * (100,000 '[' cost minutes): a depth no kubeconfig has is refused before
 * it starts. Brackets inside quoted scalars count too: harmless at this
 * bound. */
#define YAML_MAX_FLOW 1000

struct conv {
	yaml_document_t *doc;
	long budget;
	long bytes;
	const char *why;
};

static cJSON *conv_node(struct conv *c, int index, int depth);

static cJSON *
conv_scalar(yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;
	size_t len = n->data.scalar.length;
	cJSON *s;
	char *copy;

	if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && (len == 0 ||
	    strcmp(v, "~") == 0 || strcasecmp(v, "null") == 0))
		return cJSON_CreateNull();
	/* A scalar may hold a NUL byte (a "\0" escape); keep what precedes. */
	copy = strndup(v, len);
	if (copy == NULL)
		return NULL;
	s = cJSON_CreateString(copy);
	free(copy);
	return s;
}

static cJSON *
conv_seq(struct conv *c, yaml_node_t *n, int depth)
{
	cJSON *a = cJSON_CreateArray();
	yaml_node_item_t *it;

	if (a == NULL)
		return NULL;
	for (it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++) {
		cJSON *v = conv_node(c, *it, depth + 1);

		if (v == NULL) {
			cJSON_Delete(a);
			return NULL;
		}
		cJSON_AddItemToArray(a, v);
	}
	return a;
}

static cJSON *
conv_map(struct conv *c, yaml_node_t *n, int depth)
{
	cJSON *o = cJSON_CreateObject();
	yaml_node_pair_t *p;

	if (o == NULL)
		return NULL;
	for (p = n->data.mapping.pairs.start;
	    p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
		cJSON *v;
		char *key;

		if (k == NULL || k->type != YAML_SCALAR_NODE) {
			c->why = "mapping key is not a scalar";
			goto fail;
		}
		key = strndup((const char *)k->data.scalar.value,
		    k->data.scalar.length);
		if (key == NULL)
			goto fail;
		v = conv_node(c, p->value, depth + 1);
		if (v == NULL) {
			free(key);
			goto fail;
		}
		cJSON_AddItemToObject(o, key, v);
		free(key);
	}
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

static cJSON *
conv_node(struct conv *c, int index, int depth)
{
	yaml_node_t *n = yaml_document_get_node(c->doc, index);

	if (n == NULL) {
		c->why = "dangling node";
		return NULL;
	}
	if (depth > YAML_MAX_DEPTH) {
		c->why = "nesting too deep";
		return NULL;
	}
	if (--c->budget < 0) {
		c->why = "too many nodes (alias expansion)";
		return NULL;
	}
	switch (n->type) {
	case YAML_SCALAR_NODE:
		c->bytes -= (long)n->data.scalar.length;
		if (c->bytes < 0) {
			c->why = "too large (alias expansion)";
			return NULL;
		}
		return conv_scalar(n);
	case YAML_SEQUENCE_NODE:
		return conv_seq(c, n, depth);
	case YAML_MAPPING_NODE:
		return conv_map(c, n, depth);
	default:
		c->why = "unknown node type";
		return NULL;
	}
}

static int
flow_too_deep(const char *buf, size_t len)
{
	long d = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (buf[i] == '[' || buf[i] == '{') {
			if (++d > YAML_MAX_FLOW)
				return 1;
		} else if ((buf[i] == ']' || buf[i] == '}') && d > 0) {
			d--;
		}
	}
	return 0;
}

rs_code
rs_yaml_to_json(const char *buf, size_t len, cJSON **out, char *err,
    size_t errlen)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	struct conv c;
	yaml_node_t *root;
	rs_code rc = RS_OK;

	*out = NULL;
	if (errlen)
		err[0] = '\0';
	if (flow_too_deep(buf, len)) {
		snprintf(err, errlen, "flow collections nested more than %d deep",
		    YAML_MAX_FLOW);
		return RS_EPARSE;
	}
	if (!yaml_parser_initialize(&parser))
		return RS_ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &doc)) {
		/* yaml_parser_delete zeroes the parser: read it first. */
		rc = parser.error == YAML_MEMORY_ERROR ? RS_ENOMEM : RS_EPARSE;
		snprintf(err, errlen, "line %zu column %zu: %s",
		    parser.problem_mark.line + 1,
		    parser.problem_mark.column + 1,
		    parser.problem ? parser.problem : "malformed YAML");
		yaml_parser_delete(&parser);
		return rc;
	}
	root = yaml_document_get_root_node(&doc);
	if (root == NULL) {
		*out = cJSON_CreateObject();
		rc = *out ? RS_OK : RS_ENOMEM;
		goto out;
	}
	c.doc = &doc;
	c.budget = YAML_MAX_NODES;
	c.bytes = YAML_MAX_BYTES;
	c.why = NULL;
	*out = conv_node(&c, 1, 0);
	if (*out == NULL) {
		snprintf(err, errlen, "%s", c.why ? c.why : "out of memory");
		rc = c.why ? RS_EPARSE : RS_ENOMEM;
	}
out:
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return rc;
}

int
rs_yaml_bool(const cJSON *v)
{
	static const char *const yes[] = { "true", "yes", "on" };
	size_t i;

	if (cJSON_IsTrue(v))
		return 1;
	if (!cJSON_IsString(v))
		return 0;
	for (i = 0; i < sizeof yes / sizeof yes[0]; i++)
		if (strcasecmp(v->valuestring, yes[i]) == 0)
			return 1;
	return 0;
}
