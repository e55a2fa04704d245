/*
 * apps/cached/server/tests/test_proto.c - unit tests of the pure protocol parsers
 * (proto.h): requests parsed field by field, memcached's error replies for malformed
 * lines (the texts memcached 1.6.18 sends), need-more on every prefix of a request, the
 * swallow and close decisions, binary shape rules, base64.
 */
#include <string.h>

#include "check.h"
#include "proto.h"

#define IMAX 1024u

static enum mc_parse A(const char *s, struct mc_ascii_req *r, struct mc_parse_res *res)
{
	return mc_ascii_parse(s, strlen(s), IMAX, r, res);
}

/* Expect an ASCII error reply err for line s, consuming `consumed` bytes. */
static void a_err(const char *s, const char *err, size_t consumed)
{
	struct mc_ascii_req r;
	struct mc_parse_res res;
	CHECK_MSG(A(s, &r, &res) == MC_PARSE_ERROR, "no error for %s", s);
	CHECK_MSG(strcmp(res.err, err) == 0, "%s: got %s want %s", s, res.err, err);
	CHECK_EQ(res.consumed, consumed);
}

/* Every strict prefix of a complete request must be NEED_MORE. */
static void prefixes_need_more(const char *s, bool bin)
{
	size_t n = strlen(s);
	for (size_t i = bin ? 1 : 0; i < n; i++) {
		struct mc_ascii_req r;
		struct mc_bin_req b;
		struct mc_parse_res res;
		enum mc_parse pr = bin ? mc_bin_parse((const uint8_t *)s, i, IMAX, &b, &res)
				       : mc_ascii_parse(s, i, IMAX, &r, &res);
		CHECK_MSG(pr == MC_PARSE_NEED_MORE, "prefix %zu of %s not need-more", i, s);
		CHECK(res.need == 0 || res.need > i);
	}
}

static void test_ascii_ok(void)
{
	struct mc_ascii_req r;
	struct mc_parse_res res;

	const char *set = "set foo 5 100 3\r\nbar\r\nget foo\r\n";
	CHECK(A(set, &r, &res) == MC_PARSE_OK);
	CHECK(r.op == MC_OP_SET && r.nkey == 3 && memcmp(r.key, "foo", 3) == 0);
	CHECK(r.flags == 5 && r.exptime == 100 && r.nbytes == 3 && !memcmp(r.data, "bar", 3));
	CHECK_EQ(res.consumed, strlen("set foo 5 100 3\r\nbar\r\n"));
	CHECK(!r.noreply);
	prefixes_need_more("set foo 5 100 3\r\nbar\r\n", false);

	CHECK(A("cas k 0 -1 2 77 noreply\r\nab\r\n", &r, &res) == MC_PARSE_OK);
	CHECK(r.op == MC_OP_CAS && r.cas == 77 && r.exptime == -1 && r.noreply);

	CHECK(A("get a bb  ccc\n", &r, &res) == MC_PARSE_OK);
	CHECK(r.op == MC_OP_GET);
	size_t pos = 0, nk, count = 0;
	const char *k;
	const char *want[] = {"a", "bb", "ccc"};
	while (mc_next_key(&r, &pos, &k, &nk)) {
		CHECK(count < 3 && nk == strlen(want[count]) && !memcmp(k, want[count], nk));
		count++;
	}
	CHECK_EQ(count, 3);

	CHECK(A("gats 30 x y\r\n", &r, &res) == MC_PARSE_OK);
	CHECK(r.op == MC_OP_GATS && r.exptime == 30);
	CHECK(A("gat 10\r\n", &r, &res) == MC_PARSE_OK); /* no keys: END */
	CHECK(A("incr n 18446744073709551615\r\n", &r, &res) == MC_PARSE_OK);
	CHECK(r.op == MC_OP_INCR && r.delta == UINT64_MAX);
	CHECK(A("delete k 0 noreply\r\n", &r, &res) == MC_PARSE_OK && r.noreply);
	CHECK(A("delete k noreply\r\n", &r, &res) == MC_PARSE_OK && r.noreply);
	CHECK(A("flush_all 10 noreply\r\n", &r, &res) == MC_PARSE_OK && r.delay == 10 && r.noreply);
	CHECK(A("flush_all noreply\r\n", &r, &res) == MC_PARSE_OK && r.delay == 0 && r.noreply);
	CHECK(A("stats slabs\r\n", &r, &res) == MC_PARSE_OK && r.args_len == 5);
	CHECK(A("verbosity 1 noreply\r\n", &r, &res) == MC_PARSE_OK && r.noreply);
	CHECK(A("quit\r\n", &r, &res) == MC_PARSE_OK && r.op == MC_OP_QUIT);
	CHECK(A("mn\r\n", &r, &res) == MC_PARSE_OK && r.op == MC_OP_MN);
	/* a 250-byte key is fine, 251 is not */
	char line[400];
	memset(line, 0, sizeof line);
	strcpy(line, "get ");
	memset(line + 4, 'k', 250);
	strcat(line, "\r\n");
	CHECK(A(line, &r, &res) == MC_PARSE_OK);
	memset(line + 4, 'k', 251);
	strcpy(line + 255, "\r\n");
	a_err(line, "CLIENT_ERROR bad command line format\r\n", strlen(line));
}

