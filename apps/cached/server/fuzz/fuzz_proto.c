/*
 * apps/cached/server/fuzz/fuzz_proto.c - libFuzzer harness over tsync-cached's parsers.
 *
 * The input is a connection's byte stream. The harness drives the parser exactly as the
 * server's connection loop does (server.c conn_process): parse at the front, drop what a
 * request or an error consumed, skip swallowed bytes, stop at NEED_MORE - and also offers
 * every prefix-at-NEED_MORE the server would see as bytes trickle in. It checks the
 * contract of proto.h on every result, so besides crashes and ASan/UBSan reports it
 * catches parser answers the server would mis-handle:
 *   - OK/ERROR consume at least one byte and no more than given (no infinite loop, no
 *     over-read), NEED_MORE asks for more than it has (or a line);
 *   - every pointer in a request lies inside the input (or the request's key buffer);
 *   - keys are 1..250 bytes; values fit -I; an ERROR has a reply.
 * CACHED_FUZZ_MODE=ascii|bin picks the parser (default: by the first byte, as the server).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

static int g_mode; /* 0 auto, 1 ascii, 2 bin */

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *m = getenv("CACHED_FUZZ_MODE");
	if (m && strcmp(m, "ascii") == 0)
		g_mode = 1;
	else if (m && strcmp(m, "bin") == 0)
		g_mode = 2;
	return 0;
}

#define ITEM_MAX 4096u

static void fail(const char *what)
{
	fprintf(stderr, "contract violated: %s\n", what);
	abort();
}

static void in_buf(const void *p, size_t n, const uint8_t *b, size_t len, const void *alt,
		   size_t altn)
{
	const uint8_t *q = p;
	if (n == 0)
		return;
	if (q >= b && q + n <= b + len)
		return;
	if (alt && q >= (const uint8_t *)alt && q + n <= (const uint8_t *)alt + altn)
		return;
	fail("pointer outside the input");
}

static void check_res(enum mc_parse pr, const struct mc_parse_res *res, size_t len, bool bin)
{
	if (pr == MC_PARSE_OK || pr == MC_PARSE_ERROR) {
		if (res->consumed == 0 || res->consumed > len)
			fail("consumed 0 or past the input");
	}
	if (pr == MC_PARSE_NEED_MORE && res->need != 0 && res->need <= len)
		fail("need-more for bytes already given");
	/* an error is a reply line, except a silent close (an HTTP request line) */
	bool silent_close = !bin && res->err && res->err[0] == 0 && res->close;
	if (pr == MC_PARSE_ERROR && !bin && !silent_close &&
	    (!res->err || strlen(res->err) < 5 ||
	     memcmp(res->err + strlen(res->err) - 2, "\r\n", 2)))
		fail("ASCII error without a reply line");
	if (pr == MC_PARSE_ERROR && res->swallow > (size_t)MC_BODY_ABSURD + 2)
		fail("swallow absurd");
}

