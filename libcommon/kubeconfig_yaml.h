/* kubeconfig_yaml.h: a YAML document (kubeconfig, or JSON, which is YAML
 * too) read into a cJSON tree so the rest of the code walks one kind of
 * tree. Every scalar becomes a string, except plain null, ~ and the empty
 * plain scalar, which become JSON null; a reader interprets booleans itself
 * (rs_yaml_bool). Only the first document of a stream is read. */
#ifndef RS_KUBECONFIG_YAML_H
#define RS_KUBECONFIG_YAML_H

#include <stddef.h>
#include <cJSON.h>

#include "code.h"

/* Parses buf[0..len). On RS_EPARSE, err holds "line L column C: problem".
 * An empty document gives an empty object. Aliases are expanded with a
 * bound on depth and size, so a hostile file costs bounded memory. */
rs_code rs_yaml_to_json(const char *buf, size_t len, cJSON **out,
    char *err, size_t errlen);

/* 1 for true/True/TRUE/yes/on (a cJSON true too), 0 for anything else. */
int rs_yaml_bool(const cJSON *v);

#endif
