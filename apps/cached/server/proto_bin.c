/*
 * apps/cached/server/proto_bin.c - memcached 1.6's binary protocol request parser
 * (proto.h). Pure: buffer in, request or error status out.
 *
 * Header (24 bytes, big-endian): magic, opcode, key length (2), extras length, data type,
 * vbucket (2), total body length (4), opaque (4), CAS (8); then extras, key, value.
 * The shape checks per opcode and the statuses for violations are memcached's
 * (proto_bin.c dispatch_bin_command): a key over 250 bytes or extras/key/body of the wrong
 * size for the opcode is a protocol error (EINVAL, then close); a key+extras longer than
 * the body is UNKNOWN_COMMAND and close; an opcode memcached does not serve is
 * UNKNOWN_COMMAND with the body swallowed; a storage value longer than -I is E2BIG with
 * the value swallowed.
 */
#include "proto.h"

#include <string.h>

static uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)((p[0] << 8) | p[1]);
}
static uint32_t rd32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static uint64_t rd64(const uint8_t *p)
{
	return ((uint64_t)rd32(p) << 32) | rd32(p + 4);
}

const char *mc_bin_status_text(uint16_t st)
{
	switch (st) {
	case MC_BIN_OK: return "";
	case MC_BIN_KEY_ENOENT: return "Not found";
	case MC_BIN_KEY_EEXISTS: return "Data exists for key.";
	case MC_BIN_E2BIG: return "Too large.";
	case MC_BIN_EINVAL: return "Invalid arguments";
	case MC_BIN_NOT_STORED: return "Not stored.";
	case MC_BIN_DELTA_BADVAL: return "Non-numeric server-side value for incr or decr";
	case MC_BIN_UNKNOWN_COMMAND: return "Unknown command";
	case MC_BIN_ENOMEM: return "Out of memory";
	default: return "Unknown error";
	}
}

static enum mc_parse berr(struct mc_parse_res *res, uint16_t st, size_t consumed, size_t swallow,
			  bool close)
{
	res->bin_status = st;
	res->consumed = consumed;
	res->swallow = swallow;
	res->close = close;
	res->err = NULL;
	return MC_PARSE_ERROR;
}

/* Normalise opcode into req->op/quiet/with_key; returns false for an opcode we do not
 * serve (memcached answers those UNKNOWN_COMMAND too: SASL without -S, VERBOSITY, the
 * range ops, ...). */
static bool classify(struct mc_bin_req *req)
{
	switch (req->opcode) {
	case MC_BIN_GETQ: req->quiet = true; /* fall through */
	case MC_BIN_GET: req->op = MC_OP_GET; return true;
	case MC_BIN_GETKQ: req->quiet = true; /* fall through */
	case MC_BIN_GETK:
		req->op = MC_OP_GET;
		req->with_key = true;
		return true;
	case MC_BIN_SETQ: req->quiet = true; /* fall through */
	case MC_BIN_SET: req->op = MC_OP_SET; return true;
	case MC_BIN_ADDQ: req->quiet = true; /* fall through */
	case MC_BIN_ADD: req->op = MC_OP_ADD; return true;
	case MC_BIN_REPLACEQ: req->quiet = true; /* fall through */
	case MC_BIN_REPLACE: req->op = MC_OP_REPLACE; return true;
	case MC_BIN_DELETEQ: req->quiet = true; /* fall through */
	case MC_BIN_DELETE: req->op = MC_OP_DELETE; return true;
	case MC_BIN_INCREMENTQ: req->quiet = true; /* fall through */
	case MC_BIN_INCREMENT: req->op = MC_OP_INCR; return true;
	case MC_BIN_DECREMENTQ: req->quiet = true; /* fall through */
	case MC_BIN_DECREMENT: req->op = MC_OP_DECR; return true;
	case MC_BIN_QUITQ: req->quiet = true; /* fall through */
	case MC_BIN_QUIT: req->op = MC_OP_QUIT; return true;
	case MC_BIN_FLUSHQ: req->quiet = true; /* fall through */
	case MC_BIN_FLUSH: req->op = MC_OP_FLUSH_ALL; return true;
	case MC_BIN_APPENDQ: req->quiet = true; /* fall through */
	case MC_BIN_APPEND: req->op = MC_OP_APPEND; return true;
	case MC_BIN_PREPENDQ: req->quiet = true; /* fall through */
	case MC_BIN_PREPEND: req->op = MC_OP_PREPEND; return true;
	case MC_BIN_NOOP: req->op = MC_OP_NOOP; return true;
	case MC_BIN_VERSION: req->op = MC_OP_VERSION; return true;
	case MC_BIN_STAT: req->op = MC_OP_STATS; return true;
	case MC_BIN_TOUCH: req->op = MC_OP_TOUCH; return true;
	case MC_BIN_GATQ: req->quiet = true; /* fall through */
	case MC_BIN_GAT: req->op = MC_OP_GAT; return true;
	case MC_BIN_GATKQ: req->quiet = true; /* fall through */
	case MC_BIN_GATK:
		req->op = MC_OP_GAT;
		req->with_key = true;
		return true;
	default: return false;
	}
}

