#ifndef HERALD_CCURL_NGHTTP2_SESSIONS_H
#define HERALD_CCURL_NGHTTP2_SESSIONS_H

#include "CoalescedWrites.h"

// What the files of this target keep per nghttp2 session, forgotten when nghttp2 creates or
// deletes a session at that address (sessions.c): a later session there must not inherit it.
// (coalesced_writes.c's is herald_coalesced_forget, public for tests.)
void closed_streams_forget(void *session);
void response_headers_forget_session(void *session);

// Shared by request_headers.c and response_headers.c: the registration of an easy handle, and
// the notice that one is going away.
#include "RequestHeaders.h"
herald_request_headers *request_headers_lookup(const void *easy);
void response_headers_forget(const herald_request_headers *h);

#endif
