#ifndef HERALD_HTTP2_CLIENT_H
#define HERALD_HTTP2_CLIENT_H

// One HTTP/2 client connection over TLS, on nghttp2 and OpenSSL: herald's APNs transport, for
// device pushes and broadcasts alike. herald's policy (what to send, what an answer means, when to
// reconnect) stays in Swift (HeraldDelivery/Nghttp2Worker.swift); this is the I/O under it. Why it exists
// rather than another libcurl handle: see connection.c.

#include <stddef.h>
#include <stdint.h>

typedef struct h2_tls h2_tls;
typedef struct h2_conn h2_conn;

// What went wrong, for the caller's decisions; the text says it for people.
typedef enum {
    H2_OK = 0,
    H2_ERR_RESOLVE = 1,    // the host name did not resolve
    H2_ERR_CONNECT = 2,    // TCP connect failed or timed out
    H2_ERR_TLS = 3,        // TLS handshake failed (not a trust decision)
    H2_ERR_TRUST = 4,      // the server's certificate did not verify (only that: herald stops the run on it)
    H2_ERR_PROTOCOL = 5,   // the server did not agree to HTTP/2, or broke the protocol
    H2_ERR_CLOSED = 6,     // the connection was lost (reset, EOF, TLS error after the handshake)
    H2_ERR_MEMORY = 7,     // an allocation failed
    H2_ERR_PROXY = 8,      // the proxy refused the tunnel (HTTP: not 2xx; SOCKS5: a reply other than "succeeded"), or broke its protocol
    H2_ERR_TLS_SETUP = 9,  // the TLS context could not be built: a CA, client certificate or key that cannot be used
    H2_ERR_PROXY_AUTH = 10, // the proxy wants credentials, or refused the ones given (HTTP 407; SOCKS5 method or RFC 1929 refusal)
    H2_ERR_TLS_REFUSED = 11, // the server refused us with a TLS alert, during the handshake or (TLS 1.3: after the
                             // client's Finished) before its SETTINGS: a client certificate it does not accept
} h2_error_kind;

// How the proxy is asked for a tunnel (proxy.c).
typedef enum {
    H2_PROXY_HTTP = 0,     // HTTP CONNECT (RFC 9110 §9.3.6)
    H2_PROXY_SOCKS5 = 1,   // SOCKS5 (RFC 1928): herald resolves the server's name and sends its address
    H2_PROXY_SOCKS5H = 2,  // SOCKS5: the proxy resolves the name, sent as a domain name (ATYP 3)
} h2_proxy_kind;

// A proxy to reach the server through, with one tunnel per connection (TLS stays end to end
// inside it). For HTTP, `authorization` is a Proxy-Authorization value ("Basic …") or NULL; for
// SOCKS5, `user` and `password` (RFC 1929), or NULL for no authentication. They are sent only to
// the proxy and never appear in an error text.
typedef struct {
    h2_proxy_kind kind;
    const char *host;
    const char *port;
    const char *authorization;
    const char *user;
    const char *password;
} h2_proxy;

typedef struct {
    // PEM bundle file to trust instead of the system's (apns.ca_file), or NULL.
    const char *ca_file;
    // PEM text to trust (the in-process simulator's CA), or NULL.
    const uint8_t *ca_pem;
    size_t ca_pem_len;
    // Client certificate: PEM files, PEM bytes (chain first, leaf first), or a PKCS#12 bundle.
    const char *cert_file;
    const char *key_file;
    const uint8_t *cert_pem;
    size_t cert_pem_len;
    const uint8_t *key_pem;
    size_t key_pem_len;
    const uint8_t *p12;
    size_t p12_len;
    const char *password;
} h2_tls_options;

// A TLS client context shared by a sender's connections: peer verification always on (the
// system's trust store unless a CA is given), TLS 1.2 or later, ALPN h2. NULL with *kind
// (H2_ERR_TLS_SETUP or H2_ERR_MEMORY, never H2_ERR_TRUST: no server has been asked yet) and `err` filled.
h2_tls *h2_tls_new(const h2_tls_options *options, h2_error_kind *kind, char *err, size_t errlen);
void h2_tls_free(h2_tls *tls);

// The answer to one request, or why there is none.
typedef struct {
    uint64_t cookie;        // the caller's, from h2_submit
    int32_t stream_id;
    int32_t status;         // :status, 0 if none arrived
    int32_t complete;       // 1: the server ended the stream after its answer
    int32_t cancelled;      // 1: h2_cancel reset it
    uint32_t reset_code;    // the RST_STREAM (or GOAWAY refusal) error code, 0 if none
    int32_t lost;           // 1: the connection died with the stream open
    int32_t not_sent;       // 1: the request never left (the connection was going away first)
    int32_t no_memory;      // 1: an allocation failed: with `lost`, the answer arrived but could not be kept
    uint16_t apns_id_len;
    uint16_t unique_id_len;
    char apns_id[48];       // apns-id, or a broadcast's apns-request-id
    char unique_id[48];
    uint8_t *body;          // the answer's body (Apple's JSON reason), up to 512 bytes, or NULL
    size_t body_len;
} h2_answer;

