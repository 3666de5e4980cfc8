#ifndef HERALD_CCURL_NGHTTP2_SESSIONS_H
#define HERALD_CCURL_NGHTTP2_SESSIONS_H

// The nghttp2 types and calls this target defines come from nghttp2.h (libnghttp2-dev): each
// definition here has the header's own prototype, so an nghttp2 whose calls changed fails the
// build, and layouts.c checks the layouts herald's public headers mirror for Swift.
#include <nghttp2/nghttp2.h>
#include "CoalescedWrites.h"

// What the files of this target keep per nghttp2 session, forgotten when nghttp2 creates or
// deletes a session at that address (sessions.c): a later session there must not inherit it.
// (coalesced_writes.c's is herald_coalesced_forget, public for tests.)
void closed_streams_forget(void *session);
void response_headers_forget_session(void *session);

// Shared by every file here (sessions.c): libnghttp2's own definition of a function this target
// also defines, looked up once into *cache; and whether `cb`, given to one of nghttp2's
// set-callback calls, is libcurl's: the first one given is kept in *registered as libcurl's (one
// user of nghttp2 in the process, with one callback per hook), any other is left alone.
void *nghttp2_next(const char *name, void **cache);
// Whether the shim `bit` (Shims.h) is engaged.
#include "Shims.h"
int shim_engaged(unsigned bit);

// Each file's share of herald_shim_counts_on_this_thread (sessions.c).
#include "ShimCounts.h"
void closed_streams_count(herald_shim_counts *counts);
void coalesced_writes_count(herald_shim_counts *counts);
void request_headers_count(herald_shim_counts *counts);
void response_headers_count(herald_shim_counts *counts);
int adopt_libcurl_callback(void **registered, void *cb);

// Shared by request_headers.c and response_headers.c: the registration of an easy handle, and
// the notice that one is going away.
#include "RequestHeaders.h"
herald_request_headers *request_headers_lookup(const void *easy);
void response_headers_forget(const herald_request_headers *h);

#endif
