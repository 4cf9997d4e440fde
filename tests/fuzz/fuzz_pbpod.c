/* fuzz_pbpod: rs-watch's reading of a pod in protobuf (bin/rs-watch/pbpod.c,
 * libcommon/protobuf.c) and of a Status (rs_kstatus_from_pb). The input is
 * the pod's message, and the Status's.
 * Oracle: no crash, sanitizer report or leak; a pod read without error is
 * printed as JSON that the strict scanner accepts (rs-watch does not check
 * it again), trimmed or not. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "kube.h"
#include "linebuf.h"
#include "pbpod.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct linebuf b;
	struct rs_pbspan in = { data, size }, none = { NULL, 0 };
	struct rs_kstatus st;
	struct rs_jspan v;
	rs_code rc;

	for (int trim = 0; trim < 2; trim++) {
		b.len = 0;
		rc = pbpod_json(&b, in, none, none, trim);
		if (rc != RS_OK && rc != RS_EPARSE && rc != RS_ETOOBIG)
			abort();
		if (rc == RS_OK && rs_jscan_doc(b.p, b.len, &v, NULL) != RS_OK)
			abort();
	}
	memset(&st, 0, sizeof st);
	rs_kstatus_from_pb(&st, 0, in);
	rs_kstatus_clear(&st);
	return 0;
}
