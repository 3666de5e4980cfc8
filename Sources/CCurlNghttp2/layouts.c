// Why this file exists: herald_nv (RequestHeaders.h) mirrors nghttp2_nv for Swift, which imports
// this target's public headers but not nghttp2.h, and request_headers.c hands arrays of it to
// nghttp2_submit_request as nghttp2_nv. nghttp2 documents the struct
// (https://nghttp2.org/documentation/types.html#c.nghttp2_nv); these checks make an nghttp2 whose
// layout differs fail the build instead of a campaign. The calls this target defines carry the
// header's own prototypes (sessions.h includes nghttp2.h), so a changed call fails the build too.
#include <stddef.h>
#include "sessions.h"

#define SAME_FIELD(field) \
    _Static_assert(offsetof(herald_nv, field) == offsetof(nghttp2_nv, field) && \
                   sizeof(((herald_nv *)0)->field) == sizeof(((nghttp2_nv *)0)->field), \
                   "herald_nv." #field " is not where nghttp2_nv keeps it (RequestHeaders.h)")

_Static_assert(sizeof(herald_nv) == sizeof(nghttp2_nv), "herald_nv is not nghttp2_nv's size (RequestHeaders.h)");
_Static_assert(_Alignof(herald_nv) == _Alignof(nghttp2_nv), "herald_nv is not aligned as nghttp2_nv (RequestHeaders.h)");
SAME_FIELD(name);
SAME_FIELD(value);
SAME_FIELD(namelen);
SAME_FIELD(valuelen);
SAME_FIELD(flags);

// The field flags herald sets on its own fields (none, or never indexed on apns-id) and the data
// flag its body source returns.
_Static_assert(NGHTTP2_NV_FLAG_NONE == 0, "herald's fields carry flags 0 as NGHTTP2_NV_FLAG_NONE");
_Static_assert(HERALD_NV_NO_INDEX == NGHTTP2_NV_FLAG_NO_INDEX, "HERALD_NV_NO_INDEX is not NGHTTP2_NV_FLAG_NO_INDEX (RequestHeaders.h)");
// libcurl 7.88 needs nghttp2 1.12 or later; the shims were verified with 1.52 (LibcurlShims.swift).
_Static_assert(NGHTTP2_VERSION_NUM >= 0x010c00, "nghttp2.h older than 1.12.0");
