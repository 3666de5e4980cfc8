// The tunnel a connection's TLS runs inside when herald reaches APNs through a proxy (h2_connect):
// HTTP CONNECT (RFC 9110 §9.3.6) or SOCKS5 (RFC 1928, with RFC 1929 username/password). Either
// way the proxy only relays bytes: TLS, the server's certificate check and the provider token stay
// end to end between herald and APNs.
//
// The parsers of the proxy's bytes (h2_parse_connect_answer, h2_socks5_parse_*) are pure functions
// apart from the socket I/O, so libFuzzer can drive them (Fuzz/proxy_connect_answer.c,
// Fuzz/proxy_socks_replies.c). The I/O never reads past the proxy's answer: the bytes after it are
// the server's TLS, which OpenSSL reads from the socket itself.
#define _GNU_SOURCE
#include "internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

// ---------- parsers ----------

h2_parse h2_parse_connect_answer(const uint8_t *buf, size_t len, int *status, size_t *head_len) {
    static const char v0[] = "HTTP/1.0 ", v1[] = "HTTP/1.1 ";
    enum { VERSION_LEN = sizeof v0 - 1 };
    if (len == 0) return H2_PARSE_MORE;
    // The status line is judged as soon as its first bytes are in: a proxy that answers with
    // something else (a SOCKS server, a TLS alert) is told apart without waiting for a blank line.
    size_t head = len < VERSION_LEN ? len : VERSION_LEN;
    if (memcmp(buf, v0, head) != 0 && memcmp(buf, v1, head) != 0) return H2_PARSE_BAD;
    size_t end = 0;
    for (size_t i = 0; i + 4 <= len; i++) {
        if (buf[i] == '\r' && buf[i + 1] == '\n' && buf[i + 2] == '\r' && buf[i + 3] == '\n') { end = i + 4; break; }
    }
    if (!end) return H2_PARSE_MORE;
    // "HTTP/1.1 407 Proxy Authentication Required\r\n": three digits, then a space or the line's end.
    if (end < VERSION_LEN + 3 + 2) return H2_PARSE_BAD;
    const uint8_t *d = buf + VERSION_LEN;
    for (int i = 0; i < 3; i++) {
        if (d[i] < '0' || d[i] > '9') return H2_PARSE_BAD;
    }
    if (d[3] != ' ' && d[3] != '\r') return H2_PARSE_BAD;
    int s = (d[0] - '0') * 100 + (d[1] - '0') * 10 + (d[2] - '0');
    if (s < 100) return H2_PARSE_BAD;
    *status = s;
    *head_len = end;
    return H2_PARSE_DONE;
}

h2_parse h2_socks5_parse_method(const uint8_t *buf, size_t len, uint8_t *method, size_t *need) {
    *need = 2;
    if (len >= 1 && buf[0] != 5) return H2_PARSE_BAD;
    if (len < 2) return H2_PARSE_MORE;
    *method = buf[1];
    return H2_PARSE_DONE;
}

h2_parse h2_socks5_parse_auth(const uint8_t *buf, size_t len, uint8_t *status, size_t *need) {
    *need = 2;
    // RFC 1929's VER is 1; some servers answer with the SOCKS version (5) instead, and curl, too,
    // reads only STATUS. Anything else is not an answer to the subnegotiation.
    if (len >= 1 && buf[0] != 1 && buf[0] != 5) return H2_PARSE_BAD;
    if (len < 2) return H2_PARSE_MORE;
    *status = buf[1];
    return H2_PARSE_DONE;
}

