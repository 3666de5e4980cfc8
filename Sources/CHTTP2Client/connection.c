// Why this file exists: libcurl 7.88 runs each HTTP/2 stream as an easy handle of its own, with
// kilobytes of libcurl's state per request in flight, and visits every transfer of a multi handle
// on each turn of curl_multi_perform. At Apple's round trip a campaign needs thousands of streams
// in flight, and then that memory and that walk are most of herald's cost. nghttp2 (the HTTP/2
// library libcurl itself uses) keeps a stream in a few hundred bytes and touches only the streams
// that have something to do. This drives nghttp2 directly over an OpenSSL socket: one connection,
// one thread (the caller's), no blocking after the handshake. SwiftNIO's HTTP/2 was tried too and
// cost more CPU per push than libcurl does. The figures behind this choice are in CHANGELOG.md;
// what a push costs now: docs/benchmarks.md#instructions-per-push.
#define _GNU_SOURCE
#include "HTTP2Client.h"
#include "internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

// What one stream keeps while it is open: its answer so far, and until nghttp2 has read it, the
// request's body. nghttp2 copies the header fields when the request is submitted and frees them
// once they are sent, so a stream waiting for its answer holds only this record.
struct h2_stream {
    struct h2_stream *prev, *next;
    uint64_t cookie;
    int32_t stream_id;
    int32_t status;
    int ended;
    int cancelled;
    int answer_dropped;   // the answer's body arrived and no memory could be had for it
    uint16_t apns_id_len, unique_id_len;
    char apns_id[48];
    char unique_id[48];
    uint8_t *answer;
    size_t answer_len;
    uint8_t *body;
    size_t body_off, body_len;
};

enum { ANSWER_BODY_MAX = 512, READ_CHUNK = 16384, OUT_CAPACITY = 16384, MAX_FIELDS = 16 };

struct h2_conn {
    int fd;
    SSL *ssl;
    nghttp2_session *session;
    char *authority;
    size_t authority_len;
    struct h2_stream *streams;
    int open;
    int goaway;
    uint32_t goaway_code;
    char goaway_debug[256];
    size_t goaway_debug_len;
    int failed;
    int out_of_memory;   // nghttp2 failed for want of memory (the connection failed with it)
    int settings_received;
    int tls_alert;       // the connection ended on a TLS alert from the server
    // Keepalive (h2_ping): when the last frame arrived, and the PING waiting for its ACK (its
    // payload, and when the connection is given up without it; 0: none waiting). CLOCK_MONOTONIC_COARSE
    // milliseconds: read once per frame received, it must cost next to nothing.
    int64_t last_frame_ms;
    int64_t ping_deadline_ms;
    int ping_timeout_ms;
    uint8_t ping_payload[8];
    // Frames nghttp2 produced and TLS has not taken yet (SSL_write wants the same bytes again).
    uint8_t out[OUT_CAPACITY];
    size_t out_len, out_off;
    // nghttp2_session_mem_send's last chunk, when it did not fit into `out`.
    const uint8_t *spill;
    size_t spill_len;
    // Room for an answer is reserved when a request is submitted (answers_count + open <= answers_cap
    // always), so a stream ending never needs memory to be answered.
    h2_answer *answers;
    size_t answers_count, answers_cap;
    uint8_t in[READ_CHUNK];
};

static void set_err(char *err, size_t errlen, const char *fmt, const char *detail) {
    if (err && errlen) snprintf(err, errlen, fmt, detail ? detail : "");
}

static const char *openssl_reason(void) {
    static __thread char buf[256];
    unsigned long e = ERR_get_error();
    if (!e) return "no detail from OpenSSL";
    ERR_error_string_n(e, buf, sizeof buf);
    ERR_clear_error();
    return buf;
}

// Whether OpenSSL's last error is an alert the peer sent: OpenSSL reports a received alert as
// reason SSL_AD_REASON_OFFSET + the alert's code ("sslv3 alert handshake failure", "tlsv13 alert
// certificate required"; https://docs.openssl.org/3.0/man3/SSL_alert_type_string/).
static int alert_received(void) {
    unsigned long e = ERR_peek_last_error();
    return e != 0 && ERR_GET_LIB(e) == ERR_LIB_SSL && ERR_GET_REASON(e) >= SSL_AD_REASON_OFFSET;
}

int64_t h2_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

// The keepalive's clock: a jiffy's resolution is plenty for intervals of seconds, and reading it
// is a load from the vDSO, not a clock read.
static int64_t coarse_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int h2_wait_fd(int fd, short events, int64_t deadline) {
    for (;;) {
        int64_t left = deadline - h2_now_ms();
        if (left <= 0) return 0;
        struct pollfd p = { .fd = fd, .events = events };
        int r = poll(&p, 1, (int)left);
        if (r > 0) return 1;
        if (r < 0 && errno != EINTR) return -1;
    }
}

