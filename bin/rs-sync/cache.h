/* cache.h: rs-sync's informer cache. It keeps, for pods, only what the
 * controller reads, and for controllers (ReplicaSets or
 * ReplicationControllers) the whole object, since status writes and pod
 * templates need it. Indexes make a sync cost what the controller owns plus
 * the orphans of its namespace:
 *   pods by key; pods by controllerRef UID; orphan pods by namespace;
 *   controllers by key; controllers by namespace; controllers by their own
 *   controllerRef UID (siblings under one Deployment, for ranking). */
#ifndef RS_SYNC_CACHE_H
#define RS_SYNC_CACHE_H

#include <stdint.h>
#include <cJSON.h>

#include "code.h"
#include "jscan.h"
#include "kind.h"
#include "labels.h"
#include "selector.h"
#include "strmap.h"

/* One malloc block per pod, the strings unique to it in its tail; the
 * values pods share are one copy each in the intern pool (intern.h). A
 * pod in the cache is in exactly one podlist: its controllerRef UID's in
 * owned when it has one, else its namespace's in orphans. */
struct pod {
	struct pod *next, *prev;       /* in its podlist */
	const char *ns;                /* shared */
	const char *name;              /* in key, after "ns/" */
	const char *uid, *rv;          /* in the tail, after key */
	const char *ctrl_kind, *ctrl_name, *ctrl_uid;  /* controllerRef, one
	                                  shared copy of the three, or NULL */
	const char *node;              /* spec.nodeName, "" when unassigned;
	                                  shared */
	const struct rs_labels *labels;  /* shared */
	double created;                /* creationTimestamp, 0 when absent */
	double ready_since;            /* Ready condition's lastTransitionTime */
	int32_t cost;                  /* controller.kubernetes.io/pod-deletion-cost */
	int32_t restarts;              /* max restartCount of its containers */
	int32_t sidecar_restarts;      /* same, of restartable init containers */
	uint8_t phase_rank;            /* Pending or other 0, Unknown 1, Running 2 */
	uint8_t terminal;              /* Succeeded or Failed */
	uint8_t ready;                 /* condition Ready is True */
	uint8_t deleted;               /* has a deletionTimestamp (its time is
	                                  never needed) */
	char key[];                    /* namespace/name, then uid and rv */
};

struct podlist {
	struct pod *head;
	size_t n;
	char id[];                     /* controller UID or namespace */
};

/* The counts a sync writes into a controller's status (calculateStatus),
 * in this order: status_count_name has their JSON names. */
enum status_count {
	SC_REPLICAS, SC_FULLY, SC_READY, SC_AVAILABLE, SC_TERMINATING,
	SC_OBSERVED, SC_N
};
extern const char *const status_count_name[SC_N];

/* Those counts as the cached status has them, read once when it is
 * decoded, so that a sync that would write the same status again finds
 * it out without a tree (status_unchanged). */
struct status_counts {
	long long v[SC_N];
	uint8_t present;               /* bit 1 << SC_x: the member is there */
	uint8_t plain;                 /* the status is an object whose counts
	                                  are whole numbers where present, no
	                                  member named twice, and conditions
	                                  a sync keeps as they are (none, or
	                                  a list without ReplicaFailure): only
	                                  then do the counts tell it all */
};

struct ctrl {
	struct ctrl *ns_next, *ns_prev;
	struct ctrl *sib_next, *sib_prev;
	const char *key, *ns, *name, *uid, *rv;
	const char *owner_uid;         /* its own controllerRef's UID, or NULL */
	long long generation;
	int deleting;                  /* has a deletionTimestamp */
	int32_t replicas;              /* spec.replicas (default 1) */
	int32_t min_ready;             /* spec.minReadySeconds */
	struct rs_selector *sel;       /* NULL when the selector is invalid */
	struct rs_labels *tmpl_labels; /* spec.template.metadata.labels */
	struct status_counts counts;   /* of the cached status */
	char *status;                  /* its status as printed, NULL: none
	                                  or not an object. Text, not a
	                                  tree: the tree took some 370 bytes
	                                  more (bench/sync/run, 10,000
	                                  ReplicaSets and no pod: 20.1 ->
	                                  16.4 MB; 17.0 with counts), and
	                                  only a sync that writes parses it */
	char *text;                    /* the rest, managedFields removed
	                                  (ctrl_strip): as a cJSON tree it
	                                  would take four times the memory,
	                                  and only a sync that writes reads it
	                                  (ctrl_template, status_object) */
	char strings[];
};

