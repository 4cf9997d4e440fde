/* selector.h: Kubernetes label selectors (k8s.io/apimachinery labels and
 * metav1.LabelSelectorAsSelector): build, match, render.
 *
 * A selector is an AND of requirements kept sorted by key (stable: equal
 * keys stay in input order, as Go's sort does for the small selectors seen
 * in practice). Values are kept sorted, so rendering needs no copy.
 *
 * Two selectors are special and must not be confused:
 *  - empty (labels.Everything): no requirement, matches every label set,
 *    renders as "". From "" parsed, a LabelSelector {} or a map {}.
 *  - nothing (labels.Nothing): matches no label set, also renders as "".
 *    From a NULL or JSON null LabelSelector or map.
 *    A caller listing objects must test rs_selector_is_nothing first:
 *    sending "labelSelector=" would list everything.
 *
 * Errors: RS_EPARSE (or RS_ENOMEM) with a one-line reason written to why
 * when why is not NULL, for example
 *   unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt
 * Keys must be qualified names (optional DNS-1123 subdomain prefix of at
 * most 253 characters and '/', then a name of at most 63 characters of
 * [A-Za-z0-9._-] that starts and ends alphanumeric); values at most 63
 * characters of the same set, starting and ending alphanumeric, or empty.
 * Only the first problem found is reported (upstream joins them all). */
#ifndef RS_SELECTOR_H
#define RS_SELECTOR_H

#include <stddef.h>
#include <cJSON.h>

#include "code.h"
#include "labels.h"

struct rs_selector;

/* The string form, exactly as labels.Parse reads it:
 *   a=b  a==b  a!=b  a in (x,y)  a notin (x)  a  !a  a>1  a<1
 * joined by ','; blanks are ' ', '\t', '\r', '\n'; "" is everything.
 * As upstream: "in"/"notin" are also valid keys and values, "a in ()" is
 * the set {""}, "(a,)" adds "", "a=" means a is "", values of in/notin
 * are a set (duplicates dropped), gt/lt take one decimal int64. */
rs_code rs_selector_parse(const char *s, struct rs_selector **out,
    char *why, size_t whylen);

/* A metav1.LabelSelector object ({matchLabels, matchExpressions}), as
 * LabelSelectorAsSelector: NULL or JSON null is nothing; no matchLabels and
 * no matchExpressions (absent, null, {} or []) is everything. Operators
 * are In, NotIn (values required), Exists, DoesNotExist (no values);
 * anything else is an error. Values are not deduplicated (nor are they
 * upstream; rendering shows each copy). */
rs_code rs_selector_from_label_selector(const cJSON *ls,
    struct rs_selector **out, char *why, size_t whylen);

/* A plain map of key to value, as a ReplicationController's spec.selector,
 * each pair an equality. Decided from upstream:
 *  - the RC manager converts the RC to a ReplicaSet: a nil map gives a
 *    nil LabelSelector, so NULL or JSON null here is nothing; a non-nil
 *    map gives a LabelSelector with those matchLabels, so {} is
 *    everything (as labels.SelectorFromSet({}) is too), and keys and
 *    values are validated (LabelSelectorAsSelector calls NewRequirement).
 *  - when finding the controllers of a pod, upstream skips a controller
 *    whose selector is empty ("a nil or empty selector should match
 *    nothing, not everything": GetPodControllers, GetPodReplicaSets).
 *    That rule belongs to the caller: test rs_selector_is_empty there.
 *  - the API server rejects an RC with an empty selector and defaults a
 *    missing one to the template labels, so {} is not seen in practice. */
rs_code rs_selector_from_map(const cJSON *map, struct rs_selector **out,
    char *why, size_t whylen);

/* 1 if the labels satisfy every requirement (NULL labels: no labels).
 * In, =, ==, Exists, gt, lt need the key; NotIn, != and DoesNotExist
 * match when the key is absent. Nothing matches nothing. */
int rs_selector_matches(const struct rs_selector *s,
    const struct rs_labels *l);

/* Everything: no requirement (Selector.Empty()). */
int rs_selector_is_empty(const struct rs_selector *s);
/* labels.Nothing(). */
int rs_selector_is_nothing(const struct rs_selector *s);

/* The canonical string (Selector.String()): requirements by key joined by
 * ',', values sorted and joined by ',', e.g. "a in (x,y),b!=c,!d". It
 * parses back to a selector that matches the same sets. Nothing and empty
 * both render as "". Not URL-encoded. *out is malloc'd. */
rs_code rs_selector_string(const struct rs_selector *s, char **out);

void rs_selector_free(struct rs_selector *s);

#endif
