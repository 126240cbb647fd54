/* SPDX-License-Identifier: MIT */
/*
 * test-spb-session.c - sparkplug/'s session without MQTT: topics, the
 * bdSeq file (first start, +1 a connect, 255 wrapping, a kill -9 right
 * after, damaged files), seq on every message and none on NDEATH, the
 * NBIRTH metrics read back with protoc-c, and the command parser.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sparkplug/spb-session.h"
#include "sparkplug_b.pb-c.h"
#include "tlib.h"

typedef Org__Eclipse__Tahu__Protobuf__Payload Payload;
typedef Org__Eclipse__Tahu__Protobuf__Payload__Metric Metric;

static void test_topics(void)
{
	char t[64];

	CHECK(spb_topic(t, sizeof(t), "G", SPB_NBIRTH, "train-7", NULL) == 24);
	CHECK_STR(t, "spBv1.0/G/NBIRTH/train-7");
	static const char *const n[] = { "NBIRTH", "NDEATH", "NDATA", "NCMD" };
	static const char *const d[] = { "DBIRTH", "DDEATH", "DDATA", "DCMD" };
	for (int i = 0; i < 4; i++) {
		char want[64];
		snprintf(want, sizeof(want), "spBv1.0/Fleet A/%s/e", n[i]);
		CHECK(spb_topic(t, sizeof(t), "Fleet A", (enum spb_msg)i, "e", NULL) == (int)strlen(want));
		CHECK_STR(t, want);
		snprintf(want, sizeof(want), "spBv1.0/Fleet A/%s/e/can0", d[i]);
		CHECK(spb_topic(t, sizeof(t), "Fleet A", (enum spb_msg)(i + 4), "e", "can0") == (int)strlen(want));
		CHECK_STR(t, want);
		/* an N type takes no device, a D type needs one */
		CHECK(spb_topic(t, sizeof(t), "G", (enum spb_msg)i, "e", "can0") == -EINVAL, "%s", n[i]);
		CHECK(spb_topic(t, sizeof(t), "G", (enum spb_msg)(i + 4), "e", NULL) == -EINVAL, "%s", d[i]);
	}
	CHECK(spb_topic(t, sizeof(t), "G", SPB_MSG_MAX, "e", NULL) == -EINVAL);
	CHECK(spb_topic(t, sizeof(t), "a/b", SPB_NDATA, "e", NULL) == -EINVAL);
	CHECK(spb_topic(t, sizeof(t), "G", SPB_NDATA, "e+", NULL) == -EINVAL);
	CHECK(spb_topic(t, sizeof(t), "G", SPB_DDATA, "e", "#") == -EINVAL);
	CHECK(spb_topic(t, sizeof(t), "", SPB_NDATA, "e", NULL) == -EINVAL);
	CHECK(spb_topic(t, sizeof(t), "G", SPB_NDATA, NULL, NULL) == -EINVAL);
	CHECK(spb_topic(NULL, 9, "G", SPB_NDATA, "e", NULL) == -EINVAL);
	/* "spBv1.0/G/NDATA/e" is 17: one byte short of the NUL is refused,
	   buf untouched */
	strcpy(t, "keep");
	CHECK(spb_topic(t, 17, "G", SPB_NDATA, "e", NULL) == -ENAMETOOLONG);
	CHECK_STR(t, "keep");
	CHECK(spb_topic(t, 18, "G", SPB_NDATA, "e", NULL) == 17);
	CHECK(spb_msg_name(SPB_DCMD) && !strcmp(spb_msg_name(SPB_DCMD), "DCMD") && !spb_msg_name(SPB_MSG_MAX));
}

static char *file_text(const char *dir, char *buf, size_t len)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/" SPB_BDSEQ_FILE, dir);
	FILE *f = fopen(path, "r");
	CHECK(f, "%s", path);
	size_t n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
	return buf;
}

static void write_text(const char *dir, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/" SPB_BDSEQ_FILE, dir);
	FILE *f = fopen(path, "w");
	CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0, "%s", path);
}

