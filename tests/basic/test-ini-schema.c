/* SPDX-License-Identifier: MIT */
/*
 * test-ini-schema.c - basic/ini-schema.h on a schema of its own (one key
 * of every type and flag): values stored, defaults, the errors and their
 * lines, the table checks and the reference texts.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/ini-schema.h"

struct thing {
	bool on;
	int8_t i8;
	int cpu;
	uint16_t u16;
	uint32_t slots;
	uint64_t bytes, secs;
	double speed, any;
	char name[16];
	char path[32];
	char mode;
	int color;
	unsigned nitems;
	int items[4];
	int bytes_line;
	bool hooked;
};

static int add_item(struct basic_ini *ini, const struct basic_ini_key *key, void *base, const char *value)
{
	struct thing *t = base;

	if (t->nitems == 4)
		return basic_ini_fail(ini, "%s: at most 4", key->name);
	if (strcmp(value, "x") == 0)
		return -EINVAL; /* the engine says the key's expect */
	t->items[t->nitems++] = atoi(value);
	return 0;
}

static int mark(struct basic_ini *ini, const struct basic_ini_key *key, void *base, const char *value)
{
	((struct thing *)base)->hooked = true;
	return strcmp(value, "no") ? 0 : basic_ini_bad(ini, key, value, "not that one");
}

static const struct basic_ini_name modes[] = { { "a", 'A' }, { "b", 'B' }, { NULL, 0 } };
static const struct basic_ini_name colors[] = { { "red", 1 }, { "green", 2 }, { "blue", 3 }, { NULL, 0 } };

#define T(member) BASIC_INI_FIELD(struct thing, member)

static const struct basic_ini_key keys[] = {
	{ "on", BASIC_INI_BOOL, 0, T(on), .def = "yes", .help = "h" },
	{ "i8", BASIC_INI_INT, 0, T(i8), .help = "any int8" },
	{ "cpu", BASIC_INI_INT, 0, T(cpu), .min = -1, .max = 7, .def = "-1", .expect = "expected -1 or a CPU",
	  .help = "h" },
	{ "u16", BASIC_INI_UINT, 0, T(u16), .help = "any uint16" },
	{ "slots", BASIC_INI_UINT, BASIC_INI_POW2, T(slots), .min = 16, .max = 1024, .def = "64", .help = "h" },
	{ "bytes", BASIC_INI_SIZE, BASIC_INI_LINE, T(bytes), BASIC_INI_LINE_AT(struct thing, bytes_line), .min = 1024,
	  .max = UINT64_MAX, .def = "16M", .help = "h" },
	{ "secs", BASIC_INI_DURATION, 0, T(secs), .def = "1h", .help = "h" },
	{ "speed", BASIC_INI_DOUBLE, 0, T(speed), .min = 0, .max = 10, .def = "1", .help = "h" },
	{ "any", BASIC_INI_DOUBLE, 0, T(any), .help = "h" },
	{ "name", BASIC_INI_STRING, BASIC_INI_NONEMPTY, T(name), .max = 7, .hook = mark, .help = "h" },
	{ "path", BASIC_INI_PATH, 0, T(path), .help = "h" },
	{ "mode", BASIC_INI_ENUM, 0, T(mode), .names = modes, .def = "b", .help = "h" },
	{ "color", BASIC_INI_ENUM, BASIC_INI_NOCASE | BASIC_INI_REQUIRED, T(color), .names = colors, .help = "h" },
	{ "item", BASIC_INI_CUSTOM, BASIC_INI_REPEAT, .hook = add_item, .syntax = "N", .expect = "expected a number",
	  .help = "h" },
};

static const struct basic_ini_table table = { "thing NAME", "A thing.", keys, sizeof(keys) / sizeof(keys[0]) };

struct user {
	struct thing things[4];
	size_t n;
	bool done_fails;
};

static int open_section(struct basic_ini *ini, const char *name, struct basic_ini_section *ret)
{
	struct user *u = basic_ini_user(ini);

	if (strncmp(name, "thing ", 6))
		return basic_ini_fail(ini, "unknown section [%s]", name);
	if (u->n == 4)
		return basic_ini_fail(ini, "too many");
	memset(&u->things[u->n], 0, sizeof(u->things[0]));
	assert(basic_ini_defaults(&table, &u->things[u->n]) == 0);
	*ret = (struct basic_ini_section){ .table = &table, .base = &u->things[u->n++] };
	snprintf(ret->title, sizeof(ret->title), "thing '%s'", name + 6);
	return 0;
}