// A write to a socket the server has closed raises SIGPIPE, whose default action ends the
// process (OpenSSL's socket BIO writes with write(2), not send(2) with MSG_NOSIGNAL). Around this
// file's writes SIGPIPE is blocked on the calling thread, and one raised meanwhile is taken back
// before the mask is restored: the write fails with EPIPE, the connection is lost, herald goes on.
typedef struct { sigset_t old; } pipe_guard;

static void pipe_guard_begin(pipe_guard *g) {
    sigset_t pipe_only;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &g->old);
}

static void pipe_guard_end(pipe_guard *g) {
    sigset_t pending;
    if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) && !sigismember(&g->old, SIGPIPE)) {
        sigset_t pipe_only;
        sigemptyset(&pipe_only);
        sigaddset(&pipe_only, SIGPIPE);
        struct timespec none = { 0, 0 };
        while (sigtimedwait(&pipe_only, NULL, &none) == SIGPIPE) {}
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
}

// ---------- answers ----------

// Room for the answers of every stream listed and one more; 0, or -1 without the memory.
static int reserve_answer(h2_conn *c) {
    size_t need = c->answers_count + (size_t)c->open + 1;
    if (need <= c->answers_cap) return 0;
    size_t cap = c->answers_cap ? c->answers_cap * 2 : 64;
    if (cap < need) cap = need;
    h2_answer *a = h2_realloc(c->answers, cap * sizeof *a);
    if (!a) return -1;
    c->answers = a;
    c->answers_cap = cap;
    return 0;
}

// Within the room reserve_answer made when the stream's request was submitted.
static h2_answer *add_answer(h2_conn *c) {
    h2_answer *a = &c->answers[c->answers_count++];
    memset(a, 0, sizeof *a);
    return a;
}

static void unlink_stream(h2_conn *c, struct h2_stream *s) {
    if (s->prev) s->prev->next = s->next; else c->streams = s->next;
    if (s->next) s->next->prev = s->prev;
    c->open--;
}

// The stream is over: its answer (or its absence) goes to the caller, its memory back.
// An answer whose body could not be kept is no answer: it is lost (the request may have been
// processed), to be resent with its apns-id like any other.
static void finish(h2_conn *c, struct h2_stream *s, uint32_t code, int lost, int not_sent) {
    if (s->answer_dropped && !not_sent) lost = 1;
    h2_answer *a = add_answer(c);
    a->cookie = s->cookie;
    a->stream_id = s->stream_id;
    a->status = s->status;
    a->complete = s->ended && s->status > 0 && !lost;
    a->cancelled = s->cancelled;
    a->reset_code = code;
    a->lost = lost;
    a->not_sent = not_sent;
    a->no_memory = s->answer_dropped;
    a->apns_id_len = s->apns_id_len;
    memcpy(a->apns_id, s->apns_id, s->apns_id_len);
    a->unique_id_len = s->unique_id_len;
    memcpy(a->unique_id, s->unique_id, s->unique_id_len);
    a->body = s->answer;
    a->body_len = s->answer_len;
    free(s->body);
    unlink_stream(c, s);
    free(s);
}

const h2_answer *h2_answers(const h2_conn *c, size_t *count) {
    *count = c->answers_count;
    return c->answers;
}

void h2_clear_answers(h2_conn *c) {
    for (size_t i = 0; i < c->answers_count; i++) free(c->answers[i].body);
    c->answers_count = 0;
}

// ---------- nghttp2's callbacks ----------

static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data) {
    (void)flags; (void)user_data;
    if (frame->hd.type != NGHTTP2_HEADERS) return 0;
    struct h2_stream *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
    if (!s) return 0;
    if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
        int v = 0;
        for (size_t i = 0; i < valuelen && i < 3; i++) v = v * 10 + (value[i] - '0');
        // 1xx answers are interim (RFC 9113 §8.1); the final one follows.
        if (v >= 200) s->status = v;
    } else if (((namelen == 7 && memcmp(name, "apns-id", 7) == 0) || (namelen == 15 && memcmp(name, "apns-request-id", 15) == 0))
               && valuelen <= sizeof s->apns_id) {
        // A device push's answer echoes apns-id; a broadcast's echoes apns-request-id
        // (https://developer.apple.com/documentation/usernotifications/sending-broadcast-push-notification-requests-to-apns).
        memcpy(s->apns_id, value, valuelen);
        s->apns_id_len = (uint16_t)valuelen;
    } else if (namelen == 14 && memcmp(name, "apns-unique-id", 14) == 0 && valuelen <= sizeof s->unique_id) {
        memcpy(s->unique_id, value, valuelen);
        s->unique_id_len = (uint16_t)valuelen;
    }
    return 0;
}