static size_t step_ascii(const uint8_t *b, size_t len, enum mc_parse *out, size_t *swallow)
{
	struct mc_ascii_req req;
	struct mc_parse_res res;
	enum mc_parse pr = mc_ascii_parse((const char *)b, len, ITEM_MAX, &req, &res);
	check_res(pr, &res, len, false);
	*out = pr;
	if (pr == MC_PARSE_OK) {
		const void *kb = req.keybuf;
		size_t kbn = sizeof req.keybuf;
		if (req.key) {
			if (req.nkey == 0 || req.nkey > MC_KEY_MAX)
				fail("key length");
			in_buf(req.key, req.nkey, b, len, kb, kbn);
		}
		if (req.keys) {
			in_buf(req.keys, req.keys_len, b, len, NULL, 0);
			size_t pos = 0, nk;
			const char *k;
			while (mc_next_key(&req, &pos, &k, &nk)) {
				if (nk == 0 || nk > MC_KEY_MAX)
					fail("get key length");
				in_buf(k, nk, b, len, NULL, 0);
			}
		}
		if (req.data) {
			if (req.nbytes > ITEM_MAX)
				fail("value over -I accepted");
			in_buf(req.data, req.nbytes, b, res.consumed, NULL, 0);
		}
		if (req.args)
			in_buf(req.args, req.args_len, b, len, NULL, 0);
		if (req.meta.tokens) {
			in_buf(req.meta.tokens, req.meta.ntokens_len, b, len, NULL, 0);
			size_t pos = 0, nt;
			const char *t;
			while (mc_meta_next_flag(&req.meta, &pos, &t, &nt))
				in_buf(t, nt, b, len, NULL, 0);
		}
		if (req.meta.opaque) {
			/* mg and ma take a long opaque to the executor (proto.h) */
			if (req.meta.nopaque + 1 > MC_META_OPAQUE_MAX && req.op != MC_OP_MG &&
			    req.op != MC_OP_MA)
				fail("opaque too long");
			in_buf(req.meta.opaque, req.meta.nopaque, b, len, NULL, 0);
		}
		if (req.meta.key_b64) {
			char enc[4 * ((MC_KEY_MAX + 2) / 3) + 4];
			size_t n = mc_b64_encode(req.key, req.nkey, enc);
			char dec[MC_KEY_MAX];
			if (mc_b64_decode(enc, n, dec, sizeof dec) != (long)req.nkey ||
			    memcmp(dec, req.key, req.nkey) != 0)
				fail("base64 round trip");
		}
	}
	if (pr == MC_PARSE_ERROR) {
		*swallow = res.swallow;
		if (res.drop_key) /* a base64 meta key lives in req.keybuf */
			in_buf(res.drop_key, res.ndrop_key, b, len, req.keybuf, sizeof req.keybuf);
	}
	return pr == MC_PARSE_NEED_MORE ? 0 : res.consumed;
}

static size_t step_bin(const uint8_t *b, size_t len, enum mc_parse *out, size_t *swallow)
{
	struct mc_bin_req req;
	struct mc_parse_res res;
	enum mc_parse pr = mc_bin_parse(b, len, ITEM_MAX, &req, &res);
	check_res(pr, &res, len, true);
	*out = pr;
	if (pr == MC_PARSE_OK) {
		if (res.consumed != MC_BIN_HDR_LEN + (size_t)req.bodylen)
			fail("binary consumed != header + body");
		if (req.keylen > MC_KEY_MAX)
			fail("binary key length");
		in_buf(req.key, req.keylen, b, res.consumed, NULL, 0);
		in_buf(req.value, req.vlen, b, res.consumed, NULL, 0);
		if ((req.op == MC_OP_SET || req.op == MC_OP_APPEND) && req.vlen > ITEM_MAX)
			fail("binary value over -I accepted");
	}
	if (pr == MC_PARSE_ERROR) {
		*swallow = res.swallow;
		if (res.drop_key)
			in_buf(res.drop_key, res.ndrop_key, b, len, NULL, 0);
	}
	return pr == MC_PARSE_NEED_MORE ? 0 : res.consumed;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* an exact-size copy, so ASan sees any read past the bytes "received" */
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	size_t off = 0, swallow = 0;
	int proto = g_mode;
	for (int steps = 0; off < size && steps < 100000; steps++) {
		if (swallow) {
			size_t n = size - off < swallow ? size - off : swallow;
			off += n;
			swallow -= n;
			continue;
		}
		if (proto == 0)
			proto = buf[off] == MC_BIN_REQ_MAGIC ? 2 : 1;
		/* the server parses again whenever more bytes arrive: try a shorter view too */
		size_t len = size - off;
		enum mc_parse pr;
		size_t tmp_sw = 0;
		if (len > 1) {
			size_t part = len / 2;
			uint8_t *p = malloc(part);
			if (p) {
				memcpy(p, buf + off, part);
				if (proto == 1)
					step_ascii(p, part, &pr, &tmp_sw);
				else
					step_bin(p, part, &pr, &tmp_sw);
				free(p);
			}
		}
		size_t used = proto == 1 ? step_ascii(buf + off, len, &pr, &swallow)
					 : step_bin(buf + off, len, &pr, &swallow);
		if (pr == MC_PARSE_NEED_MORE)
			break;
		off += used;
	}
	free(buf);
	return 0;
}
