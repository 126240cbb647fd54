/* SPDX-License-Identifier: MIT */
/*
 * trace-text.c - what the text trace readers share (tokens, numbers, local
 * time) and the detection of a trace's format by its content (trace.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "candump.h"
#include "trace-fmt.h"
#include "spec.h"
#include "trace.h"
#include "basic/byteorder.h"
#include "basic/hex.h"

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\0';
}

size_t trace_tok_split(const char *line, size_t len, struct trace_tok *toks, size_t max)
{
	size_t n = 0, i = 0;

	while (i < len) {
		size_t s;

		while (i < len && is_blank(line[i]))
			i++;
		if (i == len)
			break;
		if (n == max)
			return max + 1;
		s = i;
		while (i < len && !is_blank(line[i]))
			i++;
		toks[n++] = (struct trace_tok){ line + s, i - s };
	}
	return n;
}

bool trace_tok_is(struct trace_tok t, const char *s)
{
	size_t n = strlen(s);

	if (t.n != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char a = t.p[i], b = s[i];

		if (a >= 'A' && a <= 'Z')
			a = (char)(a - 'A' + 'a');
		if (b >= 'A' && b <= 'Z')
			b = (char)(b - 'A' + 'a');
		if (a != b)
			return false;
	}
	return true;
}

bool trace_tok_uint(struct trace_tok t, unsigned base, uint32_t max, uint32_t *ret)
{
	uint64_t v = 0;

	if (t.n == 0 || t.n > 16)
		return false;
	for (size_t i = 0; i < t.n; i++) {
		int d = basic_hex_digit(t.p[i]);

		if (d < 0 || d >= (int)base)
			return false;
		v = v * base + (unsigned)d;
		if (v > max)
			return false;
	}
	*ret = (uint32_t)v;
	return true;
}

bool trace_tok_time_ns(struct trace_tok t, int scale_exp, int64_t *ret_ns)
{
	int64_t ip = 0, frac = 0, scale = 1;
	size_t i = 0;
	int nfrac = 0, nint = 0;

	for (int k = 0; k < scale_exp; k++)
		scale *= 10;
	while (i < t.n && t.p[i] >= '0' && t.p[i] <= '9' && nint < 12) {
		ip = ip * 10 + (t.p[i++] - '0');
		nint++;
	}
	if (nint == 0)
		return false;
	if (i < t.n && t.p[i] == '.') {
		i++;
		while (i < t.n && t.p[i] >= '0' && t.p[i] <= '9') {
			if (nfrac < scale_exp) {
				frac = frac * 10 + (t.p[i] - '0');
				nfrac++;
			} else if (t.p[i] != '0') {
				return false; /* finer than a nanosecond */
			}
			i++;
		}
	}
	/* at most a quarter of int64's range: a start plus an offset never
	   overflows (73 years of nanoseconds) */
	if (i != t.n || ip > INT64_MAX / 4 / scale - 1)
		return false;
	for (int k = nfrac; k < scale_exp; k++)
		frac *= 10;
	*ret_ns = ip * scale + frac;
	return true;
}

int64_t trace_local_ns(int year, int mon, int day, int hour, int min, int sec, int msec)
{
	struct tm tm = { .tm_year = year - 1900, .tm_mon = mon - 1, .tm_mday = day, .tm_hour = hour,
	                 .tm_min = min, .tm_sec = sec, .tm_isdst = -1 };
	time_t t;

	/* years 1970 to 2116: half of int64's nanoseconds, so a start plus
	   an offset (trace_tok_time_ns) stays in range */
	if (year < 1970 || year > 2116)
		return 0;
	t = mktime(&tm);
	if (t == (time_t)-1 || t < 0 || (int64_t)t > INT64_MAX / 2 / 1000000000 - 1)
		return 0;
	return (int64_t)t * 1000000000 + (int64_t)msec * 1000000;
}

/* ---- detection ---- */

static bool starts_with_ci(const char *s, size_t len, const char *pre)
{
	size_t n = strlen(pre);

	return len >= n && trace_tok_is((struct trace_tok){ s, n }, pre);
}

/* A line only one format has, or UNKNOWN (comments, garbage). */
static enum trace_format line_format(const char *s, size_t len)
{
	struct trace_tok tok[4];
	struct acq_item it;
	int64_t ns;
	size_t n;

