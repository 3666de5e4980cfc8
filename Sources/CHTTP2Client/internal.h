#ifndef HERALD_HTTP2_CLIENT_INTERNAL_H
#define HERALD_HTTP2_CLIENT_INTERNAL_H
#include <openssl/ssl.h>
#include "HTTP2Client.h"

// The OpenSSL context behind an h2_tls (tls.c), for connection.c.
SSL_CTX *h2_tls_context(h2_tls *tls);

// Every allocation of this library, and nghttp2's (given to it as its nghttp2_mem), goes through
// these: h2_test_fail_allocs can make them fail, so the out-of-memory paths are tested. Inert
// (the C library's functions, one branch more) unless a test has set a failure on its thread.
void *h2_malloc(size_t size);
void *h2_calloc(size_t count, size_t size);
void *h2_realloc(void *p, size_t size);
char *h2_strdup(const char *s);

// CLOCK_MONOTONIC in milliseconds, and poll() on one descriptor until `deadline` (those
// milliseconds): 1 ready, 0 the deadline passed, -1 poll failed (errno). Shared by the connection
// and the proxy handshakes (connection.c).
int64_t h2_now_ms(void);
int h2_wait_fd(int fd, short events, int64_t deadline);

// ---------- proxies (proxy.c) ----------

// Asks the proxy that `fd` is connected to (blocking until `deadline_ms`, CLOCK_MONOTONIC
// milliseconds) for a tunnel to host:port. 0: the next byte on `fd` is the server's. -1 with
// *kind and `err` filled; `err` never holds a credential.
int h2_proxy_open(int fd, const h2_proxy *proxy, const char *host, const char *port, int64_t deadline_ms,
                  h2_error_kind *kind, char *err, size_t errlen);

// The parsers of what a proxy sends, kept apart from the I/O so they can be fuzzed (Fuzz/): pure,
// no allocation, reading only buf[0, len).
typedef enum {
    H2_PARSE_MORE = 0,   // not complete yet: read more (SOCKS: `need` says how many bytes in all)
    H2_PARSE_DONE = 1,
    H2_PARSE_BAD = -1,   // not what the protocol allows
} h2_parse;

// An HTTP/1.x answer head to CONNECT, through its blank line: DONE with its status (100–999) and
// the head's length; MORE while the blank line has not arrived; BAD when the status line is not
// "HTTP/1.0 " or "HTTP/1.1 " and three digits.
h2_parse h2_parse_connect_answer(const uint8_t *buf, size_t len, int *status, size_t *head_len);

// SOCKS5 method selection (RFC 1928 §3): VER 5, METHOD. `need` is 2.
h2_parse h2_socks5_parse_method(const uint8_t *buf, size_t len, uint8_t *method, size_t *need);

// Username/password status (RFC 1929 §2): VER 1, STATUS (0 is success). `need` is 2.
h2_parse h2_socks5_parse_auth(const uint8_t *buf, size_t len, uint8_t *status, size_t *need);

// The reply to CONNECT (RFC 1928 §6): VER 5, REP, RSV 0, ATYP, BND.ADDR, BND.PORT.
typedef struct {
    uint8_t reply;        // REP: 0 succeeded, else h2_socks5_reply_text
    uint8_t atyp;         // 1 IPv4, 3 domain name, 4 IPv6
    uint16_t bound_port;
    char bound[256];      // BND.ADDR as text (a name's bytes outside printable ASCII as '?')
} h2_socks5_reply;
// `need`: the reply's length as far as the bytes so far tell (5 until ATYP and the first address
// byte are in, then the whole reply).
h2_parse h2_socks5_parse_reply(const uint8_t *buf, size_t len, h2_socks5_reply *reply, size_t *need);

// RFC 1928 §6's words for a REP code ("connection refused"); "unassigned" past 8.
const char *h2_socks5_reply_text(uint8_t reply);

// For the fuzz targets (Fuzz/) and tests only: a connection over `fd`, already connected, with no
// TLS. It takes the fd (closed by h2_close, or here on failure), sends the client preface and
// SETTINGS on the first h2_turn, and does not wait for the server's SETTINGS: the caller turns.
h2_conn *h2_conn_plain(int fd, const char *authority, h2_error_kind *kind, char *err, size_t errlen);
#endif
