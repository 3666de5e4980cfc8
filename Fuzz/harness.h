// What the fuzz targets share: one CHTTP2Client connection whose server is the fuzzer. The
// connection (h2_conn_plain, internal.h) runs over one end of a socketpair without TLS; the other
// end is the "server": the harness writes the fuzzer's bytes into it, turns the connection as the
// delivery worker does (Nghttp2Worker.swift: h2_turn, then h2_answers / h2_clear_answers), and
// throws away what the client writes. It checks the promise HTTP2Client.h makes the worker: every
// request h2_submit took is answered exactly once, whatever the server sends, and the connection
// frees everything on h2_close (LeakSanitizer checks each input). A broken promise aborts, which
// libFuzzer reports as a crash with the input.
#ifndef HERALD_FUZZ_HARNESS_H
#define HERALD_FUZZ_HARNESS_H

#include "HTTP2Client.h"
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

// A request's body is at most FUZZ_BODY_MAX bytes: more than the 65,535 a stream may send before the
// server's first WINDOW_UPDATE (RFC 9113 §6.9.2), and more than the connection's 16 KiB write buffer.
enum { FUZZ_MAX_REQUESTS = 64, FUZZ_BODY_MAX = 70000 };

typedef struct {
    h2_conn *c;
    int server;                            // the fuzzer's end of the socketpair
    int ended;                             // h2_turn returned non-zero: the connection is over
    int deaf;                              // the server reads nothing (the client's writes back up)
    size_t body_len;                       // each request's body (up to FUZZ_BODY_MAX)
    int submitted;                         // cookies 0..submitted-1 were taken by h2_submit
    int answered[FUZZ_MAX_REQUESTS];       // answers seen per cookie
    int32_t stream_of[FUZZ_MAX_REQUESTS];
    // What the client wrote, read frame by frame: which streams' HEADERS reached the server.
    size_t preface_left, skip, header_len;
    uint8_t header[9];
    uint8_t headers_seen[2 * FUZZ_MAX_REQUESTS + 1];
    // Each answer as the worker would see it, for the target's own checks (bodies copied).
    void (*on_answer)(const h2_answer *a, void *ctx);
    void *ctx;
} fuzz_conn;

#define FUZZ_CHECK(cond)                                                                      \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "fuzz check failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__);    \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

static void fuzz_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

// 0, or -1 when the connection could not be made (only for want of memory, when the target fails
// allocations on purpose).
static int fuzz_open(fuzz_conn *f) {
    memset(f, 0, sizeof *f);
    f->preface_left = 24;   // "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" (RFC 9113 §3.4)
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) { perror("socketpair"); abort(); }
    fuzz_nonblocking(sv[0]);
    fuzz_nonblocking(sv[1]);
    f->server = sv[1];
    h2_error_kind kind;
    char err[256];
    f->c = h2_conn_plain(sv[0], "api.push.apple.com", &kind, err, sizeof err);
    if (!f->c) {
        FUZZ_CHECK(kind == H2_ERR_MEMORY);
        close(f->server);
        return -1;
    }
    return 0;
}

// Takes the answers waiting, as the worker does after each turn.
static void fuzz_collect(fuzz_conn *f) {
    size_t count = 0;
    const h2_answer *answers = h2_answers(f->c, &count);
    for (size_t i = 0; i < count; i++) {
        const h2_answer *a = &answers[i];
        if (getenv("FUZZ_VERBOSE")) {
            fprintf(stderr, "answer: request %d stream %d status %d complete %d cancelled %d reset %u lost %d not_sent %d "
                    "no_memory %d apns-id %.*s unique-id %.*s body %zu bytes\n", (int)a->cookie, a->stream_id, a->status,
                    a->complete, a->cancelled, a->reset_code, a->lost, a->not_sent, a->no_memory, (int)a->apns_id_len,
                    a->apns_id, (int)a->unique_id_len, a->unique_id, a->body_len);
        }
        FUZZ_CHECK(a->cookie < (uint64_t)f->submitted);
        FUZZ_CHECK(f->answered[a->cookie] == 0);
        f->answered[a->cookie]++;
        FUZZ_CHECK(a->stream_id == f->stream_of[a->cookie]);
        FUZZ_CHECK(a->apns_id_len <= sizeof a->apns_id && a->unique_id_len <= sizeof a->unique_id);
        FUZZ_CHECK(a->body_len <= 512 && (a->body_len == 0 || a->body != NULL));
        FUZZ_CHECK(!(a->lost && a->not_sent));
        FUZZ_CHECK(!a->not_sent || !f->headers_seen[a->stream_id]);
        FUZZ_CHECK(!a->complete || (a->status >= 200 && a->status <= 999 && !a->lost && !a->not_sent));
        if (f->on_answer) f->on_answer(a, f->ctx);
    }
    h2_clear_answers(f->c);
    int open = 0;
    for (int i = 0; i < f->submitted; i++) open += f->answered[i] == 0;
    FUZZ_CHECK(h2_open_streams(f->c) == open);
}

