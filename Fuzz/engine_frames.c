// Fuzz target: the engine fed arbitrary server frames. One connection (harness.h) with a few APNs
// requests submitted; the fuzzer's bytes are what the server sends, read by nghttp2 and answered
// through connection.c's callbacks (on_header, on_data, on_frame, on_close, on_not_sent) and its
// failure paths. Checked for every input: each request taken is answered exactly once, the
// answers stay within their bounds, and nothing leaks (with allocations failing too, when the
// input asks for it).
//
// Input: [flags][chunk][fail after][options][server bytes...]
//   flags bits 0-1: 1 to 4 requests submitted before the first byte arrives
//         bit 2:    the server's preface (an empty SETTINGS) goes first, so the input need not carry it
//         bit 3:    one more request is submitted after each chunk (while the connection takes them)
//         bit 4:    the first request is cancelled (h2_cancel) after the first chunk
//         bit 5:    the connection is closed with streams open at the end instead of the server's EOF
//         bit 6:    allocations fail after `fail after` of them (h2_test_fail_allocs) ...
//         bit 7:    ... all of them from then on, instead of only one
//   chunk: the server's bytes arrive in pieces of this size, a turn after each (0: all at once)
//   options bit 0:  each request carries a 70,000-byte body (flow control, writes that wait)
//           bit 1:  the server reads nothing until its EOF: the client's writes back up
//           bit 2:  every request still open is cancelled after the last chunk
//           bit 3:  `fail after` counts in sixteens
#include "harness.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 4) return 0;
    uint8_t flags = data[0], chunk = data[1], fail_after = data[2], options = data[3];
    data += 4;
    size -= 4;
    if (flags & 0x40) h2_test_fail_allocs(options & 0x08 ? fail_after * 16L : fail_after, flags & 0x80 ? -1 : 1);
    fuzz_conn f;
    if (fuzz_open(&f) != 0) {
        h2_test_fail_allocs(0, 0);
        return 0;
    }
    if (options & 0x01) f.body_len = FUZZ_BODY_MAX;
    if (options & 0x02) f.deaf = 1;
    int requests = 1 + (flags & 3);
    for (int i = 0; i < requests; i++) fuzz_submit(&f);
    fuzz_turn(&f);
    if (flags & 0x04) fuzz_feed(&f, fuzz_server_preface, sizeof fuzz_server_preface);
    size_t step = chunk ? chunk : size;
    int first = 1;
    for (size_t off = 0; off < size && !f.ended; off += step) {
        fuzz_feed(&f, data + off, size - off < step ? size - off : step);
        if (first && (flags & 0x10) && f.submitted && !f.ended) {
            h2_cancel(f.c, f.stream_of[0]);
            fuzz_turn(&f);
        }
        first = 0;
        if (flags & 0x08) fuzz_submit(&f);
    }
    if (options & 0x04) {
        for (int i = 0; i < f.submitted && !f.ended; i++) {
            if (!f.answered[i]) h2_cancel(f.c, f.stream_of[i]);
        }
        fuzz_turn(&f);
    }
    if (flags & 0x20) fuzz_abandon(&f);
    else fuzz_finish(&f);
    h2_test_fail_allocs(0, 0);
    return 0;
}
