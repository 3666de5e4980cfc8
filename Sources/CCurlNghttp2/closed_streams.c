// Why this file exists: libcurl 7.88 (Debian 12's) sends an RST_STREAM(STREAM_CLOSED) after
// every HTTP/2 stream that ended normally. Its http2_handle_stream_close() sets the stream's
// `closed` flag back to FALSE ("to prevent infinite loop in readwrite_data"), so the transfer's
// done step believes the stream is still open and submits a reset for it. RFC 9113 §5.1
// (https://www.rfc-editor.org/rfc/rfc9113#section-5.1): "An endpoint MUST NOT send frames other
// than PRIORITY on a closed stream." Some servers answer the flood with ENHANCE_YOUR_CALM (curl
// issue 20239), and every push pays for one more frame on the connection thread. libcurl 8's
// http2.c does not send it, but 7.88 has no option that turns it off, so the frame is dropped
// here, in the one place libcurl hands it to nghttp2.
//
// How: this object defines nghttp2_submit_rst_stream and
// nghttp2_session_callbacks_set_on_stream_close_callback, each passing on to libnghttp2's own
// (dlsym RTLD_NEXT); sessions.c tells it when a session is created or deleted. The executable's
// definitions come first in the dynamic linker's lookup, so libcurl's calls arrive here (the
// linker exports them because libcurl, on the link line, refers to them). The stream-close
// callback libcurl registers is wrapped to note which (session, stream) nghttp2 has closed; a
// reset with STREAM_CLOSED for exactly such a stream is dropped. Every other reset is passed on
// untouched: a stream still open, and a request still queued in nghttp2 (not yet sent, so
// absent from its stream map, which is why "nghttp2 has no such stream" is not the test used),
// whose reset is what cancels it.
//
// Notes about a session are forgotten when nghttp2 creates or deletes a session at that address.
// The notes live in a per-thread table: libcurl runs a multi handle on one thread (herald: one
// long-running loop per connection), and the close callback and the reset both happen inside
// that handle's calls. A note that is overwritten or missing only means the reset goes out, as
// it would without this file.
#define _GNU_SOURCE
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include "sessions.h"

typedef __typeof__(&nghttp2_submit_rst_stream) rst_fn;
typedef nghttp2_on_stream_close_callback close_cb;
typedef __typeof__(&nghttp2_session_callbacks_set_on_stream_close_callback) set_close_fn;

enum { SLOTS = 2048 };

/// Closed streams by (stream id / 2) mod SLOTS: client streams are odd and numbered in order,
/// so streams closed less than SLOTS streams apart never share a slot (a connection has at most
/// 1,000 in flight). Allocated on a thread's first close: only connection threads have one.
struct note { void *session; int32_t stream_id; };
static _Thread_local struct note *closed;

static struct note *slot(int32_t stream_id) { return &closed[((uint32_t)stream_id >> 1) & (SLOTS - 1)]; }

static close_cb libcurl_close_cb;
static _Thread_local unsigned long dropped, passed;

/// Forgets this thread's notes about `session`: a session created later at the same address
/// must not inherit them (a stream libcurl does not reset, such as a connection's first, keeps
/// its note, and the same number on a new connection may be a request still queued in nghttp2,
/// whose reset must go out to cancel it).
void closed_streams_forget(void *session) {
    if (!closed) return;
    for (int i = 0; i < SLOTS; i++) {
        if (closed[i].session == session) {
            closed[i].session = NULL;
            closed[i].stream_id = 0;
        }
    }
}

static int noting_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *user_data) {
    if (!closed) closed = calloc(SLOTS, sizeof *closed);
    if (closed && stream_id > 0) {
        struct note *n = slot(stream_id);
        n->session = session;
        n->stream_id = stream_id;
    }
    return libcurl_close_cb(session, stream_id, error_code, user_data);
}

void nghttp2_session_callbacks_set_on_stream_close_callback(nghttp2_session_callbacks *callbacks, close_cb cb) {
    static void *cache;
    set_close_fn next = (set_close_fn)nghttp2_next("nghttp2_session_callbacks_set_on_stream_close_callback", &cache);
    int ours = shim_engaged(HERALD_SHIM_CLOSED_STREAMS) && adopt_libcurl_callback((void **)&libcurl_close_cb, (void *)cb);
    next(callbacks, ours ? noting_close : cb);
}

int nghttp2_submit_rst_stream(nghttp2_session *session, uint8_t flags, int32_t stream_id, uint32_t error_code) {
    static void *cache;
    rst_fn next = (rst_fn)nghttp2_next("nghttp2_submit_rst_stream", &cache);
    if (error_code == NGHTTP2_STREAM_CLOSED && stream_id > 0 && closed) {
        struct note *n = slot(stream_id);
        if (n->session == session && n->stream_id == stream_id) {
            n->session = NULL;
            n->stream_id = 0;
            dropped++;
            return 0;
        }
    }
    passed++;
    return next(session, flags, stream_id, error_code);
}

void closed_streams_count(herald_shim_counts *counts) {
    counts->resets_dropped = dropped;
    counts->resets_passed = passed;
}
