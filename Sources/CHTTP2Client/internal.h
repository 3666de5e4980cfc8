#ifndef HERALD_HTTP2_CLIENT_INTERNAL_H
#define HERALD_HTTP2_CLIENT_INTERNAL_H
#include <openssl/ssl.h>
#include "HTTP2Client.h"

// The OpenSSL context behind an h2_tls (tls.c), for connection.c.
SSL_CTX *h2_tls_context(h2_tls *tls);
#endif
