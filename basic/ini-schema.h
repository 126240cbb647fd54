/* SPDX-License-Identifier: MIT */
/*
 * ini-schema.h - INI files described by tables (libinih underneath).
 *
 * A program describes each kind of section with one table of keys: name,
 * type, the field it fills (offsetof into the section's struct), range,
 * default and help.  The engine reads the text line by line (so it knows
 * every line number), finds the key in the current section's table,
 * refuses a key given twice, parses the value by its type, checks the
 * range and stores it; the first error is kept as "file:line: message".
 * The same tables give the key reference (basic_ini_type_name() and
 * friends), so the documentation cannot drift from the parser.
 *
 * The engine knows nothing of the program: what a [section] header means
 * (which table, which struct) and the checks across keys after the whole
 * file was read are callbacks (struct basic_ini_ops).  Not RT-safe (inih
 * and the callers allocate); a parse is single-threaded, the tables are
 * const and may be shared.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BASIC_INI_ERR_MAX 512
/* Keys in one table: the duplicate check keeps a line per key. */
#define BASIC_INI_KEYS_MAX 64

enum basic_ini_type {
	BASIC_INI_BOOL,     /* true/yes/on/1, false/no/off/0 -> bool */
	BASIC_INI_INT,      /* signed integer in [min, max], field of 1, 2, 4 or 8 bytes */
	BASIC_INI_UINT,     /* unsigned integer in [min, max], field of 1, 2, 4 or 8 bytes */
	BASIC_INI_SIZE,     /* bytes, "64K", "16M" (basic_parse_size) in [min, max] -> uint64_t */
	BASIC_INI_DURATION, /* seconds, "30d", "12h" (basic_parse_duration) in [min, max] -> uint64_t */
	BASIC_INI_DOUBLE,   /* finite number -> double; in [min, max] unless both are 0 */
	BASIC_INI_STRING,   /* at most max characters -> char[size], size > max */
	BASIC_INI_PATH,     /* a file name, a relative one resolved against the INI file's
	                       directory -> char[size] */
	BASIC_INI_ENUM,     /* one of names[] -> its value, field of 1, 2, 4 or 8 bytes */
	BASIC_INI_CUSTOM,   /* the hook parses and stores */
	BASIC_INI_TYPE_MAX
};

/* Key flags. */
#define BASIC_INI_REPEAT   (1u << 0) /* may be given more than once (a list) */
#define BASIC_INI_NONEMPTY (1u << 1) /* STRING, PATH: "" refused */
#define BASIC_INI_POW2     (1u << 2) /* UINT: a power of two */
#define BASIC_INI_NOCASE   (1u << 3) /* ENUM: names match in any case */
#define BASIC_INI_LINE     (1u << 4) /* store the key's line in the int at line_offset */
#define BASIC_INI_REQUIRED (1u << 5) /* for the reference: the caller refuses a file without it */

struct basic_ini;
struct basic_ini_key;

/*
 * A key's own code.  For BASIC_INI_CUSTOM it parses value and stores it
 * into base; for the other types it runs after the value was stored, for
 * what one key implies for another (a TLS file turns TLS on) or a check
 * the type cannot say.  Returns 0, or < 0 after basic_ini_fail() or
 * basic_ini_bad() (without them the error is key->expect).
 */
typedef int (*basic_ini_hook_t)(struct basic_ini *ini, const struct basic_ini_key *key, void *base,
                                const char *value);

struct basic_ini_name {
	const char *name;   /* NULL ends the list */
	int64_t value;
};

struct basic_ini_key {
	const char *name;
	enum basic_ini_type type;
	unsigned flags;
	size_t offset;      /* the field in the section's struct (BASIC_INI_FIELD) */
	size_t size;        /* sizeof the field */
	size_t line_offset; /* BASIC_INI_LINE: an int in the same struct */
	int64_t min;        /* INT, UINT, SIZE, DURATION, DOUBLE */
	uint64_t max;       /* the same; STRING, PATH: the longest value, < size */
	const struct basic_ini_name *names; /* ENUM */
	basic_ini_hook_t hook;
	/* The default as a file would write it, stored by basic_ini_defaults();
	   NULL = the field's zero. */
	const char *def;
	/* For the reference: the default when def does not say it ("none",
	   "the link's period"), and for CUSTOM the form of a value. */
	const char *doc_def;
	const char *syntax;
	/* The words of the error after "key: " (NULL: made from type and
	   range, "expected 1 to 60000"); the value follows in quotes. */
	const char *expect;
	const char *help;   /* one or two sentences for the reference */
};

