// Why this file exists: libcurl 7.88 turns every request into HTTP/1.1 text first and parses
// that text back into HTTP/2 header fields. A header from CURLOPT_HTTPHEADER is formatted into
// the text one byte at a time (Curl_dyn_addf -> dprintf_formatf -> a Curl_dyn_addn per byte)
// and then compared, parsed and copied again. For an APNs request (authorization, apns-id,
// apns-topic, apns-push-type, apns-priority, apns-expiration: ~450 bytes) that is a large share
// of everything herald does per push, all on the connection thread. libcurl has no way to hand
// it header fields ready made.
//
// How: this object defines nghttp2_submit_request, the one call in which libcurl gives nghttp2
// a request's header fields, with the easy handle as the stream's user data. The executable's
// definition comes first in the dynamic linker's lookup, so libcurl's call arrives here (as in
// closed_streams.c). If the easy handle has registered fields, they are added to libcurl's (which
// then hold only :method, :path and :scheme: herald also clears libcurl's Host and Content-Length,
// each one more aprintf per request, and sends :authority and content-length itself; where a
// libcurl makes them anyway, herald's values replace its own) and the call is passed on to
// libnghttp2's own, which "creates copies of all name/value pairs in nva"
// (https://nghttp2.org/documentation/nghttp2_submit_request.html), so the merged array can live
// on the stack. Otherwise the call passes on untouched. `pending` tells the caller the fields
// went out: a request that got an answer with `pending` still set left without them, and herald
// falls back to libcurl's header list.
//
// The body goes the same way. libcurl 7.88 uploads a request body after the request, in a later
// turn of its transfer loop: its own data source answers "deferred" until the upload step hands
// it the bytes, so the DATA frame leaves in a second nghttp2_session_send, and every push runs
// libcurl's upload machinery. A registration with a body replaces libcurl's data source with one
// that reads the body from here (libcurl is told the request has none), so nghttp2 writes the
// DATA frame right behind the HEADERS frame, in the same call (see coalesced_writes.c).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include "RequestHeaders.h"
#include "sessions.h"

typedef __typeof__(&nghttp2_submit_request) submit_fn;

enum { BUCKETS = 1024, ON_STACK = 32, REPLACING_MAX = 8 };

/// Registered fields by easy handle. A mutex, because slots are created and freed on their
/// connection's thread while other connections look up theirs; it is held only to search.
static herald_request_headers *buckets[BUCKETS];
static _Thread_local unsigned long bodies_split;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static size_t bucket(const void *easy) { return ((uintptr_t)easy >> 4) & (BUCKETS - 1); }

void herald_request_headers_register(herald_request_headers *h) {
    pthread_mutex_lock(&lock);
    herald_request_headers **b = &buckets[bucket(h->easy)];
    h->next = *b;
    *b = h;
    pthread_mutex_unlock(&lock);
}

void herald_request_headers_unregister(herald_request_headers *h) {
    pthread_mutex_lock(&lock);
    for (herald_request_headers **p = &buckets[bucket(h->easy)]; *p; p = &(*p)->next) {
        if (*p == h) {
            *p = h->next;
            break;
        }
    }
    h->next = NULL;
    pthread_mutex_unlock(&lock);
    response_headers_forget(h);
}

herald_request_headers *request_headers_lookup(const void *easy) {
    pthread_mutex_lock(&lock);
    herald_request_headers *h = buckets[bucket(easy)];
    while (h && h->easy != easy) h = h->next;
    pthread_mutex_unlock(&lock);
    return h;
}

static submit_fn next_submit(void) {
    static void *cache;
    return (submit_fn)nghttp2_next("nghttp2_submit_request", &cache);
}

static int is_pseudo(const herald_nv *f) { return f->namelen > 0 && f->name[0] == ':'; }

/// Where a field named like `f` sits in `nva`, or -1.
static long find_field(const herald_nv *nva, size_t nvlen, const herald_nv *f) {
    for (size_t i = 0; i < nvlen; i++) {
        if (nva[i].namelen == f->namelen && strncasecmp((const char *)nva[i].name, (const char *)f->name, f->namelen) == 0) return (long)i;
    }
    return -1;
}

/// Appends `h`'s pseudo (`pseudo` 1) or regular fields to `out` at `*n`, except the replacing
/// ones (the first `replacing`) libcurl's fields already name (`found[i]` ≥ 0).
static void add_fields(herald_nv *out, size_t *n, const herald_request_headers *h, int pseudo, const long *found, size_t replacing) {
    for (size_t i = 0; i < h->count; i++) {
        const herald_nv *f = &h->nv[i];
        if (is_pseudo(f) != pseudo) continue;
        if (i < replacing && found[i] >= 0) continue;
        out[(*n)++] = *f;
    }
}

