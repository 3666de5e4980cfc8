// The allocation functions of this library (internal.h), with the failure a test can ask for.
#include "internal.h"

#include <stdlib.h>
#include <string.h>

// Per thread: a connection is driven by one thread (connection.c), so a test failing its own
// allocations touches no other test's connections running meanwhile on other threads.
static __thread long fail_after = -1;
static __thread long fail_count;
static __thread long failed_count;

void h2_test_fail_allocs(long after, long count) {
    fail_after = count == 0 ? -1 : after;
    fail_count = count;
    failed_count = 0;
}

long h2_test_failed_allocs(void) { return failed_count; }

static int should_fail(void) {
    if (fail_after < 0) return 0;
    if (fail_after > 0) { fail_after--; return 0; }
    failed_count++;
    if (fail_count > 0 && --fail_count == 0) fail_after = -1;
    return 1;
}

void *h2_malloc(size_t size) { return should_fail() ? NULL : malloc(size); }
void *h2_calloc(size_t count, size_t size) { return should_fail() ? NULL : calloc(count, size); }
void *h2_realloc(void *p, size_t size) { return should_fail() ? NULL : realloc(p, size); }

char *h2_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = h2_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}