/* memcached's per-opcode shape rules (extras, key, body sizes). */
static bool shape_ok(const struct mc_bin_req *r)
{
	uint8_t e = r->extlen;
	uint16_t k = r->keylen;
	uint32_t b = r->bodylen;
	switch (r->op) {
	case MC_OP_VERSION:
	case MC_OP_NOOP:
	case MC_OP_QUIT: return e == 0 && k == 0 && b == 0;
	case MC_OP_FLUSH_ALL: return k == 0 && b == e && (e == 0 || e == 4);
	case MC_OP_SET:
	case MC_OP_ADD:
	case MC_OP_REPLACE: return e == 8 && k != 0 && b >= (uint32_t)k + 8;
	case MC_OP_GET: return e == 0 && k > 0 && b == k;
	case MC_OP_DELETE: return e == 0 && k > 0 && b == k;
	case MC_OP_INCR:
	case MC_OP_DECR: return e == 20 && k > 0 && b == (uint32_t)k + 20;
	case MC_OP_APPEND:
	case MC_OP_PREPEND: return e == 0 && k > 0;
	case MC_OP_STATS: return e == 0 && b == k;
	case MC_OP_TOUCH:
	case MC_OP_GAT: return e == 4 && k != 0 && b == (uint32_t)k + 4;
	default: return false;
	}
}

enum mc_parse mc_bin_parse(const uint8_t *buf, size_t len, uint32_t item_max,
			   struct mc_bin_req *req, struct mc_parse_res *res)
{
	memset(req, 0, sizeof *req);
	memset(res, 0, sizeof *res);
	if (len < 1) {
		res->need = MC_BIN_HDR_LEN;
		return MC_PARSE_NEED_MORE;
	}
	if (buf[0] != MC_BIN_REQ_MAGIC)
		return berr(res, 0, len, 0, true); /* memcached: "Invalid magic", close */
	if (len < MC_BIN_HDR_LEN) {
		res->need = MC_BIN_HDR_LEN;
		return MC_PARSE_NEED_MORE;
	}
	req->opcode = buf[1];
	req->keylen = rd16(buf + 2);
	req->extlen = buf[4];
	req->bodylen = rd32(buf + 8);
	req->opaque = rd32(buf + 12);
	req->cas = rd64(buf + 16);

	if ((uint32_t)req->keylen + req->extlen > req->bodylen)
		return berr(res, MC_BIN_UNKNOWN_COMMAND, MC_BIN_HDR_LEN, 0, true);
	if (req->keylen > MC_KEY_MAX || req->bodylen > MC_BODY_ABSURD)
		return berr(res, MC_BIN_EINVAL, MC_BIN_HDR_LEN, 0, true);
	if (!classify(req))
		return berr(res, MC_BIN_UNKNOWN_COMMAND, MC_BIN_HDR_LEN, req->bodylen, false);
	if (!shape_ok(req))
		return berr(res, MC_BIN_EINVAL, MC_BIN_HDR_LEN, 0, true);

	uint32_t head = (uint32_t)req->extlen + req->keylen;
	req->vlen = req->bodylen - head;
	bool storage = req->op == MC_OP_SET || req->op == MC_OP_ADD || req->op == MC_OP_REPLACE ||
		       req->op == MC_OP_APPEND || req->op == MC_OP_PREPEND;
	if (storage && req->vlen > item_max) {
		/* decide once extras and key are here, so a set can drop the old value */
		if (len < MC_BIN_HDR_LEN + head) {
			res->need = MC_BIN_HDR_LEN + head;
			return MC_PARSE_NEED_MORE;
		}
		berr(res, MC_BIN_E2BIG, MC_BIN_HDR_LEN + head, req->vlen, false);
		if (req->op == MC_OP_SET) {
			res->drop_key = buf + MC_BIN_HDR_LEN + req->extlen;
			res->ndrop_key = req->keylen;
		}
		return MC_PARSE_ERROR;
	}
	size_t total = (size_t)MC_BIN_HDR_LEN + req->bodylen;
	if (len < total) {
		res->need = total;
		return MC_PARSE_NEED_MORE;
	}
	const uint8_t *ext = buf + MC_BIN_HDR_LEN;
	req->key = ext + req->extlen;
	req->value = req->key + req->keylen;
	switch (req->op) {
	case MC_OP_SET:
	case MC_OP_ADD:
	case MC_OP_REPLACE:
		req->flags = rd32(ext);
		req->exptime = rd32(ext + 4);
		break;
	case MC_OP_INCR:
	case MC_OP_DECR:
		req->delta = rd64(ext);
		req->initial = rd64(ext + 8);
		req->exptime = rd32(ext + 16);
		break;
	case MC_OP_TOUCH:
	case MC_OP_GAT: req->exptime = rd32(ext); break;
	case MC_OP_FLUSH_ALL: req->exptime = req->extlen == 4 ? rd32(ext) : 0; break;
	default: break;
	}
	res->consumed = total;
	return MC_PARSE_OK;
}
