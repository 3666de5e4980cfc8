#ifndef HERALD_CCURL_NGHTTP2_SESSIONS_H
#define HERALD_CCURL_NGHTTP2_SESSIONS_H

#include "CoalescedWrites.h"

// What the files of this target keep per nghttp2 session, forgotten when nghttp2 creates or
// deletes a session at that address (sessions.c): a later session there must not inherit it.
// (coalesced_writes.c's is herald_coalesced_forget, public for tests.)
void closed_streams_forget(void *session);

#endif
