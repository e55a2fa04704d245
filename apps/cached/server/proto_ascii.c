/*
 * apps/cached/server/proto_ascii.c - memcached's ASCII protocol parser, classic and meta
 * commands (proto.h). Pure: buffer in, request or error reply out.
 *
 * Tokens are separated by single or repeated spaces (memcached's tokenize_command); a line
 * ends at "\n" with an optional "\r" before it. The reply texts and the cases that
 * produce them follow memcached 1.6.18, whose behaviour on each malformed line was
 * compared against this parser's (docs/cached.md, "Server"):
 *  - unknown command, wrong token count            -> "ERROR"
 *  - bad numbers / key > 250 bytes                   -> "CLIENT_ERROR bad command line format"
 *    (the data block of such a storage line is not swallowed: memcached does not know its
 *    length either, so the block is then read as a command line)
 *  - value longer than -I                            -> "SERVER_ERROR object too large for
 *    cache", the data block swallowed
 *  - data block not followed by "\r\n"               -> "CLIENT_ERROR bad data chunk"
 *  - a line with no "\n" after 2048 bytes (a multi-get after 4 MiB) -> closed.
 */
#include "proto.h"

#include <limits.h>
#include <string.h>

#define MAXTOK (MC_TOKENS_MAX + 4) /* command, key, datalen, flags, and one to see excess */

struct tok {
	const char *p;
	size_t n;
};

static enum mc_parse perr(struct mc_parse_res *res, size_t consumed, const char *msg)
{
	res->consumed = consumed;
	res->err = msg;
	res->swallow = 0;
	res->close = false;
	return MC_PARSE_ERROR;
}

/* Split line[0..n) into tokens; returns the count, at most max (more are not split). */
static size_t tokenize(const char *line, size_t n, struct tok *t, size_t max)
{
	size_t nt = 0, i = 0;
	while (i < n && nt < max) {
		while (i < n && line[i] == ' ')
			i++;
		if (i == n)
			break;
		size_t s = i;
		while (i < n && line[i] != ' ')
			i++;
		t[nt].p = line + s;
		t[nt].n = i - s;
		nt++;
	}
	return nt;
}

static bool tok_is(const struct tok *t, const char *s)
{
	size_t n = strlen(s);
	return t->n == n && memcmp(t->p, s, n) == 0;
}

/* Decimal u64 over the whole token: digits only, no overflow (memcached safe_strtoull,
 * which also refuses a '-'). */
static bool parse_u64(const char *p, size_t n, uint64_t *out)
{
	if (n == 0 || n > 20)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned char)p[i] - '0';
		if (d > 9)
			return false;
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static bool parse_u32(const char *p, size_t n, uint32_t *out)
{
	uint64_t v;
	if (!parse_u64(p, n, &v) || v > UINT32_MAX)
		return false;
	*out = (uint32_t)v;
	return true;
}

/* Signed 32-bit decimal (memcached safe_strtol: exptime, lengths, meta TTLs). */
static bool parse_i32(const char *p, size_t n, int64_t *out)
{
	bool neg = false;
	if (n > 0 && p[0] == '-') {
		neg = true;
		p++;
		n--;
	}
	uint64_t v;
	if (!parse_u64(p, n, &v))
		return false;
	if (neg ? v > (uint64_t)INT32_MAX + 1 : v > INT32_MAX)
		return false;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return true;
}

static bool tok_u64(const struct tok *t, uint64_t *o) { return parse_u64(t->p, t->n, o); }
static bool tok_u32(const struct tok *t, uint32_t *o) { return parse_u32(t->p, t->n, o); }
static bool tok_i32(const struct tok *t, int64_t *o) { return parse_i32(t->p, t->n, o); }

/* ---- base64 --------------------------------------------------------------------------- */

static const char b64chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64val(unsigned char c)
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

