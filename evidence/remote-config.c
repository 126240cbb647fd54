/* SPDX-License-Identifier: MIT */
/* remote-config.c - the signed configuration message (remote-config.h,
   docs/remote-config.md): its encoder, parser and verifier. */
#include <errno.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "remote-config.h"
#include "basic/name.h"

/* The fixed part: magic, version, vehicle length, file count. */
#define RCONF_HEAD_MIN (EVD_RCONF_MAGIC_LEN + 8 + 1 + 1)

static void why_set(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void why_set(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!why || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

void evd_rconf_hash(const void *data, size_t len, uint8_t ret[EVD_HASH_LEN])
{
	crypto_generichash(ret, EVD_HASH_LEN, data, len, NULL, 0);
}

/* A file name the vehicle may write below its board file's directory: no
   absolute path, no ".." level, no empty level, no NUL or control byte,
   no backslash (one meaning on every system). */
static bool name_ok(const char *s, size_t n)
{
	size_t level = 0;

	if (!n || n > EVD_RCONF_NAME_MAX || s[0] == '/')
		return false;
	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == '/') {
			if (level == 0 || (level == 2 && s[i - 1] == '.' && s[i - 2] == '.') ||
			    (level == 1 && s[i - 1] == '.'))
				return false;
			level = 0;
			continue;
		}
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || s[i] == '\\')
			return false;
		level++;
	}
	return true;
}

/* ------------------------------------------------------------- encode */