static int on_data(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data, size_t len, void *user_data) {
    (void)flags; (void)user_data;
    struct h2_stream *s = nghttp2_session_get_stream_user_data(session, stream_id);
    if (!s || s->answer_dropped || s->answer_len >= ANSWER_BODY_MAX) return 0;
    if (!s->answer && !(s->answer = h2_malloc(ANSWER_BODY_MAX))) {
        // The stream goes on (failing the callback would fail the whole session): finish answers
        // it as lost.
        s->answer_dropped = 1;
        return 0;
    }
    size_t n = len < ANSWER_BODY_MAX - s->answer_len ? len : ANSWER_BODY_MAX - s->answer_len;
    memcpy(s->answer + s->answer_len, data, n);
    s->answer_len += n;
    return 0;
}

static int on_frame(nghttp2_session *session, const nghttp2_frame *frame, void *user_data) {
    h2_conn *c = user_data;
    c->last_frame_ms = coarse_ms();
    if (frame->hd.type == NGHTTP2_PING) {
        // Our PING's ACK echoes its payload (RFC 9113 §6.7); nghttp2 answers the server's own PINGs.
        if ((frame->hd.flags & NGHTTP2_FLAG_ACK) && c->ping_deadline_ms
            && memcmp(frame->ping.opaque_data, c->ping_payload, sizeof c->ping_payload) == 0) {
            c->ping_deadline_ms = 0;
        }
        return 0;
    }
    if (frame->hd.type == NGHTTP2_SETTINGS && !(frame->hd.flags & NGHTTP2_FLAG_ACK)) {
        c->settings_received = 1;
        return 0;
    }
    if (frame->hd.type == NGHTTP2_GOAWAY) {
        c->goaway = 1;
        c->goaway_code = frame->goaway.error_code;
        size_t n = frame->goaway.opaque_data_len < sizeof c->goaway_debug ? frame->goaway.opaque_data_len : sizeof c->goaway_debug;
        if (n) memcpy(c->goaway_debug, frame->goaway.opaque_data, n);
        c->goaway_debug_len = n;
        return 0;
    }
    if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) && (frame->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
        struct h2_stream *s = nghttp2_session_get_stream_user_data(session, frame->hd.stream_id);
        if (s) s->ended = 1;
    }
    return 0;
}

static int on_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data) {
    struct h2_stream *s = nghttp2_session_get_stream_user_data(session, stream_id);
    if (s) finish(user_data, s, error_code, 0, 0);
    return 0;
}

// A stream still waiting in this connection's list by its id: one whose HEADERS nghttp2 has not
// sent yet has no nghttp2 stream (nor stream user data) until it leaves.
static struct h2_stream *find_waiting(h2_conn *c, int32_t stream_id) {
    for (struct h2_stream *s = c->streams; s; s = s->next) {
        if (s->stream_id == stream_id) return s;
    }
    return NULL;
}

// nghttp2 could not send a request's HEADERS (the session was going away while the request waited
// in its queue). nghttp2 opens a request's stream only when its HEADERS leave, so no
// on_stream_close follows: it is answered here as never sent. A stream that was opened is left to
// on_stream_close. (Requests nghttp2 simply keeps queued after a GOAWAY are answered the same way
// when the connection ends: h2_turn.)
static int on_not_sent(nghttp2_session *session, const nghttp2_frame *frame, int lib_error_code, void *user_data) {
    (void)lib_error_code;
    h2_conn *c = user_data;
    if (frame->hd.type != NGHTTP2_HEADERS || nghttp2_session_find_stream(session, frame->hd.stream_id)) return 0;
    struct h2_stream *s = find_waiting(c, frame->hd.stream_id);
    if (s) finish(c, s, 0, 0, 1);
    return 0;
}

static ssize_t read_body(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length, uint32_t *data_flags,
                         nghttp2_data_source *source, void *user_data) {
    (void)session; (void)stream_id; (void)user_data;
    struct h2_stream *s = source->ptr;
    size_t left = s->body_len - s->body_off;
    size_t n = left < length ? left : length;
    if (n) memcpy(buf, s->body + s->body_off, n);
    s->body_off += n;
    if (s->body_off == s->body_len) {
        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
        // Read to its end: nghttp2 never asks again, and the stream may wait long for its answer.
        free(s->body);
        s->body = NULL;
    }
    return (ssize_t)n;
}

// ---------- connecting ----------