// Reads what the client wrote (its preface, SETTINGS, requests, acknowledgements), noting each
// stream whose HEADERS arrived: an answer `not_sent` must belong to a request the server never saw.
static void fuzz_drain(fuzz_conn *f) {
    uint8_t buf[65536];
    ssize_t n;
    while ((n = recv(f->server, buf, sizeof buf, 0)) > 0) {
        for (size_t i = 0; i < (size_t)n;) {
            if (f->preface_left) { size_t t = f->preface_left < (size_t)n - i ? f->preface_left : (size_t)n - i; f->preface_left -= t; i += t; continue; }
            if (f->skip) { size_t t = f->skip < (size_t)n - i ? f->skip : (size_t)n - i; f->skip -= t; i += t; continue; }
            f->header[f->header_len++] = buf[i++];
            if (f->header_len < 9) continue;
            f->header_len = 0;
            f->skip = (size_t)f->header[0] << 16 | (size_t)f->header[1] << 8 | f->header[2];
            uint32_t stream = ((uint32_t)f->header[5] & 0x7f) << 24 | (uint32_t)f->header[6] << 16 | (uint32_t)f->header[7] << 8 | f->header[8];
            if (f->header[3] == 1 && stream < sizeof f->headers_seen) f->headers_seen[stream] = 1;
        }
    }
}

static void fuzz_turn(fuzz_conn *f) {
    if (f->ended) return;
    char err[256];
    int rv = h2_turn(f->c, err, sizeof err);
    FUZZ_CHECK(rv >= -1 && rv <= 1);
    if (rv != 0) f->ended = 1;
    if (rv != 0 && getenv("FUZZ_VERBOSE")) fprintf(stderr, "turn: %d %s\n", rv, err);
    if (!f->deaf) fuzz_drain(f);
    fuzz_collect(f);
    // The worker's other questions between turns: none may fail on a connection in any state.
    (void)h2_wants_write(f->c);
    (void)h2_hpack_table_size(f->c);
    (void)h2_remote_max_streams(f->c);
    uint32_t code;
    const char *debug;
    size_t debug_len;
    if (h2_goaway(f->c, &code, &debug, &debug_len)) FUZZ_CHECK(debug_len <= 256);
}

// An APNs request as the worker packs it (HTTP2Client.h: [u16 name length][name][u16 value length][value],
// the top bit of a name's length marking a value never indexed). -1 when h2_submit refused it.
static int fuzz_submit(fuzz_conn *f) {
    if (f->ended || f->submitted == FUZZ_MAX_REQUESTS) return -1;
    static const char *const fields[][2] = {
        { ":path", "/3/device/0f5c31bd4c3f1bfe1a2c5c4e0d2e7f0c9a8b7c6d5e4f30211f2e3d4c5b6a7980" },
        { "apns-topic", "com.example.app" },
        { "apns-push-type", "alert" },
        { "apns-id", "6c2f0e5e-1a43-4b4c-9e1d-3a3c1c2b2a11" },
        { "content-type", "application/json" },
    };
    uint8_t packed[512];
    size_t n = 0;
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        size_t nl = strlen(fields[i][0]), vl = strlen(fields[i][1]);
        int never_indexed = i == 0 || i == 3;
        packed[n++] = (uint8_t)((nl >> 8) | (never_indexed ? 0x80 : 0));
        packed[n++] = (uint8_t)nl;
        memcpy(packed + n, fields[i][0], nl);
        n += nl;
        packed[n++] = (uint8_t)(vl >> 8);
        packed[n++] = (uint8_t)vl;
        memcpy(packed + n, fields[i][1], vl);
        n += vl;
    }
    static uint8_t body[FUZZ_BODY_MAX];
    static const char alert[] = "{\"aps\":{\"alert\":\"Spring sale\"}}";
    if (!body[0]) {
        memset(body, ' ', sizeof body);
        memcpy(body, alert, sizeof alert - 1);
    }
    size_t body_len = f->body_len ? f->body_len : sizeof alert - 1;
    int cookie = f->submitted;
    int32_t id = h2_submit(f->c, packed, n, body, body_len, (uint64_t)cookie);
    if (id < 0) {
        FUZZ_CHECK(h2_strerror(id) != NULL);
        return -1;
    }
    FUZZ_CHECK(id > 0 && (id & 1) == 1);
    f->stream_of[cookie] = id;
    f->submitted++;
    return id;
}

// Writes the server's bytes, turning the connection whenever the socket is full.
static void fuzz_feed(fuzz_conn *f, const uint8_t *data, size_t len) {
    while (len && !f->ended) {
        ssize_t n = send(f->server, data, len, MSG_NOSIGNAL);
        if (n > 0) { data += n; len -= (size_t)n; continue; }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) { fuzz_turn(f); continue; }
        if (n < 0 && errno == EINTR) continue;
        // The client closed its end: nothing more can reach it.
        return;
    }
    fuzz_turn(f);
}

// The server goes away (EOF), the connection is turned until it ends, every request must have
// been answered exactly once, and the connection is closed.
static void fuzz_finish(fuzz_conn *f) {
    f->deaf = 0;
    fuzz_drain(f);
    shutdown(f->server, SHUT_WR);
    for (int i = 0; i < 4 && !f->ended; i++) fuzz_turn(f);
    FUZZ_CHECK(f->ended);
    for (int i = 0; i < f->submitted; i++) {
        if (f->answered[i] != 1) {
            fprintf(stderr, "fuzz check failed: request %d (stream %d) answered %d times\n", i, f->stream_of[i], f->answered[i]);
            abort();
        }
    }
    FUZZ_CHECK(h2_open_streams(f->c) == 0);
    h2_close(f->c);
    close(f->server);
}

// Closes with streams still open (the worker does so only when it has given up on them): no answer
// follows, and nothing may leak.
static void fuzz_abandon(fuzz_conn *f) {
    h2_close(f->c);
    close(f->server);
}

// An empty SETTINGS frame: the server's connection preface (RFC 9113 §3.4), for inputs that start
// after it.
static const uint8_t fuzz_server_preface[9] = { 0, 0, 0, 4, 0, 0, 0, 0, 0 };

#endif
