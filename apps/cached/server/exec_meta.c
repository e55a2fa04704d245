/*
 * apps/cached/server/exec_meta.c - the meta commands (mg, ms, md, ma, mn, me) as
 * memcached 1.6.18 executes and answers them, their return flags included.
 */
#include "exec_meta.h"

#include <event2/buffer.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "exec_common.h"
#include "reply.h"
#include "watch.h"

/* The key for the 'k' return flag: base64 with " b" when binary (ms/md/ma: as the
 * request sent it; mg: as the item was stored, memcached's ITEM_KEY_BINARY). */
static void meta_key_flag_as(struct evbuffer *out, const struct mc_ascii_req *req, bool binary)
{
	evbuffer_add(out, " k", 2);
	if (binary) {
		char enc[4 * ((MC_KEY_MAX + 2) / 3) + 4];
		size_t n = mc_b64_encode(req->key, req->nkey, enc);
		evbuffer_add(out, enc, n);
		evbuffer_add(out, " b", 2);
	} else {
		evbuffer_add(out, req->key, req->nkey);
	}
}

static void meta_key_flag(struct evbuffer *out, const struct mc_ascii_req *req)
{
	meta_key_flag_as(out, req, req->meta.key_b64);
}

struct meta_vals {
	bool hit;
	uint32_t flags, nbytes;
	uint64_t cas;
	int64_t ttl;     /* remaining, -1 = never */
	bool hit_before; /* h */
	bool key_binary; /* the item's key was stored base64 (mg k) */
	bool created;    /* mg N made the item */
	bool t_before_T; /* t came before T: ttl_before is the TTL t reports until T */
	int64_t n_ttl, t_ttl, ttl_before; /* t reports the TTL as of its place in the flags,
					   * where N (created) and T set it (memcached) */
	uint32_t idle;                    /* l */
	bool token_sent, stale, won;      /* Z, X, W (mg only) */
};

/* Append the return flags the request asked for, in request order. */
static void meta_ret_flags(struct evbuffer *out, const struct mc_ascii_req *req,
			   const struct meta_vals *v)
{
	size_t pos = 0;
	const char *tok;
	size_t ntok;
	char f;
	/* the TTL so far in the flag list: a created item starts with none */
	int64_t cur = v->created ? -1 : v->t_before_T ? v->ttl_before : v->ttl;
	while ((f = mc_meta_next_flag(&req->meta, &pos, &tok, &ntok)) != 0) {
		switch (f) {
		case 'k':
			meta_key_flag_as(out, req, v->hit ? v->key_binary : req->meta.key_b64);
			break;
		case 'N':
			if (v->created)
				cur = v->n_ttl;
			break;
		case 'T': cur = v->t_ttl; break;
		case 'O':
			evbuffer_add(out, " O", 2);
			evbuffer_add(out, tok, ntok);
			break;
		case 'f':
			if (v->hit)
				evbuffer_add_printf(out, " f%" PRIu32, v->flags);
			break;
		case 's':
			if (v->hit)
				evbuffer_add_printf(out, " s%" PRIu32, v->nbytes);
			break;
		case 't':
			if (v->hit)
				evbuffer_add_printf(out, " t%lld", (long long)cur);
			break;
		case 'c':
			if (v->hit)
				evbuffer_add_printf(out, " c%" PRIu64, v->cas);
			break;
		case 'h':
			if (v->hit)
				evbuffer_add(out, v->hit_before ? " h1" : " h0", 3);
			break;
		case 'l':
			if (v->hit)
				evbuffer_add_printf(out, " l%" PRIu32, v->idle);
			break;
		default: break;
		}
	}
	/* the recache state, after the requested flags, in memcached 1.6.18's order */
	if (v->token_sent)
		evbuffer_add(out, " Z", 2);
	if (v->stale)
		evbuffer_add(out, " X", 2);
	if (v->won)
		evbuffer_add(out, " W", 2);
}

