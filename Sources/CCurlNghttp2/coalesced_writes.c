// Why this file exists: nghttp2_session_send hands its send callback one frame at a time, and
// libcurl 7.88's callback passes each straight to SSL_write: a TLS record and a send(2) per
// frame. An APNs request is a HEADERS frame and a DATA frame (request_headers.c puts the body
// right behind the headers), so two records and two system calls per push, where one would
// carry both. SSL_write's fixed cost and the system call are most of what a record costs at APNs
// sizes. nghttp2 leaves the batching to its user (https://nghttp2.org/documentation/types.html#c.nghttp2_send_callback:
// "An application should be responsible to buffer up small chunks of data as necessary"), but
// libcurl has no option for it, and nghttp2's other way (nghttp2_session_mem_send) would mean
// replacing libcurl's loop.
//
// How: this object registers its own send callback in place of libcurl's
// (nghttp2_session_callbacks_set_send_callback) and defines nghttp2_session_send. While our
// nghttp2_session_send runs libnghttp2's, the frames are collected in the session's outbox
// (64 KiB; nghttp2 keeps the rest queued when it is full); then the outbox goes to libcurl's
// callback in one call, inside the same libcurl call that would have sent them one by one. What
// the socket does not take stays in the outbox, at the same address, and goes out first on the
// next call: a write that would block "must be repeated with the same arguments"
// (https://docs.openssl.org/3.0/man3/SSL_write/). Until then nghttp2_session_want_write says
// so, so libcurl waits for the socket to be writable. A frame sent outside our
// nghttp2_session_send goes straight to libcurl's callback, untouched.
//
// Outboxes are per thread (a multi handle and its sessions live on one thread), eight per
// thread; a session beyond those sends frame by frame.
#define _GNU_SOURCE
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include "CoalescedWrites.h"
#include "sessions.h"

typedef __typeof__(&nghttp2_session_callbacks_set_send_callback) set_send_fn;
typedef __typeof__(&nghttp2_session_want_write) want_write_fn;

enum { ERR_WOULDBLOCK = NGHTTP2_ERR_WOULDBLOCK, ERR_CALLBACK_FAILURE = NGHTTP2_ERR_CALLBACK_FAILURE, BOXES = 8, CAPACITY = 65536 };

struct outbox {
    void *session;
    /// The user data nghttp2 gave the collected frames' callback: libcurl's, for its own callback.
    void *user_data;
    uint8_t *buf;
    /// Collected bytes, and how many of them the socket has taken.
    size_t len, off;
    int collecting;
};
static _Thread_local struct outbox boxes[BOXES];
static _Thread_local unsigned long frames_collected, writes_made;
static herald_deliver_fn libcurl_send_cb;

static struct outbox *box_for(void *session, int create) {
    struct outbox *unused = NULL;
    for (int i = 0; i < BOXES; i++) {
        if (boxes[i].session == session) return &boxes[i];
        if (!unused && !boxes[i].session) unused = &boxes[i];
    }
    if (!create || !unused) return NULL;
    if (!unused->buf && !(unused->buf = malloc(CAPACITY))) return NULL;
    unused->session = session;
    unused->len = unused->off = 0;
    unused->collecting = 0;
    return unused;
}

void herald_coalesced_forget(void *session) {
    struct outbox *b = box_for(session, 0);
    if (!b) return;
    b->session = NULL;
    b->len = b->off = 0;
    b->collecting = 0;
}

ssize_t herald_coalesced_collect(void *session, const uint8_t *data, size_t length, int flags, void *user_data) {
    struct outbox *b = box_for(session, 0);
    if (!b || !b->collecting) return libcurl_send_cb(session, data, length, flags, user_data);
    b->user_data = user_data;
    size_t room = CAPACITY - b->len;
    if (room == 0) return ERR_WOULDBLOCK;
    size_t n = length < room ? length : room;
    memcpy(b->buf + b->len, data, n);
    b->len += n;
    frames_collected++;
    return (ssize_t)n;
}

/// 1: the outbox is empty; 0: the socket would block, the rest stays; -1: the write failed.
static int flush(void *session, struct outbox *b, herald_deliver_fn deliver) {
    while (b->off < b->len) {
        ssize_t w = deliver(session, b->buf + b->off, b->len - b->off, 0, b->user_data);
        writes_made++;
        if (w == ERR_WOULDBLOCK || w == 0) return 0;
        if (w < 0) {
            b->len = b->off = 0;
            return -1;
        }
        b->off += (size_t)w;
    }
    b->len = b->off = 0;
    return 1;
}

int herald_coalesced_send(void *session, herald_produce_fn produce, herald_deliver_fn deliver) {
    struct outbox *b = box_for(session, 1);
    if (!b) return produce(session);
    for (;;) {
        int r = flush(session, b, deliver);
        if (r < 0) return ERR_CALLBACK_FAILURE;
        if (r == 0) return 0;   // what nghttp2_session_send returns when the callback would block
        b->collecting = 1;
        int rv = produce(session);
        b->collecting = 0;
        if (rv != 0) {
            b->len = b->off = 0;   // the session failed: nothing more goes out on it
            return rv;
        }
        if (b->len < CAPACITY) {
            r = flush(session, b, deliver);
            return r < 0 ? ERR_CALLBACK_FAILURE : 0;
        }
        // Full: nghttp2 may hold more frames; send these and collect again.
    }
}

int herald_coalesced_pending(void *session) {
    struct outbox *b = box_for(session, 0);
    return b && b->off < b->len;
}

void coalesced_writes_count(herald_shim_counts *counts) {
    counts->frames_collected = frames_collected;
    counts->writes_made = writes_made;
}

// herald_deliver_fn and herald_produce_fn are nghttp2_send_callback and nghttp2_session_send with
// the session as void * (CoalescedWrites.h is imported by Swift, which does not see nghttp2.h).
void nghttp2_session_callbacks_set_send_callback(nghttp2_session_callbacks *callbacks, nghttp2_send_callback cb) {
    static void *cache;
    set_send_fn next = (set_send_fn)nghttp2_next("nghttp2_session_callbacks_set_send_callback", &cache);
    int ours = shim_engaged(HERALD_SHIM_COALESCED_WRITES) && adopt_libcurl_callback((void **)&libcurl_send_cb, (void *)cb);
    next(callbacks, ours ? (nghttp2_send_callback)herald_coalesced_collect : cb);
}

int nghttp2_session_send(nghttp2_session *session) {
    static void *cache;
    herald_produce_fn next = (herald_produce_fn)nghttp2_next("nghttp2_session_send", &cache);
    herald_deliver_fn deliver = __atomic_load_n(&libcurl_send_cb, __ATOMIC_ACQUIRE);
    if (!deliver) return next(session);
    return herald_coalesced_send(session, next, deliver);
}

int nghttp2_session_want_write(nghttp2_session *session) {
    static void *cache;
    want_write_fn next = (want_write_fn)nghttp2_next("nghttp2_session_want_write", &cache);
    return next(session) || herald_coalesced_pending(session);
}