static int is_ip_literal(const char *host) {
    unsigned char buf[sizeof(struct in6_addr)];
    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

static int tcp_connect(const char *host, const char *port, int64_t deadline, int keepalive, h2_error_kind *kind, char *err, size_t errlen) {
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0) {
        *kind = H2_ERR_RESOLVE;
        set_err(err, errlen, "could not resolve the host: %s", gai_strerror(rc));
        return -1;
    }
    int fd = -1;
    const char *why = "no address";
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) { why = strerror(errno); continue; }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
        if (errno == EINPROGRESS) {
            int w = h2_wait_fd(fd, POLLOUT, deadline);
            int soerr = 0;
            socklen_t len = sizeof soerr;
            if (w > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0) break;
            why = w == 0 ? "timed out" : strerror(soerr ? soerr : errno);
        } else {
            why = strerror(errno);
        }
        close(fd);
        fd = -1;
        if (h2_now_ms() >= deadline) { why = "timed out"; break; }
    }
    freeaddrinfo(res);
    if (fd < 0) {
        *kind = H2_ERR_CONNECT;
        set_err(err, errlen, "could not connect: %s", why);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (keepalive > 0) {
        int interval = keepalive / 2 > 0 ? keepalive / 2 : 1;
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &keepalive, sizeof keepalive);
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
    }
    return fd;
}

static int tls_handshake(h2_conn *c, SSL_CTX *ctx, const char *host, int64_t deadline, h2_error_kind *kind, char *err, size_t errlen) {
    c->ssl = SSL_new(ctx);
    if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1) {
        *kind = H2_ERR_MEMORY;
        set_err(err, errlen, "TLS: %s", openssl_reason());
        return -1;
    }
    // The server's name is checked against its certificate (an IP address against its IP SANs):
    // verification is never off.
    X509_VERIFY_PARAM *param = SSL_get0_param(c->ssl);
    if (is_ip_literal(host)) {
        X509_VERIFY_PARAM_set1_ip_asc(param, host);
    } else {
        SSL_set_tlsext_host_name(c->ssl, host);
        X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
        X509_VERIFY_PARAM_set1_host(param, host, 0);
    }
    static const unsigned char alpn[] = { 2, 'h', '2' };
    SSL_set_alpn_protos(c->ssl, alpn, sizeof alpn);
    for (;;) {
        ERR_clear_error();
        int r = SSL_connect(c->ssl);
        if (r == 1) break;
        int e = SSL_get_error(c->ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            int w = h2_wait_fd(c->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline);
            if (w > 0) continue;
            *kind = H2_ERR_TLS;
            set_err(err, errlen, "TLS handshake %s", w == 0 ? "timed out" : strerror(errno));
            return -1;
        }
        long verify = SSL_get_verify_result(c->ssl);
        int refused = alert_received();
        if (verify != X509_V_OK) {
            *kind = H2_ERR_TRUST;
            set_err(err, errlen, "TLS trust: the server's certificate was not accepted: %s", X509_verify_cert_error_string(verify));
        } else {
            *kind = refused ? H2_ERR_TLS_REFUSED : H2_ERR_TLS;
            set_err(err, errlen, "TLS handshake failed: %s", e == SSL_ERROR_SYSCALL && errno ? strerror(errno) : openssl_reason());
        }
        return -1;
    }
    const unsigned char *proto = NULL;
    unsigned proto_len = 0;
    SSL_get0_alpn_selected(c->ssl, &proto, &proto_len);
    if (proto_len != 2 || memcmp(proto, "h2", 2) != 0) {
        *kind = H2_ERR_PROTOCOL;
        set_err(err, errlen, "the server did not agree to HTTP/2 (ALPN h2)%s", "");
        return -1;
    }
    return 0;
}

// nghttp2's allocations for a connection, through this library's (internal.h), so a test can fail them.
static void *mem_malloc(size_t size, void *user) { (void)user; return h2_malloc(size); }
static void mem_free(void *p, void *user) { (void)user; free(p); }
static void *mem_calloc(size_t count, size_t size, void *user) { (void)user; return h2_calloc(count, size); }
static void *mem_realloc(void *p, size_t size, void *user) { (void)user; return h2_realloc(p, size); }

static int start_session(h2_conn *c) {
    nghttp2_session_callbacks *cb;
    // NGHTTP2_ERR_NOMEM is the one failure nghttp2_session_callbacks_new documents.
    if (nghttp2_session_callbacks_new(&cb) != 0) return NGHTTP2_ERR_NOMEM;
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
    nghttp2_session_callbacks_set_on_frame_not_send_callback(cb, on_not_sent);
    // Closed streams are not kept for the priority tree (herald sets no priorities): each would
    // hold its memory after its answer (https://nghttp2.org/documentation/nghttp2_option_set_no_closed_streams.html).
    nghttp2_option *option;
    if (nghttp2_option_new(&option) != 0) { nghttp2_session_callbacks_del(cb); return NGHTTP2_ERR_NOMEM; }
    nghttp2_option_set_no_closed_streams(option, 1);
    // Static: it must outlive the session, which uses it until nghttp2_session_del.
    static nghttp2_mem mem = { NULL, mem_malloc, mem_free, mem_calloc, mem_realloc };
    int rv = nghttp2_session_client_new3(&c->session, cb, c, option, &mem);
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(cb);
    if (rv != 0) return rv;
    // No server push (APNs sends none; RFC 9113 §8.4).
    nghttp2_settings_entry settings[] = { { NGHTTP2_SETTINGS_ENABLE_PUSH, 0 } };
    return nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 1);
}

