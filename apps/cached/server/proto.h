/*
 * apps/cached/server/proto.h - memcached's wire protocols as pure functions: the ASCII
 * protocol (classic commands and the meta commands mg/ms/md/ma/mn/me) and the binary
 * protocol of memcached 1.6. Each parser takes the bytes received so far and answers one
 * of three things, touching no global state and allocating nothing:
 *
 *   MC_PARSE_OK         one whole request; it occupies res->consumed bytes of the input
 *                       (command line plus data block, or header plus body). Pointers in
 *                       the request point into the input buffer.
 *   MC_PARSE_NEED_MORE  the request is not complete yet; res->need is the total number of
 *                       bytes the parser needs before it can decide (0: "a whole line",
 *                       unknown length), so a caller may wait until that many arrived.
 *   MC_PARSE_ERROR      the request is malformed: res->err is the whole reply to send
 *                       (memcached's text, with "\r\n"; "" with res->close for a line
 *                       memcached closes on silently, an HTTP request; or a binary status in
 *                       res->bin_status), res->consumed input bytes are dropped, then
 *                       res->swallow more bytes as they arrive (a value that will not be
 *                       stored), and if res->close the connection is closed after the
 *                       reply.
 *
 * The replies and their conditions follow memcached 1.6 (compared reply for reply with
 * Debian's memcached 1.6.18; see docs/cached.md, "Server"). Nothing here blocks. Any
 * thread may call the parsers; they are reentrant.
 */
#ifndef TSYNC_CACHED_PROTO_H
#define TSYNC_CACHED_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MC_KEY_MAX 250u           /* memcached KEY_MAX_LENGTH */
#define MC_LINE_MAX 2048u         /* a command line without "\n" past this: close */
#define MC_GETLINE_MAX (4u << 20) /* ... unless it is a multi-get; then this much */
#define MC_META_OPAQUE_MAX 32u    /* memcached: "opaque token too long" past this */
#define MC_TOKENS_MAX 24u         /* meta: most flags a line may carry */
/* meta: most tokens on a line, command and key included ("options flags too long" past
 * this) */
#define MC_META_TOKENS_MAX 19u
/* memcached reads a command line into a buffer of this size: a longer non-get line never
 * gets its newline seen, the connection is closed (reset) */
#define MC_READ_WINDOW 16384u
/* a binary body longer than this (memcached reads the length into an int) is refused and
 * the connection closed rather than swallowed; every shorter value over -I is swallowed,
 * as memcached */
#define MC_BODY_ABSURD 0x7fffffffu

enum mc_parse { MC_PARSE_OK = 0, MC_PARSE_NEED_MORE, MC_PARSE_ERROR };

/* Commands, both protocols. The binary "quiet" variants map onto these with quiet=true. */
enum mc_op {
	MC_OP_NONE = 0,
	MC_OP_GET,
	MC_OP_GETS,
	MC_OP_GAT,
	MC_OP_GATS,
	MC_OP_SET,
	MC_OP_ADD,
	MC_OP_REPLACE,
	MC_OP_APPEND,
	MC_OP_PREPEND,
	MC_OP_CAS,
	MC_OP_DELETE,
	MC_OP_INCR,
	MC_OP_DECR,
	MC_OP_TOUCH,
	MC_OP_FLUSH_ALL,
	MC_OP_STATS,
	MC_OP_VERSION,
	MC_OP_VERBOSITY,
	MC_OP_QUIT,
	MC_OP_NOOP,  /* binary NOOP */
	MC_OP_SLABS, /* "slabs reassign|automove ...": args */
	MC_OP_WATCH, /* "watch [kinds]": args */
	MC_OP_MG,
	MC_OP_MS,
	MC_OP_MD,
	MC_OP_MA,
	MC_OP_MN,
	MC_OP_ME,
};

/* Result of a parse: see the top of this file. */
struct mc_parse_res {
	size_t consumed;      /* OK/ERROR: input bytes this request (or bad request) occupies */
	size_t need;          /* NEED_MORE: total input bytes needed, 0 = up to a newline */
	const char *err;      /* ERROR (ASCII): the reply line, "\r\n"-terminated, static */
	uint16_t bin_status;  /* ERROR (binary): the response status (MC_BIN_*) */
	size_t swallow;       /* ERROR: further bytes to discard after consumed */
	bool noreply;         /* ERROR (ASCII): the line asked for noreply; memcached then sends
			       * no error line either (the data block is still swallowed) */
	bool close;           /* ERROR: close the connection once the reply is written; for
			       * binary with bin_status == 0 (bad magic) close without a reply */
	bool reset;           /* ERROR with close: reset the connection (memcached closes with
			       * bytes of the line unread, so its peer sees a reset) */
	const void *drop_key; /* ERROR: a set whose value is too large also removes the key's */
	size_t ndrop_key;     /*   old value (memcached does, so no stale value is served); it
			       *   points into the input or into the request's keybuf */
};

