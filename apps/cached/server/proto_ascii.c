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

/*
 * Numbers as memcached 1.6.18 reads them (util.c): strtoull / strtoul / strtol in base
 * 10 on the token, which skip leading white space and take a sign, then the token must
 * end (or go on with white space). So "+5", "-0", "007" and zero-padded numbers of any
 * length are numbers; a negative number is refused only where it wraps to a huge
 * unsigned value that is negative as a signed one; and the 32-bit fields take the low 32
 * bits of the 64-bit result, as memcached's stores into uint32_t / int32_t do.
 */
static bool c_space(unsigned char ch)
{
	return ch == ' ' || (ch >= '\t' && ch <= '\r');
}

/* strtoull / strtol (64-bit) over p[0..n): *v the two's-complement result. False for no
 * digits, overflow (ERANGE), or a token that goes on after the number with no space. */
static bool c_strto64(const char *p, size_t n, bool is_signed, uint64_t *v, bool *minus)
{
	size_t i = 0;
	while (i < n && c_space((unsigned char)p[i]))
		i++;
	bool neg = false;
	if (i < n && (p[i] == '+' || p[i] == '-'))
		neg = p[i++] == '-';
	size_t d0 = i;
	uint64_t mag = 0;
	bool over = false;
	for (; i < n && p[i] >= '0' && p[i] <= '9'; i++) {
		unsigned d = (unsigned)(p[i] - '0');
		if (mag > (UINT64_MAX - d) / 10)
			over = true;
		else
			mag = mag * 10 + d;
	}
	if (i == d0 || over)
		return false;
	if (i < n && !c_space((unsigned char)p[i]))
		return false;
	if (is_signed && (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX))
		return false; /* strtol's ERANGE */
	*v = neg ? (uint64_t)0 - mag : mag;
	*minus = neg;
	return true;
}

/* safe_strtoull */
static bool parse_u64(const char *p, size_t n, uint64_t *out)
{
	uint64_t v;
	bool neg;
	if (!c_strto64(p, n, false, &v, &neg) || (neg && (int64_t)v < 0))
		return false;
	*out = v;
	return true;
}