h2_conn *h2_connect(h2_tls *tls, const char *host, const char *port, const char *authority, const h2_proxy *proxy,
                    int timeout_ms, int keepalive_seconds, h2_error_kind *kind, char *err, size_t errlen) {
    *kind = H2_OK;
    int64_t deadline = h2_now_ms() + (timeout_ms > 0 ? timeout_ms : 10000);
    h2_conn *c = h2_calloc(1, sizeof *c);
    if (!c) { *kind = H2_ERR_MEMORY; set_err(err, errlen, "out of memory%s", ""); return NULL; }
    c->fd = -1;
    c->authority = h2_strdup(authority);
    if (!c->authority) { *kind = H2_ERR_MEMORY; set_err(err, errlen, "out of memory%s", ""); h2_close(c); return NULL; }
    c->authority_len = strlen(authority);
    c->fd = proxy ? tcp_connect(proxy->host, proxy->port, deadline, keepalive_seconds, kind, err, errlen)
                  : tcp_connect(host, port, deadline, keepalive_seconds, kind, err, errlen);
    if (c->fd < 0 && proxy && err && errlen) {
        char why[256];
        snprintf(why, sizeof why, "%s", err);
        snprintf(err, errlen, "the proxy: %s", why);
    }
    if (c->fd >= 0 && proxy && h2_proxy_open(c->fd, proxy, host, port, deadline, kind, err, errlen) != 0) {
        h2_close(c);
        return NULL;
    }
    pipe_guard guard;
    pipe_guard_begin(&guard);
    int handshake = c->fd < 0 ? -1 : tls_handshake(c, h2_tls_context(tls), host, deadline, kind, err, errlen);
    pipe_guard_end(&guard);
    if (handshake != 0) {
        h2_close(c);
        return NULL;
    }
    int rv = start_session(c);
    if (rv != 0) {
        *kind = rv == NGHTTP2_ERR_NOMEM ? H2_ERR_MEMORY : H2_ERR_PROTOCOL;
        set_err(err, errlen, "nghttp2: %s", nghttp2_strerror(rv));
        h2_close(c);
        return NULL;
    }
    // The server's SETTINGS come first (RFC 9113 §3.4), with its SETTINGS_MAX_CONCURRENT_STREAMS:
    // until they are read nghttp2 assumes 100, and APNs "allows only one stream until you post a
    // request with a valid authentication token"
    // (https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns):
    // requests above the real limit would only be refused.
    while (!c->settings_received) {
        if (h2_turn(c, err, errlen) != 0) {
            // Under TLS 1.3 the server judges a client certificate after our handshake is done: its
            // refusal is an alert read here, before its SETTINGS (RFC 8446 §4.4.2.4).
            *kind = c->out_of_memory ? H2_ERR_MEMORY : c->tls_alert ? H2_ERR_TLS_REFUSED : H2_ERR_PROTOCOL;
            h2_close(c);
            return NULL;
        }
        if (c->settings_received) break;
        int w = h2_wait_fd(c->fd, POLLIN, deadline);
        if (w <= 0) {
            *kind = H2_ERR_PROTOCOL;
            set_err(err, errlen, "the server sent no HTTP/2 SETTINGS %s", w == 0 ? "in time" : strerror(errno));
            h2_close(c);
            return NULL;
        }
    }
    return c;
}

int h2_fd(const h2_conn *c) { return c->fd; }

// ---------- requests ----------