/* ---- meta commands ------------------------------------------------------------------- */

/* A meta flag letter's bit: 'a'..'z' -> 0..25, 'A'..'Z' -> 26..51. */
#define MC_MF(ch) ((ch) >= 'a' ? (1ull << ((ch) - 'a')) : (1ull << ((ch) - 'A' + 26)))

struct mc_meta {
	uint64_t flags;        /* MC_MF() bits of the flags present */
	const char *tokens;    /* the flag tokens as sent (for ordered reply flags) */
	size_t ntokens_len;    /* their length in bytes */
	const char *opaque;    /* O: the token (without 'O'), NULL if absent */
	size_t nopaque;        /* its length: with the O, at most MC_META_OPAQUE_MAX,
				* except for mg and ma, whose executor acts first and then
				* answers "opaque token too long" (as memcached does) */
	uint64_t cas_cmp;      /* C */
	uint64_t delta;        /* D (ma; default 1) */
	uint64_t initial;      /* J (ma) */
	uint32_t client_flags; /* F (ms) */
	int64_t ttl;           /* T */
	int64_t vivify_ttl;    /* N */
	int64_t recache_ttl;   /* R */
	char mode;             /* M (ms: S E A P R; ma: I D, '+'/'-' normalised) */
	bool key_b64;          /* b: key was base64, decoded into keybuf */
};

/* One ASCII request. Pointers point into the input buffer, or into keybuf. */
struct mc_ascii_req {
	enum mc_op op;
	bool noreply;    /* classic noreply / meta q (see meta.flags) */
	const char *key; /* single-key commands */
	size_t nkey;
	const char *keys; /* get/gets/gat/gats: the key tokens ("k1 k2 ..."); walk */
	size_t keys_len;  /*   them with mc_next_key() (all checked by the parser) */
	uint32_t flags;   /* storage: client flags */
	int64_t exptime;  /* storage/touch/gat: memcached exptime as sent */
	const char *data; /* storage/ms: the value (without "\r\n") */
	uint32_t nbytes;  /*   and its length */
	uint64_t cas;     /* cas: the compare value */
	uint64_t delta;   /* incr/decr */
	int64_t delay;    /* flush_all (0 if none) */
	const char *args; /* stats: the arguments after "stats" (may be empty) */
	size_t args_len;
	struct mc_meta meta;     /* mg/ms/md/ma */
	char keybuf[MC_KEY_MAX]; /* the decoded key of a base64 ('b') meta key */
};

/*
 * mc_ascii_parse: parse one ASCII request at the start of buf[0..len).
 * item_max: the largest value a storage command may carry (memcached -I); a larger one is
 * answered "SERVER_ERROR object too large for cache" and its data swallowed.
 * Returns MC_PARSE_OK / NEED_MORE / ERROR, filling *req and *res as described on top.
 */
enum mc_parse mc_ascii_parse(const char *buf, size_t len, uint32_t item_max,
			     struct mc_ascii_req *req, struct mc_parse_res *res);

/*
 * mc_next_key: iterate the keys of a get line. *pos starts at 0. Returns true and sets
 * *key and *nkey to the next key, false at the end.
 */
bool mc_next_key(const struct mc_ascii_req *req, size_t *pos, const char **key, size_t *nkey);

/*
 * mc_meta_next_flag: iterate the meta flag tokens in the order sent (for the reply's
 * return flags, which memcached gives in request order). *pos starts at 0. Returns the
 * flag letter and sets *tok and *ntok to its token (after the letter), or 0 at the end.
 */
char mc_meta_next_flag(const struct mc_meta *m, size_t *pos, const char **tok, size_t *ntok);

/* Base64 (RFC 4648, padded) for meta 'b' keys. mc_b64_decode returns the decoded length
 * or -1 (bad input or > cap); mc_b64_encode returns the encoded length (cap >= 4*ceil(n/3)). */
long mc_b64_decode(const char *in, size_t n, char *out, size_t cap);
size_t mc_b64_encode(const void *in, size_t n, char *out);

