#ifndef HERALD_CCURL_SHIMS_H
#define HERALD_CCURL_SHIMS_H

// Which of this target's shims are engaged. Until herald_shims_engage is called every shim
// passes libcurl's calls straight to libnghttp2, so a process that never decides sends through
// plain libcurl. HeraldDelivery's LibcurlShims decides once per process, before the first
// connection (a callback libcurl registered while a shim was off stays libcurl's own).
enum {
    HERALD_SHIM_CLOSED_STREAMS = 1,     // closed_streams.c: no RST_STREAM on a stream nghttp2 closed
    HERALD_SHIM_COALESCED_WRITES = 2,   // coalesced_writes.c: one TLS write per nghttp2_session_send
    HERALD_SHIM_REQUEST_HEADERS = 4,    // request_headers.c: APNs fields and body handed to nghttp2
    HERALD_SHIM_RESPONSE_HEADERS = 8,   // response_headers.c: apns-id/apns-unique-id taken from nghttp2
};

void herald_shims_engage(unsigned mask);
unsigned herald_shims_engaged(void);

#endif