int32_t h2_submit(h2_conn *c, const uint8_t *fields, size_t fields_len, const uint8_t *body, size_t body_len, uint64_t cookie) {
    if (c->goaway || c->failed) return NGHTTP2_ERR_START_STREAM_NOT_ALLOWED;
    nghttp2_nv nv[MAX_FIELDS + 3];
    nv[0] = (nghttp2_nv){ (uint8_t *)":method", (uint8_t *)"POST", 7, 4, NGHTTP2_NV_FLAG_NONE };
    nv[1] = (nghttp2_nv){ (uint8_t *)":scheme", (uint8_t *)"https", 7, 5, NGHTTP2_NV_FLAG_NONE };
    nv[2] = (nghttp2_nv){ (uint8_t *)":authority", (uint8_t *)c->authority, 10, c->authority_len, NGHTTP2_NV_FLAG_NONE };
    size_t n = 3;
    // :path must come first among the caller's fields: pseudo-headers precede regular fields
    // (RFC 9113 §8.3). nghttp2 copies every name and value (no NGHTTP2_NV_FLAG_NO_COPY_*).
    for (size_t off = 0; off < fields_len;) {
        if (n == sizeof nv / sizeof nv[0] || off + 2 > fields_len) return NGHTTP2_ERR_INVALID_ARGUMENT;
        uint8_t flags = fields[off] & 0x80 ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE;
        size_t nl = (size_t)(fields[off] & 0x7f) << 8 | fields[off + 1];
        const uint8_t *name = fields + off + 2;
        off += 2 + nl;
        if (off + 2 > fields_len) return NGHTTP2_ERR_INVALID_ARGUMENT;
        size_t vl = (size_t)fields[off] << 8 | fields[off + 1];
        const uint8_t *value = fields + off + 2;
        off += 2 + vl;
        if (off > fields_len) return NGHTTP2_ERR_INVALID_ARGUMENT;
        nv[n++] = (nghttp2_nv){ (uint8_t *)name, (uint8_t *)value, nl, vl, flags };
    }
    // Every failure below leaves nothing behind: the request is not listed and never leaves.
    if (reserve_answer(c) != 0) return NGHTTP2_ERR_NOMEM;
    struct h2_stream *s = h2_calloc(1, sizeof *s);
    if (!s) return NGHTTP2_ERR_NOMEM;
    s->cookie = cookie;
    if (body_len) {
        if (!(s->body = h2_malloc(body_len))) { free(s); return NGHTTP2_ERR_NOMEM; }
        memcpy(s->body, body, body_len);
    }
    s->body_len = body_len;
    nghttp2_data_provider provider = { .source = { .ptr = s }, .read_callback = read_body };
    int32_t id = nghttp2_submit_request(c->session, NULL, nv, n, &provider, s);
    if (id < 0) { free(s->body); free(s); return id; }
    s->stream_id = id;
    s->next = c->streams;
    if (c->streams) c->streams->prev = s;
    c->streams = s;
    c->open++;
    return id;
}

int h2_cancel(h2_conn *c, int32_t stream_id) {
    // A request still queued is cancelled by nghttp2 before it leaves (then on_not_sent answers it).
    struct h2_stream *s = nghttp2_session_get_stream_user_data(c->session, stream_id);
    if (!s) s = find_waiting(c, stream_id);
    if (!s) return 0;
    // Marked only once the reset is queued: without memory for it (NGHTTP2_ERR_NOMEM) the stream
    // goes on, and the caller's next scan tries again.
    int rv = nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
    if (rv == 0) s->cancelled = 1;
    return rv;
}

// ---------- I/O ----------

// Every stream still open is answered as lost, and a request nghttp2 still held in its queue
// (no stream opened: its HEADERS never left) as never sent; the connection takes no more. A stream
// whose whole answer arrived (its final status and END_STREAM) is open only because its request's
// body had not all left: "A server can send a complete response prior to the client sending an
// entire request" (RFC 9113 §8.1). That answer stands: resending an accepted push would deliver it twice.
static int fail(h2_conn *c, char *err, size_t errlen, const char *fmt, const char *detail) {
    set_err(err, errlen, fmt, detail);
    c->failed = 1;
    while (c->streams) {
        int opened = nghttp2_session_find_stream(c->session, c->streams->stream_id) != NULL;
        int answered = c->streams->ended && c->streams->status > 0;
        finish(c, c->streams, 0, opened && !answered, !opened);
    }
    return -1;
}

// A negative return of nghttp2_session_mem_recv or _mem_send ends the session: each error they
// document (NGHTTP2_ERR_NOMEM among them, https://nghttp2.org/documentation/nghttp2_session_mem_recv.html)
// is fatal (nghttp2_is_fatal). Memory running out is told apart for the caller: H2_ERR_MEMORY.
static int session_failed(h2_conn *c, char *err, size_t errlen, int code) {
    if (code == NGHTTP2_ERR_NOMEM) {
        c->out_of_memory = 1;
        return fail(c, err, errlen, "connection lost: out of memory in HTTP/2 (%s)", nghttp2_strerror(code));
    }
    return fail(c, err, errlen, "HTTP/2 protocol error: %s", nghttp2_strerror(code));
}

// ---------- a plain transport: fuzzing and tests only ----------

// The same connection over a socket the caller has connected, without TLS (HTTP/2 with prior
// knowledge, RFC 9113 §3.3): Fuzz/ feeds it a server's bytes through a socketpair. read_all and
// flush_out take these paths when c->ssl is NULL, which no h2_connect connection ever is.
h2_conn *h2_conn_plain(int fd, const char *authority, h2_error_kind *kind, char *err, size_t errlen) {
    *kind = H2_OK;
    h2_conn *c = h2_calloc(1, sizeof *c);
    if (!c) { *kind = H2_ERR_MEMORY; set_err(err, errlen, "out of memory%s", ""); close(fd); return NULL; }
    c->fd = fd;
    c->authority = h2_strdup(authority);
    int rv = c->authority ? start_session(c) : NGHTTP2_ERR_NOMEM;
    if (rv != 0) {
        *kind = rv == NGHTTP2_ERR_NOMEM ? H2_ERR_MEMORY : H2_ERR_PROTOCOL;
        set_err(err, errlen, "nghttp2: %s", nghttp2_strerror(rv));
        h2_close(c);
        return NULL;
    }
    c->authority_len = strlen(authority);
    return c;
}

