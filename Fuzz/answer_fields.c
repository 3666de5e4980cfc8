// Fuzz target: an answer's header fields and body as the engine collects them (connection.c's
// on_header and on_data: :status, apns-id, apns-unique-id, the body up to 512 bytes). The fuzzer
// chooses the fields; nghttp2's own HPACK deflater encodes them (as a server's would), and the
// answer reaches the engine through a real connection (harness.h), so what is checked is what
// Nghttp2Worker reads from h2_answers.
//
// Input: [flags][status u16][count][fields...][body...]
//   a field: [selector < 0x80][length][value] names a known field (`known` below, near misses
//   included); [selector >= 0x80][name length][name][value length][value] any other.
//   flags 0x01: an interim 100 answer first          0x02: the body in two DATA frames
//         0x04: trailers after the body              0x08: raw: names, values and :status as given
//         0x10: padded frames                        0x20: fields never indexed (HPACK)
//         0x40: the same answer to a second request  0x80: the deflater's table size set to 0
//   count: the number of fields (low 5 bits, up to 16); bit 0x80: the server answers before it has
//   read the request, whose body is 70,000 bytes (more than a stream may send before a WINDOW_UPDATE),
//   and goes away: an answer that arrived whole is still the answer (RFC 9113 §8.1).
// Outside raw mode the fields are made valid (lower-case names, visible ASCII values) and
// :status is 200 + status % 400, so the answer must arrive whole: the status sent, the last
// apns-id and apns-unique-id of at most 48 bytes, the body's first 512 bytes. In raw mode
// nghttp2 may refuse the fields; whatever it passes must still be bounded and come from the input.
#include "harness.h"

#include <nghttp2/nghttp2.h>

enum { MAX_FIELDS_IN = 16, BODY_MAX_IN = 16000, ANSWER_BODY_MAX = 512 };

static const char *const known[] = { "apns-id", "apns-unique-id", "content-type", "apns-i", "apns-unique-idd", ":status", "content-length", "date" };
// Outside raw mode, the names a valid answer cannot carry as regular fields.
static const char *const known_valid[] = { "apns-id", "apns-unique-id", "content-type", "apns-i", "apns-unique-idd", "x-status", "x-content-length", "date" };

typedef struct {
    uint8_t name[258], value[256];
    size_t name_len, value_len;
} field;

typedef struct {
    int raw;
    int status;
    field fields[MAX_FIELDS_IN];
    size_t count;
    const uint8_t *body;
    size_t body_len;
    int answers;
} expected;

