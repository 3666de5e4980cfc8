// Why this file exists: closed_streams.c, coalesced_writes.c and response_headers.c keep notes
// per nghttp2 session, keyed by its address, which nghttp2 reuses for later sessions. This
// object defines the two calls that begin and end a session in libcurl
// (nghttp2_session_client_new2 and nghttp2_session_del), tells those files, and passes each call
// on to libnghttp2's own (dlsym RTLD_NEXT; see closed_streams.c for why libcurl's calls arrive here).
#define _GNU_SOURCE
#include <dlfcn.h>
#include "sessions.h"

typedef int (*client_new2_fn)(void **session, const void *callbacks, void *user_data, const void *option);
typedef void (*session_del_fn)(void *session);

static void forget(void *session) {
    closed_streams_forget(session);
    herald_coalesced_forget(session);
    response_headers_forget_session(session);
}

int nghttp2_session_client_new2(void **session, const void *callbacks, void *user_data, const void *option) {
    client_new2_fn next = (client_new2_fn)dlsym(RTLD_NEXT, "nghttp2_session_client_new2");
    int rv = next(session, callbacks, user_data, option);
    if (rv == 0 && session) forget(*session);
    return rv;
}

void nghttp2_session_del(void *session) {
    session_del_fn next = (session_del_fn)dlsym(RTLD_NEXT, "nghttp2_session_del");
    forget(session);
    next(session);
}