/// Copies the next part of the registered body; `source` is the registration. A stream other
/// than the one the body was submitted with is an older request of the same handle, already
/// answered, whose body was replaced: nghttp2 resets it.
static ssize_t read_body(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length, uint32_t *data_flags,
                         nghttp2_data_source *source, void *user_data) {
    (void)session;
    (void)user_data;
    herald_request_headers *h = source->ptr;
    if (stream_id != h->stream_id || !h->body) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    size_t left = h->body_length - h->body_sent;
    size_t n = left < length ? left : length;
    if (n < left) bodies_split++;
    memcpy(buf, h->body + h->body_sent, n);
    h->body_sent += n;
    if (h->body_sent == h->body_length) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

int32_t nghttp2_submit_request(nghttp2_session *session, const nghttp2_priority_spec *pri_spec, const nghttp2_nv *request_nva,
                               size_t nvlen, const nghttp2_data_provider *data_prd, void *stream_user_data) {
    submit_fn next = next_submit();
    // herald_nv is nghttp2_nv's layout (checked in layouts.c): libcurl's fields and the
    // registration's are merged as one array.
    const herald_nv *nva = (const herald_nv *)request_nva;
    herald_request_headers *h = stream_user_data && shim_engaged(HERALD_SHIM_REQUEST_HEADERS) ? request_headers_lookup(stream_user_data) : NULL;
    if (!h || h->withheld || h->count == 0) return next(session, pri_spec, request_nva, nvlen, data_prd, stream_user_data);
    herald_nv on_stack[ON_STACK];
    size_t total = nvlen + h->count;
    herald_nv *all = total <= ON_STACK ? on_stack : malloc(total * sizeof *all);
    if (!all) return next(session, pri_spec, request_nva, nvlen, data_prd, stream_user_data);
    // Where libcurl's own field of each replacing field's name sits, if it has one.
    long found[REPLACING_MAX];
    size_t replacing = h->replacing < h->count ? h->replacing : h->count;
    if (replacing > REPLACING_MAX) replacing = REPLACING_MAX;
    for (size_t i = 0; i < replacing; i++) found[i] = find_field(nva, nvlen, &h->nv[i]);
    // RFC 9113 §8.3 (https://www.rfc-editor.org/rfc/rfc9113#section-8.3): "All pseudo-header
    // fields MUST appear in a field block before all regular field lines".
    size_t lead = 0;
    while (lead < nvlen && is_pseudo(&nva[lead])) lead++;
    memcpy(all, nva, lead * sizeof *all);
    size_t n = lead;
    add_fields(all, &n, h, 1, found, replacing);
    size_t shift = n - lead;   // libcurl's regular fields come after our pseudo-headers
    memcpy(all + n, nva + lead, (nvlen - lead) * sizeof *all);
    n += nvlen - lead;
    add_fields(all, &n, h, 0, found, replacing);
    for (size_t i = 0; i < replacing; i++) {
        long k = found[i];
        if (k < 0) continue;
        herald_nv *field = &all[(size_t)k < lead ? (size_t)k : (size_t)k + shift];
        field->value = h->nv[i].value;
        field->valuelen = h->nv[i].valuelen;
    }
    // The body is ours to send (libcurl was told there is none), whatever data source libcurl offered.
    nghttp2_data_provider body = { .source = { .ptr = h }, .read_callback = read_body };
    if (h->body) {
        h->body_sent = 0;
        data_prd = &body;
    }
    int32_t stream_id = next(session, pri_spec, (const nghttp2_nv *)all, n, data_prd, stream_user_data);
    if (stream_id > 0) {
        h->pending = 0;
        h->stream_id = stream_id;
        h->answer_apns_id_length = 0;
        h->answer_unique_id_length = 0;
    }
    if (all != on_stack) free(all);
    return stream_id;
}

int herald_request_headers_in_effect(void) {
    if (!shim_engaged(HERALD_SHIM_REQUEST_HEADERS)) return 0;
    void *first = dlsym(RTLD_DEFAULT, "nghttp2_submit_request");
    return first == (void *)&nghttp2_submit_request && next_submit() != NULL;
}

void request_headers_count(herald_shim_counts *counts) { counts->bodies_split = bodies_split; }
