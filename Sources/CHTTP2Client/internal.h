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

// For the fuzz targets (Fuzz/) and tests only: a connection over `fd`, already connected, with no
// TLS. It takes the fd (closed by h2_close, or here on failure), sends the client preface and
// SETTINGS on the first h2_turn, and does not wait for the server's SETTINGS: the caller turns.
h2_conn *h2_conn_plain(int fd, const char *authority, h2_error_kind *kind, char *err, size_t errlen);
#endif
