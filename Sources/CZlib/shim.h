#ifndef HERALD_CZLIB_SHIM_H
#define HERALD_CZLIB_SHIM_H
#include <zlib.h>
// inflateInit2 is a macro; Swift needs a function.
static inline int herald_inflateInit2(z_streamp s, int windowBits) { return inflateInit2(s, windowBits); }
#endif