static int read_plain(h2_conn *c, char *err, size_t errlen) {
    for (;;) {
        ssize_t n = recv(c->fd, c->in, sizeof c->in, 0);
        if (n > 0) {
            ssize_t rv = nghttp2_session_mem_recv(c->session, c->in, (size_t)n);
            if (rv < 0) return session_failed(c, err, errlen, (int)rv);
            continue;
        }
        if (n == 0) return fail(c, err, errlen, "the server closed the connection%s", "");
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
        return fail(c, err, errlen, "connection lost: %s", strerror(errno));
    }
}

static int flush_plain(h2_conn *c, char *err, size_t errlen) {
    while (c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n > 0) { c->out_off += (size_t)n; continue; }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
        return fail(c, err, errlen, "connection lost while writing: %s", strerror(errno));
    }
    c->out_off = c->out_len = 0;
    return 1;
}

static int read_all(h2_conn *c, char *err, size_t errlen) {
    if (!c->ssl) return read_plain(c, err, errlen);
    for (;;) {
        ERR_clear_error();
        int n = SSL_read(c->ssl, c->in, sizeof c->in);
        if (n > 0) {
            ssize_t rv = nghttp2_session_mem_recv(c->session, c->in, (size_t)n);
            if (rv < 0) return session_failed(c, err, errlen, (int)rv);
            continue;
        }
        int e = SSL_get_error(c->ssl, n);
        if (e == SSL_ERROR_WANT_READ) return 0;
        if (e == SSL_ERROR_WANT_WRITE) return 0;   // renegotiation-like states: the next turn goes on
        if (e == SSL_ERROR_ZERO_RETURN) return fail(c, err, errlen, "the server closed the connection%s", "");
        if (e == SSL_ERROR_SYSCALL) {
            if (errno == EAGAIN || errno == EINTR) return 0;
            return fail(c, err, errlen, "connection lost: %s", errno ? strerror(errno) : "the server closed it");
        }
        c->tls_alert = alert_received();
        return fail(c, err, errlen, "connection lost: TLS: %s", openssl_reason());
    }
}

// Writes `out` to TLS; 1 when it all went, 0 when the socket is full, -1 on error.
static int flush_out(h2_conn *c, char *err, size_t errlen) {
    if (!c->ssl) return flush_plain(c, err, errlen);
    while (c->out_off < c->out_len) {
        ERR_clear_error();
        int n = SSL_write(c->ssl, c->out + c->out_off, (int)(c->out_len - c->out_off));
        if (n > 0) { c->out_off += (size_t)n; continue; }
        int e = SSL_get_error(c->ssl, n);
        if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ) return 0;
        if (e == SSL_ERROR_SYSCALL && (errno == EAGAIN || errno == EINTR)) return 0;
        return fail(c, err, errlen, "connection lost while writing: %s", e == SSL_ERROR_SYSCALL && errno ? strerror(errno) : openssl_reason());
    }
    c->out_off = c->out_len = 0;
    return 1;
}

// nghttp2's frames are gathered into `out` and written together: a request's HEADERS and DATA,
// and a turn's requests, leave in as few TLS records as fit.
static int write_all(h2_conn *c, char *err, size_t errlen) {
    for (;;) {
        int f = flush_out(c, err, errlen);
        if (f <= 0) return f;
        if (c->spill_len) {
            size_t n = c->spill_len < OUT_CAPACITY ? c->spill_len : OUT_CAPACITY;
            memcpy(c->out, c->spill, n);
            c->out_len = n;
            c->spill += n;
            c->spill_len -= n;
            continue;
        }
        while (c->out_len < OUT_CAPACITY) {
            const uint8_t *data;
            ssize_t n = nghttp2_session_mem_send(c->session, &data);
            if (n < 0) return session_failed(c, err, errlen, (int)n);
            if (n == 0) break;
            size_t room = OUT_CAPACITY - c->out_len;
            size_t take = (size_t)n < room ? (size_t)n : room;
            memcpy(c->out + c->out_len, data, take);
            c->out_len += take;
            if (take < (size_t)n) {
                // nghttp2 keeps `data` valid until the next mem_send call, which waits for it.
                c->spill = data + take;
                c->spill_len = (size_t)n - take;
                break;
            }
        }
        if (c->out_len == 0) return 1;
    }
}

// ---------- keepalive ----------