static void meta_line(struct evbuffer *out, const char *code, const struct mc_ascii_req *req,
		      const struct meta_vals *v)
{
	evbuffer_add(out, code, 2);
	meta_ret_flags(out, req, v);
	evbuffer_add(out, "\r\n", 2);
}

/* The index of flag letter f among the request's flag tokens (each letter appears once:
 * the parser refuses duplicates), or SIZE_MAX when absent. */
static size_t meta_flag_at(const struct mc_meta *m, char f)
{
	size_t pos = 0, i = 0;
	const char *tok;
	size_t ntok;
	char g;
	while ((g = mc_meta_next_flag(m, &pos, &tok, &ntok)) != 0) {
		if (g == f)
			return i;
		i++;
	}
	return SIZE_MAX;
}

/* mg and ma check the opaque's length only when their reply reaches the O token, after
 * they acted (memcached): the index of a too long O, or SIZE_MAX. Flags before it have
 * taken effect, flags after it have not. */
static size_t meta_bad_opaque_at(const struct mc_meta *m)
{
	if (!(m->flags & MC_MF('O')) || m->nopaque + 1 <= MC_META_OPAQUE_MAX)
		return SIZE_MAX;
	return meta_flag_at(m, 'O');
}

/* An exptime (memcached convention) that is already past: the item it is given to
 * expires at once. */
static bool exptime_past(int64_t e)
{
	return e < 0 || (e > 2592000 && e <= (int64_t)time(NULL));
}

/*
 * What memcached's t flag prints right after T or N set exptime e (memcached convention):
 * its realtime(e) minus its current_time as an unsigned 32-bit number, -1 for none. So a
 * TTL already past prints as a number near 2^32. memcached's clock runs 62 s ahead of its
 * process (process_started = start - 62; current_time = uptime + 60), which is where a
 * past TTL lands (relative time 1).
 */
static int64_t meta_t_of(struct conn_ctx *cx, int64_t e)
{
	if (e == 0)
		return -1;
	int64_t cur = (int64_t)cache_now(cx->srv->cache) + 60;
	int64_t started = (int64_t)cx->srv->started - 62;
	int64_t rel;
	if (e < 0)
		rel = 1;
	else if (e <= 2592000)
		rel = e + cur;
	else if (e <= started)
		rel = 1;
	else
		rel = e - started;
	return (int64_t)(uint32_t)(rel - cur);
}

/* mg whose reply stops at a too long opaque (index bad): memcached has looked the key
 * up (marking it fetched unless a flag made it lock the item: N T R l h), created the
 * empty item of N on a miss (not fetched, no token handed out: the W is never sent) and
 * applied T and N where they came before the O; then it answers the error. */
static void exec_mg_bad_opaque(struct conn_ctx *cx, const struct mc_ascii_req *req, size_t bad,
			       struct evbuffer *out)
{
	struct cache *c = cx->srv->cache;
	const struct mc_meta *m = &req->meta;
	uint64_t locking = MC_MF('N') | MC_MF('T') | MC_MF('R') | MC_MF('l') | MC_MF('h');
	size_t at_t = meta_flag_at(m, 'T'), at_n = meta_flag_at(m, 'N');
	struct cache_meta cm = {
		.touch = at_t < bad,
		.ttl = m->ttl,
		.no_update = (m->flags & (locking | MC_MF('u'))) != 0,
	};
	struct cache_ref ref;
	enum cache_status st = cache_mget(c, req->key, req->nkey, &cm, &ref);
	if (st == CACHE_OK) {
		cache_release(c, &ref);
	} else if (st == CACHE_NOT_FOUND && at_n != SIZE_MAX) {
		int64_t exp = 0; /* the last of N and T before the O */
		if (at_n < bad)
			exp = m->vivify_ttl;
		if (at_t < bad && (at_n >= bad || at_t > at_n))
			exp = m->ttl;
		cache_store_meta(c, CACHE_ADD, req->key, req->nkey, "", 0, 0, exp, 0, NULL, false);
	}
	reply_str(out, "CLIENT_ERROR opaque token too long\r\n");
}