	while (len && is_blank(*s))
		s++, len--;
	if (starts_with_ci(s, len, ";$FILEVERSION"))
		return TRACE_TRC;
	if (starts_with_ci(s, len, "date ") || starts_with_ci(s, len, "base hex") ||
	    starts_with_ci(s, len, "base dec") || starts_with_ci(s, len, "begin triggerblock"))
		return TRACE_ASC;
	if (len && s[0] == '(')
		return trace_candump_parse(s, len, &it, NULL, 0) == 0 ? TRACE_CANDUMP : TRACE_UNKNOWN;
	n = trace_tok_split(s, len, tok, 4);
	if (n >= 3 && tok[0].n > 1 && tok[0].p[tok[0].n - 1] == ')' &&
	    trace_tok_uint((struct trace_tok){ tok[0].p, tok[0].n - 1 }, 10, UINT32_MAX, &(uint32_t){ 0 }) &&
	    trace_tok_time_ns(tok[1], 6, &ns))
		return TRACE_TRC; /* "   1)      1841.0 ..." of TRC 1.x */
	/* an ASC event line without a header: "0.001234 1 123 Rx d ..." */
	if (n >= 3 && trace_tok_time_ns(tok[0], 9, &ns) &&
	    ((n >= 4 && trace_tok_is(tok[1], "CANFD")) ||
	     (trace_tok_uint(tok[1], 10, 255, &(uint32_t){ 0 }) &&
	      (trace_tok_is(tok[2], "ErrorFrame") ||
	       (n >= 4 && (trace_tok_is(tok[3], "Rx") || trace_tok_is(tok[3], "Tx")))))))
		return TRACE_ASC;
	return TRACE_UNKNOWN;
}

enum trace_format trace_format_detect(const void *head, size_t len)
{
	const char *s = head, *end = s + len;
	bool blank = true;

	if (len >= 4 && memcmp(s, "LOGG", 4) == 0)
		return TRACE_BLF;
	if (len >= 4) {
		const unsigned char *u = head;
		uint32_t be = basic_get_be32(u), le = basic_get_le32(u);

		if (be == TRACE_PCAP_MAGIC_US || le == TRACE_PCAP_MAGIC_US || be == TRACE_PCAP_MAGIC_NS ||
		    le == TRACE_PCAP_MAGIC_NS)
			return TRACE_PCAP;
		/* the SHB type alone could start a text line ("\n\r\r\n"): the
		   byte-order magic at offset 8 makes it sure */
		if (be == TRACE_PCAPNG_SHB && len >= 12) {
			const unsigned char *m = u + 8;

			be = basic_get_be32(m);
			le = basic_get_le32(m);
			if (be == TRACE_PCAPNG_BOM || le == TRACE_PCAPNG_BOM)
				return TRACE_PCAPNG;
		}
	}
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
		enum trace_format f = line_format(s, n);

		if (f != TRACE_UNKNOWN)
			return f;
		for (size_t i = 0; i < n && blank; i++)
			blank = is_blank(s[i]);
		s += n + (nl != NULL);
	}
	return blank ? TRACE_EMPTY : TRACE_UNKNOWN;
}

/* gzread reads a file that is not gzip as it is: one path for .asc and
   .asc.gz, as the trace driver reads them. */
int trace_format_detect_file(const char *path, enum trace_format *ret_fmt)
{
	char *buf;
	size_t fill = 0;
	gzFile gz;
	int fd, r = 0;

	if (!path || !ret_fmt)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	gz = gzdopen(fd, "rb");
	if (!gz) {
		close(fd);
		return -ENOMEM;
	}
	buf = malloc(TRACE_DETECT_LEN);
	while (buf && fill < TRACE_DETECT_LEN) {
		int n = gzread(gz, buf + fill, (unsigned)(TRACE_DETECT_LEN - fill));

		if (n < 0) {
			int e = 0;

			gzerror(gz, &e);
			/* damaged gzip data: what came before still tells */
			r = e == Z_ERRNO ? -(errno ? errno : EIO) : 0;
		}
		if (n <= 0)
			break;
		fill += (size_t)n;
	}
	gzclose(gz);
	if (!buf)
		return -ENOMEM;
	if (r == 0) {
		*ret_fmt = trace_format_detect(buf, fill);
		r = *ret_fmt == TRACE_UNKNOWN ? -EMEDIUMTYPE : 0;
	}
	free(buf);
	return r;
}

const char *trace_format_name(enum trace_format fmt)
{
	switch (fmt) {
	case TRACE_EMPTY: return "empty";
	case TRACE_CANDUMP: return "candump";
	case TRACE_ASC: return "Vector ASC";
	case TRACE_BLF: return "Vector BLF";
	case TRACE_TRC: return "PEAK TRC";
	case TRACE_PCAP: return "pcap";
	case TRACE_PCAPNG: return "pcapng";
	default: return "unknown";
	}
}