/* .offset and .size of a struct member, for struct basic_ini_key. */
#define BASIC_INI_FIELD(type, member) .offset = offsetof(type, member), .size = sizeof(((type *)0)->member)
#define BASIC_INI_LINE_AT(type, member) .line_offset = offsetof(type, member)

struct basic_ini_table {
	const char *section;  /* as written in a file, for the reference: "board", "can NAME" */
	const char *help;
	const struct basic_ini_key *keys;
	size_t nkeys;
};

/* What a [section] header opened: the table for its keys, the struct they
   fill, and its name in messages ("unknown key 'x' in [title]"). */
struct basic_ini_section {
	const struct basic_ini_table *table;
	void *base;
	char title[128];
};

struct basic_ini_ops {
	/*
	 * A [section] header (its own line is basic_ini_line()): fill *ret, or
	 * return < 0 after basic_ini_fail().  Called when the section's first
	 * key is read, so a section without keys is never opened.
	 */
	int (*section)(struct basic_ini *ini, const char *name, struct basic_ini_section *ret);
	/* After the whole file was read: the checks across keys and sections,
	   with basic_ini_fail_at().  May be NULL. */
	int (*done)(struct basic_ini *ini);
};

/*
 * Parse text (NUL-terminated, the whole file) named name in messages and
 * for relative paths.  Returns 0 or < 0: -EINVAL with "name:line: message"
 * in err (the first error: later ones are mostly its consequences), or
 * what a callback returned (-ENOMEM: err is strerror's text).  Lines
 * longer than inih's buffer are refused with their length, and leading
 * blanks are dropped (an indented line is never a continuation).
 */
int basic_ini_parse(const char *name, const char *text, const struct basic_ini_ops *ops, void *user, char *err,
                    size_t errlen);

/* The user pointer given to basic_ini_parse(). */
void *basic_ini_user(const struct basic_ini *ini);

/* The line being parsed (in ops->section: the header's line). */
int basic_ini_line(const struct basic_ini *ini);

/* Keep "name:line: message" if no error was kept yet (at the current line,
   or at line); both return -EINVAL. */
int basic_ini_fail(struct basic_ini *ini, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int basic_ini_fail_at(struct basic_ini *ini, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* "key: what: 'value'" at the current line; what NULL = the key's expect
   text.  Returns -EINVAL. */
int basic_ini_bad(struct basic_ini *ini, const struct basic_ini_key *key, const char *value, const char *what);

/* value resolved against the INI file's directory unless absolute, into
   dst; -ENAMETOOLONG if it does not fit in len. */
int basic_ini_path(const struct basic_ini *ini, const char *value, char *dst, size_t len);

/* Store every key's default (def) into base.  -EINVAL names a default
   its own key refuses (a bug in the table). */
int basic_ini_defaults(const struct basic_ini_table *table, void *base);

/* A table's mistakes that the compiler cannot see (a string field not
   longer than max, a field size the type cannot store, an enum without
   names, a default out of range...).  0, or -EINVAL with why. */
int basic_ini_table_check(const struct basic_ini_table *table, char *why, size_t len);

/* For the reference.  The type's name ("bool", "size"...; a custom key's
   syntax), its range ("1 to 60000", "one of a, b, c", "" when any value
   of the type goes), its default ("" when none), and the error's words. */
const char *basic_ini_type_name(const struct basic_ini_key *key);
char *basic_ini_range_text(const struct basic_ini_key *key, char *buf, size_t len);
const char *basic_ini_default_text(const struct basic_ini_key *key);
char *basic_ini_expect_text(const struct basic_ini_key *key, char *buf, size_t len);