// Connects (blocking, at most timeout_ms): TCP to host:port (through `proxy`'s tunnel unless it
// is NULL), TLS with the host name verified, ALPN h2, then the client preface and the
// server's SETTINGS. `authority` is the :authority every request carries (and the tunnel's
// target). NULL with *kind and `err` filled.
h2_conn *h2_connect(h2_tls *tls, const char *host, const char *port, const char *authority, const h2_proxy *proxy,
                    int timeout_ms, int keepalive_seconds, h2_error_kind *kind, char *err, size_t errlen);

// The socket, for poll(); and whether the connection has bytes to write (poll for POLLOUT).
int h2_fd(const h2_conn *c);
int h2_wants_write(h2_conn *c);

// Queues one POST. `fields` is packed as [u16 name length][name][u16 value length][value]..., names
// in lower case, ":path" first; :method, :scheme and :authority are added here. The top bit of a
// name's length marks a value that differs on every request (the path, apns-id): HPACK sends it as
// a literal never indexed instead of adding it to the dynamic table, where it would only push out
// the fields requests share (RFC 7541 §6.2.3). nghttp2 itself already leaves :path, content-length
// and authorization out of the table; apns-id it would add. The fields and body are copied. Returns
// the stream id, or a negative nghttp2 error (h2_strerror): NGHTTP2_ERR_NOMEM (-901) when memory for
// the request, or for its answer, cannot be had; the request did not leave then. A request submitted
// is answered exactly once (h2_answers), whatever fails after.
int32_t h2_submit(h2_conn *c, const uint8_t *fields, size_t fields_len, const uint8_t *body, size_t body_len, uint64_t cookie);

// Resets a stream still open (RST_STREAM CANCEL): it is answered with `cancelled` set.
int h2_cancel(h2_conn *c, int32_t stream_id);

// Reads what has arrived and writes what is due, without blocking. 0: the connection lives.
// 1: it ended cleanly (a GOAWAY with nothing left open). -1: it died (`err` says why); every
// stream still open is answered with `lost` set. Either way, the answers are then waiting.
int h2_turn(h2_conn *c, char *err, size_t errlen);

// Answers gathered by the turns since the last h2_clear_answers.
const h2_answer *h2_answers(const h2_conn *c, size_t *count);
void h2_clear_answers(h2_conn *c);

// The size of HPACK's dynamic table for the fields this connection sends (RFC 7541 §4.1).
size_t h2_hpack_table_size(h2_conn *c);

// Streams open (submitted and not yet answered).
int h2_open_streams(const h2_conn *c);
// The server's SETTINGS_MAX_CONCURRENT_STREAMS (or nghttp2's assumption before its SETTINGS).
uint32_t h2_remote_max_streams(h2_conn *c);
// Whether a GOAWAY arrived: no new stream may start; its error code and debug data (Apple's reason).
int h2_goaway(const h2_conn *c, uint32_t *error_code, const char **debug, size_t *debug_len);

// Keepalive. Apple: "You can check the health of your connection using an HTTP/2 PING frame"
// (https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns).
// h2_ping queues a PING (RFC 9113 §6.7), which the next h2_turn writes, unless one is already
// waiting for its ACK. When no ACK has come `timeout_ms` later, h2_turn gives the connection up:
// -1, every stream still open answered with `lost` set. 0, or NGHTTP2_ERR_NOMEM (nothing queued:
// the caller may try again on a later turn).
int h2_ping(h2_conn *c, int timeout_ms);
// Whether a PING is waiting for its ACK.
int h2_ping_outstanding(const h2_conn *c);
// Milliseconds since the server's last frame arrived (any frame: an answer, a SETTINGS, a PING's ACK).
int64_t h2_idle_ms(const h2_conn *c);

// Sends GOAWAY if it can, and closes. Streams still open are dropped without answers.
void h2_close(h2_conn *c);

const char *h2_strerror(int code);

// For tests: on the calling thread, after the next `after` allocations by this library and by
// nghttp2 for it, the `count` following ones fail (a negative count: all of them). count 0 turns it
// off. OpenSSL's own allocations are not counted.
void h2_test_fail_allocs(long after, long count);
// How many allocations failed so, on the calling thread, since h2_test_fail_allocs.
long h2_test_failed_allocs(void);
// nghttp2's version string ("1.52.0"), for the log.
const char *h2_nghttp2_version(void);

#endif