long mc_b64_decode(const char *in, size_t n, char *out, size_t cap)
{
	if (n == 0 || n % 4 != 0)
		return -1;
	size_t o = 0;
	for (size_t i = 0; i < n; i += 4) {
		int v[4];
		int pad = 0;
		for (int j = 0; j < 4; j++) {
			unsigned char c = (unsigned char)in[i + j];
			if (c == '=' && i + 4 == n && j >= 2) {
				v[j] = 0;
				pad++;
			} else if (pad) {
				return -1; /* data after '=' */
			} else if ((v[j] = b64val(c)) < 0) {
				return -1;
			}
		}
		uint32_t w = ((uint32_t)v[0] << 18) | ((uint32_t)v[1] << 12) |
			     ((uint32_t)v[2] << 6) | (uint32_t)v[3];
		size_t k = 3 - (size_t)pad;
		if (o + k > cap)
			return -1;
		out[o++] = (char)(w >> 16);
		if (k > 1)
			out[o++] = (char)(w >> 8);
		if (k > 2)
			out[o++] = (char)w;
	}
	return (long)o;
}

size_t mc_b64_encode(const void *in_, size_t n, char *out)
{
	const unsigned char *in = in_;
	size_t o = 0;
	for (size_t i = 0; i < n; i += 3) {
		uint32_t w = (uint32_t)in[i] << 16;
		if (i + 1 < n)
			w |= (uint32_t)in[i + 1] << 8;
		if (i + 2 < n)
			w |= in[i + 2];
		out[o++] = b64chars[(w >> 18) & 63];
		out[o++] = b64chars[(w >> 12) & 63];
		out[o++] = i + 1 < n ? b64chars[(w >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? b64chars[w & 63] : '=';
	}
	return o;
}

/* ---- meta flags ----------------------------------------------------------------------- */

/* As memcached 1.6.18 accepts them (mg E / ms E, explicit CAS, are 1.6.18's "invalid
 * flag" too). */
static const char *const mg_flags = "bcfhklNOqRstuvTPL";
static const char *const ms_flags = "bcCFIkOqTMPL";
static const char *const md_flags = "bCIkOqTPL";
static const char *const ma_flags = "bCNJDTMqtcvOkPL";

/*
 * Parse flag tokens t[0..nt) of meta command op into m. Returns NULL or the error reply
 * (memcached 1.6.18's texts: md and ma answer every flag error "invalid or duplicate
 * flag"; mg and ms distinguish).
 */
static const char *parse_meta_flags(enum mc_op op, const struct tok *t, size_t nt,
				    struct mc_meta *m)
{
	const char *allowed = op == MC_OP_MG ? mg_flags
			      : op == MC_OP_MS ? ms_flags
			      : op == MC_OP_MD ? md_flags
					       : ma_flags;
	bool coarse = op == MC_OP_MD || op == MC_OP_MA;
	const char *e_invalid = coarse ? "CLIENT_ERROR invalid or duplicate flag\r\n"
				       : "CLIENT_ERROR invalid flag\r\n";
	const char *e_dup = coarse ? "CLIENT_ERROR invalid or duplicate flag\r\n"
				   : "CLIENT_ERROR duplicate flag\r\n";
	const char *e_tok = coarse ? "CLIENT_ERROR invalid or duplicate flag\r\n"
				   : "CLIENT_ERROR bad token in command line format\r\n";

	m->delta = 1;
	m->mode = op == MC_OP_MA ? 'I' : 'S';
	for (size_t i = 0; i < nt; i++) {
		char f = t[i].p[0];
		const char *arg = t[i].p + 1;
		size_t narg = t[i].n - 1;
		bool letter = (f >= 'a' && f <= 'z') || (f >= 'A' && f <= 'Z');
		if (!letter || !strchr(allowed, f))
			return e_invalid;
		if (f == 'P' || f == 'L')
			continue; /* proxy hints: ignored, may repeat */
		if (m->flags & MC_MF(f))
			return e_dup;
		m->flags |= MC_MF(f);
		switch (f) {
		case 'O':
			if (narg > MC_META_OPAQUE_MAX)
				return "CLIENT_ERROR opaque token too long\r\n";
			m->opaque = arg;
			m->nopaque = narg;
			break;
		case 'C':
			if (!parse_u64(arg, narg, &m->cas_cmp))
				return e_tok;
			break;
		case 'D':
			if (!parse_u64(arg, narg, &m->delta))
				return e_tok;
			break;
		case 'J':
			if (!parse_u64(arg, narg, &m->initial))
				return e_tok;
			break;
		case 'F':
			if (!parse_u32(arg, narg, &m->client_flags))
				return "CLIENT_ERROR bad command line format\r\n";
			break;
		case 'T':
			if (!parse_i32(arg, narg, &m->ttl))
				return e_tok;
			break;
		case 'N':
			if (!parse_i32(arg, narg, &m->vivify_ttl))
				return e_tok;
			break;
		case 'R':
			if (!parse_i32(arg, narg, &m->recache_ttl))
				return e_tok;
			break;
		case 'M':
			if (narg != 1)
				return op == MC_OP_MS ? "CLIENT_ERROR invalid mode for ms M token\r\n"
						      : "CLIENT_ERROR invalid mode for ma M token\r\n";
			m->mode = arg[0];
			if (op == MC_OP_MS) {
				if (m->mode >= 'a' && m->mode <= 'z')
					m->mode = (char)(m->mode - 'a' + 'A');
				if (!strchr("SEAPR", m->mode))
					return "CLIENT_ERROR invalid mode for ms M token\r\n";
			} else {
				if (m->mode == '+' || m->mode == 'i')
					m->mode = 'I';
				if (m->mode == '-' || m->mode == 'd')
					m->mode = 'D';
				if (m->mode != 'I' && m->mode != 'D')
					return "CLIENT_ERROR invalid mode for ma M token\r\n";
			}
			break;
		default:
			break; /* flags without a token */
		}
	}
	return NULL;
}

char mc_meta_next_flag(const struct mc_meta *m, size_t *pos, const char **tok, size_t *ntok)
{
	size_t i = *pos, n = m->ntokens_len;
	const char *s = m->tokens;
	while (i < n && s[i] == ' ')
		i++;
	if (i >= n) {
		*pos = i;
		return 0;
	}
	size_t b = i;
	while (i < n && s[i] != ' ')
		i++;
	*pos = i;
	*tok = s + b + 1;
	*ntok = i - b - 1;
	return s[b];
}

/* ---- the parser ----------------------------------------------------------------------- */

static bool is_get_line(const char *buf, size_t len)
{
	size_t i = 0;
	while (i < len && i < 100 && buf[i] == ' ')
		i++;
	const char *p = buf + i;
	size_t n = len - i;
	return (n >= 4 && (memcmp(p, "get ", 4) == 0 || memcmp(p, "gat ", 4) == 0)) ||
	       (n >= 5 && (memcmp(p, "gets ", 5) == 0 || memcmp(p, "gats ", 5) == 0));
}

bool mc_next_key(const struct mc_ascii_req *req, size_t *pos, const char **key, size_t *nkey)
{
	size_t i = *pos, n = req->keys_len;
	const char *s = req->keys;
	while (i < n && s[i] == ' ')
		i++;
	if (i >= n) {
		*pos = i;
		return false;
	}
	size_t b = i;
	while (i < n && s[i] != ' ')
		i++;
	*pos = i;
	*key = s + b;
	*nkey = i - b;
	return true;
}

/* The storage commands and ms: the data block after the line. */
static enum mc_parse need_data(const char *buf, size_t len, size_t linelen, int64_t vlen,
			       uint32_t item_max, struct mc_ascii_req *req,
			       struct mc_parse_res *res)
{
	if ((uint64_t)vlen > item_max) {
		res->consumed = linelen;
		res->err = "SERVER_ERROR object too large for cache\r\n";
		/* swallow the block, unless it is too long to be anything but garbage */
		res->close = (uint64_t)vlen > MC_BODY_ABSURD;
		res->swallow = res->close ? 0 : (size_t)vlen + 2;
		if (req->op == MC_OP_SET || (req->op == MC_OP_MS && req->meta.mode == 'S')) {
			res->drop_key = req->key;
			res->ndrop_key = req->nkey;
		}
		return MC_PARSE_ERROR;
	}
	size_t total = linelen + (size_t)vlen + 2;
	if (len < total) {
		res->need = total;
		return MC_PARSE_NEED_MORE;
	}
	if (buf[total - 2] != '\r' || buf[total - 1] != '\n')
		return perr(res, total, "CLIENT_ERROR bad data chunk\r\n");
	req->data = buf + linelen;
	req->nbytes = (uint32_t)vlen;
	res->consumed = total;
	return MC_PARSE_OK;
}

static enum mc_parse parse_get(const struct tok *t, size_t nt, const char *lineend,
			       bool touch, struct mc_ascii_req *req, struct mc_parse_res *res,
			       size_t linelen)
{
	size_t first = 1;
	if (touch) {
		if (nt < 2)
			return perr(res, linelen, "ERROR\r\n");
		if (!tok_i32(&t[1], &req->exptime))
			return perr(res, linelen, "CLIENT_ERROR invalid exptime argument\r\n");
		first = 2;
	} else if (nt < 2) {
		return perr(res, linelen, "ERROR\r\n");
	}
	req->keys = nt > first ? t[first].p : lineend;
	req->keys_len = (size_t)(lineend - req->keys);
	size_t pos = 0;
	const char *k;
	size_t nk;
	while (mc_next_key(req, &pos, &k, &nk)) {
		if (nk > MC_KEY_MAX)
			return perr(res, linelen, "CLIENT_ERROR bad command line format\r\n");
	}
	res->consumed = linelen;
	return MC_PARSE_OK;
}

static enum mc_parse parse_meta(enum mc_op op, const char *buf, size_t len, size_t linelen,
				const struct tok *t, size_t nt, uint32_t item_max,
				struct mc_ascii_req *req, struct mc_parse_res *res)
{
	const char *bad = "CLIENT_ERROR bad command line format\r\n";
	if (nt < 2)
		return perr(res, linelen, op == MC_OP_ME ? bad : "ERROR\r\n");
	if (t[1].n > MC_KEY_MAX)
		return perr(res, linelen, bad);
	req->key = t[1].p;
	req->nkey = t[1].n;
	if (op == MC_OP_ME) {
		if (nt > 3 || (nt == 3 && !tok_is(&t[2], "b")))
			return perr(res, linelen, bad);
		req->meta.key_b64 = nt == 3;
		req->meta.flags = nt == 3 ? MC_MF('b') : 0;
	}
	size_t ftok = 2;
	int64_t vlen = 0;
	if (op == MC_OP_MS) {
		if (nt < 3 || !tok_i32(&t[2], &vlen) || vlen < 0 || vlen > INT32_MAX - 2)
			return perr(res, linelen, bad);
		ftok = 3;
	}
	if (nt > MAXTOK - 1)
		return perr(res, linelen, "CLIENT_ERROR options flags are too long\r\n");
	const char *err = NULL;
	if (op != MC_OP_ME) {
		if (nt > ftok) {
			req->meta.tokens = t[ftok].p;
			req->meta.ntokens_len = (size_t)(t[nt - 1].p + t[nt - 1].n - t[ftok].p);
		}
		err = parse_meta_flags(op, t + ftok, nt - ftok, &req->meta);
		req->meta.key_b64 = (req->meta.flags & MC_MF('b')) != 0;
		req->noreply = (req->meta.flags & MC_MF('q')) != 0;
	}
	if (!err && req->meta.key_b64) {
		long n = mc_b64_decode(req->key, req->nkey, req->keybuf, sizeof req->keybuf);
		if (n <= 0)
			err = "CLIENT_ERROR error decoding key\r\n";
		else {
			req->key = req->keybuf;
			req->nkey = (size_t)n;
		}
	}
	if (op == MC_OP_MS) {
		if (err) {
			/* memcached swallows the announced data block of a rejected ms */
			enum mc_parse r = perr(res, linelen, err);
			if ((uint64_t)vlen <= item_max &&
			    len >= linelen + (size_t)vlen + 2) {
				res->consumed = linelen + (size_t)vlen + 2;
			} else if ((uint64_t)vlen > MC_BODY_ABSURD) {
				res->close = true;
			} else {
				res->swallow = (size_t)vlen + 2;
			}
			return r;
		}
		return need_data(buf, len, linelen, vlen, item_max, req, res);
	}
	if (err)
		return perr(res, linelen, err);
	res->consumed = linelen;
	return MC_PARSE_OK;
}

enum mc_parse mc_ascii_parse(const char *buf, size_t len, uint32_t item_max,
			     struct mc_ascii_req *req, struct mc_parse_res *res)
{
	memset(req, 0, offsetof(struct mc_ascii_req, keybuf));
	memset(res, 0, sizeof *res);

	size_t scan = len < MC_GETLINE_MAX ? len : MC_GETLINE_MAX;
	const char *nl = memchr(buf, '\n', scan);
	if (!nl) {
		if (len > MC_LINE_MAX && (!is_get_line(buf, len) || len >= MC_GETLINE_MAX)) {
			res->consumed = len;
			res->err = "CLIENT_ERROR line too long\r\n";
			res->close = true;
			return MC_PARSE_ERROR;
		}
		res->need = 0;
		return MC_PARSE_NEED_MORE;
	}
	size_t linelen = (size_t)(nl - buf) + 1;
	size_t n = linelen - 1;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	const char *lineend = buf + n;

	struct tok t[MAXTOK];
	size_t nt = tokenize(buf, n, t, MAXTOK);
	if (nt == 0)
		return perr(res, linelen, "ERROR\r\n");

	const struct tok *c = &t[0];
	const char *bad = "CLIENT_ERROR bad command line format\r\n";
	bool last_noreply = nt > 1 && tok_is(&t[nt - 1], "noreply");

	if (c->n == 2 && c->p[0] == 'm') {
		enum mc_op op;
		switch (c->p[1]) {
		case 'g': op = MC_OP_MG; break;
		case 's': op = MC_OP_MS; break;
		case 'd': op = MC_OP_MD; break;
		case 'a': op = MC_OP_MA; break;
		case 'e': op = MC_OP_ME; break;
		case 'n':
			req->op = MC_OP_MN;
			res->consumed = linelen;
			return MC_PARSE_OK;
		default:
			return perr(res, linelen, "ERROR\r\n");
		}
		req->op = op;
		return parse_meta(op, buf, len, linelen, t, nt, item_max, req, res);
	}

	if (tok_is(c, "get") || tok_is(c, "gets") || tok_is(c, "gat") || tok_is(c, "gats")) {
		bool touch = c->p[1] == 'a';
		bool cas = c->n == 4;
		req->op = touch ? (cas ? MC_OP_GATS : MC_OP_GAT) : (cas ? MC_OP_GETS : MC_OP_GET);
		return parse_get(t, nt, lineend, touch, req, res, linelen);
	}

	enum mc_op sop = MC_OP_NONE;
	if (tok_is(c, "set"))
		sop = MC_OP_SET;
	else if (tok_is(c, "add"))
		sop = MC_OP_ADD;
	else if (tok_is(c, "replace"))
		sop = MC_OP_REPLACE;
	else if (tok_is(c, "append"))
		sop = MC_OP_APPEND;
	else if (tok_is(c, "prepend"))
		sop = MC_OP_PREPEND;
	else if (tok_is(c, "cas"))
		sop = MC_OP_CAS;
	if (sop != MC_OP_NONE) {
		size_t base = sop == MC_OP_CAS ? 6 : 5;
		if (nt != base && nt != base + 1)
			return perr(res, linelen, "ERROR\r\n");
		req->op = sop;
		req->noreply = res->noreply = nt == base + 1 && last_noreply;
		int64_t vlen;
		if (t[1].n > MC_KEY_MAX || !tok_u32(&t[2], &req->flags) ||
		    !tok_i32(&t[3], &req->exptime) || !tok_i32(&t[4], &vlen) || vlen < 0 ||
		    vlen > INT32_MAX - 2 ||
		    (sop == MC_OP_CAS && !tok_u64(&t[5], &req->cas)))
			return perr(res, linelen, bad);
		req->key = t[1].p;
		req->nkey = t[1].n;
		return need_data(buf, len, linelen, vlen, item_max, req, res);
	}

	res->consumed = linelen;
	if (tok_is(c, "delete")) {
		req->op = MC_OP_DELETE;
		if (nt < 2)
			return perr(res, linelen, "ERROR\r\n");
		if (nt > 2) {
			bool zero = tok_is(&t[2], "0");
			bool valid = (nt == 3 && (zero || last_noreply)) ||
				     (nt == 4 && zero && last_noreply);
			res->noreply = last_noreply;
			if (!valid)
				return perr(res, linelen,
					    "CLIENT_ERROR bad command line format.  "
					    "Usage: delete <key> [noreply]\r\n");
			req->noreply = last_noreply;
		}
		if (t[1].n > MC_KEY_MAX)
			return perr(res, linelen, bad);
		req->key = t[1].p;
		req->nkey = t[1].n;
		return MC_PARSE_OK;
	}
	if (tok_is(c, "incr") || tok_is(c, "decr")) {
		req->op = c->p[0] == 'i' ? MC_OP_INCR : MC_OP_DECR;
		if (nt != 3 && nt != 4)
			return perr(res, linelen, "ERROR\r\n");
		req->noreply = res->noreply = nt == 4 && last_noreply;
		if (t[1].n > MC_KEY_MAX)
			return perr(res, linelen, bad);
		if (!tok_u64(&t[2], &req->delta))
			return perr(res, linelen, "CLIENT_ERROR invalid numeric delta argument\r\n");
		req->key = t[1].p;
		req->nkey = t[1].n;
		return MC_PARSE_OK;
	}
	if (tok_is(c, "touch")) {
		req->op = MC_OP_TOUCH;
		if (nt != 3 && nt != 4)
			return perr(res, linelen, "ERROR\r\n");
		req->noreply = res->noreply = nt == 4 && last_noreply;
		if (t[1].n > MC_KEY_MAX)
			return perr(res, linelen, bad);
		if (!tok_i32(&t[2], &req->exptime))
			return perr(res, linelen, "CLIENT_ERROR invalid exptime argument\r\n");
		req->key = t[1].p;
		req->nkey = t[1].n;
		return MC_PARSE_OK;
	}
	if (tok_is(c, "flush_all")) {
		req->op = MC_OP_FLUSH_ALL;
		if (nt > 3)
			return perr(res, linelen, "ERROR\r\n");
		req->noreply = res->noreply = last_noreply;
		size_t ndelay = nt - 1 - (last_noreply ? 1 : 0);
		if (ndelay > 1 || (nt == 3 && !last_noreply))
			return perr(res, linelen, "ERROR\r\n");
		if (ndelay == 1 && !tok_i32(&t[1], &req->delay))
			return perr(res, linelen, "CLIENT_ERROR invalid exptime argument\r\n");
		return MC_PARSE_OK;
	}
	if (tok_is(c, "stats")) {
		req->op = MC_OP_STATS;
		req->args = nt > 1 ? t[1].p : lineend;
		req->args_len = (size_t)(lineend - req->args);
		return MC_PARSE_OK;
	}
	if (tok_is(c, "version")) {
		req->op = MC_OP_VERSION; /* memcached 1.6 ignores further tokens, noreply too */
		return MC_PARSE_OK;
	}
	if (tok_is(c, "verbosity")) {
		req->op = MC_OP_VERBOSITY;
		if (nt != 2 && nt != 3)
			return perr(res, linelen, "ERROR\r\n");
		req->noreply = res->noreply = last_noreply;
		uint32_t lvl;
		if (!tok_u32(&t[1], &lvl))
			return perr(res, linelen, bad);
		req->delta = lvl;
		return MC_PARSE_OK;
	}
	if (tok_is(c, "quit")) {
		req->op = MC_OP_QUIT;
		return nt == 1 ? MC_PARSE_OK : perr(res, linelen, "ERROR\r\n");
	}
	if (tok_is(c, "watch")) {
		req->op = MC_OP_WATCH;
		req->args = nt > 1 ? t[1].p : lineend;
		req->args_len = (size_t)(lineend - req->args);
		req->noreply = res->noreply = last_noreply;
		return MC_PARSE_OK;
	}
	if (tok_is(c, "slabs")) {
		req->op = MC_OP_SLABS;
		req->args = nt > 1 ? t[1].p : lineend;
		req->args_len = (size_t)(lineend - req->args);
		req->noreply = res->noreply = last_noreply;
		return MC_PARSE_OK;
	}
	/* memcached closes a connection whose unknown command line ends in an HTTP version
	 * ("GET / HTTP/1.0"): a web client, not a cache client, sent it. (Not for a line
	 * whose first letter is one memcached dispatches on - g s a c i d t - which it
	 * answers ERROR.) */
	if (c->n >= 2 && !strchr("gsacidt", c->p[0]) && t[nt - 1].n >= 5 &&
	    memcmp(t[nt - 1].p, "HTTP/", 5) == 0) {
		enum mc_parse r = perr(res, linelen, "");
		res->close = true;
		return r;
	}
	return perr(res, linelen, "ERROR\r\n");
}
