#!/usr/bin/env python3
"""Writes the seed corpora of engine_frames and answer_fields (Fuzz/corpus/<target>/seed-*).

Each seed is an answer APNs gives, as the target's input format wants it (the comments at the top
of Fuzz/engine_frames.c and Fuzz/answer_fields.c): a 200 with apns-id, a 400 with a JSON reason,
a 410 with a timestamp, GOAWAY, RST_STREAM, SETTINGS changes, PING. The frames are built here by
hand (RFC 9113 §4.1, §6) and their header blocks with plain HPACK (RFC 7541 §6: indexed fields and
literals without Huffman coding), so the fuzzer starts from answers nghttp2 accepts and reaches
the engine's callbacks at once. Seeds that once found a bug say so in a comment; inputs the
fuzzer finds live beside them as regress-* and are never rewritten here. Run it again after
changing an input format.
"""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS, PADDED, PRIO = 0x1, 0x1, 0x4, 0x8, 0x20


def frame(kind, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def hpack_int(value, prefix_bits, first):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def hstr(s):
    s = s.encode() if isinstance(s, str) else s
    return hpack_int(len(s), 7, 0) + s


def indexed(i):
    return hpack_int(i, 7, 0x80)


def literal(name, value, indexing=False):
    return (b"\x40" if indexing else b"\x00") + hstr(name) + hstr(value)


def literal_indexed_name(i, value):
    return hpack_int(i, 4, 0x00) + hstr(value)


STATUS = {200: 8, 204: 9, 206: 10, 304: 11, 400: 12, 404: 13, 500: 14}


def status(code):
    return indexed(STATUS[code]) if code in STATUS else literal_indexed_name(8, str(code))


def settings(*pairs, flags=0):
    return frame(SETTINGS, flags, 0, b"".join(struct.pack(">HI", k, v) for k, v in pairs))


def goaway(last, code, debug=b""):
    return frame(GOAWAY, 0, 0, struct.pack(">II", last, code) + debug)


APNS_ID = "6c2f0e5e-1a43-4b4c-9e1d-3a3c1c2b2a11"
UNIQUE_ID = "a8d5e7f2-2c5b-4f2a-9f6e-0d3c4b5a6978"
JSON = literal_indexed_name(31, "application/json")


def answer(stream, code, body=b"", apns_id=APNS_ID, extra=b""):
    block = status(code) + literal("apns-id", apns_id) + extra
    if not body:
        return frame(HEADERS, END_HEADERS | END_STREAM, stream, block)
    return frame(HEADERS, END_HEADERS, stream, block + JSON) + frame(DATA, END_STREAM, stream, body)


# The allocation (counted from the connection's first) that on_data makes for a 400's body, with the
# four header bytes above: found by trying each count with FUZZ_VERBOSE=1 until an answer came back
# with no_memory set.
ANSWER_BODY_ALLOC = 34


def engine_seeds():
    """[flags][chunk][fail after][options][server bytes]: flags 0x04 puts the server's SETTINGS first."""
    def seed(flags, server, chunk=0, fail=0, options=0):
        return bytes([flags, chunk, fail, options]) + server

    ok = lambda s: answer(s, 200, extra=literal("apns-unique-id", UNIQUE_ID))
    bad = lambda s: answer(s, 400, b'{"reason":"BadDeviceToken"}')
    gone = lambda s: answer(s, 410, b'{"reason":"Unregistered","timestamp":1700000000000}')
    return {
        "200-apns-id": seed(0x04, ok(1)),
        "200-four-streams": seed(0x07, ok(1) + ok(3) + ok(5) + ok(7)),
        "200-byte-by-byte": seed(0x05, ok(1) + ok(3), chunk=1),
        "400-reason": seed(0x04, bad(1)),
        "410-timestamp": seed(0x05, gone(1) + ok(3)),
        "413-long-body": seed(0x04, answer(1, 413, b'{"reason":"PayloadTooLarge","pad":"' + b"x" * 700 + b'"}')),
        "429-then-200": seed(0x0d, answer(1, 429, b'{"reason":"TooManyRequests"}') + ok(3) + ok(5), chunk=40),
        "500-shutdown": seed(0x04, answer(1, 500, b'{"reason":"InternalServerError"}')),
        "100-continue": seed(0x04, frame(HEADERS, END_HEADERS, 1, status(100)) + ok(1)),
        "continuation": seed(0x04, frame(HEADERS, END_STREAM, 1, status(200)) + frame(CONTINUATION, END_HEADERS, 1, literal("apns-id", APNS_ID))),
        "padded-priority": seed(0x04, frame(HEADERS, END_HEADERS | END_STREAM | PADDED | PRIO, 1,
                                             b"\x02" + struct.pack(">IB", 0, 15) + status(200) + literal("apns-id", APNS_ID) + b"\0\0")),
        "trailers": seed(0x04, frame(HEADERS, END_HEADERS, 1, status(400) + JSON) + frame(DATA, 0, 1, b'{"reason":"BadTopic"}')
                          + frame(HEADERS, END_HEADERS | END_STREAM, 1, literal("x-trailer", "1"))),
        "hpack-dynamic-table": seed(0x05, frame(HEADERS, END_HEADERS | END_STREAM, 1, status(200) + literal("apns-id", APNS_ID, indexing=True))
                                     + frame(HEADERS, END_HEADERS | END_STREAM, 3, status(200) + indexed(62))),
        "hpack-table-size-0": seed(0x04, frame(HEADERS, END_HEADERS | END_STREAM, 1, b"\x20" + status(200) + literal("apns-id", APNS_ID))),
        "goaway-refuses-later": seed(0x07, ok(1) + goaway(1, 0, b"Shutdown")),
        "goaway-first": seed(0x06, goaway(0, 0, b'{"reason":"Shutdown"}')),
        "goaway-error": seed(0x05, goaway(0, 2, b"internal error")),
        "goaway-then-submit": seed(0x0c, goaway(1, 0) + ok(1)),
        "rst-stream-refused": seed(0x05, frame(RST_STREAM, 0, 1, struct.pack(">I", 7)) + ok(3)),
        "rst-stream-after-answer": seed(0x04, frame(HEADERS, END_HEADERS, 1, status(200)) + frame(RST_STREAM, 0, 1, struct.pack(">I", 8))),
        "cancel": seed(0x15, ok(3), chunk=9),
        "settings-limits": seed(0x01, settings((3, 1), (4, 16), (1, 0), (5, 16384), (6, 8192)) + settings(flags=ACK) + ok(1) + ok(3)),
        "settings-window-update": seed(0x04, settings((4, 0)) + frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 1000))
                                        + frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 65535)) + ok(1)),
        "ping": seed(0x04, frame(PING, 0, 0, b"12345678") + frame(PING, ACK, 0, b"\0" * 8) + ok(1)),
        "push-promise-refused": seed(0x04, frame(PUSH_PROMISE, END_HEADERS, 1, struct.pack(">I", 2) + status(200))),
        # Regression: nghttp2 ends the connection itself (its GOAWAY); the sent request is lost, not never sent.
        "data-without-headers": seed(0x04, frame(DATA, END_STREAM, 1, b"{}")),
        "unknown-frame": seed(0x04, frame(0xfa, 0, 0, b"ext") + ok(1)),
        # Regression: as data-without-headers.
        "no-preface": seed(0x00, ok(1)),
        "eof-mid-frame": seed(0x04, ok(1)[:12]),
        "abandon-open": seed(0x27, ok(1)),
        "alloc-fail-once": seed(0x45, ok(1) + bad(3), fail=6),
        "alloc-fail-all": seed(0xc4, ok(1), fail=20),
        "alloc-fail-answer-body": seed(0x44, bad(1), fail=ANSWER_BODY_ALLOC),
        "queued-then-goaway": seed(0x0c, settings((3, 1)) + ok(1) + goaway(1, 0, b"Shutdown"), chunk=9),
        "queued-then-rst": seed(0x0d, settings((3, 1)) + frame(RST_STREAM, 0, 1, struct.pack(">I", 7)) + ok(3), chunk=9),
        "big-body-window-update": seed(0x05, frame(WINDOW_UPDATE, 0, 0, struct.pack(">I", 200000))
                                        + frame(WINDOW_UPDATE, 0, 1, struct.pack(">I", 10000)) + frame(WINDOW_UPDATE, 0, 3, struct.pack(">I", 10000))
                                        + bad(1) + ok(3), options=0x01),
        # Reaches fail() with answers that arrived whole and bodies unsent (answer_fields' early-answer seeds check them).
        "big-body-deaf-server": seed(0x07, ok(1) + gone(3), options=0x03),
        "cancel-all": seed(0x06, ok(3), options=0x04),
    }


