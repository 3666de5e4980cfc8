// `make sanitize`'s check of how a process with CHTTP2Client exits (docs/fuzzing.md): a thread
// that used OpenSSL as a connection does (both random generators, the error queue) is still
// running when main returns, and ends while the process exits, as an idle Dispatch worker of
// herald's or of its test process can. Built with CHTTP2Client's sources under AddressSanitizer:
// LeakSanitizer finds nothing when OpenSSL's exit-time cleanup is off (tls.c); with it on, the
// thread's error queue and generators are lost (984 bytes in 3 objects from CRYPTO_zalloc).
#include <openssl/err.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int used, ending;
static pthread_t worker;

static void *work(void *arg) {
    (void)arg;
    unsigned char bytes[32];
    // TLS handshakes draw on both generators (the private one for key shares).
    if (RAND_bytes(bytes, sizeof bytes) != 1 || RAND_priv_bytes(bytes, sizeof bytes) != 1) abort();
    ERR_clear_error();
    pthread_mutex_lock(&mu);
    used = 1;
    pthread_cond_broadcast(&cv);
    while (!ending) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return NULL;
}

// Exit handlers run in the reverse order of their registration: registered before OpenSSL's first
// use, this one runs after any handler OpenSSL registers then, and before LeakSanitizer's check.
static void end_worker(void) {
    pthread_mutex_lock(&mu);
    ending = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(worker, NULL);
}

int main(void) {
    unsigned char bytes[8];
    if (atexit(end_worker) != 0) return 2;
    if (RAND_bytes(bytes, sizeof bytes) != 1 || RAND_priv_bytes(bytes, sizeof bytes) != 1) return 2;
    if (pthread_create(&worker, NULL, work, NULL) != 0) return 2;
    pthread_mutex_lock(&mu);
    while (!used) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    return 0;
}
