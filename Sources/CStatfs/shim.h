#ifndef HERALD_CSTATFS_SHIM_H
#define HERALD_CSTATFS_SHIM_H
#include <errno.h>
#include <sys/vfs.h>
// Swift's Glibc module leaves out <sys/vfs.h>: statfs(2)'s f_type names the filesystem type,
// which statvfs(3) does not carry. Returns 0 and sets *type, or -1 with errno set.
static inline int herald_statfs_type(const char *path, unsigned long *type) {
    struct statfs s;
    if (statfs(path, &s) != 0) return -1;
    *type = (unsigned long)s.f_type;
    return 0;
}
#endif
