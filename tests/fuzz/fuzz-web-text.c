/* SPDX-License-Identifier: MIT */
/* fuzz-web-text: railmon serve's handling of a client's bytes (web/text.c,
   and basic_json_string_buf of basic/escape.c):
   a time parameter parses to a time in range or is refused, and any
   string becomes one JSON string: quoted, its quotes and backslashes
   escaped, no raw control character, valid UTF-8 (bytes that are not
   UTF-8 become U+FFFD). */
#include <assert.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/escape.h"
#include "basic/utf8.h"
#include "web/web-private.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An independent UTF-8 check (RFC 3629's shapes, without the overlong and
   surrogate finesse the encoder is not asked for). */
static void assert_utf8(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = s[i] < 0x80 ? 1 : (s[i] & 0xe0) == 0xc0 ? 2 : (s[i] & 0xf0) == 0xe0 ? 3 : (s[i] & 0xf8) == 0xf0 ? 4 : 0;

		assert(k && i + k <= n);
		for (size_t j = 1; j < k; j++)
			assert((s[i + j] & 0xc0) == 0x80);
		i += k;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), out[1024];
	double t;
	int n;

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (web_parse_time(s, &t) == 0)
		assert(isfinite(t) && t >= 946684800.0 && t <= 4102444800.0);
	n = basic_json_string_buf(s, out, sizeof(out));
	if (n >= 0) {
		assert((size_t)n == strlen(out) && n >= 2 && out[0] == '"' && out[n - 1] == '"');
		for (int i = 1; i < n - 1; i++) {
			assert((unsigned char)out[i] >= 0x20);
			if (out[i] == '\\')
				i++; /* the escaped character */
			else
				assert(out[i] != '"');
		}
		assert_utf8((const unsigned char *)out, (size_t)n);
	}
	free(s);
	return 0;
}