static void test_bdseq(const char *dir)
{
	uint8_t b = 99;
	int damage = 1;
	char buf[64];

	CHECK(spb_bdseq_next(NULL, &b, &damage) == -EINVAL);
	CHECK(spb_bdseq_next("", &b, &damage) == -EINVAL);
	CHECK(spb_bdseq_next(dir, NULL, &damage) == -EINVAL);
	CHECK(spb_bdseq_next(dir, &b, NULL) == -EINVAL);
	/* first start: 0, stored, no damage */
	CHECK(spb_bdseq_next(dir, &b, &damage) == 0 && b == 0 && damage == 0, "b=%u damage=%d", b, damage);
	CHECK_STR(file_text(dir, buf, sizeof(buf)), "railmon-spb-bdseq 1 0\n");
	/* +1 a connect, 255 wraps to 0 */
	for (unsigned want = 1; want <= 256; want++) {
		CHECK(spb_bdseq_next(dir, &b, &damage) == 0 && b == (uint8_t)want && !damage, "want %u got %u", want, b);
	}
	CHECK_STR(file_text(dir, buf, sizeof(buf)), "railmon-spb-bdseq 1 0\n");
	/* a kill -9 right after the call: the value is on disk already, the
	   next start goes on from it */
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		uint8_t cb;
		int cd;
		if (spb_bdseq_next(dir, &cb, &cd) != 0 || cb != 1)
			_exit(3);
		raise(SIGKILL);
		_exit(4);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
	CHECK(spb_bdseq_next(dir, &b, &damage) == 0 && b == 2 && !damage, "after kill -9: %u", b);
	/* damaged: 0 again, and why */
	static const struct { const char *text; int damage; } bad[] = {
		{ "", -EBADMSG },
		{ "railmon-cursor 1 5\n", -EBADMSG },
		{ "railmon-spb-bdseq 1 7", -EBADMSG },      /* torn: no newline */
		{ "railmon-spb-bdseq 1 -7\n", -EBADMSG },
		{ "railmon-spb-bdseq 1  7\n", -EBADMSG },
		{ "railmon-spb-bdseq 1 7\nx", -EBADMSG },
		{ "railmon-spb-bdseq 1 256\n", -ERANGE },
		{ "railmon-spb-bdseq 1 99999999999999999999999\n", -ERANGE },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		write_text(dir, bad[i].text);
		CHECK(spb_bdseq_next(dir, &b, &damage) == 0 && b == 0 && damage == bad[i].damage,
		      "'%s': b=%u damage=%d", bad[i].text, b, damage);
		CHECK_STR(file_text(dir, buf, sizeof(buf)), "railmon-spb-bdseq 1 0\n");
	}
	write_text(dir, "railmon-spb-bdseq 1 255\n");
	CHECK(spb_bdseq_next(dir, &b, &damage) == 0 && b == 0 && !damage);
	/* a FIFO in its place never blocks the start */
	char path[512];
	snprintf(path, sizeof(path), "%s/" SPB_BDSEQ_FILE, dir);
	CHECK(unlink(path) == 0 && mkfifo(path, 0600) == 0);
	CHECK(spb_bdseq_next(dir, &b, &damage) == 0 && b == 0 && damage == -ESPIPE, "damage %d", damage);
	/* a directory that cannot be written: no bdSeq, nothing to connect with */
	b = 77;
	CHECK(spb_bdseq_next("/proc/no-such-dir", &b, &damage) < 0 && b == 77);
}

static Payload *unpack(spb_payload_t *pl)
{
	uint8_t buf[256];
	int n = spb_payload_encode(pl, buf, sizeof(buf));
	CHECK(n > 0);
	Payload *p = org__eclipse__tahu__protobuf__payload__unpack(NULL, (size_t)n, buf);
	CHECK(p);
	return p;
}