struct ctrl_group {                /* a list of controllers */
	struct ctrl *head;
	char id[];
};

struct cache {
	const struct kind *kind;
	struct rs_strmap pods;         /* key -> pod */
	struct rs_strmap owned;        /* controller UID -> podlist */
	struct rs_strmap orphans;      /* namespace -> podlist */
	struct rs_strmap ctrls;        /* key -> ctrl */
	struct rs_strmap ctrl_ns;      /* namespace -> ctrl_group */
	struct rs_strmap ctrl_sib;     /* owner UID -> ctrl_group */
};

/* The controller's spec.template, parsed anew (the caller owns it), NULL
 * when there is none: RS_OK, or RS_ENOMEM. */
rs_code ctrl_template(const struct ctrl *r, cJSON **out);

void cache_init(struct cache *c, const struct kind *k);
void cache_free(struct cache *c);

/* Decode an object from the API into a cache entry (not yet inserted).
 * RS_EPARSE with why filled for an object the controller cannot use.
 * A pod is read from its JSON text, buf's span obj, which rs_jscan has
 * validated (pod.c); pod_key gives the key alone ("namespace/name"),
 * RS_EPARSE without one, RS_ETOOBIG when keylen is too short. */
rs_code pod_decode(const char *buf, struct rs_jspan obj, struct pod **out,
    char *why, size_t len);
rs_code pod_key(const char *buf, struct rs_jspan obj, char *key,
    size_t keylen);
/* A controller is read the same way, but for the parts read by the rules
 * of trees (its status, selector, template labels), each parsed alone:
 * a tree of the whole object was a sixth of rs-sync's CPU in a storm of
 * status updates. ctrl_key gives the key (cut at keylen, as ctrl_decode
 * cuts it) and the UID (NULL when absent) alone; the UID lives until the
 * next decode. */
rs_code ctrl_decode(const struct kind *k, const char *buf,
    struct rs_jspan obj, struct ctrl **out, char *why, size_t len);
rs_code ctrl_key(const struct kind *k, const char *buf, struct rs_jspan obj,
    char *key, size_t keylen, const char **uid);
/* Copies the object obj (validated) to out, compact at the levels it
 * walks, without the first member named names[0] (its value in *dropped
 * when not NULL), and with the first member named names[1] copied by the
 * same rule with names + 2; names ends with NULL. out has room for obj's
 * text; the end of what was written is returned. A value that is no
 * object is copied as it is. */
char *ctrl_strip(char *out, const char *buf, struct rs_jspan obj,
    const char *const *names, struct rs_jspan *dropped);
void pod_free(struct pod *p);
void ctrl_free(struct ctrl *r);

/* Insert, replacing an entry with the same key; *old receives the one
 * replaced (caller frees it after the handlers compared old and new). */
rs_code cache_put_pod(struct cache *c, struct pod *p, struct pod **old);
struct pod *cache_del_pod(struct cache *c, const char *key);
rs_code cache_put_ctrl(struct cache *c, struct ctrl *r, struct ctrl **old);
struct ctrl *cache_del_ctrl(struct cache *c, const char *key);

struct pod *cache_pod(const struct cache *c, const char *key);
struct ctrl *cache_ctrl(const struct cache *c, const char *key);
struct ctrl *cache_ctrl_nsname(const struct cache *c, const char *ns,
    const char *name);
/* Pods whose controllerRef UID is uid; orphans of a namespace. */
const struct podlist *cache_owned(const struct cache *c, const char *uid);
const struct podlist *cache_orphans(const struct cache *c, const char *ns);
const struct ctrl_group *cache_ns_ctrls(const struct cache *c, const char *ns);
const struct ctrl_group *cache_siblings(const struct cache *c, const char *uid);

/* podutil.IsPodAvailable: ready, and ready for more than min_ready s. */
int pod_available(const struct pod *p, int32_t min_ready, double now);
/* controller.IsPodActive: not Succeeded/Failed, no deletionTimestamp. */
int pod_active(const struct pod *p);

#endif
