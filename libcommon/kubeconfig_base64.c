#include <stdlib.h>

#include "kubeconfig.h"

static const char b64_alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int
b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

rs_code
rs_base64_decode(const char *s, size_t n, char **out, size_t *len)
{
	unsigned long acc = 0;
	size_t i, o = 0;
	int bits = 0, pad = 0;
	char *buf;

	*out = NULL;
	*len = 0;
	buf = malloc(n / 4 * 3 + 4);
	if (buf == NULL)
		return RS_ENOMEM;
	for (i = 0; i < n; i++) {
		unsigned char c = s[i];
		int v;

		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (c == '=') {
			pad++;
			continue;
		}
		v = b64_value(c);
		/* Data after padding is as wrong as a foreign character. */
		if (v < 0 || pad > 0)
			goto bad;
		acc = (acc << 6) | (unsigned long)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			buf[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	/* A lone sextet cannot encode a byte. */
	if (bits >= 6 || pad > 2)
		goto bad;
	buf[o] = '\0';
	*out = buf;
	*len = o;
	return RS_OK;
bad:
	free(buf);
	return RS_EPARSE;
}

char *
rs_base64_encode(const void *p, size_t n)
{
	const unsigned char *in = p;
	char *out, *w;
	size_t i;

	out = malloc((n + 2) / 3 * 4 + 1);
	if (out == NULL)
		return NULL;
	w = out;
	for (i = 0; i + 2 < n; i += 3) {
		unsigned long v = (unsigned long)in[i] << 16 |
		    (unsigned long)in[i + 1] << 8 | in[i + 2];

		*w++ = b64_alphabet[v >> 18 & 63];
		*w++ = b64_alphabet[v >> 12 & 63];
		*w++ = b64_alphabet[v >> 6 & 63];
		*w++ = b64_alphabet[v & 63];
	}
	if (i < n) {
		unsigned long v = (unsigned long)in[i] << 16;

		if (i + 1 < n)
			v |= (unsigned long)in[i + 1] << 8;
		*w++ = b64_alphabet[v >> 18 & 63];
		*w++ = b64_alphabet[v >> 12 & 63];
		*w++ = i + 1 < n ? b64_alphabet[v >> 6 & 63] : '=';
		*w++ = '=';
	}
	*w = '\0';
	return out;
}
