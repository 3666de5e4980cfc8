#ifndef HERALD_CCURL_REQUEST_HEADERS_H
#define HERALD_CCURL_REQUEST_HEADERS_H

#include <stddef.h>
#include <stdint.h>

/// One header field as nghttp2 takes it (the layout of nghttp2_nv; names lowercase).
typedef struct herald_nv {
    uint8_t *name;
    uint8_t *value;
    size_t namelen;
    size_t valuelen;
    uint8_t flags;
} herald_nv;

/// nghttp2's NGHTTP2_NV_FLAG_NO_INDEX (layouts.c checks it): the field goes out as an HPACK literal
/// never indexed, for a value that differs on every request (RFC 7541 §6.2.3).
enum { HERALD_NV_NO_INDEX = 0x01 };

/// The longest apns-id or apns-unique-id value taken from an answer (longer ones go to libcurl).
enum { HERALD_ANSWER_VALUE_MAX = 128 };

/// The APNs header fields of one easy handle's next request, handed to nghttp2 directly instead
/// of through libcurl's header list (see request_headers.c). Owned by the caller, registered for
/// as long as `easy` may send; `nv` and the bytes it points to must stay valid until the next
/// request is prepared.
typedef struct herald_request_headers {
    /// The libcurl easy handle (CURL *) these go out with.
    void *easy;
    herald_nv *nv;
    size_t count;
    /// The first `replacing` fields, at most 8 (:authority, :path, content-length: libcurl makes
    /// them, and another libcurl may make them even when told not to) give their value to
    /// libcurl's field of that name where it has one, and are added where it has none. Fields
    /// named ":…" are placed after libcurl's pseudo-headers.
    size_t replacing;
    /// Set to 1 by the caller when it prepares a request; set to 0 once the fields went out with it.
    int pending;
    /// Tests only: 1 makes the request go out without the fields, as if this file were not in use.
    int withheld;
    /// The request body, sent by nghttp2 from here right behind the HEADERS frame (NULL: libcurl
    /// sends the body it was given). Must stay valid and unchanged until the next request is prepared.
    const uint8_t *body;
    size_t body_length;
    /// Set by request_headers.c: how much of `body` nghttp2 has taken, and the stream it is for.
    size_t body_sent;
    int32_t stream_id;
    /// The answer's apns-id and apns-unique-id (APNs sends the latter in development only), taken
    /// from nghttp2 by response_headers.c before libcurl sees them; lengths 0 until they come.
    uint8_t answer_apns_id[HERALD_ANSWER_VALUE_MAX];
    size_t answer_apns_id_length;
    uint8_t answer_unique_id[HERALD_ANSWER_VALUE_MAX];
    size_t answer_unique_id_length;
    struct herald_request_headers *next;
} herald_request_headers;

void herald_request_headers_register(herald_request_headers *h);
void herald_request_headers_unregister(herald_request_headers *h);

/// 1 when libcurl's requests reach this file's nghttp2_submit_request (libcurl calls nghttp2
/// through the dynamic linker and this executable's definition comes first), else 0: then the
/// fields must go in libcurl's header list.
int herald_request_headers_in_effect(void);

#endif