static void put_le(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Bytes of m before the signature; 0 when a field is out of range. */
static size_t encoded_len(const struct evd_rconf *m)
{
	size_t n = RCONF_HEAD_MIN + strlen(m->vehicle);

	if (!m->nfiles || m->nfiles > EVD_RCONF_FILES_MAX || !m->version || !basic_vehicle_name_ok(m->vehicle) ||
	    m->files[0].kind != EVD_RCONF_CONTENT)
		return 0;
	for (size_t i = 0; i < m->nfiles; i++) {
		const struct evd_rconf_file *f = &m->files[i];

		if (!f->name || !name_ok(f->name, strlen(f->name)) || f->kind >= EVD_RCONF_KIND_MAX ||
		    (f->kind == EVD_RCONF_CONTENT && ((!f->data && f->len) || f->len > EVD_RCONF_MAX)))
			return 0;
		n += 2 + strlen(f->name) + (f->kind == EVD_RCONF_CONTENT ? 4 + f->len : EVD_HASH_LEN);
	}
	return n;
}

int evd_rconf_encode(const struct evd_rconf *m, const uint8_t secret[EVD_SECRET_LEN], uint8_t **ret_buf,
                     size_t *ret_len)
{
	size_t n, vlen, at;
	uint8_t *buf;

	if (!m || !secret || !ret_buf || !ret_len || !(n = encoded_len(m)))
		return -EINVAL;
	if (n > EVD_RCONF_MAX - EVD_RCONF_SIG_LEN)
		return -EMSGSIZE;
	buf = malloc(n + EVD_RCONF_SIG_LEN);
	if (!buf)
		return -ENOMEM;
	vlen = strlen(m->vehicle);
	memcpy(buf, EVD_RCONF_MAGIC, EVD_RCONF_MAGIC_LEN);
	put_le(buf + 8, m->version, 8);
	buf[16] = (uint8_t)vlen;
	memcpy(buf + 17, m->vehicle, vlen);
	at = 17 + vlen;
	buf[at++] = (uint8_t)m->nfiles;
	for (size_t i = 0; i < m->nfiles; i++) {
		const struct evd_rconf_file *f = &m->files[i];
		size_t nl = strlen(f->name);

		buf[at++] = (uint8_t)f->kind;
		buf[at++] = (uint8_t)nl;
		memcpy(buf + at, f->name, nl);
		at += nl;
		if (f->kind == EVD_RCONF_CONTENT) {
			put_le(buf + at, f->len, 4);
			if (f->len)
				memcpy(buf + at + 4, f->data, f->len);
			at += 4 + f->len;
		} else {
			memcpy(buf + at, f->hash, EVD_HASH_LEN);
			at += EVD_HASH_LEN;
		}
	}
	crypto_sign_detached(buf + at, NULL, buf, (unsigned long long)at, secret);
	*ret_buf = buf;
	*ret_len = at + EVD_RCONF_SIG_LEN;
	return 0;
}

/* -------------------------------------------------------------- parse */

/* One file entry at p[*at..end); 0 or -EBADMSG with why. */
static int parse_file(const uint8_t *p, size_t *at, size_t end, size_t i, struct evd_rconf *m, char *why,
                      size_t whylen)
{
	struct evd_rconf_file *f = &m->files[i];
	size_t nl, len;

	if (end - *at < 2)
		goto truncated;
	f->kind = p[*at];
	nl = p[*at + 1];
	*at += 2;
	if (f->kind >= EVD_RCONF_KIND_MAX) {
		why_set(why, whylen, "file %zu: unknown kind %u (0 content, 1 content hash)", i + 1, (unsigned)f->kind);
		return -EBADMSG;
	}
	if (end - *at < nl)
		goto truncated;
	if (!name_ok((const char *)p + *at, nl)) {
		why_set(why, whylen, "file %zu: its name is not a relative path below the board file's directory",
		        i + 1);
		return -EBADMSG;
	}
	memcpy(m->name_buf[i], p + *at, nl);
	m->name_buf[i][nl] = 0;
	f->name = m->name_buf[i];
	*at += nl;
	if (f->kind == EVD_RCONF_HASH) {
		if (end - *at < EVD_HASH_LEN)
			goto truncated;
		memcpy(f->hash, p + *at, EVD_HASH_LEN);
		f->data = NULL;
		f->len = 0;
		*at += EVD_HASH_LEN;
		return 0;
	}
	if (end - *at < 4)
		goto truncated;
	len = (size_t)get_le(p + *at, 4);
	*at += 4;
	if (end - *at < len)
		goto truncated;
	f->data = p + *at;
	f->len = len;
	*at += len;
	return 0;
truncated:
	why_set(why, whylen, "truncated: file %zu's entry runs past the end of the message", i + 1);
	return -EBADMSG;
}

/* The fields into *ret, which is left partly written on an error. */
static int parse_into(const uint8_t *p, size_t len, struct evd_rconf *ret, char *why, size_t whylen)
{
	size_t vlen, at, end;
	int r;

	if (len > EVD_RCONF_MAX) {
		why_set(why, whylen, "too large: %zu bytes, at most %u", len, EVD_RCONF_MAX);
		return -EMSGSIZE;
	}
	if (len < EVD_RCONF_MAGIC_LEN || memcmp(p, EVD_RCONF_MAGIC, EVD_RCONF_MAGIC_LEN)) {
		why_set(why, whylen, "not a railmon configuration message (no %s at its start)", EVD_RCONF_MAGIC);
		return -EBADMSG;
	}
	if (len < RCONF_HEAD_MIN + EVD_RCONF_SIG_LEN) {
		why_set(why, whylen, "truncated: %zu bytes, shorter than its fixed fields and signature", len);
		return -EBADMSG;
	}
	memset(ret, 0, sizeof(*ret));
	end = len - EVD_RCONF_SIG_LEN;
	ret->version = get_le(p + 8, 8);
	vlen = p[16];
	if (vlen > EVD_RCONF_VEHICLE_MAX || 17 + vlen + 1 > end) {
		why_set(why, whylen, vlen > EVD_RCONF_VEHICLE_MAX ? "the vehicle id is over 63 bytes" :
		        "truncated: the vehicle id runs past the end of the message");
		return -EBADMSG;
	}
	if (!basic_vehicle_name_ok_n((const char *)p + 17, vlen)) {
		why_set(why, whylen, "the vehicle id is not a vehicle name (letters, digits, '-', '_', '.')");
		return -EBADMSG;
	}
	memcpy(ret->vehicle, p + 17, vlen);
	at = 17 + vlen;
	ret->nfiles = p[at++];
	if (!ret->nfiles || ret->nfiles > EVD_RCONF_FILES_MAX) {
		why_set(why, whylen, "%zu files: 1 to %d allowed", ret->nfiles, EVD_RCONF_FILES_MAX);
		return -EBADMSG;
	}
	for (size_t i = 0; i < ret->nfiles; i++)
		if ((r = parse_file(p, &at, end, i, ret, why, whylen)) < 0)
			return r;
	if (ret->files[0].kind != EVD_RCONF_CONTENT) {
		why_set(why, whylen, "the board file (the first file) is not sent whole");
		return -EBADMSG;
	}
	if (at != end) {
		/* the signature is the last 64 bytes: anything between is no field */
		why_set(why, whylen, "%zu bytes between the last file and the signature", end - at);
		return -EBADMSG;
	}
	if (!ret->version) {
		why_set(why, whylen, "version 0 (versions start at 1)");
		return -EBADMSG;
	}
	return 0;
}

/* *ret = *m, with the names pointing into *ret's own copies. */
static void rconf_copy(struct evd_rconf *ret, const struct evd_rconf *m)
{
	*ret = *m;
	for (size_t i = 0; i < ret->nfiles; i++)
		ret->files[i].name = ret->name_buf[i];
}

int evd_rconf_parse(const void *buf, size_t len, struct evd_rconf *ret, char *why, size_t whylen)
{
	struct evd_rconf m;
	int r;

	if (!buf || !ret)
		return -EINVAL;
	if ((r = parse_into(buf, len, &m, why, whylen)) < 0)
		return r;
	rconf_copy(ret, &m);
	return 0;
}

int evd_rconf_verify(const void *buf, size_t len, const uint8_t pk[EVD_PUBLIC_LEN], const char *vehicle,
                     uint64_t current, struct evd_rconf *ret, char *why, size_t whylen)
{
	struct evd_rconf m;
	int r;

	if (!buf || !pk || !vehicle || !ret)
		return -EINVAL;
	if ((r = parse_into(buf, len, &m, why, whylen)) < 0)
		return r;
	/* The signature before any field is believed: a forged message is
	   "not signed by the ground key", whatever its vehicle or version say. */
	if (crypto_sign_verify_detached((const uint8_t *)buf + len - EVD_RCONF_SIG_LEN, buf,
	                                (unsigned long long)(len - EVD_RCONF_SIG_LEN), pk) != 0) {
		why_set(why, whylen, "bad signature: not signed by the ground key this vehicle holds, or changed since");
		return -EKEYREJECTED;
	}
	if (strcmp(m.vehicle, vehicle)) {
		why_set(why, whylen, "for vehicle %s, not this one (%s)", m.vehicle, vehicle);
		return -EXDEV;
	}
	if (m.version <= current) {
		why_set(why, whylen, "version %" PRIu64 " is not above the vehicle's current version %" PRIu64
		        " (an old or repeated message)", m.version, current);
		return -ESTALE;
	}
	rconf_copy(ret, &m);
	return 0;
}
