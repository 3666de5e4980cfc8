// libFuzzer target: what a SOCKS5 proxy sends back (proxy.c): the method selection (RFC 1928 §3),
// the username/password status (RFC 1929 §2) and the reply to CONNECT with its BND.ADDR of each
// ATYP (RFC 1928 §6). The first byte picks the parser; the rest is fed in growing prefixes, read
// as h2_proxy_open reads: never more than `need`, and `need` must grow on MORE and stay within
// the longest reply.
#include "internal.h"

#include <stdlib.h>
#include <string.h>

enum { LONGEST_REPLY = 4 + 1 + 255 + 2 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    int which = data[0] % 3;
    data++, size--;
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf) return 0;
    memcpy(buf, data, size);
    for (size_t got = 0;;) {
        size_t need = 0;
        h2_parse p;
        uint8_t byte = 0;
        h2_socks5_reply reply;
        memset(&reply, 0x5a, sizeof reply);
        switch (which) {
        case 0: p = h2_socks5_parse_method(buf, got, &byte, &need); break;
        case 1: p = h2_socks5_parse_auth(buf, got, &byte, &need); break;
        default: p = h2_socks5_parse_reply(buf, got, &reply, &need); break;
        }
        if (p == H2_PARSE_BAD) break;
        if (need < 2 || need > LONGEST_REPLY) abort();
        if (p == H2_PARSE_DONE) {
            if (need > got) abort();
            if (which == 2) {
                if (strnlen(reply.bound, sizeof reply.bound) == sizeof reply.bound) abort();
                if (strlen(h2_socks5_reply_text(reply.reply)) == 0) abort();
            }
            break;
        }
        if (need <= got) abort();
        if (got == size) break;
        // The I/O reads at most need - got bytes at a time; here one at a time and then all at once.
        got = need <= size ? (got + 1 == need ? need : got + 1) : size;
    }
    free(buf);
    return 0;
}