h2_parse h2_socks5_parse_reply(const uint8_t *buf, size_t len, h2_socks5_reply *reply, size_t *need) {
    // VER REP RSV ATYP, and for a name its length byte: then the reply's full length is known.
    *need = 5;
    if (len >= 1 && buf[0] != 5) return H2_PARSE_BAD;
    if (len >= 2) reply->reply = buf[1];
    if (len < 4) return H2_PARSE_MORE;
    // RSV is not checked: RFC 1928 fixes it at 0 and gives it no meaning, and curl ignores it too.
    reply->atyp = buf[3];
    size_t addr_len;
    switch (buf[3]) {
    case 1: addr_len = 4; break;
    case 4: addr_len = 16; break;
    case 3:
        if (len < 5) return H2_PARSE_MORE;
        addr_len = 1 + (size_t)buf[4];
        break;
    default: return H2_PARSE_BAD;
    }
    *need = 4 + addr_len + 2;
    if (len < *need) return H2_PARSE_MORE;
    const uint8_t *addr = buf + 4;
    if (buf[3] == 3) {
        size_t n = addr_len - 1;
        for (size_t i = 0; i < n; i++) reply->bound[i] = addr[1 + i] >= 0x20 && addr[1 + i] < 0x7f ? (char)addr[1 + i] : '?';
        reply->bound[n] = 0;
    } else if (!inet_ntop(buf[3] == 1 ? AF_INET : AF_INET6, addr, reply->bound, sizeof reply->bound)) {
        reply->bound[0] = 0;
    }
    reply->bound_port = (uint16_t)(addr[addr_len] << 8 | addr[addr_len + 1]);
    return H2_PARSE_DONE;
}

const char *h2_socks5_reply_text(uint8_t reply) {
    // RFC 1928 §6 (https://www.rfc-editor.org/rfc/rfc1928#section-6).
    static const char *const words[] = {
        "succeeded", "general SOCKS server failure", "connection not allowed by ruleset", "network unreachable",
        "host unreachable", "connection refused", "TTL expired", "command not supported", "address type not supported",
    };
    return reply < sizeof words / sizeof words[0] ? words[reply] : "unassigned reply code";
}

// ---------- I/O ----------

// Where a failure is reported: the caller's kind and text.
typedef struct {
    h2_error_kind *kind;
    char *err;
    size_t errlen;
} report;

__attribute__((format(printf, 3, 4)))
static int failed(report *r, h2_error_kind kind, const char *fmt, ...) {
    *r->kind = kind;
    if (r->err && r->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(r->err, r->errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}


// The socket is non-blocking (h2_connect's tcp_connect): each call waits for it up to the deadline.
static int send_all(int fd, const uint8_t *buf, size_t len, int64_t deadline, report *r) {
    for (size_t sent = 0; sent < len;) {
        ssize_t n = send(fd, buf + sent, len - sent, MSG_NOSIGNAL);
        if (n > 0) { sent += (size_t)n; continue; }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int w = h2_wait_fd(fd, POLLOUT, deadline);
            if (w > 0) continue;
            return failed(r, H2_ERR_CONNECT, "proxy: %s", w == 0 ? "timed out" : strerror(errno));
        }
        return failed(r, H2_ERR_CONNECT, "proxy: %s", strerror(errno));
    }
    return 0;
}

// One read of at most `cap` bytes: how many arrived, or -1 (the proxy closed, timed out, failed).
// `awaiting` names what the proxy owes, for the text.
static ssize_t recv_once(int fd, uint8_t *buf, size_t cap, int64_t deadline, const char *awaiting, report *r) {
    for (;;) {
        ssize_t n = recv(fd, buf, cap, 0);
        if (n > 0) return n;
        if (n == 0) return failed(r, H2_ERR_CONNECT, "proxy: it closed the connection before answering %s", awaiting);
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int w = h2_wait_fd(fd, POLLIN, deadline);
            if (w > 0) continue;
            if (w == 0) return failed(r, H2_ERR_CONNECT, "proxy: it did not answer %s in time", awaiting);
        }
        return failed(r, H2_ERR_CONNECT, "proxy: %s", strerror(errno));
    }
}

// ---------- HTTP CONNECT ----------