static int done(struct basic_ini *ini)
{
	struct user *u = basic_ini_user(ini);

	return u->done_fails ? basic_ini_fail_at(ini, 1, "done: %zu things", u->n) : 0;
}

static const struct basic_ini_ops ops = { .section = open_section, .done = done };

static int parse(const char *name, const char *text, struct user *u, char *err)
{
	memset(u, 0, sizeof(*u));
	err[0] = 0;
	return basic_ini_parse(name, text, &ops, u, err, BASIC_INI_ERR_MAX);
}

static void test_values(void)
{
	static const char text[] = "; comment\n"
		"[thing one]\n"
		"on = off\n"
		"  i8 = -128\n"
		"cpu = 7\n"
		"u16 = 0xffff\n"
		"slots = 1024\n"
		"bytes = 2G ; inline comment\n"
		"secs = 30d\n"
		"speed = 2.5\n"
		"any = -1e300\n"
		"name = abcdefg\n"
		"path = rel/x\n"
		"mode = a\n"
		"color = GREEN\n"
		"item = 1\nitem = 2\n"
		"\n"
		"[thing two]\n"
		"color = red\n"
		"path = /abs\n";
	char err[BASIC_INI_ERR_MAX];
	struct user u;
	struct thing *t = &u.things[0];

	assert(parse("/etc/x/f.ini", text, &u, err) == 0 && u.n == 2);
	assert(!t->on && t->i8 == -128 && t->cpu == 7 && t->u16 == 0xffff && t->slots == 1024);
	assert(t->bytes == 2ull << 30 && t->bytes_line == 8 && t->secs == 30 * 86400);
	assert(t->speed == 2.5 && t->any == -1e300 && !strcmp(t->name, "abcdefg") && t->hooked);
	assert(!strcmp(t->path, "/etc/x/rel/x") && t->mode == 'A' && t->color == 2);
	assert(t->nitems == 2 && t->items[0] == 1 && t->items[1] == 2);
	t = &u.things[1]; /* the defaults */
	assert(t->on && t->cpu == -1 && t->slots == 64 && t->bytes == 16u << 20 && !t->bytes_line);
	assert(t->secs == 3600 && t->speed == 1 && t->mode == 'B' && t->color == 1 && !strcmp(t->path, "/abs"));
	/* no directory in the name: relative paths stay relative */
	assert(parse("f.ini", "[thing a]\npath = rel\n", &u, err) == 0 && !strcmp(u.things[0].path, "rel"));
	assert(parse("f.ini", "", &u, err) == 0 && u.n == 0);
	/* a section without keys is never opened */
	assert(parse("f.ini", "[nothing]\n; only a comment\n", &u, err) == 0 && u.n == 0);
}