static void exec_mg(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	struct cache *c = cx->srv->cache;
	const struct mc_meta *m = &req->meta;
	size_t bad = meta_bad_opaque_at(m);
	if (bad != SIZE_MAX) {
		exec_mg_bad_opaque(cx, req, bad, out);
		return;
	}
	struct cache_ref ref;
	/* memcached applies N, T and R in token order: R before T compares the TTL the
	 * item had (so T is applied after the lookup here), and a created item keeps the
	 * last of N and T. An N already past still creates the item (created with no
	 * expiry, then given it). */
	size_t at_t = meta_flag_at(m, 'T'), at_n = meta_flag_at(m, 'N');
	bool r_before_t = at_t != SIZE_MAX && meta_flag_at(m, 'R') < at_t;
	bool n_past = at_n != SIZE_MAX && exptime_past(m->vivify_ttl);
	struct cache_meta cm = {
		.vivify = at_n != SIZE_MAX,
		.vivify_ttl = n_past ? 0 : m->vivify_ttl,
		.recache = (m->flags & MC_MF('R')) != 0,
		.recache_ttl = m->recache_ttl,
		.touch = at_t != SIZE_MAX && !r_before_t,
		.ttl = m->ttl,
		.no_update = (m->flags & MC_MF('u')) != 0,
	};
	/* "t ... T": memcached reports the TTL before T applies it; read it first (this
	 * order is rare, so the extra lookup is only paid then) */
	bool t_before_T = false;
	int64_t ttl_before = -1;
	if ((m->flags & MC_MF('t')) && (m->flags & MC_MF('T'))) {
		size_t p = 0;
		const char *tk;
		size_t ntk;
		char fl;
		while ((fl = mc_meta_next_flag(m, &p, &tk, &ntk)) != 0 && fl != 'T')
			if (fl == 't')
				t_before_T = true;
		struct cache_ref pre; /* a look, not an access */
		if (t_before_T && cache_peek(c, req->key, req->nkey, &pre) == CACHE_OK) {
			ttl_before = pre.exptime == 0 ? -1 : pre.exptime;
			cache_release(c, &pre);
		}
	}
	enum cache_status st = cache_mget(c, req->key, req->nkey, &cm, &ref);
	/* the fetchers' line: now for a miss (no section held), after the release for a hit */
	if (st != CACHE_OK && watch_wants(cx->srv, WATCH_FETCHERS))
		exec_log_get(cx, req->key, req->nkey, false, 0);
	struct meta_vals v = {0};
	if (st == CACHE_NO_MEMORY || st == CACHE_TOO_LARGE) { /* vivify found no room */
		reply_str(out, "SERVER_ERROR out of memory storing object\r\n");
		return;
	}
	if (st != CACHE_OK) {
		if (!req->noreply)
			meta_line(out, "EN", req, &v);
		return;
	}
	if (cm.created) {
		int64_t fin = at_t != SIZE_MAX && at_t > at_n ? m->ttl : m->vivify_ttl;
		if (fin != cm.vivify_ttl)
			cache_touch(c, req->key, req->nkey, fin);
	} else if (r_before_t) {
		cache_touch(c, req->key, req->nkey, m->ttl);
	}
	v.hit = true;
	v.flags = ref.flags;
	v.nbytes = ref.nbytes;
	v.cas = ref.cas;
	v.ttl = ref.exptime == 0 ? -1 : ref.exptime;
	v.hit_before = ref.hit_before;
	v.key_binary = ref.key_binary;
	v.created = cm.created;
	v.t_before_T = t_before_T;
	v.ttl_before = ttl_before;
	v.n_ttl = meta_t_of(cx, m->vivify_ttl);
	v.t_ttl = meta_t_of(cx, m->ttl);
	v.idle = ref.idle;
	v.token_sent = cm.token_sent;
	v.stale = cm.stale;
	v.won = cm.won;
	if (m->flags & MC_MF('v')) {
		evbuffer_add_printf(out, "VA %" PRIu32, ref.nbytes);
		meta_ret_flags(out, req, &v);
		evbuffer_add(out, "\r\n", 2);
		evbuffer_add(out, ref.value, ref.nbytes);
		evbuffer_add(out, "\r\n", 2);
	} else {
		meta_line(out, "HD", req, &v);
	}
	cache_release(c, &ref);
	if (watch_wants(cx->srv, WATCH_FETCHERS))
		exec_log_get(cx, req->key, req->nkey, true, v.nbytes);
}

