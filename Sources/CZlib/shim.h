#ifndef HERALD_CZLIB_SHIM_H
#define HERALD_CZLIB_SHIM_H
#include <zlib.h>
// inflateInit2 is a macro; Swift needs a function.
static inline int herald_inflateInit2(z_streamp s, int windowBits) { return inflateInit2(s, windowBits); }
// deflateInit2 likewise (gzip-compressed reports).
static inline int herald_deflateInit2(z_streamp s, int level, int windowBits) {
    return deflateInit2(s, level, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
}
#endif
