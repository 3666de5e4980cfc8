// Why this file exists: closed_streams.c, coalesced_writes.c and response_headers.c keep notes
// per nghttp2 session, keyed by its address, which nghttp2 reuses for later sessions. This
// object defines the two calls that begin and end a session in libcurl
// (nghttp2_session_client_new2 and nghttp2_session_del), tells those files, and passes each call
// on to libnghttp2's own (dlsym RTLD_NEXT; see closed_streams.c for why libcurl's calls arrive here).
// It also holds the two helpers every file here uses for that, and gathers their counts (sessions.h).
#define _GNU_SOURCE
#include <dlfcn.h>
#include "sessions.h"

typedef __typeof__(&nghttp2_session_client_new2) client_new2_fn;
typedef __typeof__(&nghttp2_session_del) session_del_fn;

static unsigned engaged;

void herald_shims_engage(unsigned mask) { __atomic_store_n(&engaged, mask, __ATOMIC_RELEASE); }
unsigned herald_shims_engaged(void) { return __atomic_load_n(&engaged, __ATOMIC_ACQUIRE); }
int shim_engaged(unsigned bit) { return (herald_shims_engaged() & bit) != 0; }

void *nghttp2_next(const char *name, void **cache) {
    void *f = __atomic_load_n(cache, __ATOMIC_RELAXED);
    if (!f) {
        f = dlsym(RTLD_NEXT, name);
        __atomic_store_n(cache, f, __ATOMIC_RELAXED);
    }
    return f;
}

int adopt_libcurl_callback(void **registered, void *cb) {
    if (!cb) return 0;
    void *expected = NULL;
    if (__atomic_compare_exchange_n(registered, &expected, cb, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return 1;
    return expected == cb;
}

void herald_shim_counts_on_this_thread(herald_shim_counts *counts) {
    closed_streams_count(counts);
    coalesced_writes_count(counts);
    request_headers_count(counts);
    response_headers_count(counts);
}

static void forget(void *session) {
    closed_streams_forget(session);
    herald_coalesced_forget(session);
    response_headers_forget_session(session);
}

int nghttp2_session_client_new2(nghttp2_session **session, const nghttp2_session_callbacks *callbacks, void *user_data,
                                const nghttp2_option *option) {
    static void *cache;
    client_new2_fn next = (client_new2_fn)nghttp2_next("nghttp2_session_client_new2", &cache);
    int rv = next(session, callbacks, user_data, option);
    if (rv == 0 && session) forget(*session);
    return rv;
}

void nghttp2_session_del(nghttp2_session *session) {
    static void *cache;
    session_del_fn next = (session_del_fn)nghttp2_next("nghttp2_session_del", &cache);
    forget(session);
    next(session);
}
