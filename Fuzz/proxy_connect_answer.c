// libFuzzer target: an HTTP proxy's answer to CONNECT (h2_parse_connect_answer, proxy.c), as it
// arrives in pieces. The input is split where its first byte says, and the parser is given the
// growing prefix as h2_proxy_open's loop gives it, checking what the contract promises: DONE only
// with a status of 100–999 and a head ending in the blank line, within the bytes given.
#include "internal.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    size_t step = 1 + data[0] % 64;
    data++, size--;
    // A copy of exactly `size` bytes, so AddressSanitizer sees any read past what arrived.
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    for (size_t got = 0;;) {
        int status = -1;
        size_t head = 0;
        h2_parse p = h2_parse_connect_answer(buf, got, &status, &head);
        if (p == H2_PARSE_DONE) {
            if (status < 100 || status > 999 || head < 4 || head > got || memcmp(buf + head - 4, "\r\n\r\n", 4) != 0) abort();
            break;
        }
        if (p == H2_PARSE_BAD || got == size) break;
        got = got + step < size ? got + step : size;
    }
    free(buf);
    return 0;
}