static void test_ascii_errors(void)
{
	a_err("bogus\r\n", "ERROR\r\n", 7);
	a_err("\r\n", "ERROR\r\n", 2);
	a_err("GET a\r\n", "ERROR\r\n", 7);
	a_err("get\r\n", "ERROR\r\n", 5);
	a_err("set x 0 0\r\n", "ERROR\r\n", 11);
	a_err("set x 0 0 1 noreply extra\r\n", "ERROR\r\n", 27);
	/* bad numbers: the data block is not swallowed (memcached cannot trust the length) */
	a_err("set x abc 0 1\r\nz\r\n", "CLIENT_ERROR bad command line format\r\n", 15);
	a_err("set x -1 0 1\r\nz\r\n", "CLIENT_ERROR bad command line format\r\n", 14);
	a_err("set x 0 0 -1\r\n", "CLIENT_ERROR bad command line format\r\n", 14);
	/* numbers as memcached's strtoul/strtol read them: the low 32 bits, signs, padding */
	{
		struct mc_ascii_req nr;
		struct mc_parse_res nres;
		CHECK(A("set x 4294967301 0 1\r\nz\r\n", &nr, &nres) == MC_PARSE_OK &&
		      nr.flags == 5);
		CHECK(A("set x +7 -0 0000000000000000000000001\r\nz\r\n", &nr, &nres) ==
		      MC_PARSE_OK);
		CHECK(nr.flags == 7 && nr.exptime == 0 && nr.nbytes == 1);
		CHECK(A("set x 0 4294967297 1\r\nz\r\n", &nr, &nres) == MC_PARSE_OK &&
		      nr.exptime == 1);
		CHECK(A("incr x +3\r\n", &nr, &nres) == MC_PARSE_OK && nr.delta == 3);
		CHECK(A("quit now\r\n", &nr, &nres) == MC_PARSE_OK && nr.op == MC_OP_QUIT);
		/* a NUL ends the line as memcached's C-string tokenizer sees it */
		static const char nul[] = "set q 0 0 1\0junk\r\nz\r\n";
		CHECK(mc_ascii_parse(nul, sizeof nul - 1, IMAX, &nr, &nres) == MC_PARSE_OK);
		CHECK(nr.nbytes == 1 && nres.consumed == sizeof nul - 1);
	}
	a_err("set x -1 0 1\r\n", "CLIENT_ERROR bad command line format\r\n", 14);
	a_err("set x 0 0 1x\r\n", "CLIENT_ERROR bad command line format\r\n", 14);
	a_err("incr a abc\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n", 12);
	a_err("incr a -1\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n", 11);
	a_err("incr a 18446744073709551616\r\n", "CLIENT_ERROR invalid numeric delta argument\r\n",
	      29);
	a_err("touch a abc\r\n", "CLIENT_ERROR invalid exptime argument\r\n", 13);
	a_err("gat abc a\r\n", "CLIENT_ERROR invalid exptime argument\r\n", 11);
	a_err("delete a 1\r\n",
	      "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]\r\n", 12);
	a_err("flush_all abc\r\n", "CLIENT_ERROR invalid exptime argument\r\n", 15);
	a_err("verbosity\r\n", "ERROR\r\n", 11);
	a_err("verbosity abc\r\n", "CLIENT_ERROR bad command line format\r\n", 15);
	a_err("set x 0 0 1\r\nzz\r\n", "CLIENT_ERROR bad data chunk\r\n", 16);
	/* memcached refuses lengths past INT_MAX - 2 as a format error, swallowing nothing */
	a_err("set k 0 0 2147483647\r\n", "CLIENT_ERROR bad command line format\r\n", 22);
	a_err("ms k 2147483646\r\n", "CLIENT_ERROR bad command line format\r\n", 17);
	/* an unknown command ending in an HTTP version: closed without a reply; a line whose
	 * first letter memcached dispatches on still gets ERROR */
	{
		struct mc_ascii_req hr;
		struct mc_parse_res hres;
		CHECK(A("GET / HTTP/1.0\r\n", &hr, &hres) == MC_PARSE_ERROR);
		CHECK(hres.close && strcmp(hres.err, "") == 0 && hres.consumed == 16);
		CHECK(A("PUT /x HTTP/1.1\r\n", &hr, &hres) == MC_PARSE_ERROR && hres.close);
	}
	a_err("gxx / HTTP/1.0\r\n", "ERROR\r\n", 16);
	{
		struct mc_ascii_req sr;
		struct mc_parse_res sres;
		CHECK(A("slabs automove 1\r\n", &sr, &sres) == MC_PARSE_OK);
		CHECK(sr.op == MC_OP_SLABS && sr.args_len == 10 &&
		      memcmp(sr.args, "automove 1", 10) == 0);
	}

	/* too large: reply, swallow the block, drop the old value of a set */
	struct mc_ascii_req r;
	struct mc_parse_res res;
	CHECK(A("set big 0 0 5000\r\n", &r, &res) == MC_PARSE_ERROR);
	CHECK(strcmp(res.err, "SERVER_ERROR object too large for cache\r\n") == 0);
	CHECK_EQ(res.consumed, 18);
	CHECK_EQ(res.swallow, 5002);
	CHECK(res.drop_key && res.ndrop_key == 3 && !res.close);
	CHECK(A("add big 0 0 5000\r\n", &r, &res) == MC_PARSE_ERROR && !res.drop_key);

	/* a line with no newline: wait up to 2048 bytes, then close; a multi-get may be long */
	static char longline[MC_LINE_MAX + 100];
	memset(longline, 'x', sizeof longline);
	CHECK(mc_ascii_parse(longline, MC_LINE_MAX, IMAX, &r, &res) == MC_PARSE_NEED_MORE);
	CHECK(mc_ascii_parse(longline, sizeof longline, IMAX, &r, &res) == MC_PARSE_ERROR);
	CHECK(res.close);
	memcpy(longline, "get ", 4);
	CHECK(mc_ascii_parse(longline, sizeof longline, IMAX, &r, &res) == MC_PARSE_NEED_MORE);
}