static void exec_ms(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	const struct mc_meta *m = &req->meta;
	enum cache_store_op op;
	switch (m->mode) {
	case 'E': op = CACHE_ADD; break;
	case 'A': op = CACHE_APPEND; break;
	case 'P': op = CACHE_PREPEND; break;
	case 'R': op = CACHE_REPLACE; break;
	default: op = CACHE_SET; break;
	}
	uint64_t cas_in = 0;
	if (m->flags & MC_MF('C')) {
		cas_in = m->cas_cmp;
		/* memcached: a CAS value makes set and replace a CAS store (a missing key is
		 * then NF, not NS) */
		if (op == CACHE_SET || op == CACHE_REPLACE)
			op = CACHE_CAS;
		if (cas_in == 0 && op == CACHE_CAS)
			cas_in = UINT64_MAX; /* C0 matches no item (ids are > 0) */
	}
	uint64_t cas_out = 0;
	int64_t ttl = (m->flags & MC_MF('T')) ? m->ttl : 0;
	/* I: invalidating CAS set (memcached: only with C; otherwise a plain set) */
	enum cache_status st =
		op == CACHE_CAS && (m->flags & MC_MF('I'))
			? cache_cas_invalidating(cx->srv->cache, req->key, req->nkey, req->data,
						 req->nbytes, m->client_flags, ttl, cas_in,
						 &cas_out)
			: exec_store_logged(cx, op, req->key, req->nkey, req->data, req->nbytes,
					    m->client_flags, ttl, cas_in, &cas_out, m->key_b64);
	struct meta_vals v = {.hit = st == CACHE_STORED, .cas = cas_out};
	const char *code;
	switch (st) {
	case CACHE_STORED:
		if (req->noreply)
			return;
		code = "HD";
		break;
	case CACHE_NOT_STORED: code = "NS"; break;
	case CACHE_EXISTS: code = "EX"; break;
	case CACHE_NOT_FOUND: code = "NF"; break;
	default: reply_str(out, reply_store(st)); return;
	}
	/* only c (and k, O) are meaningful after a store */
	v.flags = m->client_flags;
	v.nbytes = req->nbytes;
	v.ttl = -1;
	evbuffer_add(out, code, 2);
	size_t pos = 0;
	const char *tok;
	size_t ntok;
	char f;
	while ((f = mc_meta_next_flag(m, &pos, &tok, &ntok)) != 0) {
		if (f == 'k')
			meta_key_flag(out, req);
		else if (f == 'O') {
			evbuffer_add(out, " O", 2);
			evbuffer_add(out, tok, ntok);
		} else if (f == 'c') /* memcached: c0 when nothing was stored */
			evbuffer_add_printf(out, " c%" PRIu64, v.hit ? v.cas : 0);
	}
	evbuffer_add(out, "\r\n", 2);
}

static void exec_md(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	const struct mc_meta *m = &req->meta;
	uint64_t cas_in = (m->flags & MC_MF('C')) ? (m->cas_cmp ? m->cas_cmp : UINT64_MAX) : 0;
	enum cache_status st =
		(m->flags & MC_MF('I'))
			? cache_invalidate(cx->srv->cache, req->key, req->nkey, cas_in,
					   (m->flags & MC_MF('T')) != 0, m->ttl)
			: cache_delete(cx->srv->cache, req->key, req->nkey, cas_in);
	struct meta_vals v = {0};
	switch (st) {
	case CACHE_OK:
		if (!req->noreply)
			meta_line(out, "HD", req, &v);
		break;
	case CACHE_EXISTS: meta_line(out, "EX", req, &v); break;
	case CACHE_NOT_FOUND: meta_line(out, "NF", req, &v); break;
	default: reply_str(out, reply_store(st)); break;
	}
}

