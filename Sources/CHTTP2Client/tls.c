// The TLS client context of the nghttp2 engine's connections (connection.c): OpenSSL, peer
// verification always on, TLS 1.2 or later (Apple: "APNs supports only TLS 1.2 or later",
// https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns),
// the trust store and the client certificate herald's job names. Certificates and keys are
// given in memory where herald holds them in memory: no temporary file.
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>

struct h2_tls {
    SSL_CTX *ctx;
};

// OpenSSL frees its state at exit from an atexit handler unless told not to, and that must be the
// first OpenSSL call: "OPENSSL_init_crypto() MUST be called by application code prior to any other
// OpenSSL function calls" (https://docs.openssl.org/3.0/man3/OPENSSL_init_crypto/), hence a
// constructor, which runs before main. herald (and its test process) exits while threads that used
// OpenSSL may still run: a connection's, libcurl's, an idle Dispatch worker's. That cleanup deletes
// the thread-local keys under them, so one that ends afterwards can no longer free its error queue and
// random generators (LeakSanitizer: 984 bytes in 3 objects from CRYPTO_zalloc, Fuzz/sanitize/), and
// one still inside OpenSSL would use freed memory. The system reclaims the memory at exit instead.
__attribute__((constructor)) static void h2_openssl_no_exit_cleanup(void) {
    OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
}

SSL_CTX *h2_tls_context(h2_tls *tls) { return tls->ctx; }

// Not "TLS trust:": herald reads that label as "the server's certificate did not verify" and stops
// the run (PushOutcome.isTrustFailure); here no server has been asked yet. Our own material that
// cannot be used is H2_ERR_TLS_SETUP; OpenSSL out of memory is H2_ERR_MEMORY.
static h2_tls *failed(SSL_CTX *ctx, h2_error_kind *kind, char *err, size_t errlen, const char *what) {
    unsigned long e = ERR_get_error();
    char detail[256] = "no detail from OpenSSL";
    if (e) ERR_error_string_n(e, detail, sizeof detail);
    ERR_clear_error();
    *kind = ERR_GET_REASON(e) == ERR_R_MALLOC_FAILURE ? H2_ERR_MEMORY : H2_ERR_TLS_SETUP;
    if (err && errlen) snprintf(err, errlen, "%s (%s)", what, detail);
    SSL_CTX_free(ctx);
    return NULL;
}

static int add_pem_trust(SSL_CTX *ctx, const uint8_t *pem, size_t len) {
    BIO *bio = BIO_new_mem_buf(pem, (int)len);
    if (!bio) return 0;
    X509_STORE *store = SSL_CTX_get_cert_store(ctx);
    int added = 0;
    X509 *cert;
    while ((cert = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
        if (X509_STORE_add_cert(store, cert) == 1) added++;
        X509_free(cert);
    }
    ERR_clear_error();   // the end of the PEM text reads as an error
    BIO_free(bio);
    return added;
}

static int use_pem_identity(SSL_CTX *ctx, const h2_tls_options *o) {
    BIO *bio = BIO_new_mem_buf(o->cert_pem, (int)o->cert_pem_len);
    if (!bio) return 0;
    X509 *leaf = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    int ok = leaf && SSL_CTX_use_certificate(ctx, leaf) == 1;
    X509_free(leaf);
    X509 *extra;
    while (ok && (extra = PEM_read_bio_X509(bio, NULL, NULL, NULL))) {
        if (SSL_CTX_add1_chain_cert(ctx, extra) != 1) ok = 0;
        X509_free(extra);
    }
    BIO_free(bio);
    if (!ok) return 0;
    ERR_clear_error();
    bio = BIO_new_mem_buf(o->key_pem, (int)o->key_pem_len);
    if (!bio) return 0;
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)(o->password ? o->password : ""));
    BIO_free(bio);
    ok = key && SSL_CTX_use_PrivateKey(ctx, key) == 1;
    EVP_PKEY_free(key);
    return ok;
}