static void test_meta(void)
{
	struct mc_ascii_req r;
	struct mc_parse_res res;
	CHECK(A("mg foo v k f t c s O123 q\r\n", &r, &res) == MC_PARSE_OK);
	CHECK(r.op == MC_OP_MG && r.noreply && r.nkey == 3);
	CHECK(r.meta.flags & MC_MF('v') && r.meta.flags & MC_MF('O') && r.meta.nopaque == 3);
	size_t pos = 0, nt;
	const char *t;
	char order[16] = {0};
	int i = 0;
	char f;
	while ((f = mc_meta_next_flag(&r.meta, &pos, &t, &nt)) != 0 && i < 15)
		order[i++] = f;
	CHECK(strcmp(order, "vkftcsOq") == 0);

	CHECK(A("ms foo 3 T0 F5 c MA\r\nbar\r\n", &r, &res) == MC_PARSE_OK);
	CHECK(r.op == MC_OP_MS && r.nbytes == 3 && r.meta.client_flags == 5 && r.meta.mode == 'A');
	CHECK(A("ma n MD D5 N0 J7\r\n", &r, &res) == MC_PARSE_OK);
	CHECK(r.meta.mode == 'D' && r.meta.delta == 5 && r.meta.initial == 7);
	CHECK(A("ma n\r\n", &r, &res) == MC_PARSE_OK && r.meta.delta == 1 && r.meta.mode == 'I');
	CHECK(A("mg k P1 L2 v\r\n", &r, &res) == MC_PARSE_OK);
	CHECK(A("ms Zm9v 2 b k\r\nhi\r\n", &r, &res) == MC_PARSE_OK);
	CHECK(r.nkey == 3 && memcmp(r.key, "foo", 3) == 0 && r.meta.key_b64);

	a_err("mg\r\n", "ERROR\r\n", 4);
	a_err("mg foo zz\r\n", "CLIENT_ERROR invalid flag\r\n", 11);
	/* the recache protocol's flags parse, with their tokens */
	CHECK(A("mg foo h l N30 R15 v\r\n", &r, &res) == MC_PARSE_OK);
	CHECK(r.meta.vivify_ttl == 30 && r.meta.recache_ttl == 15);
	CHECK(A("md foo I T30\r\n", &r, &res) == MC_PARSE_OK && r.meta.ttl == 30);
	CHECK(A("ms foo 1 I C5\r\nx\r\n", &r, &res) == MC_PARSE_OK && r.meta.cas_cmp == 5);
	a_err("mg foo R\r\n", "CLIENT_ERROR bad token in command line format\r\n", 10);
	/* memcached 1.6.18 has no E (explicit CAS) yet */
	a_err("mg foo E5\r\n", "CLIENT_ERROR invalid flag\r\n", 11);
	a_err("mg foo v v\r\n", "CLIENT_ERROR duplicate flag\r\n", 12);
	a_err("mg foo Tabc\r\n", "CLIENT_ERROR bad token in command line format\r\n", 13);
	a_err("md foo O123456789012345678901234567890123\r\n",
	      "CLIENT_ERROR opaque token too long\r\n", 43);
	/* mg and ma act first: the executor answers their too long opaque */
	CHECK(A("mg foo O123456789012345678901234567890123\r\n", &r, &res) == MC_PARSE_OK);
	a_err("ms foo\r\n", "CLIENT_ERROR bad command line format\r\n", 8);
	a_err("ms foo abc\r\n", "CLIENT_ERROR bad command line format\r\n", 12);
	a_err("ms foo 3\r\nbarx\r\n", "CLIENT_ERROR bad data chunk\r\n", 15);
	a_err("md foo zz\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n", 11);
	a_err("ma foo Dabc\r\n", "CLIENT_ERROR invalid or duplicate flag\r\n", 13);
	a_err("ma foo MX\r\n", "CLIENT_ERROR invalid mode for ma M token\r\n", 11);
	a_err("mg !!! b\r\n", "CLIENT_ERROR error decoding key\r\n", 10);
	a_err("me\r\n", "CLIENT_ERROR bad command line format\r\n", 4);
	/* a rejected ms swallows its data block, as memcached does */
	a_err("ms k 2 MX\r\nab\r\n", "CLIENT_ERROR invalid mode for ms M token\r\n", 15);
	CHECK(A("ms k 2 MX\r\n", &r, &res) == MC_PARSE_ERROR && res.swallow == 4);
}