static void test_session(void)
{
	struct spb_session s;
	spb_payload_t *pl;
	Payload *p;

	CHECK(spb_payload_new(4, &pl) == 0);
	spb_session_start(&s, 42);
	CHECK(spb_session_next(&s, pl, 1) == -EPROTO, "a message before NBIRTH");
	CHECK(spb_session_ndeath(NULL, pl, 1) == -EINVAL && spb_session_nbirth(&s, NULL, 1) == -EINVAL);
	CHECK(spb_session_next(NULL, pl, 1) == -EINVAL);

	CHECK(spb_session_ndeath(&s, pl, 1000) == 0);
	p = unpack(pl);
	CHECK(!p->has_seq, "NDEATH has no seq");
	CHECK(p->n_metrics == 1 && !strcmp(p->metrics[0]->name, "bdSeq") &&
	      p->metrics[0]->datatype == SPB_DT_UINT64 && p->metrics[0]->long_value == 42);
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);

	CHECK(spb_session_nbirth(&s, pl, 2000) == 0);
	p = unpack(pl);
	CHECK(p->has_seq && p->seq == 0 && p->timestamp == 2000);
	CHECK(p->n_metrics == 3);
	/* railmon's events: a String with no value until an NDATA gives one */
	CHECK(!strcmp(p->metrics[2]->name, "Events") && p->metrics[2]->datatype == SPB_DT_STRING &&
	      p->metrics[2]->has_is_null && p->metrics[2]->is_null && p->metrics[2]->alias == SPB_ALIAS_EVENTS &&
	      p->metrics[2]->alias == 0x100000002ull);
	CHECK(!strcmp(p->metrics[0]->name, "bdSeq") && p->metrics[0]->long_value == 42 &&
	      p->metrics[0]->alias == SPB_ALIAS_BDSEQ);
	CHECK(!strcmp(p->metrics[1]->name, "Node Control/Rebirth") && p->metrics[1]->datatype == SPB_DT_BOOLEAN &&
	      p->metrics[1]->value_case == ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_BOOLEAN_VALUE &&
	      !p->metrics[1]->boolean_value && p->metrics[1]->alias == SPB_ALIAS_REBIRTH);
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);

	/* 1..255, then 0, 1: every message after NBIRTH */
	for (unsigned i = 1; i <= 257; i++) {
		CHECK(spb_session_next(&s, pl, 3000 + i) == 0);
		p = unpack(pl);
		CHECK(p->has_seq && p->seq == (i & 0xff) && p->n_metrics == 0, "message %u: seq %" PRIu64, i, p->seq);
		org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);
	}
	/* a rebirth starts again at 0, same bdSeq */
	CHECK(spb_session_nbirth(&s, pl, 5000) == 0);
	p = unpack(pl);
	CHECK(p->seq == 0 && p->metrics[0]->long_value == 42);
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);
	CHECK(spb_session_next(&s, pl, 5001) == 0);
	p = unpack(pl);
	CHECK(p->seq == 1);
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);
	/* begin without commit (a message that stayed empty) takes no seq */
	CHECK(spb_session_begin(&s, pl, 5002) == 0 && spb_session_begin(&s, pl, 5003) == 0);
	p = unpack(pl);
	CHECK(p->seq == 2, "seq %" PRIu64, p->seq);
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);
	spb_session_commit(&s);
	CHECK(spb_session_next(&s, pl, 5004) == 0);
	p = unpack(pl);
	CHECK(p->seq == 3, "seq %" PRIu64, p->seq);
	org__eclipse__tahu__protobuf__payload__free_unpacked(p, NULL);
	/* a new connection is not born */
	spb_session_start(&s, 43);
	CHECK(spb_session_next(&s, pl, 1) == -EPROTO);
	spb_payload_free(pl);
}

/* A command payload of the given metrics, packed by protoc-c (as a host
   would send it; tests/sparkplug's peers test sends Tahu's). */
static size_t cmd(uint8_t *buf, Metric *const *m, size_t n)
{
	Payload p = ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__INIT;
	p.has_timestamp = 1;
	p.timestamp = 5;
	p.n_metrics = n;
	p.metrics = (Metric **)m;
	return org__eclipse__tahu__protobuf__payload__pack(&p, buf);
}