/* safe_strtoul into a uint32_t: the low 32 bits */
static bool parse_u32(const char *p, size_t n, uint32_t *out)
{
	uint64_t v;
	if (!parse_u64(p, n, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

/* safe_strtol into an int32_t (exptime, lengths, meta TTLs): the low 32 bits */
static bool parse_i32(const char *p, size_t n, int64_t *out)
{
	uint64_t v;
	bool neg;
	if (!c_strto64(p, n, true, &v, &neg))
		return false;
	*out = (int32_t)(uint32_t)v;
	return true;
}

static bool tok_u64(const struct tok *t, uint64_t *o)
{
	return parse_u64(t->p, t->n, o);
}
static bool tok_u32(const struct tok *t, uint32_t *o)
{
	return parse_u32(t->p, t->n, o);
}
static bool tok_i32(const struct tok *t, int64_t *o)
{
	return parse_i32(t->p, t->n, o);
}

/* ---- base64 --------------------------------------------------------------------------- */

static const char b64chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

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

/*
 * Parse flag tokens t[0..nt) of meta command op into m, as memcached 1.6.18's
 * _meta_flag_preparse does for every meta command: one set of known flags (a flag that
 * means nothing to this command is accepted and ignored), a repeated first byte is
 * "duplicate flag" at once (P and L too), an unknown one "invalid flag" at once, and a
 * bad token value is remembered (the last one's message wins) while the scan goes on.
 * md and ma answer any of these "invalid or duplicate flag". Then the command's own
 * checks: the M mode of ms and ma, the opaque's length. Returns NULL or the reply.
 */
static const char *parse_meta_flags(enum mc_op op, const struct tok *t, size_t nt,
				    struct mc_meta *m)
{
	static const char known[] = "bNTRlOPLkstcfvhuqFCMJDI";
	const char *fmt_err = "CLIENT_ERROR bad command line format\r\n";
	const char *tok_err = "CLIENT_ERROR bad token in command line format\r\n";
	bool coarse = op == MC_OP_MD || op == MC_OP_MA;
	const char *err = NULL;
	unsigned char seen[256] = {0};

	m->delta = 1;
	m->mode = 0;
	for (size_t i = 0; i < nt; i++) {
		unsigned char f = (unsigned char)t[i].p[0];
		const char *arg = t[i].p + 1;
		size_t narg = t[i].n - 1;
		if (f >= 127 || seen[f])
			return coarse ? "CLIENT_ERROR invalid or duplicate flag\r\n"
				      : "CLIENT_ERROR duplicate flag\r\n";
		seen[f] = 1;
		if (f == 0 || !strchr(known, f))
			return coarse ? "CLIENT_ERROR invalid or duplicate flag\r\n"
				      : "CLIENT_ERROR invalid flag\r\n";
		m->flags |= MC_MF(f);
		switch (f) {
		case 'O':
			m->opaque = arg;
			m->nopaque = narg;
			break;
		case 'C':
			if (!parse_u64(arg, narg, &m->cas_cmp))
				err = tok_err;
			break;
		case 'D':
			if (!parse_u64(arg, narg, &m->delta))
				err = "CLIENT_ERROR invalid numeric delta value\r\n";
			break;
		case 'J':
			if (!parse_u64(arg, narg, &m->initial))
				err = "CLIENT_ERROR invalid numeric initial value\r\n";
			break;
		case 'F':
			if (!parse_u32(arg, narg, &m->client_flags))
				err = err ? err : fmt_err;
			break;
		case 'T':
			if (!parse_i32(arg, narg, &m->ttl))
				err = tok_err;
			break;
		case 'N':
			if (!parse_i32(arg, narg, &m->vivify_ttl))
				err = tok_err;
			break;
		case 'R':
			if (!parse_i32(arg, narg, &m->recache_ttl))
				err = tok_err;
			break;
		case 'M':
			if (narg != 1)
				err = "CLIENT_ERROR incorrect length for M token\r\n";
			else
				m->mode = arg[0];
			break;
		default: break; /* flags without a token, or tokens ignored (P, L) */
		}
	}
	if (err)
		return coarse ? "CLIENT_ERROR invalid or duplicate flag\r\n" : err;
	/* the command's own checks */
	if (op == MC_OP_MS) {
		char md = m->mode; /* upper case only, as memcached 1.6.18 */
		if (md == 0)
			md = 'S';
		if (!strchr("SEAPR", md))
			return "CLIENT_ERROR invalid mode for ms M token\r\n";
		m->mode = md;
	} else if (op == MC_OP_MA) {
		char md = m->mode;
		if (md == 0 || md == '+' || md == 'I') /* upper case only, as memcached */
			md = 'I';
		else if (md == '-' || md == 'D')
			md = 'D';
		else
			return "CLIENT_ERROR invalid mode for ma M token\r\n";
		m->mode = md;
	} else {
		m->mode = 'S';
	}
	/* memcached counts the O in the token's length. mg and ma check it only while
	 * they build the reply, after acting (the executor does, mc_meta_bad_opaque) */
	if (op != MC_OP_MG && op != MC_OP_MA && (m->flags & MC_MF('O')) &&
	    m->nopaque + 1 > MC_META_OPAQUE_MAX)
		return "CLIENT_ERROR opaque token too long\r\n";
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
	/* memcached 1.6.18 lets only get and gets lines grow past 2048 bytes (within 100
	 * leading spaces) */
	return i <= 100 &&
	       ((n >= 4 && memcmp(p, "get ", 4) == 0) || (n >= 5 && memcmp(p, "gets ", 5) == 0));
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

static enum mc_parse parse_get(const struct tok *t, size_t nt, const char *lineend, bool touch,
			       struct mc_ascii_req *req, struct mc_parse_res *res, size_t linelen)
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
		/* memcached: "b" as the second token decodes the key; any other token, and
		 * any after it, is ignored */
		bool b = nt >= 3 && tok_is(&t[2], "b");
		req->meta.key_b64 = b;
		req->meta.flags = b ? MC_MF('b') : 0;
	}
	size_t ftok = 2;
	int64_t vlen = 0;
	if (op == MC_OP_MS && nt < 3)
		return perr(res, linelen, bad);
	/* memcached: more than MC_META_TOKENS_MAX tokens (command and key included), before
	 * anything else in them is read */
	if (op != MC_OP_ME && nt > MC_META_TOKENS_MAX)
		return perr(res, linelen,
			    op == MC_OP_MG ? "CLIENT_ERROR options flags are too long\r\n"
					   : "CLIENT_ERROR options flags too long\r\n");
	if (op == MC_OP_MS) {
		if (!tok_i32(&t[2], &vlen) || vlen < 0 || vlen > INT32_MAX - 2)
			return perr(res, linelen, bad);
		ftok = 3;
	}
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
			err = op == MC_OP_ME ? bad : "CLIENT_ERROR error decoding key\r\n";
		else {
			req->key = req->keybuf;
			req->nkey = (size_t)n;
		}
	}
	if (op == MC_OP_MS) {
		if (err) {
			/* memcached swallows the announced data block of a rejected ms */
			enum mc_parse r = perr(res, linelen, err);
			if ((uint64_t)vlen <= item_max && len >= linelen + (size_t)vlen + 2) {
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
	bool getline = len > MC_LINE_MAX && is_get_line(buf, len);
	if (!nl || (!getline && (size_t)(nl - buf) >= MC_READ_WINDOW)) {
		if (len > MC_LINE_MAX && (!getline || len >= MC_GETLINE_MAX)) {
			res->consumed = len;
			res->err = ""; /* memcached closes without a reply */
			res->close = true;
			/* memcached read at most MC_READ_WINDOW bytes of it: the rest is left
			 * unread and its close resets the connection */
			res->reset = len > MC_READ_WINDOW;
			return MC_PARSE_ERROR;
		}
		res->need = 0;
		return MC_PARSE_NEED_MORE;
	}
	size_t linelen = (size_t)(nl - buf) + 1;
	size_t n = linelen - 1;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	/* memcached tokenizes the line as a C string: a NUL byte ends it */
	const char *nul = memchr(buf, '\0', n);
	if (nul)
		n = (size_t)(nul - buf);
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
		default: return perr(res, linelen, "ERROR\r\n");
		}
		req->op = op;
		return parse_meta(op, buf, len, linelen, t, nt, item_max, req, res);
	}

	if (tok_is(c, "bget")) { /* memcached's undocumented alias of get */
		req->op = MC_OP_GET;
		return parse_get(t, nt, lineend, false, req, res, linelen);
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
		    vlen > INT32_MAX - 2 || (sop == MC_OP_CAS && !tok_u64(&t[5], &req->cas)))
			return perr(res, linelen, bad);
		req->key = t[1].p;
		req->nkey = t[1].n;
		return need_data(buf, len, linelen, vlen, item_max, req, res);
	}

	res->consumed = linelen;
	if (tok_is(c, "delete")) {
		req->op = MC_OP_DELETE;
		if (nt < 2 || nt > 4) /* memcached: 1 to 3 arguments, else ERROR */
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
			return perr(res, linelen,
				    "CLIENT_ERROR invalid numeric delta argument\r\n");
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
		/* memcached reads the delay from the first argument unless the line is just
		 * "flush_all [noreply]"; a second argument that is not noreply is ignored */
		if (nt != (last_noreply ? 2u : 1u) && !tok_i32(&t[1], &req->delay))
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
		req->op = MC_OP_QUIT; /* memcached: whatever follows */
		return MC_PARSE_OK;
	}
	if (tok_is(c, "watch") || tok_is(c, "slabs")) { /* the executor reads the arguments */
		req->op = c->p[0] == 'w' ? MC_OP_WATCH : MC_OP_SLABS;
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
