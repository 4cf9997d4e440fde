/* utf8.h: UTF-8 as RFC 3629 has it (what Go's encoder writes and the API
 * server sends): no overlong forms, no surrogates, nothing above U+10FFFF.
 * json.c checks texts with it before cJSON sees them, jscan.c the bytes of
 * strings. */
#ifndef RS_UTF8_H
#define RS_UTF8_H

#include <stddef.h>

/* The length (1 to 4) of the valid sequence that starts p[0..len), len >
 * 0; 0 when it is not one. */
size_t rs_utf8_seq(const unsigned char *p, size_t len);

#endif