/* Each case: a file and its exact error. */
static const struct {
	const char *text, *want;
} bad[] = {
	{ "[thing a]\non = maybe\n", "f.ini:2: on: expected true or false: 'maybe'" },
	{ "[thing a]\ni8 = 128\n", "f.ini:2: i8: expected -128 to 127: '128'" },
	{ "[thing a]\ncpu = 8\n", "f.ini:2: cpu: expected -1 or a CPU: '8'" },
	{ "[thing a]\nu16 = 65536\n", "f.ini:2: u16: expected 0 to 65535: '65536'" },
	{ "[thing a]\nu16 = -1\n", "f.ini:2: u16: expected 0 to 65535: '-1'" },
	{ "[thing a]\nslots = 100\n", "f.ini:2: slots: expected a power of two from 16 to 1024: '100'" },
	{ "[thing a]\nslots = 2048\n", "f.ini:2: slots: expected a power of two from 16 to 1024: '2048'" },
	{ "[thing a]\nbytes = 1000\n", "f.ini:2: bytes: expected a size like 64K or 16M, at least 1K: '1000'" },
	{ "[thing a]\nbytes = 1X\n", "f.ini:2: bytes: expected a size like 64K or 16M, at least 1K: '1X'" },
	{ "[thing a]\nsecs = 1w\n", "f.ini:2: secs: expected a duration like 30s, 15m, 12h or 30d: '1w'" },
	{ "[thing a]\nspeed = 11\n", "f.ini:2: speed: expected a number from 0 to 10: '11'" },
	{ "[thing a]\nany = nan\n", "f.ini:2: any: expected a number: 'nan'" },
	{ "[thing a]\nname = abcdefgh\n", "f.ini:2: name: expected 1 to 7 characters: 'abcdefgh'" },
	{ "[thing a]\nname =\n", "f.ini:2: name: expected 1 to 7 characters: ''" },
	{ "[thing a]\nname = no\n", "f.ini:2: name: not that one: 'no'" },
	{ "[thing a]\npath = /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	  "f.ini:2: path: bad path: '/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'" },
	{ "[thing a]\nmode = A\n", "f.ini:2: mode: expected a or b: 'A'" },
	{ "[thing a]\ncolor = pink\n", "f.ini:2: color: expected red, green or blue: 'pink'" },
	{ "[thing a]\nitem = x\n", "f.ini:2: item: expected a number: 'x'" },
	{ "[thing a]\nitem=1\nitem=2\nitem=3\nitem=4\nitem=5\n", "f.ini:6: item: at most 4" },
	{ "[thing a]\nbogus = 1\n", "f.ini:2: unknown key 'bogus' in [thing 'a']" },
	{ "[thing a]\non = 1\n\n  on = 0\n", "f.ini:4: 'on' given twice in [thing a] (first at line 2)" },
	{ "on = 1\n", "f.ini:1: key 'on' outside any section" },
	{ "[thing a]\non = 1\n[other]\nx = 1\n", "f.ini:3: unknown section [other]" },
	{ "[thing a]\nnot a key\n", "f.ini:2: syntax error (expected [section], key = value, or ; comment)" },
	/* the section opens at its header's line, the key's error at its own */
	{ "[thing a]\non = 1\n[thing b]\n\n\non = 1\n[thing c]\n\non=1\n[thing d]\non=1\n[thing e]\non=1\n",
	  "f.ini:12: too many" },
};

static void test_errors(void)
{
	char err[BASIC_INI_ERR_MAX];
	struct user u;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int r = parse("f.ini", bad[i].text, &u, err);
		if (r != -EINVAL || strcmp(err, bad[i].want)) {
			fprintf(stderr, "case %zu: r=%d\n  got:  %s\n  want: %s\n", i, r, err, bad[i].want);
			assert(0);
		}
	}
	/* the checks across keys run after the whole file, with their line */
	memset(&u, 0, sizeof(u));
	u.done_fails = true;
	assert(basic_ini_parse("f.ini", "[thing a]\non=1\n", &ops, &u, err, sizeof(err)) == -EINVAL);
	assert(!strcmp(err, "f.ini:1: done: 1 things"));
	/* the first error is kept; a small buffer gets its start */
	assert(basic_ini_parse("f.ini", "[thing a]\ni8 = 999\n", &ops, &u, err, 8) == -EINVAL && !strcmp(err, "f.ini:2"));
	assert(basic_ini_parse("f.ini", "[thing a]\ni8 = 999\n", &ops, &u, NULL, 0) == -EINVAL);
	assert(basic_ini_parse(NULL, "", &ops, &u, err, sizeof(err)) == -EINVAL);
	assert(basic_ini_parse("f.ini", NULL, &ops, &u, err, sizeof(err)) == -EINVAL);
	assert(basic_ini_parse("f.ini", "", NULL, &u, err, sizeof(err)) == -EINVAL);
	assert(basic_ini_parse("f.ini", "", &(struct basic_ini_ops){ 0 }, &u, err, sizeof(err)) == -EINVAL);
}

static void test_long_line(void)
{
	char text[1024], err[BASIC_INI_ERR_MAX];
	struct user u;

	snprintf(text, sizeof(text), "[thing a]\non = 1\nname = %0500d\n", 0);
	assert(parse("f.ini", text, &u, err) == -EINVAL);
	assert(!strncmp(err, "f.ini:3: line too long: 507 characters, at most ", 48));
}

