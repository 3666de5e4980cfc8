// Why this file exists: of an APNs answer's header fields herald reads two, apns-id and
// apns-unique-id (development only). libcurl 7.88 turns every field nghttp2 decodes back into
// HTTP/1 text ("name: value\r\n", appended a piece at a time, and a timer set to wake the
// transfer), then parses each line again: compared with every header it knows, copied for its
// header API (a malloc each) and handed to the header callback, where herald compares it again.
// For the two fields herald reads, and for any other a server adds (the nginx stand-in adds
// server, date, content-type and content-length), that is work done for nothing.
//
// How: this object defines nghttp2_session_callbacks_set_on_header_callback and registers its
// own header callback in place of libcurl's (the way closed_streams.c wraps the stream-close
// callback). For a stream that is the current request of a registered slot (request_headers.c)
// whose fields went to nghttp2, apns-id and apns-unique-id are copied into the registration and
// every other regular field is dropped; pseudo-headers (:status) and everything on any other
// stream go to libcurl's callback untouched. A value longer than the registration holds also
// goes to libcurl, whose header callback still reads it.
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include "sessions.h"

typedef nghttp2_on_header_callback on_header_fn;
typedef __typeof__(&nghttp2_session_callbacks_set_on_header_callback) set_on_header_fn;
typedef __typeof__(&nghttp2_session_get_stream_user_data) stream_user_data_fn;

static on_header_fn libcurl_on_header;
static _Thread_local unsigned long taken, dropped;

/// The registration last found, by (session, stream): an answer's fields arrive one after another.
/// Cleared when that registration or session goes away (request_headers.c, sessions.c).
static _Thread_local struct { void *session; int32_t stream_id; herald_request_headers *h; } last;

void response_headers_forget(const herald_request_headers *h) {
    if (last.h == h) last.h = NULL, last.session = NULL;
}

void response_headers_forget_session(void *session) {
    if (last.session == session) last.h = NULL, last.session = NULL;
}

static herald_request_headers *registration(nghttp2_session *session, int32_t stream_id) {
    if (last.session == session && last.stream_id == stream_id) {
        // Still this stream's: the slot may have moved on to a new request since.
        return last.h && last.h->stream_id == stream_id ? last.h : NULL;
    }
    static void *cache;
    stream_user_data_fn get = (stream_user_data_fn)nghttp2_next("nghttp2_session_get_stream_user_data", &cache);
    void *easy = get ? get(session, stream_id) : NULL;
    herald_request_headers *h = easy ? request_headers_lookup(easy) : NULL;
    // Only a request that went out with its fields: on the header-list path libcurl reads all.
    if (h && (h->stream_id != stream_id || h->count == 0 || h->withheld || h->pending)) h = NULL;
    last.session = session;
    last.stream_id = stream_id;
    last.h = h;
    return h;
}

static int named(const uint8_t *name, size_t namelen, const char *want, size_t wantlen) {
    return namelen == wantlen && memcmp(name, want, wantlen) == 0;
}

static int taking_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                         const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data) {
    if (namelen == 0 || name[0] == ':' || frame->hd.type != NGHTTP2_HEADERS) goto pass;
    herald_request_headers *h = registration(session, frame->hd.stream_id);
    if (!h) goto pass;
    if (named(name, namelen, "apns-id", 7)) {
        if (valuelen > HERALD_ANSWER_VALUE_MAX) goto pass;
        memcpy(h->answer_apns_id, value, valuelen);
        h->answer_apns_id_length = valuelen;
        taken++;
    } else if (named(name, namelen, "apns-unique-id", 14)) {
        if (valuelen > HERALD_ANSWER_VALUE_MAX) goto pass;
        memcpy(h->answer_unique_id, value, valuelen);
        h->answer_unique_id_length = valuelen;
        taken++;
    } else {
        dropped++;
    }
    return 0;
pass:
    return libcurl_on_header(session, frame, name, namelen, value, valuelen, flags, user_data);
}

void nghttp2_session_callbacks_set_on_header_callback(nghttp2_session_callbacks *callbacks, on_header_fn cb) {
    static void *cache;
    set_on_header_fn next = (set_on_header_fn)nghttp2_next("nghttp2_session_callbacks_set_on_header_callback", &cache);
    int ours = shim_engaged(HERALD_SHIM_RESPONSE_HEADERS) && adopt_libcurl_callback((void **)&libcurl_on_header, (void *)cb);
    next(callbacks, ours ? taking_header : cb);
}

void response_headers_count(herald_shim_counts *counts) {
    counts->answer_fields_taken = taken;
    counts->answer_fields_dropped = dropped;
}