// "CONNECT host:port", then the proxy's answer up to its blank line. A 2xx opens the tunnel, and
// everything after is the server's TLS; anything else is the proxy's refusal (407 wants
// credentials, 403 forbids the target). No byte follows the answer before our ClientHello, so one
// read past it would be a broken proxy.
static int http_connect(int fd, const h2_proxy *proxy, const char *host, const char *port, int64_t deadline, report *r) {
    char req[2048];
    const char *open_b = strchr(host, ':') ? "[" : "", *close_b = strchr(host, ':') ? "]" : "";
    int n = snprintf(req, sizeof req, "CONNECT %s%s%s:%s HTTP/1.1\r\nHost: %s%s%s:%s\r\n%s%s%sProxy-Connection: Keep-Alive\r\n\r\n",
                     open_b, host, close_b, port, open_b, host, close_b, port,
                     proxy->authorization ? "Proxy-Authorization: " : "", proxy->authorization ? proxy->authorization : "",
                     proxy->authorization ? "\r\n" : "");
    if (n < 0 || (size_t)n >= sizeof req) {
        explicit_bzero(req, sizeof req);
        return failed(r, H2_ERR_PROXY, "the proxy request is too long");
    }
    int sent = send_all(fd, (const uint8_t *)req, (size_t)n, deadline, r);
    explicit_bzero(req, sizeof req);
    if (sent != 0) return -1;
    uint8_t answer[8192];
    size_t got = 0, head = 0;
    int status = 0;
    for (;;) {
        h2_parse p = h2_parse_connect_answer(answer, got, &status, &head);
        if (p == H2_PARSE_DONE) break;
        if (p == H2_PARSE_BAD) return failed(r, H2_ERR_PROXY, "the proxy's answer to CONNECT is not HTTP/1.x");
        if (got == sizeof answer) return failed(r, H2_ERR_CONNECT, "proxy: its answer to CONNECT is too long");
        ssize_t k = recv_once(fd, answer + got, sizeof answer - got, deadline, "CONNECT", r);
        if (k < 0) return -1;
        got += (size_t)k;
    }
    if (status < 200 || status > 299) {
        // 407 is the one answer the operator fixes with credentials (RFC 9110 §15.5.8).
        return failed(r, status == 407 ? H2_ERR_PROXY_AUTH : H2_ERR_PROXY, "the proxy refused to open a tunnel (HTTP %d)", status);
    }
    if (head != got) return failed(r, H2_ERR_PROXY, "the proxy sent bytes after its answer to CONNECT");
    return 0;
}

// ---------- SOCKS5 ----------

enum {
    SOCKS_NO_AUTH = 0x00,
    SOCKS_USER_PASSWORD = 0x02,
    SOCKS_NO_ACCEPTABLE = 0xff,
    SOCKS_REPLY_MAX = 4 + 1 + 255 + 2,
};

// Reads until `buf` holds `*got` == what `parse` needs: never a byte more, since the server's TLS
// follows the proxy's last reply. `parse` is one of the h2_socks5_parse_* adapters below.
typedef h2_parse (*socks_parser)(const uint8_t *buf, size_t len, void *out, size_t *need);

static h2_parse parse_method(const uint8_t *b, size_t n, void *out, size_t *need) { return h2_socks5_parse_method(b, n, out, need); }
static h2_parse parse_auth(const uint8_t *b, size_t n, void *out, size_t *need) { return h2_socks5_parse_auth(b, n, out, need); }
static h2_parse parse_reply(const uint8_t *b, size_t n, void *out, size_t *need) { return h2_socks5_parse_reply(b, n, out, need); }

// 1: parsed; 0: the bytes were not SOCKS5; -1: the I/O failed (reported). `*got` is what arrived.
static int socks_read(int fd, uint8_t *buf, size_t *got, socks_parser parse, void *out, int64_t deadline,
                      const char *awaiting, report *r) {
    *got = 0;
    for (;;) {
        size_t need = 0;
        h2_parse p = parse(buf, *got, out, &need);
        if (p == H2_PARSE_DONE) return 1;
        if (p == H2_PARSE_BAD) return 0;
        // need > *got always on MORE, and never past SOCKS_REPLY_MAX (the longest reply).
        ssize_t k = recv_once(fd, buf + *got, need - *got, deadline, awaiting, r);
        if (k < 0) return -1;
        *got += (size_t)k;
    }
}