int h2_ping(h2_conn *c, int timeout_ms) {
    if (c->failed || c->ping_deadline_ms) return 0;
    // The payload only has to be told apart from a PING sent earlier on this connection.
    int64_t now = coarse_ms();
    for (size_t i = 0; i < sizeof c->ping_payload; i++) c->ping_payload[i] = (uint8_t)((uint64_t)now >> (8 * i));
    int rv = nghttp2_submit_ping(c->session, NGHTTP2_FLAG_NONE, c->ping_payload);
    if (rv != 0) return rv;
    c->ping_timeout_ms = timeout_ms > 0 ? timeout_ms : 1;
    c->ping_deadline_ms = now + c->ping_timeout_ms;
    return 0;
}

int h2_ping_outstanding(const h2_conn *c) { return c->ping_deadline_ms != 0; }

int64_t h2_idle_ms(const h2_conn *c) {
    int64_t idle = coarse_ms() - c->last_frame_ms;
    return idle > 0 ? idle : 0;
}

static int ping_overdue(const h2_conn *c) { return c->ping_deadline_ms && coarse_ms() >= c->ping_deadline_ms; }

// Nothing has come back from the server, not even the PING's ACK: the path is gone (a NAT or load
// balancer that dropped the connection without a word, or a server that stopped reading). Every
// stream still open is answered as lost (a request still queued as never sent), to be resent with
// its apns-id on a new connection.
static int ping_failed(h2_conn *c, char *err, size_t errlen) {
    char why[64];
    snprintf(why, sizeof why, "%d ms", c->ping_timeout_ms);
    return fail(c, err, errlen, "connection lost: no answer to an HTTP/2 PING within %s", why);
}

int h2_wants_write(h2_conn *c) {
    return !c->failed && (c->out_off < c->out_len || c->spill_len || nghttp2_session_want_write(c->session));
}

int h2_turn(h2_conn *c, char *err, size_t errlen) {
    if (c->failed) { set_err(err, errlen, "connection lost%s", ""); return -1; }
    pipe_guard guard;
    pipe_guard_begin(&guard);
    int rv = read_all(c, err, errlen) < 0 || write_all(c, err, errlen) < 0 ? -1 : 0;
    pipe_guard_end(&guard);
    if (rv < 0) return -1;
    // Checked after the read: an ACK already in the socket counts.
    if (ping_overdue(c)) return ping_failed(c, err, errlen);
    if (!nghttp2_session_want_read(c->session) && !h2_wants_write(c)) {
        // nghttp2 is done with the connection: the server's GOAWAY left nothing open, or nghttp2
        // sent its own GOAWAY because the server broke the protocol (a connection error, RFC 9113
        // §5.4.1), open streams and all. A stream still open had left and is lost (fail); a request
        // still listed without a stream was held in nghttp2's queue, and nghttp2 sends nothing new
        // after a GOAWAY: it never left.
        int opened = 0;
        for (struct h2_stream *s = c->streams; s; s = s->next) opened |= nghttp2_session_find_stream(c->session, s->stream_id) != NULL;
        if (opened || !c->goaway) return fail(c, err, errlen, "HTTP/2 protocol error: %s", "the server broke the protocol and the connection was closed");
        while (c->streams) finish(c, c->streams, 0, 0, 1);
        set_err(err, errlen, "connection ended after GOAWAY%s", "");
        c->failed = 1;
        return 1;
    }
    return 0;
}

int h2_open_streams(const h2_conn *c) { return c->open; }

size_t h2_hpack_table_size(h2_conn *c) { return nghttp2_session_get_hd_deflate_dynamic_table_size(c->session); }

uint32_t h2_remote_max_streams(h2_conn *c) {
    return nghttp2_session_get_remote_settings(c->session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
}

int h2_goaway(const h2_conn *c, uint32_t *error_code, const char **debug, size_t *debug_len) {
    if (error_code) *error_code = c->goaway_code;
    if (debug) *debug = c->goaway_debug;
    if (debug_len) *debug_len = c->goaway_debug_len;
    return c->goaway;
}

void h2_close(h2_conn *c) {
    if (!c) return;
    if (c->session) {
        if (!c->failed) {
            nghttp2_session_terminate_session(c->session, NGHTTP2_NO_ERROR);
            char ignored[8];
            pipe_guard guard;
            pipe_guard_begin(&guard);
            write_all(c, ignored, sizeof ignored);
            if (c->ssl) SSL_shutdown(c->ssl);
            pipe_guard_end(&guard);
        }
        // Streams still open are dropped: the caller closes only connections it has drained.
        while (c->streams) {
            struct h2_stream *s = c->streams;
            unlink_stream(c, s);
            free(s->answer);
            free(s->body);
            free(s);
        }
        nghttp2_session_del(c->session);
    }
    if (c->ssl) SSL_free(c->ssl);
    if (c->fd >= 0) close(c->fd);
    h2_clear_answers(c);
    free(c->answers);
    free(c->authority);
    free(c);
}

const char *h2_strerror(int code) { return nghttp2_strerror(code); }

const char *h2_nghttp2_version(void) {
    nghttp2_info *info = nghttp2_version(0);
    return info ? info->version_str : "unknown";
}