static Metric rebirth_metric(const char *name, bool value)
{
	Metric m = ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__INIT;
	m.name = (char *)name;
	m.has_datatype = 1;
	m.datatype = SPB_DT_BOOLEAN;
	m.value_case = ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_BOOLEAN_VALUE;
	m.boolean_value = value;
	return m;
}

static void test_cmd(void)
{
	uint8_t buf[512];
	struct spb_cmd c;
	size_t n;

	Metric yes = rebirth_metric("Node Control/Rebirth", true);
	Metric no = rebirth_metric("Node Control/Rebirth", false);
	Metric other = rebirth_metric("Node Control/Reboot", true);
	Metric by_alias = rebirth_metric(NULL, true);
	by_alias.has_alias = 1;
	by_alias.alias = SPB_ALIAS_REBIRTH;
	Metric wrong_alias = by_alias;
	wrong_alias.alias = SPB_ALIAS_BDSEQ;
	Metric as_int = rebirth_metric("Node Control/Rebirth", true);
	as_int.datatype = SPB_DT_INT32;
	Metric as_string = rebirth_metric("Node Control/Rebirth", true);
	as_string.datatype = SPB_DT_STRING;
	as_string.value_case = ORG__ECLIPSE__TAHU__PROTOBUF__PAYLOAD__METRIC__VALUE_STRING_VALUE;
	as_string.string_value = "true";
	Metric null_v = rebirth_metric("Node Control/Rebirth", true);
	null_v.has_is_null = 1;
	null_v.is_null = 1;

	n = cmd(buf, (Metric *[]){ &yes }, 1);
	CHECK(spb_cmd_parse(buf, n, false, &c) == 0 && c.rebirth && c.metrics == 1 && c.refused == 0);
	n = cmd(buf, (Metric *[]){ &by_alias }, 1);
	CHECK(spb_cmd_parse(buf, n, false, &c) == 0 && c.rebirth && c.refused == 0, "by alias");
	/* a DCMD never rebirths: railmon writes nothing to a bus */
	n = cmd(buf, (Metric *[]){ &yes }, 1);
	CHECK(spb_cmd_parse(buf, n, true, &c) == 0 && !c.rebirth && c.refused == 1, "DCMD");
	/* everything else counted and refused */
	Metric *const refused[] = { &no, &other, &wrong_alias, &as_int, &as_string, &null_v };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		n = cmd(buf, &refused[i], 1);
		CHECK(spb_cmd_parse(buf, n, false, &c) == 0 && !c.rebirth && c.metrics == 1 && c.refused == 1,
		      "case %zu", i);
	}
	n = cmd(buf, (Metric *[]){ &other, &yes, &no }, 3);
	CHECK(spb_cmd_parse(buf, n, false, &c) == 0 && c.rebirth && c.metrics == 3 && c.refused == 2);
	n = cmd(buf, NULL, 0);
	CHECK(spb_cmd_parse(buf, n, false, &c) == 0 && !c.rebirth && c.metrics == 0 && c.refused == 0);
	/* not a payload: *ret untouched */
	c = (struct spb_cmd){ .refused = 77 };
	static const uint8_t junk[] = { 0x12, 0x05, 0x01 }; /* metrics, length 5, 1 byte there */
	CHECK(spb_cmd_parse(junk, sizeof(junk), false, &c) == -EBADMSG && c.refused == 77);
	CHECK(spb_cmd_parse(buf, SPB_CMD_MAX_BYTES + 1, false, &c) == -EMSGSIZE);
	CHECK(spb_cmd_parse(NULL, 1, false, &c) == -EINVAL && spb_cmd_parse(buf, 1, false, NULL) == -EINVAL);
}

int main(void)
{
	char dir[] = "/tmp/test-spb-session-XXXXXX";

	CHECK(mkdtemp(dir));
	test_topics();
	test_bdseq(dir);
	test_session();
	test_cmd();
	char cmdline[600];
	snprintf(cmdline, sizeof(cmdline), "rm -rf '%s'", dir);
	CHECK(system(cmdline) == 0);
	puts("spb-session: ok");
	return 0;
}