static size_t bin_req(uint8_t *b, uint8_t op, uint16_t kl, uint8_t el, uint32_t bl)
{
	memset(b, 0, MC_BIN_HDR_LEN + bl);
	b[0] = MC_BIN_REQ_MAGIC;
	b[1] = op;
	b[2] = (uint8_t)(kl >> 8);
	b[3] = (uint8_t)kl;
	b[4] = el;
	b[8] = (uint8_t)(bl >> 24);
	b[9] = (uint8_t)(bl >> 16);
	b[10] = (uint8_t)(bl >> 8);
	b[11] = (uint8_t)bl;
	b[12] = 0xde;
	b[13] = 0xad;
	b[14] = 0xbe;
	b[15] = 0xef;
	return MC_BIN_HDR_LEN + bl;
}

static void test_binary(void)
{
	static uint8_t b[MC_BIN_HDR_LEN + 8000];
	struct mc_bin_req r;
	struct mc_parse_res res;

	/* set: extras flags 0x01020304, exptime 100; key "key"; value "value" */
	size_t n = bin_req(b, MC_BIN_SETQ, 3, 8, 8 + 3 + 5);
	b[24] = 1;
	b[25] = 2;
	b[26] = 3;
	b[27] = 4;
	b[31] = 100;
	memcpy(b + 32, "keyvalue", 8);
	for (size_t i = 0; i < n; i++) {
		CHECK(mc_bin_parse(b, i, IMAX, &r, &res) == MC_PARSE_NEED_MORE);
		CHECK(res.need > i);
	}
	CHECK(mc_bin_parse(b, n, IMAX, &r, &res) == MC_PARSE_OK);
	CHECK(r.op == MC_OP_SET && r.quiet && r.flags == 0x01020304 && r.exptime == 100);
	CHECK(r.keylen == 3 && !memcmp(r.key, "key", 3) && r.vlen == 5 &&
	      !memcmp(r.value, "value", 5));
	CHECK_EQ(res.consumed, n);
	CHECK(r.opaque == 0xdeadbeefu);

	/* get with extras: protocol error, close */
	n = bin_req(b, MC_BIN_GET, 1, 4, 5);
	CHECK(mc_bin_parse(b, n, IMAX, &r, &res) == MC_PARSE_ERROR);
	CHECK(res.bin_status == MC_BIN_EINVAL && res.close);
	/* key longer than the body: unknown command, close */
	n = bin_req(b, MC_BIN_GET, 10, 0, 5);
	CHECK(mc_bin_parse(b, MC_BIN_HDR_LEN, IMAX, &r, &res) == MC_PARSE_ERROR);
	CHECK(res.bin_status == MC_BIN_UNKNOWN_COMMAND && res.close);
	/* key of 251 bytes: EINVAL, close */
	n = bin_req(b, MC_BIN_GET, 251, 0, 251);
	CHECK(mc_bin_parse(b, n, IMAX, &r, &res) == MC_PARSE_ERROR && res.close);
	/* unknown opcode: UNKNOWN_COMMAND, body swallowed, connection kept */
	n = bin_req(b, 0x55, 0, 0, 7);
	CHECK(mc_bin_parse(b, MC_BIN_HDR_LEN, IMAX, &r, &res) == MC_PARSE_ERROR);
	CHECK(res.bin_status == MC_BIN_UNKNOWN_COMMAND && !res.close && res.swallow == 7);
	CHECK_EQ(res.consumed, MC_BIN_HDR_LEN);
	/* value over -I: E2BIG once extras and key are in, value swallowed, set drops key */
	n = bin_req(b, MC_BIN_SET, 2, 8, 8 + 2 + 5000);
	memcpy(b + 32, "kk", 2);
	CHECK(mc_bin_parse(b, MC_BIN_HDR_LEN + 9, IMAX, &r, &res) == MC_PARSE_NEED_MORE);
	CHECK(mc_bin_parse(b, MC_BIN_HDR_LEN + 10, IMAX, &r, &res) == MC_PARSE_ERROR);
	CHECK(res.bin_status == MC_BIN_E2BIG && res.swallow == 5000 && !res.close);
	CHECK(res.ndrop_key == 2 && !memcmp(res.drop_key, "kk", 2));
	/* bad magic: close without reply */
	b[0] = 0x42;
	CHECK(mc_bin_parse(b, 1, IMAX, &r, &res) == MC_PARSE_ERROR);
	CHECK(res.close && res.bin_status == 0);
	/* incr: 20 bytes of extras */
	n = bin_req(b, MC_BIN_INCREMENT, 1, 20, 21);
	b[31] = 7; /* delta 7 */
	b[39] = 9; /* initial 9 */
	b[40] = 0xff;
	b[41] = 0xff;
	b[42] = 0xff;
	b[43] = 0xff;
	b[44] = 'n';
	CHECK(mc_bin_parse(b, n, IMAX, &r, &res) == MC_PARSE_OK);
	CHECK(r.delta == 7 && r.initial == 9 && r.exptime == 0xffffffffLL);
	/* flush with and without a delay; noop */
	n = bin_req(b, MC_BIN_FLUSH, 0, 4, 4);
	b[27] = 3;
	CHECK(mc_bin_parse(b, n, IMAX, &r, &res) == MC_PARSE_OK && r.exptime == 3);
	n = bin_req(b, MC_BIN_NOOP, 0, 0, 0);
	CHECK(mc_bin_parse(b, n, IMAX, &r, &res) == MC_PARSE_OK && r.op == MC_OP_NOOP);
}

static void test_base64(void)
{
	const char *v[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
	const char *e[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	for (int i = 0; i < 7; i++) {
		char enc[32], dec[32];
		size_t n = mc_b64_encode(v[i], strlen(v[i]), enc);
		CHECK(n == strlen(e[i]) && !memcmp(enc, e[i], n));
		if (i > 0) {
			CHECK_EQ_I(mc_b64_decode(e[i], n, dec, sizeof dec), (long)strlen(v[i]));
			CHECK(!memcmp(dec, v[i], strlen(v[i])));
		}
	}
	char d[8];
	CHECK_EQ_I(mc_b64_decode("Zm9", 3, d, 8), -1);
	CHECK_EQ_I(mc_b64_decode("Z=9v", 4, d, 8), -1);
	CHECK_EQ_I(mc_b64_decode("Zm9vYmFy", 8, d, 5), -1);
}

int main(void)
{
	test_ascii_ok();
	test_ascii_errors();
	test_meta();
	test_binary();
	test_base64();
	printf("cached_proto: ok\n");
	return 0;
}
