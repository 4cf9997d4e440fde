#include "utf8.h"

size_t
rs_utf8_seq(const unsigned char *p, size_t len)
{
	unsigned c = p[0], min;
	size_t n, k;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 1; c &= 0x1f; min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 2; c &= 0x0f; min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 3; c &= 0x07; min = 0x10000;
	} else {
		return 0;
	}
	if (len <= n)
		return 0;
	for (k = 1; k <= n; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (p[k] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return n + 1;
}