/* ---- binary protocol (memcached's protocol_binary.h values) ------------------------ */

#define MC_BIN_REQ_MAGIC 0x80
#define MC_BIN_RES_MAGIC 0x81
#define MC_BIN_HDR_LEN 24u

enum mc_bin_opcode {
	MC_BIN_GET = 0x00,
	MC_BIN_SET = 0x01,
	MC_BIN_ADD = 0x02,
	MC_BIN_REPLACE = 0x03,
	MC_BIN_DELETE = 0x04,
	MC_BIN_INCREMENT = 0x05,
	MC_BIN_DECREMENT = 0x06,
	MC_BIN_QUIT = 0x07,
	MC_BIN_FLUSH = 0x08,
	MC_BIN_GETQ = 0x09,
	MC_BIN_NOOP = 0x0a,
	MC_BIN_VERSION = 0x0b,
	MC_BIN_GETK = 0x0c,
	MC_BIN_GETKQ = 0x0d,
	MC_BIN_APPEND = 0x0e,
	MC_BIN_PREPEND = 0x0f,
	MC_BIN_STAT = 0x10,
	MC_BIN_SETQ = 0x11,
	MC_BIN_ADDQ = 0x12,
	MC_BIN_REPLACEQ = 0x13,
	MC_BIN_DELETEQ = 0x14,
	MC_BIN_INCREMENTQ = 0x15,
	MC_BIN_DECREMENTQ = 0x16,
	MC_BIN_QUITQ = 0x17,
	MC_BIN_FLUSHQ = 0x18,
	MC_BIN_APPENDQ = 0x19,
	MC_BIN_PREPENDQ = 0x1a,
	MC_BIN_VERBOSITY = 0x1b,
	MC_BIN_TOUCH = 0x1c,
	MC_BIN_GAT = 0x1d,
	MC_BIN_GATQ = 0x1e,
	MC_BIN_GATK = 0x23,
	MC_BIN_GATKQ = 0x24,
};

enum mc_bin_status {
	MC_BIN_OK = 0x00,
	MC_BIN_KEY_ENOENT = 0x01,
	MC_BIN_KEY_EEXISTS = 0x02,
	MC_BIN_E2BIG = 0x03,
	MC_BIN_EINVAL = 0x04,
	MC_BIN_NOT_STORED = 0x05,
	MC_BIN_DELTA_BADVAL = 0x06,
	MC_BIN_UNKNOWN_COMMAND = 0x81,
	MC_BIN_ENOMEM = 0x82,
};

/* One binary request. Pointers point into the input buffer. */
struct mc_bin_req {
	uint8_t opcode; /* as sent */
	enum mc_op op;  /* normalised command */
	bool quiet;     /* a ...Q opcode */
	bool with_key;  /* GETK/GETKQ/GATK/GATKQ: echo the key */
	uint8_t extlen;
	uint16_t keylen;
	uint32_t bodylen;
	uint32_t opaque; /* echoed in the response */
	uint64_t cas;    /* the request's CAS field */
	const uint8_t *key;
	const uint8_t *value; /* body after extras and key */
	uint32_t vlen;
	uint32_t flags;          /* set/add/replace extras */
	int64_t exptime;         /* set/add/replace/touch/gat/incr extras; flush delay */
	uint64_t delta, initial; /* incr/decr extras */
	uint32_t verbosity;
};

/*
 * mc_bin_parse: parse one binary request at the start of buf[0..len); buf[0] must be
 * MC_BIN_REQ_MAGIC (else ERROR with close). Malformed requests get memcached's status:
 * a body shorter than key+extras: UNKNOWN_COMMAND and close; a key over 250 bytes or
 * extras of the wrong size for the opcode, or a body over MC_BODY_ABSURD: EINVAL and
 * close; an unknown opcode:
 * UNKNOWN_COMMAND, body swallowed; a storage value over item_max: E2BIG, value swallowed
 * (decided as soon as header, extras and key have arrived). res->err is NULL for binary;
 * the status is in res->bin_status and req->opcode/opaque are filled for the reply.
 */
enum mc_parse mc_bin_parse(const uint8_t *buf, size_t len, uint32_t item_max,
			   struct mc_bin_req *req, struct mc_parse_res *res);

/* The text memcached puts in a binary error response's body for status st. */
const char *mc_bin_status_text(uint16_t st);

#endif /* TSYNC_CACHED_PROTO_H */