static int not_socks(report *r, const uint8_t *buf) {
    // An HTTP proxy answers the greeting with "HTTP/1.1 400 …": say so, it is the likely mistake.
    return failed(r, H2_ERR_PROXY, "the proxy did not answer as a SOCKS5 proxy (first byte 0x%02x)%s", buf[0],
                  buf[0] == 'H' ? ": it looks like an HTTP proxy, use http://" : "");
}

// RFC 1929 §2: VER 1, ULEN, UNAME (1–255 bytes), PLEN, PASSWD. The request is wiped once sent.
static int socks5_authenticate(int fd, const h2_proxy *proxy, int64_t deadline, report *r) {
    size_t ulen = strlen(proxy->user), plen = proxy->password ? strlen(proxy->password) : 0;
    if (ulen < 1 || ulen > 255 || plen > 255) {
        return failed(r, H2_ERR_PROXY_AUTH, "the SOCKS5 user name and password must each be at most 255 bytes (RFC 1929), and the user name not empty");
    }
    uint8_t req[3 + 255 + 255];
    size_t n = 0;
    req[n++] = 1;
    req[n++] = (uint8_t)ulen;
    memcpy(req + n, proxy->user, ulen);
    n += ulen;
    req[n++] = (uint8_t)plen;
    if (plen) memcpy(req + n, proxy->password, plen);
    n += plen;
    int sent = send_all(fd, req, n, deadline, r);
    explicit_bzero(req, sizeof req);
    if (sent != 0) return -1;
    uint8_t buf[2];
    size_t got;
    uint8_t status = 0xff;
    int rd = socks_read(fd, buf, &got, parse_auth, &status, deadline, "the SOCKS5 username and password", r);
    if (rd < 0) return -1;
    if (rd == 0) return failed(r, H2_ERR_PROXY, "the SOCKS5 proxy's answer to the username and password is not RFC 1929's (version 0x%02x)", buf[0]);
    if (status != 0) return failed(r, H2_ERR_PROXY_AUTH, "the SOCKS5 proxy refused the username and password (RFC 1929 status 0x%02x)", status);
    return 0;
}

// The CONNECT request's DST.ADDR (RFC 1928 §4-5): an IP address as itself (ATYP 1 or 4); a name,
// with socks5h, as the name (ATYP 3) for the proxy to resolve, and with socks5 resolved here first.
// Returns the bytes written at `out` (ATYP included), or -1 (reported).
static int socks5_address(const h2_proxy *proxy, const char *host, uint8_t *out, report *r) {
    if (inet_pton(AF_INET, host, out + 1) == 1) { out[0] = 1; return 1 + 4; }
    if (inet_pton(AF_INET6, host, out + 1) == 1) { out[0] = 4; return 1 + 16; }
    if (proxy->kind == H2_PROXY_SOCKS5H) {
        size_t len = strlen(host);
        if (len < 1 || len > 255) return failed(r, H2_ERR_RESOLVE, "the host name is too long for SOCKS5 (255 bytes at most)");
        out[0] = 3;
        out[1] = (uint8_t)len;
        memcpy(out + 2, host, len);
        return (int)(2 + len);
    }
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0) return failed(r, H2_ERR_RESOLVE, "could not resolve the host: %s (socks5:// resolves it here; socks5h:// lets the proxy)", gai_strerror(rc));
    int n = -1;
    for (struct addrinfo *ai = res; ai && n < 0; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET) {
            out[0] = 1;
            memcpy(out + 1, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, 4);
            n = 1 + 4;
        } else if (ai->ai_family == AF_INET6) {
            out[0] = 4;
            memcpy(out + 1, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, 16);
            n = 1 + 16;
        }
    }
    freeaddrinfo(res);
    if (n < 0) return failed(r, H2_ERR_RESOLVE, "could not resolve the host: no IPv4 or IPv6 address");
    return n;
}