def field_record(name, value):
    """answer_fields' [selector][length][bytes] records: selector < 0x80 picks a known name."""
    known = ["apns-id", "apns-unique-id", "content-type", "apns-i", "apns-unique-idd", ":status", "content-length", "date"]
    value = value.encode() if isinstance(value, str) else value
    if name in known:
        return bytes([known.index(name), len(value)]) + value
    name = name.encode()
    return bytes([0x80, len(name)]) + name + bytes([len(value)]) + value


def answer_seeds():
    """[flags][status u16][count][records...][body]."""
    def seed(flags, code, fields, body=b"", early=False):
        count = len(fields) | (0x80 if early else 0)
        return bytes([flags]) + struct.pack(">H", code) + bytes([count]) + b"".join(field_record(n, v) for n, v in fields) + body

    return {
        "200-apns-id": seed(0x00, 0, [("apns-id", APNS_ID), ("apns-unique-id", UNIQUE_ID)]),
        "400-reason": seed(0x00, 200, [("apns-id", APNS_ID), ("content-type", "application/json")], b'{"reason":"BadDeviceToken"}'),
        "403-jwt": seed(0x02, 203, [("apns-id", APNS_ID)], b'{"reason":"ExpiredProviderToken"}'),
        "410-timestamp": seed(0x00, 210, [("apns-id", APNS_ID)], b'{"reason":"Unregistered","timestamp":1700000000000}'),
        "413-long-body": seed(0x02, 213, [("apns-id", APNS_ID)], b'{"reason":"PayloadTooLarge","x":"' + b"y" * 600 + b'"}'),
        "interim-trailers": seed(0x05, 229, [("apns-id", APNS_ID)], b'{"reason":"TooManyRequests"}'),
        "near-miss-names": seed(0x00, 0, [("apns-i", "short"), ("apns-unique-idd", "long"), ("apns-id", APNS_ID), ("x-apns-id", "other")]),
        "apns-id-too-long": seed(0x00, 0, [("apns-id", "x" * 49), ("apns-unique-id", "y" * 48)]),
        "repeated-apns-id": seed(0x40, 0, [("apns-id", "first"), ("apns-id", APNS_ID)]),
        "no-index-padded": seed(0x30, 300, [("apns-id", APNS_ID)], b'{"reason":"InternalServerError"}'),
        "table-size-0": seed(0xc0, 0, [("apns-id", APNS_ID), ("content-type", "application/json")], b"{}"),
        # Regression: an answer that arrived whole before the request's body left stands when the connection dies.
        "early-answer-200": seed(0x00, 0, [("apns-id", APNS_ID)], early=True),
        "early-answer-413": seed(0x00, 213, [("apns-id", APNS_ID)], b'{"reason":"PayloadTooLarge"}', early=True),
        "raw-status": seed(0x08, 410, [(":status", "410"), ("apns-id", APNS_ID), ("content-length", "2")], b"{}"),
        "raw-bad-status": seed(0x08, 99, [(":status", "abc"), ("apns-id", APNS_ID)]),
        "raw-upper-case": seed(0x08, 200, [(":status", "200"), ("Apns-Id", APNS_ID)]),
    }


def write(target, seeds):
    d = os.path.join(HERE, "corpus", target)
    os.makedirs(d, exist_ok=True)
    for name in os.listdir(d):
        if name.startswith("seed-"):
            os.remove(os.path.join(d, name))
    for name, data in seeds.items():
        with open(os.path.join(d, "seed-" + name), "wb") as f:
            f.write(data)
    print(f"{target}: {len(seeds)} seeds", file=sys.stderr)


if __name__ == "__main__":
    write("engine_frames", engine_seeds())
    write("answer_fields", answer_seeds())
