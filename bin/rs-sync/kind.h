/* kind.h: what differs between the ReplicaSet controller and the
 * ReplicationController manager, which upstream runs on the same code. */
#ifndef RS_SYNC_KIND_H
#define RS_SYNC_KIND_H

struct kind {
	const char *kind;          /* ReplicaSet | ReplicationController */
	const char *api_version;   /* apps/v1 | v1 */
	const char *resource;      /* rs-watch's resource name */
	int map_selector;          /* spec.selector is a plain label map */
	int terminating;           /* status.terminatingReplicas is reported */
};

extern const struct kind kind_replicaset;
extern const struct kind kind_replicationcontroller;

#endif