// RFC 1928: the greeting offers one method (username/password when there are credentials, else
// none: offering "none" beside credentials would let a proxy skip them silently); then RFC 1929's
// subnegotiation if chosen; then CONNECT and the reply.
static int socks5_connect(int fd, const h2_proxy *proxy, const char *host, const char *port, int64_t deadline, report *r) {
    char *end = NULL;
    long port_number = strtol(port, &end, 10);
    if (!*port || *end || port_number < 1 || port_number > 65535) return failed(r, H2_ERR_CONNECT, "the port %s is not a TCP port", port);
    uint8_t offered = proxy->user ? SOCKS_USER_PASSWORD : SOCKS_NO_AUTH;
    uint8_t hello[3] = { 5, 1, offered };
    if (send_all(fd, hello, sizeof hello, deadline, r) != 0) return -1;
    uint8_t buf[SOCKS_REPLY_MAX];
    size_t got;
    uint8_t method = SOCKS_NO_ACCEPTABLE;
    int rd = socks_read(fd, buf, &got, parse_method, &method, deadline, "the SOCKS5 greeting", r);
    if (rd < 0) return -1;
    if (rd == 0) return not_socks(r, buf);
    if (method == SOCKS_NO_ACCEPTABLE) {
        return failed(r, H2_ERR_PROXY_AUTH, "the SOCKS5 proxy accepts none of the authentication methods offered (%s)",
                      proxy->user ? "username and password" : "no authentication: it may want credentials, apns.proxy user_env and password_env");
    }
    if (method != offered) return failed(r, H2_ERR_PROXY, "the SOCKS5 proxy chose an authentication method herald did not offer (0x%02x)", method);
    if (method == SOCKS_USER_PASSWORD && socks5_authenticate(fd, proxy, deadline, r) != 0) return -1;

    uint8_t req[4 + 1 + 255 + 2] = { 5, 1, 0 };   // VER, CMD CONNECT, RSV
    int addr = socks5_address(proxy, host, req + 3, r);
    if (addr < 0) return -1;
    size_t n = 3 + (size_t)addr;
    req[n++] = (uint8_t)(port_number >> 8);
    req[n++] = (uint8_t)port_number;
    if (send_all(fd, req, n, deadline, r) != 0) return -1;
    h2_socks5_reply reply = { .reply = 0xff };
    rd = socks_read(fd, buf, &got, parse_reply, &reply, deadline, "the SOCKS5 CONNECT", r);
    // A proxy may close right after a refusal without the rest of its reply: REP is what counts.
    if (rd < 0 && !(got >= 2 && buf[0] == 5 && buf[1] != 0)) return -1;
    if (rd == 0) return failed(r, H2_ERR_PROXY, "the SOCKS5 proxy's reply to CONNECT is not RFC 1928's");
    if (reply.reply != 0) {
        const char *open_b = strchr(host, ':') ? "[" : "", *close_b = strchr(host, ':') ? "]" : "";
        return failed(r, H2_ERR_PROXY, "the SOCKS5 proxy refused to connect to %s%s%s:%s: %s (reply %u)", open_b, host, close_b, port,
                      h2_socks5_reply_text(reply.reply), (unsigned)reply.reply);
    }
    return 0;
}

int h2_proxy_open(int fd, const h2_proxy *proxy, const char *host, const char *port, int64_t deadline_ms,
                  h2_error_kind *kind, char *err, size_t errlen) {
    report r = { kind, err, errlen };
    switch (proxy->kind) {
    case H2_PROXY_HTTP: return http_connect(fd, proxy, host, port, deadline_ms, &r);
    case H2_PROXY_SOCKS5:
    case H2_PROXY_SOCKS5H: return socks5_connect(fd, proxy, host, port, deadline_ms, &r);
    }
    return failed(&r, H2_ERR_PROXY, "unknown proxy kind %d", (int)proxy->kind);
}