static void test_tables(void)
{
	struct basic_ini_key k[2] = { { "a", BASIC_INI_UINT, 0, T(u16), .help = "h" }, { 0 } };
	struct basic_ini_table t = { "t", "h", k, 1 };
	char why[128];

	assert(basic_ini_table_check(&table, why, sizeof(why)) == 0);
	k[0].max = 70000; /* more than a uint16_t holds */
	assert(basic_ini_table_check(&t, why, sizeof(why)) == -EINVAL && strstr(why, "[t] a: "));
	k[0] = (struct basic_ini_key){ "a", BASIC_INI_UINT, 0, T(u16), .min = 5, .help = "h" }; /* max 0 < min */
	assert(basic_ini_table_check(&t, why, sizeof(why)) == -EINVAL);
	k[0] = (struct basic_ini_key){ "a", BASIC_INI_STRING, 0, T(name), .max = 16, .help = "h" }; /* no room for NUL */
	assert(basic_ini_table_check(&t, why, sizeof(why)) == -EINVAL);
	k[0] = (struct basic_ini_key){ "a", BASIC_INI_SIZE, 0, T(cpu), .help = "h" }; /* not a uint64_t */
	assert(basic_ini_table_check(&t, why, sizeof(why)) == -EINVAL);
	k[0] = (struct basic_ini_key){ "a", BASIC_INI_UINT, 0, T(u16), .min = 1, .max = 9, .def = "10", .help = "h" };
	assert(basic_ini_table_check(&t, why, sizeof(why)) == -EINVAL && strstr(why, "default"));
	assert(basic_ini_defaults(&t, &(struct thing){ 0 }) == -EINVAL);
	k[0] = (struct basic_ini_key){ "a", BASIC_INI_ENUM, 0, T(color), .help = "h" }; /* no names */
	assert(basic_ini_table_check(&t, why, sizeof(why)) == -EINVAL);
	k[0] = (struct basic_ini_key){ "a", BASIC_INI_CUSTOM, 0, .help = "h" }; /* no hook */
	assert(basic_ini_table_check(&t, why, sizeof(why)) == -EINVAL);
	k[0] = (struct basic_ini_key){ "a", BASIC_INI_BOOL, 0, T(on), .help = "h" };
	k[1] = k[0];
	t.nkeys = 2;
	assert(basic_ini_table_check(&t, why, sizeof(why)) == -EINVAL && strstr(why, "twice"));
	assert(basic_ini_defaults(NULL, why) == -EINVAL && basic_ini_defaults(&table, NULL) == -EINVAL);
}

static void test_reference(void)
{
	static const char *const want[][3] = {
		{ "bool", "", "yes" }, { "integer", "-128 to 127", "" }, { "integer", "-1 to 7", "-1" },
		{ "integer", "0 to 65535", "" }, { "integer", "a power of two from 16 to 1024", "64" },
		{ "size", "at least 1K", "16M" }, { "duration", "", "1h" }, { "number", "0 to 10", "1" },
		{ "number", "", "" }, { "string", "1 to 7 characters", "" }, { "path", "at most 31 characters", "" },
		{ "enum", "one of a, b", "b" }, { "enum", "one of red, green, blue", "" }, { "N", "", "" },
	};
	char buf[160];

	for (size_t i = 0; i < table.nkeys; i++) {
		basic_ini_range_text(&keys[i], buf, sizeof(buf));
		if (strcmp(basic_ini_type_name(&keys[i]), want[i][0]) || strcmp(buf, want[i][1]) ||
		    strcmp(basic_ini_default_text(&keys[i]), want[i][2])) {
			fprintf(stderr, "%s: %s / %s / %s\n", keys[i].name, basic_ini_type_name(&keys[i]), buf,
			        basic_ini_default_text(&keys[i]));
			assert(0);
		}
	}
	assert(!strcmp(basic_ini_expect_text(&keys[2], buf, sizeof(buf)), "expected -1 or a CPU"));
	assert(!strcmp(basic_ini_type_name(NULL), "?"));
}

int main(void)
{
	test_values();
	test_errors();
	test_long_line();
	test_tables();
	test_reference();
	printf("test-ini-schema: ok (%zu malformed files)\n", sizeof(bad) / sizeof(bad[0]));
	return 0;
}