static uint8_t visible(uint8_t b) { return b >= 0x21 && b <= 0x7e ? b : (uint8_t)(0x21 + b % 94); }
static uint8_t name_char(uint8_t b) {
    if ((b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || b == '-') return b;
    return (uint8_t)('a' + b % 26);
}

static int is(const field *f, const char *name) {
    return f->name_len == strlen(name) && memcmp(f->name, name, f->name_len) == 0;
}

// The value on_header keeps for `name`: the last one that fits (48 bytes), or none.
static const field *last_fitting(const expected *e, const char *name) {
    const field *found = NULL;
    for (size_t i = 0; i < e->count; i++) {
        if (is(&e->fields[i], name) && e->fields[i].value_len <= 48) found = &e->fields[i];
    }
    return found;
}

static int sent_as(const expected *e, const char *name, const char *value, size_t len) {
    for (size_t i = 0; i < e->count; i++) {
        if (is(&e->fields[i], name) && e->fields[i].value_len == len && memcmp(e->fields[i].value, value, len) == 0) return 1;
    }
    return 0;
}

static void check_answer(const h2_answer *a, void *ctx) {
    expected *e = ctx;
    e->answers++;
    size_t body_want = e->body_len < ANSWER_BODY_MAX ? e->body_len : ANSWER_BODY_MAX;
    if (e->raw) {
        if (!a->complete) return;
        if (a->apns_id_len) FUZZ_CHECK(sent_as(e, "apns-id", a->apns_id, a->apns_id_len));
        if (a->unique_id_len) FUZZ_CHECK(sent_as(e, "apns-unique-id", a->unique_id, a->unique_id_len));
        FUZZ_CHECK(a->body_len <= body_want && (a->body_len == 0 || memcmp(a->body, e->body, a->body_len) == 0));
        return;
    }
    FUZZ_CHECK(a->complete && !a->lost && !a->not_sent && a->reset_code == 0);
    FUZZ_CHECK(a->status == e->status);
    const field *id = last_fitting(e, "apns-id"), *unique = last_fitting(e, "apns-unique-id");
    FUZZ_CHECK(a->apns_id_len == (id ? id->value_len : 0));
    if (id) FUZZ_CHECK(memcmp(a->apns_id, id->value, id->value_len) == 0);
    FUZZ_CHECK(a->unique_id_len == (unique ? unique->value_len : 0));
    if (unique) FUZZ_CHECK(memcmp(a->unique_id, unique->value, unique->value_len) == 0);
    FUZZ_CHECK(a->body_len == body_want);
    if (body_want) FUZZ_CHECK(memcmp(a->body, e->body, body_want) == 0);
}

// Reads the input's fields; 0 when it ends before its first field.
static int parse(expected *e, uint8_t flags, const uint8_t *data, size_t size) {
    if (size < 4) return 0;
    e->raw = (flags & 0x08) != 0;
    unsigned code = (unsigned)data[1] << 8 | data[2];
    e->status = e->raw ? (int)(code % 1000) : (int)(200 + code % 400);
    size_t want = (data[3] & 0x1f) % (MAX_FIELDS_IN + 1), off = 4;
    while (e->count < want && off + 2 <= size) {
        field *f = &e->fields[e->count];
        uint8_t sel = data[off++];
        if (sel < 0x80) {
            const char *name = (e->raw ? known : known_valid)[sel % (sizeof known / sizeof known[0])];
            f->name_len = strlen(name);
            memcpy(f->name, name, f->name_len);
        } else {
            size_t nl = data[off++];
            if (off + nl + 1 > size) break;
            size_t prefix = 0;
            if (!e->raw) { memcpy(f->name, "x-", 2); prefix = 2; }
            for (size_t i = 0; i < nl; i++) f->name[prefix + i] = e->raw ? data[off + i] : name_char(data[off + i]);
            f->name_len = prefix + nl;
            off += nl;
        }
        size_t vl = data[off++];
        if (off + vl > size) break;
        for (size_t i = 0; i < vl; i++) f->value[i] = e->raw ? data[off + i] : visible(data[off + i]);
        f->value_len = vl;
        off += vl;
        e->count++;
    }
    e->body = data + off;
    e->body_len = size - off < BODY_MAX_IN ? size - off : BODY_MAX_IN;
    // A 204 or 304 answer has no content (RFC 9110 §15.3.5, §15.4.5): nghttp2 resets a stream
    // whose 204 or 304 carries DATA, so outside raw mode such an answer comes without a body.
    if (!e->raw && (e->status == 204 || e->status == 304)) e->body_len = 0;
    return 1;
}

static void put_frame_header(uint8_t *p, size_t len, uint8_t type, uint8_t flags, int32_t stream) {
    p[0] = (uint8_t)(len >> 16); p[1] = (uint8_t)(len >> 8); p[2] = (uint8_t)len;
    p[3] = type; p[4] = flags;
    p[5] = (uint8_t)(stream >> 24 & 0x7f); p[6] = (uint8_t)(stream >> 16); p[7] = (uint8_t)(stream >> 8); p[8] = (uint8_t)stream;
}

// One frame (padded when asked: 3 bytes) to the server's end.
static void send_frame(fuzz_conn *f, uint8_t type, uint8_t flags, int32_t stream, const uint8_t *payload, size_t len, int padded) {
    uint8_t buf[9 + 1 + 16384 + 3];
    size_t pad = padded && (type == NGHTTP2_DATA || type == NGHTTP2_HEADERS) ? 3 : 0;
    size_t total = len + (pad ? 1 + pad : 0);
    put_frame_header(buf, total, type, (uint8_t)(flags | (pad ? NGHTTP2_FLAG_PADDED : 0)), stream);
    size_t off = 9;
    if (pad) buf[off++] = (uint8_t)pad;
    if (len) memcpy(buf + off, payload, len);
    off += len;
    memset(buf + off, 0, pad);
    fuzz_feed(f, buf, off + pad);
}

// A header block from nghttp2's deflater: HEADERS, and CONTINUATION past 16,384 bytes.
static void send_headers(fuzz_conn *f, nghttp2_hd_deflater *deflater, int32_t stream, const nghttp2_nv *nv, size_t n,
                         int end_stream, int padded) {
    size_t bound = nghttp2_hd_deflate_bound(deflater, nv, n);
    uint8_t *block = malloc(bound);
    FUZZ_CHECK(block);
    ssize_t len = nghttp2_hd_deflate_hd(deflater, block, bound, nv, n);
    FUZZ_CHECK(len >= 0);
    size_t off = 0;
    int first = 1;
    do {
        size_t take = (size_t)len - off < 16000 ? (size_t)len - off : 16000;
        int last = off + take == (size_t)len;
        uint8_t flags = (uint8_t)((last ? NGHTTP2_FLAG_END_HEADERS : 0) | (first && end_stream ? NGHTTP2_FLAG_END_STREAM : 0));
        send_frame(f, first ? NGHTTP2_HEADERS : NGHTTP2_CONTINUATION, flags, stream, block + off, take, first && padded);
        off += take;
        first = 0;
    } while (off < (size_t)len);
    free(block);
}

static void send_answer(fuzz_conn *f, nghttp2_hd_deflater *deflater, const expected *e, uint8_t flags, int32_t stream) {
    uint8_t nv_flags = flags & 0x20 ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE;
    int padded = (flags & 0x10) != 0;
    if (flags & 0x01) {
        nghttp2_nv interim = { (uint8_t *)":status", (uint8_t *)"100", 7, 3, nv_flags };
        send_headers(f, deflater, stream, &interim, 1, 0, padded);
    }
    nghttp2_nv nv[MAX_FIELDS_IN + 1];
    size_t n = 0;
    char status[4];
    if (!e->raw) {
        snprintf(status, sizeof status, "%03d", e->status);
        nv[n++] = (nghttp2_nv){ (uint8_t *)":status", (uint8_t *)status, 7, 3, nv_flags };
    }
    for (size_t i = 0; i < e->count; i++) {
        nv[n++] = (nghttp2_nv){ (uint8_t *)e->fields[i].name, (uint8_t *)e->fields[i].value, e->fields[i].name_len, e->fields[i].value_len, nv_flags };
    }
    int trailers = (flags & 0x04) != 0;
    send_headers(f, deflater, stream, nv, n, e->body_len == 0 && !trailers, padded);
    if (e->body_len) {
        size_t half = flags & 0x02 ? e->body_len / 2 : e->body_len;
        if (half) send_frame(f, NGHTTP2_DATA, 0, stream, e->body, half, padded);
        send_frame(f, NGHTTP2_DATA, trailers ? 0 : NGHTTP2_FLAG_END_STREAM, stream, e->body + half, e->body_len - half, padded);
    }
    if (trailers) {
        nghttp2_nv trailer = { (uint8_t *)"x-trailer", (uint8_t *)"1", 9, 1, nv_flags };
        send_headers(f, deflater, stream, &trailer, 1, 1, padded);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static expected e;
    memset(&e, 0, sizeof e);
    if (size < 1 || !parse(&e, data[0], data, size)) return 0;
    uint8_t flags = data[0];
    fuzz_conn f;
    if (fuzz_open(&f) != 0) abort();
    f.on_answer = check_answer;
    f.ctx = &e;
    if (data[3] & 0x80) {
        f.body_len = FUZZ_BODY_MAX;
        f.deaf = 1;
    }
    int requests = flags & 0x40 ? 2 : 1;
    for (int i = 0; i < requests; i++) FUZZ_CHECK(fuzz_submit(&f) > 0);
    fuzz_turn(&f);
    fuzz_feed(&f, fuzz_server_preface, sizeof fuzz_server_preface);
    nghttp2_hd_deflater *deflater;
    FUZZ_CHECK(nghttp2_hd_deflate_new(&deflater, 4096) == 0);
    if (flags & 0x80) FUZZ_CHECK(nghttp2_hd_deflate_change_table_size(deflater, 0) == 0);
    for (int i = 0; i < requests; i++) send_answer(&f, deflater, &e, flags, f.stream_of[i]);
    nghttp2_hd_deflate_del(deflater);
    fuzz_finish(&f);
    // Outside raw mode every answer arrived before the server went away.
    if (!e.raw) FUZZ_CHECK(e.answers == requests);
    return 0;
}