/*
 * ma as memcached 1.6.18 answers it: the return flags are c, t, O and k, in request order,
 * where T (and N, for an item this request created) set the TTL at their place in the
 * list, so t reports the TTL as of its position; the item keeps the last one set. q
 * hides the reply of an increment of an existing item only (v included); a created
 * item's reply, NF, NS and EX are always sent.
 */
static void exec_ma(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	struct cache *c = cx->srv->cache;
	const struct mc_meta *m = &req->meta;
	bool decr = m->mode == 'D';
	uint64_t cas_in = (m->flags & MC_MF('C')) ? m->cas_cmp : 0; /* C0: no check, as memcached */
	uint64_t result = 0, cas = 0;
	bool created = false;
	/* a too long opaque is found while the reply is built, after the increment: the
	 * flags before it take effect, the reply is the error */
	size_t bad = meta_bad_opaque_at(m);
	/* the TTL a created item ends with: the last of N and T in the flags (before a
	 * too long opaque) */
	int64_t create_exp = 0;
	{
		size_t p = 0, i = 0;
		const char *tk;
		size_t ntk;
		char fl;
		while ((fl = mc_meta_next_flag(m, &p, &tk, &ntk)) != 0 && i++ < bad)
			if (fl == 'N' || fl == 'T')
				create_exp = fl == 'N' ? m->vivify_ttl : m->ttl;
	}
	enum cache_status st;
	for (int tries = 0;; tries++) {
		st = cache_incr(c, req->key, req->nkey, decr, m->delta, cas_in, &result, &cas);
		if (st != CACHE_NOT_FOUND || !(m->flags & MC_MF('N')) || tries > 8)
			break;
		/* auto-create with the initial value J (as memcached: no delta applied) */
		char num[24];
		int n = snprintf(num, sizeof num, "%" PRIu64, m->initial);
		st = cache_store(c, CACHE_ADD, req->key, req->nkey, num, (size_t)n, 0, create_exp,
				 0, &cas);
		if (st == CACHE_STORED) {
			result = m->initial;
			st = CACHE_OK;
			created = true;
			break;
		}
		if (st != CACHE_NOT_STORED) {
			if (st != CACHE_TOO_LARGE && st != CACHE_NO_MEMORY)
				st = CACHE_NOT_STORED;
			break;
		}
	}
	if (st == CACHE_EXISTS && cas_in) {
		/* memcached finds an empty value not numeric before it compares the CAS */
		struct cache_ref ref;
		if (cache_peek(c, req->key, req->nkey, &ref) == CACHE_OK) {
			if (ref.nbytes == 0)
				st = CACHE_NON_NUMERIC;
			cache_release(c, &ref);
		}
	}
	if (st != CACHE_OK && bad != SIZE_MAX && st != CACHE_NON_NUMERIC && st != CACHE_NO_MEMORY) {
		reply_str(out, "CLIENT_ERROR opaque token too long\r\n");
		return;
	}
	if (st != CACHE_OK) {
		struct meta_vals v = {.ttl = -1};
		switch (st) {
		case CACHE_NOT_FOUND: meta_line(out, "NF", req, &v); break;
		case CACHE_NOT_STORED: meta_line(out, "NS", req, &v); break;
		case CACHE_EXISTS: meta_line(out, "EX", req, &v); break;
		case CACHE_NON_NUMERIC:
			reply_str(out, "CLIENT_ERROR cannot increment or decrement non-numeric "
				       "value\r\n");
			break;
		case CACHE_NO_MEMORY: reply_str(out, "SERVER_ERROR out of memory\r\n"); break;
		default: reply_str(out, reply_store(st)); break;
		}
		return;
	}
	/* the TTL before this request's T/N: an existing item's (read back: the increment
	 * does not change it), none for a created one */
	int64_t ttl = -1;
	if (!created && (m->flags & (MC_MF('t') | MC_MF('T')))) {
		struct cache_ref ref;
		if (cache_peek(c, req->key, req->nkey, &ref) == CACHE_OK) {
			ttl = ref.exptime == 0 ? -1 : ref.exptime;
			cache_release(c, &ref);
		}
	}
	bool set_exp = false;
	int64_t exp = 0; /* memcached's exptime convention, for cache_touch */
	struct evbuffer *flags = evbuffer_new();
	if (!flags) {
		reply_str(out, "SERVER_ERROR out of memory\r\n");
		return;
	}
	size_t pos = 0, i = 0;
	const char *tok;
	size_t ntok;
	char f;
	while ((f = mc_meta_next_flag(m, &pos, &tok, &ntok)) != 0 && i++ < bad) {
		switch (f) {
		case 'c': evbuffer_add_printf(flags, " c%" PRIu64, cas); break;
		case 't': evbuffer_add_printf(flags, " t%lld", (long long)ttl); break;
		case 'T':
		case 'N':
			if (f == 'N' && !created)
				break;
			exp = f == 'T' ? m->ttl : m->vivify_ttl;
			set_exp = true;
			ttl = meta_t_of(cx, exp);
			break;
		case 'O':
			evbuffer_add(flags, " O", 2);
			evbuffer_add(flags, tok, ntok);
			break;
		case 'k': meta_key_flag(flags, req); break;
		default: break;
		}
	}
	if (set_exp && !created) /* a created item was stored with its final TTL */
		cache_touch(c, req->key, req->nkey, exp);
	if (bad != SIZE_MAX) {
		evbuffer_free(flags);
		reply_str(out, "CLIENT_ERROR opaque token too long\r\n");
		return;
	}
	if (req->noreply && !created) {
		evbuffer_free(flags);
		return;
	}
	if (m->flags & MC_MF('v')) {
		char num[24];
		int n = snprintf(num, sizeof num, "%" PRIu64, result);
		evbuffer_add_printf(out, "VA %d", n);
		evbuffer_add_buffer(out, flags);
		evbuffer_add(out, "\r\n", 2);
		evbuffer_add(out, num, (size_t)n);
		evbuffer_add(out, "\r\n", 2);
	} else {
		evbuffer_add(out, "HD", 2);
		evbuffer_add_buffer(out, flags);
		evbuffer_add(out, "\r\n", 2);
	}
	evbuffer_free(flags);
}