static int use_p12_identity(SSL_CTX *ctx, const h2_tls_options *o) {
    BIO *bio = BIO_new_mem_buf(o->p12, (int)o->p12_len);
    if (!bio) return 0;
    PKCS12 *p12 = d2i_PKCS12_bio(bio, NULL);
    BIO_free(bio);
    if (!p12) return 0;
    EVP_PKEY *key = NULL;
    X509 *cert = NULL;
    STACK_OF(X509) *chain = NULL;
    int ok = PKCS12_parse(p12, o->password ? o->password : "", &key, &cert, &chain) == 1
        && SSL_CTX_use_certificate(ctx, cert) == 1 && SSL_CTX_use_PrivateKey(ctx, key) == 1;
    for (int i = 0; ok && chain && i < sk_X509_num(chain); i++) {
        if (SSL_CTX_add1_chain_cert(ctx, sk_X509_value(chain, i)) != 1) ok = 0;
    }
    EVP_PKEY_free(key);
    X509_free(cert);
    sk_X509_pop_free(chain, X509_free);
    PKCS12_free(p12);
    return ok;
}

h2_tls *h2_tls_new(const h2_tls_options *o, h2_error_kind *kind, char *err, size_t errlen) {
    *kind = H2_OK;
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    if (!ctx) return failed(NULL, kind, err, errlen, "cannot create a TLS context");
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    // Read ahead: one read(2) takes every record the socket holds, where OpenSSL would otherwise
    // read each record's 5-byte header and then its body, two system calls per answer at APNs'
    // one small record per answer (https://docs.openssl.org/3.0/man3/SSL_CTX_set_read_ahead/).
    // Safe here because read_all calls SSL_read until it wants the socket again, so no record
    // waits in OpenSSL's buffer while poll() waits on the socket (libcurl 7.88 does not do that,
    // which is why its handles keep read-ahead off).
    SSL_CTX_set_read_ahead(ctx, 1);
    if (o->ca_file) {
        if (SSL_CTX_load_verify_locations(ctx, o->ca_file, NULL) != 1) return failed(ctx, kind, err, errlen, "cannot read the CA file");
    } else if (o->ca_pem) {
        if (add_pem_trust(ctx, o->ca_pem, o->ca_pem_len) == 0) return failed(ctx, kind, err, errlen, "no certificate in the CA text");
    } else if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
        return failed(ctx, kind, err, errlen, "cannot load the system's trust store");
    }
    if (o->cert_file) {
        if (SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1) return failed(ctx, kind, err, errlen, "cannot use the client certificate file");
        if (o->password) SSL_CTX_set_default_passwd_cb_userdata(ctx, (void *)o->password);
        if (SSL_CTX_use_PrivateKey_file(ctx, o->key_file, SSL_FILETYPE_PEM) != 1) return failed(ctx, kind, err, errlen, "cannot use the client key file");
        SSL_CTX_set_default_passwd_cb_userdata(ctx, NULL);
    } else if (o->cert_pem) {
        if (!use_pem_identity(ctx, o)) return failed(ctx, kind, err, errlen, "cannot use the client certificate or its key");
    } else if (o->p12) {
        if (!use_p12_identity(ctx, o)) return failed(ctx, kind, err, errlen, "cannot use the PKCS#12 client certificate");
    }
    if ((o->cert_file || o->cert_pem || o->p12) && SSL_CTX_check_private_key(ctx) != 1) {
        return failed(ctx, kind, err, errlen, "the client key does not match the certificate");
    }
    h2_tls *tls = h2_malloc(sizeof *tls);
    if (!tls) {
        *kind = H2_ERR_MEMORY;
        if (err && errlen) snprintf(err, errlen, "out of memory");
        SSL_CTX_free(ctx);
        return NULL;
    }
    tls->ctx = ctx;
    return tls;
}

void h2_tls_free(h2_tls *tls) {
    if (!tls) return;
    SSL_CTX_free(tls->ctx);
    free(tls);
}