static void exec_me(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	struct cache_ref ref;
	/* a look that leaves the item unfetched, as memcached's me */
	if (cache_peek(cx->srv->cache, req->key, req->nkey, &ref) != CACHE_OK) {
		reply_str(out, "EN\r\n");
		return;
	}
	reply_str(out, "ME ");
	if (ref.key_binary) { /* as stored, whether or not this request sent it base64 */
		char enc[4 * ((MC_KEY_MAX + 2) / 3) + 4];
		evbuffer_add(out, enc, mc_b64_encode(req->key, req->nkey, enc));
	} else {
		evbuffer_add(out, req->key, req->nkey);
	}
	evbuffer_add_printf(out, " exp=%lld cas=%" PRIu64 " size=%" PRIu32 "\r\n",
			    ref.exptime == 0 ? -1LL : (long long)ref.exptime, ref.cas, ref.nbytes);
	cache_release(cx->srv->cache, &ref);
}

void exec_meta(struct conn_ctx *cx, const struct mc_ascii_req *req, struct evbuffer *out)
{
	if (req->op == MC_OP_MN) { /* not counted in cmd_meta */
		reply_str(out, "MN\r\n");
		return;
	}
	atomic_fetch_add_explicit(&cx->ws->cmd_meta, 1, memory_order_relaxed);
	switch (req->op) {
	case MC_OP_MG: exec_mg(cx, req, out); break;
	case MC_OP_MS: exec_ms(cx, req, out); break;
	case MC_OP_MD: exec_md(cx, req, out); break;
	case MC_OP_MA: exec_ma(cx, req, out); break;
	case MC_OP_ME: exec_me(cx, req, out); break;
	default: break;
	}
}
